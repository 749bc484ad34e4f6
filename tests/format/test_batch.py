"""RecordBatch v2: header view, validation with Kafka's messages, record decoding, the builder."""

from __future__ import annotations

import base64
import struct

import pytest

from logrepair.format.batch import RecordBatch
from logrepair.format.batch_builder import build_batch, build_empty_batch
from logrepair.format.batch_layout import HEADER, Batch, Record, increment_sequence
from logrepair.format.crc import crc32, crc32c
from logrepair.format.errors import FormatError
from logrepair.format.record_codec import encode_record
from logrepair.format.varint import write_varint
from tests.contracts import BATCH_JSON_KEYS


def raw_batch(
    body: bytes, count: int, *, base_offset: int = 0, last_delta: int = 0, attrs: int = 0
) -> bytes:
    """A v2 batch around an arbitrary records region, with a correct CRC."""
    out = bytearray(
        HEADER.pack(
            base_offset, 49 + len(body), -1, 2, 0, attrs, last_delta, 10, 10, -1, -1, -1, count
        )
    )
    out += body
    struct.pack_into(">I", out, 17, crc32c(memoryview(out)[21:]))
    return bytes(out)


def test_crc_check_values() -> None:
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32(b"123456789") == 0xCBF43926


def test_header_is_61_bytes() -> None:
    assert HEADER.size == 61


def test_header_fields_and_derived_values() -> None:
    data = build_batch(
        [Record(100, 5000, b"k", b"v"), Record(101, 4000, None, None), Record(103, 7000, b"", b"")],
        base_offset=100,
        producer_id=77,
        producer_epoch=3,
        base_sequence=2**31 - 2,
        partition_leader_epoch=9,
    )
    batch = RecordBatch.parse(memoryview(data))
    assert isinstance(batch, Batch)
    assert (batch.base_offset, batch.last_offset, batch.count, batch.size) == (
        100,
        103,
        3,
        len(data),
    )
    assert batch.first_timestamp == 5000 and batch.max_timestamp == 7000
    assert batch.timestamp_type == "create"
    assert batch.partition_leader_epoch == 9
    assert batch.last_sequence == 1  # wraps past Int.MAX
    assert batch.crc_valid
    records = batch.records()
    assert [r.offset for r in records] == [100, 101, 103]
    assert [r.timestamp for r in records] == [5000, 4000, 7000]
    assert [r.sequence for r in records] == [2**31 - 2, 2**31 - 1, 1]
    assert records[1].key is None and records[1].value is None
    assert records[2].key == b"" and records[2].value == b""


def test_parse_does_not_copy() -> None:
    data = bytearray(build_batch([Record(0, 1, b"k", b"v")], base_offset=0))
    batch = RecordBatch.parse(data)
    assert batch.raw.obj is data


def test_position_in_file() -> None:
    data = b"\xee" * 5 + build_batch([Record(0, 1, b"k", b"v")], base_offset=0)
    assert RecordBatch.parse(data, 5, file_position=1000).position == 1005
    assert RecordBatch.parse(data, 5).position == 5


def test_sequence_increment_wraps() -> None:
    assert increment_sequence(5, 3) == 8
    assert increment_sequence(2**31 - 1, 1) == 0
    assert increment_sequence(2**31 - 3, 5) == 2


def test_log_append_time_records_report_max_timestamp() -> None:
    data = build_batch(
        [Record(0, 10, b"a", b"1"), Record(1, 20, b"b", b"2")],
        base_offset=0,
        timestamp_type="append",
        log_append_time=999,
    )
    batch = RecordBatch.parse(data)
    assert batch.timestamp_type == "append"
    assert batch.first_timestamp == 10 and batch.max_timestamp == 999
    assert [r.timestamp for r in batch.records()] == [999, 999]


def test_delete_horizon_rebases_deltas() -> None:
    data = build_batch(
        [Record(5, 100, None, b"x"), Record(6, 150, b"t", None)],
        base_offset=5,
        delete_horizon_ms=1000,
    )
    batch = RecordBatch.parse(data)
    assert batch.has_delete_horizon and batch.delete_horizon_ms == 1000
    assert batch.first_timestamp == 1000
    assert [r.timestamp for r in batch.records()] == [100, 150]
    assert (
        RecordBatch.parse(build_batch([Record(0, 1, None, None)], base_offset=0)).delete_horizon_ms
        is None
    )


def test_compacted_batch_keeps_original_last_offset() -> None:
    data = build_batch(
        [Record(10, 1, b"a", b"1"), Record(14, 2, b"b", b"2")], base_offset=10, last_offset=19
    )
    batch = RecordBatch.parse(data)
    assert (batch.last_offset, batch.count) == (19, 2)
    assert [r.offset for r in batch.records()] == [10, 14]


def test_empty_batch_as_compaction_leaves_it() -> None:
    data = build_empty_batch(
        base_offset=50,
        last_offset=59,
        max_timestamp=1234,
        producer_id=8,
        producer_epoch=1,
        base_sequence=40,
        is_transactional=True,
        partition_leader_epoch=2,
    )
    assert len(data) == 61
    batch = RecordBatch.parse(data)
    assert batch.crc_valid and batch.count == 0 and batch.records() == []
    assert (batch.base_offset, batch.last_offset, batch.first_timestamp, batch.max_timestamp) == (
        50,
        59,
        -1,
        1234,
    )
    assert batch.is_transactional and batch.codec == 0 and not batch.has_delete_horizon


def test_empty_batch_bytes_after_header_are_not_inspected() -> None:
    batch = RecordBatch.parse(raw_batch(b"\xff\xff\xff", 0))
    assert batch.crc_valid and batch.records() == []


def test_builder_with_no_records_writes_nothing() -> None:
    assert build_batch([], base_offset=0) == b""


def test_attributes_high_byte_is_ignored_on_read() -> None:
    batch = RecordBatch.parse(raw_batch(encode_record(0, 0, None, b"v"), 1, attrs=0x7F00 | 0x10))
    assert batch.is_transactional and batch.codec == 0 and batch.records()[0].value == b"v"


@pytest.mark.parametrize(
    ("records", "kwargs", "message"),
    [
        (
            [Record(1, 0, None, None), Record(1, 0, None, None)],
            {},
            "Offsets must increase monotonically",
        ),
        ([Record(0, -5, None, None)], {}, "Invalid negative timestamp -5"),
        ([Record(0, 0, None, None)], {"is_transactional": True}, "without a valid producer ID"),
        (
            [Record(0, 0, None, None)],
            {"producer_id": 1, "base_sequence": 0},
            "negative producer epoch",
        ),
        ([Record(0, 0, None, None)], {"producer_id": 1, "producer_epoch": 0}, "negative sequence"),
        ([Record(0, 0, None, None)], {"timestamp_type": "append"}, "log_append_time"),
        ([Record(3, 0, None, None)], {"last_offset": 2}, "below the last record"),
        ([Record(0, 0, None, None, ((None, b""),))], {}, "Invalid null header key"),
    ],
)
def test_builder_refuses_what_kafka_refuses(records, kwargs, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build_batch(records, base_offset=min(r.offset for r in records), **kwargs)


def test_parse_errors() -> None:
    good = build_batch([Record(0, 1, b"k", b"v")], base_offset=0)
    with pytest.raises(FormatError) as e:
        RecordBatch.parse(good[:-1])
    assert e.value.kind == "torn_tail"
    with pytest.raises(FormatError) as e:
        RecordBatch.parse(good[:40])
    assert e.value.kind == "torn_tail"
    bad_magic = bytearray(good)
    bad_magic[16] = 3
    with pytest.raises(FormatError, match="Invalid magic found in record: 3") as e:
        RecordBatch.parse(bad_magic)
    assert e.value.kind == "bad_magic"
    short = bytearray(good)
    struct.pack_into(">i", short, 8, 40)
    with pytest.raises(
        FormatError, match=r"the size 52 is smaller than the minimum allowed overhead 61"
    ):
        RecordBatch.parse(short)


def test_crc_mismatch_message_uses_unsigned_decimals() -> None:
    data = bytearray(build_batch([Record(0, 1, b"k", b"v")], base_offset=0))
    data[-1] ^= 0xFF
    batch = RecordBatch.parse(data)
    assert not batch.crc_valid
    with pytest.raises(FormatError) as e:
        batch.ensure_valid()
    assert e.value.kind == "crc_mismatch"
    assert (
        e.value.detail
        == f"Record is corrupt (stored crc = {batch.crc}, computed crc = {batch.computed_crc()})"
    )


def test_crc_not_covering_leader_epoch_or_base_offset() -> None:
    data = bytearray(build_batch([Record(0, 1, b"k", b"v")], base_offset=0))
    struct.pack_into(">qii", data, 0, 77, len(data) - 12, 5)
    assert RecordBatch.parse(data).crc_valid


REC = encode_record(0, 0, b"k", b"v")


@pytest.mark.parametrize(
    ("body", "count", "kind", "message"),
    [
        (REC, -1, "record_count_mismatch", "Found invalid record count -1 in magic v2 batch"),
        (REC, 2, "record_count_mismatch", "Incorrect declared batch size, premature EOF reached"),
        (REC + b"\x00", 1, "record_count_mismatch", "records still remaining in file"),
        (REC + b"\x80", 2, "record_count_mismatch", "premature EOF reached"),
        (
            write_varint(30) + b"\x00" * 5,
            1,
            "invalid_records",
            "expected 30 bytes in record payload, but instead the buffer has only 5 remaining bytes.",
        ),
        (
            write_varint(8) + b"\x00\x00\x00\x01\x01\x00\x00\x00",
            1,
            "invalid_records",
            "expected to read 8 bytes in record payload, but instead read 6",
        ),
        (
            write_varint(5) + b"\x00\x00\x00\x01\x01",
            1,
            "invalid_records",
            "Found invalid record structure",
        ),
        (
            write_varint(6) + b"\x00\x00\x00\x01\x01\x03",
            1,
            "invalid_records",
            "Found invalid number of record headers -2",
        ),
        (
            write_varint(6) + b"\x00\x00\x00\x01\x01\x14",
            1,
            "invalid_records",
            "10 is larger than the remaining size",
        ),
        (
            write_varint(9) + b"\x00\x00\x00\x01\x01\x02\x03\x00\x01",
            1,
            "invalid_records",
            "Invalid negative header key size -2",
        ),
        (
            write_varint(6) + b"\x00\x00\x00\x7e\x01\x00",
            1,
            "invalid_records",
            "Found invalid record structure",
        ),
        (
            write_varint(6) + b"\x00\x00\x00\x08\x01\x00\x00\x01\x00\x00",
            1,
            "invalid_records",
            "expected to read 6 bytes in record payload, but instead read 10",
        ),
        (
            write_varint(6) + b"\x00\xff\xff\xff\xff\xff",
            1,
            "invalid_records",
            "Found invalid record structure",
        ),
    ],
)
def test_record_errors_carry_kafkas_messages(
    body: bytes, count: int, kind: str, message: str
) -> None:
    batch = RecordBatch.parse(raw_batch(body, count))
    assert batch.crc_valid
    with pytest.raises(FormatError, match=message) as e:
        batch.records()
    assert e.value.kind == kind


def test_negative_key_and_value_lengths_read_as_null() -> None:
    body = b"\x00\x00\x00\x03\x05\x00"  # key length -2, value length -3: Kafka reads null for any negative
    batch = RecordBatch.parse(raw_batch(write_varint(len(body)) + body, 1))
    record = batch.records()[0]
    assert record.key is None and record.value is None


def test_malformed_header_key_utf8_is_replaced() -> None:
    body = encode_record(0, 0, None, None, [("x", b"1")]).replace(b"x", b"\xff")
    assert RecordBatch.parse(raw_batch(body, 1)).records()[0].headers == (("\ufffd", b"1"),)


def test_unknown_codec_id() -> None:
    batch = RecordBatch.parse(raw_batch(REC, 1, attrs=6))
    assert batch.codec == 6 and batch.crc_valid
    assert batch.to_json()["codec"] == "unknown(6)"
    with pytest.raises(FormatError, match="Unknown compression type id: 6") as e:
        batch.records()
    assert e.value.kind == "unknown_codec"


def test_to_json_is_the_dump_contract() -> None:
    data = build_batch(
        [Record(7, 11, b"\x00k", None, (("h\u00e9", b"v"), ("n", None)))],
        base_offset=7,
        producer_id=3,
        producer_epoch=4,
        base_sequence=5,
        is_transactional=True,
    )
    shallow = RecordBatch.parse(b"\x00" * 3 + data, 3).to_json()
    assert set(shallow) == BATCH_JSON_KEYS
    assert (
        shallow["position"] == 3
        and shallow["codec"] == "none"
        and shallow["timestamp_type"] == "create"
    )
    assert shallow["is_transactional"] is True and shallow["crc_valid"] is True
    deep = RecordBatch.parse(data).to_json(deep=True)
    assert set(deep) == BATCH_JSON_KEYS | {"records"}
    assert deep["records"] == [
        {
            "offset": 7,
            "timestamp": 11,
            "key": base64.b64encode(b"\x00k").decode(),
            "value": None,
            "headers": [{"key": "h\u00e9", "value": "dg=="}, {"key": "n", "value": None}],
        }
    ]


def test_legacy_entries_share_the_read_interface() -> None:
    from logrepair.format.legacy import LegacyBatch, build_legacy_batch

    entry = LegacyBatch.parse(
        build_legacy_batch([Record(3, 9, b"k", b"v")], magic=1, base_offset=3)
    )
    assert isinstance(entry, Batch)
    assert set(entry.to_json()) == BATCH_JSON_KEYS
    assert entry.partition_leader_epoch is None
