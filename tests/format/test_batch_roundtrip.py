"""Builder → walker → records, for every codec and every kind of batch Kafka writes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from logrepair.format.batch import RecordBatch
from logrepair.format.batch_builder import build_batch
from logrepair.format.batch_layout import Record
from logrepair.format.compression import Codec
from logrepair.format.errors import FormatError
from logrepair.format.walker import Walker

from .strategies import BatchSpec, batch_specs, segments

ALL_CODECS = tuple(int(c) for c in Codec)


def expected_records(spec: BatchSpec) -> list[Record]:
    kw = spec.kwargs
    base_sequence = kw.get("base_sequence", -1)
    out = []
    for r in spec.records:
        ts = kw["log_append_time"] if kw.get("timestamp_type") == "append" else r.timestamp
        seq = -1 if base_sequence < 0 else (base_sequence + r.offset - kw["base_offset"]) % 2**31
        out.append(Record(r.offset, ts, r.key, r.value, tuple(r.headers), seq))
    return out


@settings(max_examples=150)
@given(batch_specs(codecs=ALL_CODECS))
def test_batch_round_trip(spec: BatchSpec) -> None:
    data = spec.build()
    batch = RecordBatch.parse(data)
    kw = spec.kwargs
    assert batch.size == len(data) and batch.crc_valid
    assert batch.codec == kw["codec"]
    assert batch.base_offset == kw["base_offset"]
    assert batch.last_offset == spec.last_offset
    assert batch.count == len(spec.records)
    assert batch.partition_leader_epoch == kw["partition_leader_epoch"]
    assert batch.producer_id == kw.get("producer_id", -1)
    assert batch.producer_epoch == kw.get("producer_epoch", -1)
    assert batch.base_sequence == kw.get("base_sequence", -1)
    assert batch.is_transactional == kw.get("is_transactional", False)
    assert not batch.is_control
    assert batch.timestamp_type == kw.get("timestamp_type", "create")
    if "delete_horizon_ms" in kw:
        assert batch.delete_horizon_ms == batch.first_timestamp == kw["delete_horizon_ms"]
    else:
        assert batch.first_timestamp == spec.records[0].timestamp
    if "log_append_time" in kw:
        assert batch.max_timestamp == kw["log_append_time"]
    else:
        assert batch.max_timestamp == max(r.timestamp for r in spec.records)
    assert batch.records() == expected_records(spec)


@settings(max_examples=60)
@given(segments(codecs=ALL_CODECS))
def test_segment_round_trip_through_the_walker(segment) -> None:
    data, specs = segment
    walker = Walker(data, deep=True)
    items = list(walker)
    assert all(isinstance(b, RecordBatch) for b in items)
    assert [b.base_offset for b in items] == [s.kwargs["base_offset"] for s in specs]
    assert [b.records() for b in items] == [expected_records(s) for s in specs]
    assert walker.done and walker.position == len(data)
    assert list(Walker(data).validate()) == []


@pytest.mark.parametrize("codec", [c for c in ALL_CODECS if c])
def test_compressed_bomb_is_a_defect_not_a_crash(codec: int) -> None:
    records = [Record(i, 0, None, b"\x00" * 4096) for i in range(64)]
    data = build_batch(records, base_offset=0, codec=codec)
    batch = RecordBatch.parse(data)
    with pytest.raises(FormatError) as e:
        batch.records(max_output=10_000)
    assert e.value.kind == "decompression_failed"
    defects = list(Walker(data, deep=True, max_output=10_000))
    assert [(d.kind, d.position, d.length) for d in defects] == [
        ("decompression_failed", 0, len(data))
    ]


@pytest.mark.parametrize("codec", [c for c in ALL_CODECS if c])
def test_corrupt_compressed_payload_with_valid_crc(codec: int) -> None:
    data = bytearray(build_batch([Record(0, 0, b"k", b"v" * 100)], base_offset=0, codec=codec))
    data[61:] = b"\x13" * (len(data) - 61)
    from logrepair.format.crc import crc32c

    data[17:21] = crc32c(memoryview(data)[21:]).to_bytes(4, "big")
    (item,) = Walker(bytes(data), deep=True)
    assert item.kind == "decompression_failed"
    (batch,) = Walker(bytes(data))
    assert batch.crc_valid
