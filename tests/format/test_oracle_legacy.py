"""Cross-checks of legacy message sets and codecs with kafka-python and aiokafka, both directions.

Both clients implement magic 0/1 independently of us (aiokafka twice: in Cython and in Python).
Their builders are producers' builders: a wrapper gets offset 0 and timestamp 0 (the broker assigns
both), which is exactly the librdkafka-style wrapper Kafka's reader special-cases. Neither client
handles LZ4 for magic 0 (it needs the broken header checksum), so those cases are left out.
"""

from __future__ import annotations

import struct

import pytest
from aiokafka.record import legacy_records as aio
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka import codec as kafka_codec
from kafka.record import legacy_records as kp

from logrepair.format.batch_layout import Record
from logrepair.format.compression import Codec, compress, decompress
from logrepair.format.legacy import LegacyBatch, build_legacy_batch

READERS = {
    "kafka-python": kp.LegacyRecordBatch,
    "aiokafka": aio.LegacyRecordBatch,
    "aiokafka-py": aio._LegacyRecordBatchPy,
}
BUILDERS = {
    "kafka-python": kp.LegacyRecordBatchBuilder,
    "aiokafka": aio.LegacyRecordBatchBuilder,
    "aiokafka-py": aio._LegacyRecordBatchBuilderPy,
}
CASES = [(m, c) for m in (0, 1) for c in (0, 1, 2, 3) if not (m == 0 and c == 3)]

optional_bytes = st.none() | st.binary(max_size=80)
record_fields = st.lists(
    st.tuples(st.integers(0, 2**42), optional_bytes, optional_bytes), min_size=1, max_size=10
)


def entries_of(data: bytes) -> list[LegacyBatch]:
    out, pos = [], 0
    while pos < len(data):
        batch = LegacyBatch.parse(data, pos)
        out.append(batch)
        pos += batch.size
    return out


def their_records(reader, raw: bytes, magic: int) -> list[tuple]:
    batch = reader(raw, magic)
    assert batch.validate_crc()
    out = []
    for r in batch:
        # aiokafka's Cython records expose no per-record check; the Python ones and kafka-python do
        assert getattr(r, "validate_crc", lambda: True)()
        out.append((r.offset, None if magic == 0 else r.timestamp, r.key, r.value))
    return out


@settings(max_examples=25)
@given(fields=record_fields, base=st.integers(0, 2**40), append_time=st.booleans())
@pytest.mark.parametrize("magic,codec", CASES)
@pytest.mark.parametrize("reader", sorted(READERS))
def test_clients_read_what_we_write(reader, magic, codec, fields, base, append_time) -> None:
    records = [Record(base + 3 * i, ts, k, v) for i, (ts, k, v) in enumerate(fields)]
    append_time = append_time and magic == 1
    data = build_legacy_batch(
        records,
        magic=magic,
        base_offset=base,
        codec=codec,
        timestamp_type="append" if append_time else "create",
        log_append_time=12345 if append_time else None,
    )
    ours, theirs = [], []
    for batch in entries_of(data):
        theirs += their_records(READERS[reader], bytes(batch.raw), magic)
        ours += [(r.offset, r.timestamp, r.key, r.value) for r in batch.records()]
    assert ours == theirs
    assert [o for o, *_ in ours] == [r.offset for r in records]


@settings(max_examples=25)
@given(fields=record_fields)
@pytest.mark.parametrize("magic,codec", CASES)
@pytest.mark.parametrize("builder", sorted(BUILDERS))
def test_we_read_what_clients_write(builder, magic, codec, fields) -> None:
    producer = BUILDERS[builder](magic, codec, 1 << 24)
    for i, (ts, key, value) in enumerate(fields):
        producer.append(i, ts, key, value)
    data = bytes(producer.build())
    batches = entries_of(data)
    assert all(b.crc_valid for b in batches)
    got = [r for b in batches for r in b.records()]
    expected = [Record(i, None if magic == 0 else ts, k, v) for i, (ts, k, v) in enumerate(fields)]
    assert got == expected
    ours = build_legacy_batch(
        [Record(i, ts, k, v) for i, (ts, k, v) in enumerate(fields)], magic=magic, base_offset=0
    )
    if codec == 0:
        assert data == ours  # byte for byte, CRCs included
    else:
        # their wrapper (offset 0, timestamp 0) holds exactly our inner entries
        (wrapper,) = batches
        assert wrapper.last_offset == 0
        key_offset = 18 if magic == 0 else 26
        (value_length,) = struct.unpack_from(">i", data, key_offset + 4)
        value = data[key_offset + 8 : key_offset + 8 + value_length]
        assert decompress(codec, value, magic=magic) == ours


PAYLOAD = b"".join(b"record %d with a repetitive body " % i * 3 for i in range(2000))


@pytest.mark.parametrize("magic", [1, 2])
def test_codec_oracles_both_directions(magic: int) -> None:
    """kafka-python's own codec functions against ours (kafka.codec)."""
    assert kafka_codec.gzip_decode(compress(Codec.GZIP, PAYLOAD, magic=magic)) == PAYLOAD
    assert decompress(Codec.GZIP, kafka_codec.gzip_encode(PAYLOAD), magic=magic) == PAYLOAD
    assert kafka_codec.snappy_decode(compress(Codec.SNAPPY, PAYLOAD, magic=magic)) == PAYLOAD
    xerial = kafka_codec.snappy_encode(PAYLOAD)
    assert xerial == compress(Codec.SNAPPY, PAYLOAD)  # same 16-byte header, same 32 KiB blocks
    assert decompress(Codec.SNAPPY, xerial, magic=magic) == PAYLOAD
    raw = kafka_codec.snappy_encode(PAYLOAD, xerial_compatible=False)
    assert decompress(Codec.SNAPPY, raw, magic=magic) == PAYLOAD
    assert kafka_codec.lz4_decode(compress(Codec.LZ4, PAYLOAD, magic=magic)) == PAYLOAD
    assert decompress(Codec.LZ4, kafka_codec.lz4_encode(PAYLOAD), magic=magic) == PAYLOAD
    if magic == 2:
        assert kafka_codec.zstd_decode(compress(Codec.ZSTD, PAYLOAD)) == PAYLOAD
        assert decompress(Codec.ZSTD, kafka_codec.zstd_encode(PAYLOAD)) == PAYLOAD
