"""Legacy message sets (magic 0/1): the entry view, wrappers and inner entries, the builder."""

from __future__ import annotations

import base64
import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logrepair.format import compression
from logrepair.format.batch_layout import Batch, Record
from logrepair.format.compression import Codec, compress, decompress
from logrepair.format.errors import FormatError
from logrepair.format.legacy import LegacyBatch, build_legacy_batch
from tests.contracts import BATCH_JSON_KEYS

V2_ONLY = ("producer_id", "producer_epoch", "base_sequence", "partition_leader_epoch")

# --- helpers that write entries field by field, independently of the builder under test ---------


def message(magic: int, attributes: int, timestamp: int, key: bytes | None, value: bytes | None):
    body = struct.pack(">bb", magic, attributes)
    if magic == 1:
        body += struct.pack(">q", timestamp)
    for field in (key, value):
        body += struct.pack(">i", -1) if field is None else struct.pack(">i", len(field)) + field
    return struct.pack(">I", zlib.crc32(body)) + body


def entry(offset: int, msg: bytes) -> bytes:
    return struct.pack(">qi", offset, len(msg)) + msg


def wrapper(
    inner: bytes, *, offset: int, magic: int = 1, codec: int = 1, attributes: int = 0, ts: int = 0
) -> bytes:
    value = compress(Codec(codec), inner, magic=magic) if codec <= 4 else inner
    return entry(offset, message(magic, codec | attributes, ts, None, value))


def entries_of(data: bytes) -> list[LegacyBatch]:
    out, pos = [], 0
    while pos < len(data):
        batch = LegacyBatch.parse(data, pos)
        out.append(batch)
        pos += batch.size
    return out


def kind_and_detail(fn) -> tuple[str, str]:
    with pytest.raises(FormatError) as info:
        fn()
    return info.value.kind, info.value.detail


# --- golden bytes ---------------------------------------------------------------------------------


def test_golden_magic_1_message() -> None:
    data = build_legacy_batch([Record(5, 1000, b"k", b"v")], magic=1, base_offset=5)
    assert data == bytes.fromhex(
        "000000000000000500000018e4e321bc010000000000000003e8000000016b0000000176"
    )
    batch = LegacyBatch.parse(data)
    assert (batch.last_offset, batch.base_offset, batch.count, batch.size) == (5, 5, 1, 36)
    assert (batch.crc, batch.crc_valid, batch.magic, batch.codec) == (0xE4E321BC, True, 1, 0)
    assert (batch.timestamp_type, batch.first_timestamp, batch.max_timestamp) == (
        "create",
        1000,
        1000,
    )
    assert batch.records() == [Record(5, 1000, b"k", b"v")]


def test_golden_magic_0_message() -> None:
    data = build_legacy_batch([Record(7, 123, None, b"abc")], magic=0, base_offset=7)
    assert data == bytes.fromhex("00000000000000070000001143dc3faf0000ffffffff00000003616263")
    batch = LegacyBatch.parse(data)
    assert batch.timestamp_type is None and batch.max_timestamp is None
    assert batch.first_timestamp is None
    assert batch.records() == [Record(7, None, None, b"abc")]


def test_golden_magic_1_wrapper() -> None:
    records = [Record(10, 1000, None, b"a"), Record(11, 1500, None, b"b")]
    data = build_legacy_batch(records, magic=1, base_offset=10, codec=Codec.LZ4)
    offset, size, crc, magic, attributes, timestamp, key_length, value_length = struct.unpack_from(
        ">qiIbbqii", data
    )
    assert (offset, size, magic, attributes, timestamp, key_length) == (
        11,
        len(data) - 12,
        1,
        3,
        1500,
        -1,
    )
    assert crc == zlib.crc32(data[16:])
    value = data[34:]
    assert value_length == len(value) and value[:7] == bytes.fromhex("04224d18604082")
    inner = decompress(Codec.LZ4, value, magic=1)
    assert inner == entry(0, message(1, 0, 1000, None, b"a")) + entry(
        1, message(1, 0, 1500, None, b"b")
    )
    batch = LegacyBatch.parse(data)
    assert (batch.base_offset, batch.last_offset, batch.count) == (10, 11, 2)
    assert (batch.first_timestamp, batch.max_timestamp) == (1000, 1500)
    assert batch.records() == records


# --- the builder ----------------------------------------------------------------------------------


def test_uncompressed_is_one_entry_per_record_with_absolute_offsets() -> None:
    records = [Record(100, 1, b"a", b"x"), Record(102, 5, None, None), Record(107, 3, b"", b"")]
    data = build_legacy_batch(records, magic=1, base_offset=100)
    batches = entries_of(data)
    assert [b.last_offset for b in batches] == [100, 102, 107]
    assert [r for b in batches for r in b.records()] == records
    assert data == b"".join(
        entry(r.offset, message(1, 0, r.timestamp, r.key, r.value)) for r in records
    )


def test_magic_0_wrapper_keeps_absolute_inner_offsets() -> None:
    records = [Record(50, None, b"a", b"1"), Record(52, None, b"b", b"2")]
    data = build_legacy_batch(records, magic=0, base_offset=50, codec=Codec.GZIP)
    assert decompress(Codec.GZIP, data[26:]) == b"".join(
        entry(r.offset, message(0, 0, -1, r.key, r.value)) for r in records
    )
    batch = LegacyBatch.parse(data)
    assert batch.records() == records and batch.base_offset == 50 and batch.last_offset == 52


def test_magic_1_wrapper_stores_offsets_relative_to_the_base() -> None:
    records = [Record(1000, 1, None, b"a"), Record(1003, 2, None, b"b")]
    data = build_legacy_batch(records, magic=1, base_offset=999, codec=Codec.SNAPPY)
    inner = decompress(Codec.SNAPPY, data[34:])
    assert [struct.unpack_from(">q", inner, 0)[0], struct.unpack_from(">q", inner, 35)[0]] == [1, 4]
    assert LegacyBatch.parse(data).records() == records


def test_log_append_time() -> None:
    records = [Record(0, 1, None, b"a"), Record(1, 9, None, b"b")]
    shallow = build_legacy_batch(
        records, magic=1, base_offset=0, timestamp_type="append", log_append_time=777
    )
    for batch in entries_of(shallow):
        assert batch.attributes == 0x08 and batch.timestamp_type == "append"
        assert batch.max_timestamp == 777
        assert batch.records()[0].timestamp == 777
    wrapped = build_legacy_batch(
        records,
        magic=1,
        base_offset=0,
        codec=Codec.GZIP,
        timestamp_type="append",
        log_append_time=777,
    )
    batch = LegacyBatch.parse(wrapped)
    assert batch.attributes == 0x09 and batch.max_timestamp == 777
    assert [r.timestamp for r in batch.records()] == [777, 777]
    # inner messages carry the append time and the timestamp-type bit too (MemoryRecordsBuilder)
    inner = decompress(Codec.GZIP, wrapped[34:])
    assert inner[17] == 0x08 and struct.unpack_from(">q", inner, 18)[0] == 777


def test_wrapper_log_append_time_overrides_inner_timestamps_on_read() -> None:
    inner = entry(0, message(1, 0, 5, None, b"a")) + entry(1, message(1, 0, 6, None, b"b"))
    data = wrapper(inner, offset=1, attributes=0x08, ts=999)
    assert [r.timestamp for r in LegacyBatch.parse(data).records()] == [999, 999]
    data = wrapper(inner, offset=1, ts=999)  # CreateTime: the inner messages' own timestamps
    assert [r.timestamp for r in LegacyBatch.parse(data).records()] == [5, 6]


def test_magic_0_ignores_timestamp_type() -> None:
    data = build_legacy_batch(
        [Record(0, 5, None, b"a")],
        magic=0,
        base_offset=0,
        timestamp_type="append",
        log_append_time=9,
    )
    assert data == entry(0, message(0, 0, -1, None, b"a"))


def test_no_records_is_no_bytes() -> None:
    assert build_legacy_batch([], magic=1, base_offset=0, codec=Codec.GZIP) == b""


@pytest.mark.parametrize(
    "kwargs,records,message_part",
    [
        ({"magic": 2}, [Record(0, 0, None, b"")], "legacy magic must be 0 or 1"),
        (
            {"magic": 1, "codec": Codec.ZSTD},
            [Record(0, 0, None, b"")],
            "ZStandard compression is not supported for magic 1",
        ),
        (
            {"magic": 1},
            [Record(0, 0, None, b"", (("h", b"v"),))],
            "Magic v1 does not support record headers",
        ),
        (
            {"magic": 1},
            [Record(3, 0, None, b""), Record(3, 0, None, b"")],
            "Illegal offset 3 following previous offset 3",
        ),
        ({"magic": 1}, [Record(0, -5, None, b"")], "Invalid negative timestamp -5"),
        (
            {"magic": 1, "timestamp_type": "append"},
            [Record(0, 0, None, b"")],
            "needs log_append_time",
        ),
        (
            {"magic": 1, "timestamp_type": "log"},
            [Record(0, 0, None, b"")],
            "timestamp_type must be",
        ),
    ],
)
def test_builder_rejects_what_kafka_rejects(kwargs, records, message_part) -> None:
    with pytest.raises(ValueError, match=message_part):
        build_legacy_batch(records, base_offset=0, **kwargs)


# --- parse: framing -------------------------------------------------------------------------------


def test_parse_is_zero_copy_and_positions_within_a_buffer() -> None:
    one = build_legacy_batch([Record(3, 1, b"k", b"v")], magic=1, base_offset=3)
    buf = bytearray(b"\xee" * 7 + one + b"\xee" * 5)
    batch = LegacyBatch.parse(buf, 7)
    assert batch.position == 7 and bytes(batch.raw) == one and batch.raw.obj is buf
    assert LegacyBatch.parse(buf, 7, file_position=1000).position == 1007


@pytest.mark.parametrize(
    "data,kind,detail",
    [
        (bytes(11), "torn_tail", "11 bytes left, fewer than a log overhead (12)"),
        (
            struct.pack(">qi", 0, 13) + bytes(13),
            "bad_length",
            "Found record size 13 smaller than minimum record overhead (14)",
        ),
        (
            struct.pack(">qi", 0, -1) + bytes(20),
            "bad_length",
            "Found record size -1 smaller than minimum record overhead (14)",
        ),
        (
            struct.pack(">qi", 4, 30) + bytes(29),
            "torn_tail",
            "entry of 42 bytes at offset 4, only 41 present",
        ),
        (
            struct.pack(">qiIb", 0, 14, 0, 2) + bytes(9),
            "bad_magic",
            "Invalid magic used in LegacyRecord: 2",
        ),
        (
            struct.pack(">qiIb", 0, 14, 0, -1) + bytes(9),
            "bad_magic",
            "Invalid magic used in LegacyRecord: -1",
        ),
    ],
)
def test_parse_errors(data: bytes, kind: str, detail: str) -> None:
    with pytest.raises(FormatError) as info:
        LegacyBatch.parse(data)
    assert (info.value.kind, info.value.detail, info.value.position) == (kind, detail, 0)


def test_crc_is_lazy_and_never_raised_by_parse() -> None:
    data = bytearray(build_legacy_batch([Record(0, 1, b"k", b"value")], magic=1, base_offset=0))
    data[-1] ^= 0x01
    batch = LegacyBatch.parse(data)
    assert batch.crc_valid is False
    computed = zlib.crc32(bytes(data[16:]))
    assert batch.computed_crc() == computed
    kind, detail = kind_and_detail(batch.ensure_valid)
    assert kind == "crc_mismatch"
    assert detail == f"Record is corrupt (stored crc = {batch.crc}, computed crc = {computed})"


def test_offset_is_not_covered_by_the_crc() -> None:
    data = bytearray(build_legacy_batch([Record(0, 1, b"k", b"v")], magic=1, base_offset=0))
    data[7] = 9
    assert LegacyBatch.parse(data).crc_valid and LegacyBatch.parse(data).last_offset == 9


def test_short_v1_message_passes_recovery_but_has_no_records() -> None:
    """Kafka's threshold is 14 for both magics: a 14-byte v1 message with a good CRC is 'valid'."""
    body = struct.pack(">bbq", 1, 0, 42)
    data = entry(8, struct.pack(">I", zlib.crc32(body)) + body)
    batch = LegacyBatch.parse(data)
    assert batch.crc_valid and batch.max_timestamp == 42 and batch.last_offset == 8
    kind, detail = kind_and_detail(batch.records)
    assert kind == "invalid_records" and "ends before its key length" in detail


@pytest.mark.parametrize(
    "msg,detail",
    [
        (
            struct.pack(">IbbqI", 0, 1, 0, 0, 10) + b"abc" + struct.pack(">i", -1),
            "key of 10 bytes runs past",
        ),
        (struct.pack(">Ibbqi", 0, 1, 0, 0, -1) + b"\x00\x00", "ends before its value length"),
        (struct.pack(">Ibbqii", 0, 1, 0, 0, -1, 5) + b"ab", "value of 5 bytes runs past"),
    ],
)
def test_malformed_key_or_value(msg: bytes, detail: str) -> None:
    kind, got = kind_and_detail(LegacyBatch.parse(entry(0, msg)).records)
    assert kind == "invalid_records" and detail in got


def test_negative_lengths_other_than_minus_one_are_null() -> None:
    msg = struct.pack(">Ibbqii", 0, 1, 0, 0, -7, -2)
    assert LegacyBatch.parse(entry(0, msg)).records() == [Record(0, 0, None, None)]


# --- wrappers: DeepRecordsIterator ----------------------------------------------------------------

INNER = (
    entry(0, message(1, 0, 10, b"a", b"1"))
    + entry(1, message(1, 0, 20, b"b", b"2"))
    + entry(2, message(1, 0, 30, b"c", b"3"))
)


@pytest.mark.parametrize(
    "wrapper_offset,offsets", [(2, [0, 1, 2]), (102, [100, 101, 102]), (0, [0, 1, 2])]
)
def test_v1_absolute_offsets_and_the_librdkafka_zero_wrapper(wrapper_offset, offsets) -> None:
    batch = LegacyBatch.parse(wrapper(INNER, offset=wrapper_offset))
    assert [r.offset for r in batch.records()] == offsets
    assert batch.base_offset == offsets[0] and batch.last_offset == wrapper_offset


def test_v1_wrapper_offset_below_the_last_inner_offset() -> None:
    batch = LegacyBatch.parse(wrapper(INNER, offset=1))
    kind, detail = kind_and_detail(batch.records)
    assert kind == "invalid_records"
    assert detail == (
        "Found invalid wrapper offset in compressed v1 message set, wrapper offset '1' is less "
        "than the last inner message offset '2' and it is not zero."
    )


def test_v0_inner_offsets_are_used_as_stored() -> None:
    inner = entry(40, message(0, 0, -1, None, b"x")) + entry(45, message(0, 0, -1, None, b"y"))
    batch = LegacyBatch.parse(wrapper(inner, offset=45, magic=0, codec=2))
    assert batch.records() == [Record(40, None, None, b"x"), Record(45, None, None, b"y")]


def test_inner_magic_may_differ_from_the_wrapper() -> None:
    inner = entry(0, message(0, 0, -1, None, b"x")) + entry(1, message(1, 0, 77, None, b"y"))
    batch = LegacyBatch.parse(wrapper(inner, offset=1, attributes=0x08, ts=5))
    assert batch.records() == [Record(0, None, None, b"x"), Record(1, 5, None, b"y")]


@pytest.mark.parametrize(
    "data,kind,detail",
    [
        (
            wrapper(b"", offset=0),
            "invalid_records",
            "Found invalid compressed record set with no inner records",
        ),
        (
            wrapper(struct.pack(">qi", 0, 13) + bytes(13), offset=0),
            "invalid_records",
            "Record size is less than the minimum record overhead (14)",
        ),
        (
            wrapper(entry(0, message(1, 1, 0, None, b"x")), offset=0),
            "invalid_records",
            "Inner messages must not be compressed",
        ),
        (
            entry(0, message(1, 2, 0, None, None)),
            "invalid_records",
            "Found invalid compressed record set with null value (magic = 1)",
        ),
        (
            entry(0, message(0, 4, 0, None, b"x")),
            "unknown_codec",
            "Invalid wrapper compressionType found in legacy deep record iterator 0",
        ),
        (entry(0, message(1, 6, 0, None, b"x")), "unknown_codec", "Unknown compression type id: 6"),
        (
            entry(0, message(1, 1, 0, None, b"not gzip")),
            "decompression_failed",
            "gzip: Not in GZIP format",
        ),
    ],
)
def test_wrapper_errors(data: bytes, kind: str, detail: str) -> None:
    batch = LegacyBatch.parse(b"\x00" * 5 + data, 5, file_position=100)
    assert batch.crc_valid
    with pytest.raises(FormatError) as info:
        batch.records()
    assert (info.value.kind, info.value.detail, info.value.position) == (kind, detail, 105)


def test_short_trailing_inner_entry_ends_the_iteration_silently() -> None:
    for tail in (bytes(5), struct.pack(">qi", 3, 30) + bytes(10)):
        batch = LegacyBatch.parse(wrapper(INNER + tail, offset=2))
        assert batch.count == 3


def test_inner_crcs_are_checked_as_a_consumer_does() -> None:
    inner = bytearray(INNER)
    inner[-1] ^= 0x01  # the last inner message's value
    batch = LegacyBatch.parse(wrapper(bytes(inner), offset=2))
    assert batch.crc_valid
    assert [r.value for r in batch.records(check_crcs=False)] == [b"1", b"2", b"2"]
    fresh = LegacyBatch.parse(wrapper(bytes(inner), offset=2))
    kind, detail = kind_and_detail(fresh.records)
    assert kind == "invalid_records" and detail.startswith(
        "Record for offset 2 is corrupt (stored crc"
    )


def test_record_crcs_come_from_the_one_decompression(monkeypatch) -> None:
    inner = bytearray(INNER)
    inner[-1] ^= 0x01
    batch = LegacyBatch.parse(wrapper(bytes(inner), offset=2))
    calls = []
    real = compression.decompress
    monkeypatch.setattr(
        compression, "decompress", lambda *a, **kw: calls.append(1) or real(*a, **kw)
    )
    records = batch.records(check_crcs=False)
    crcs = batch.record_crcs()
    assert calls == [1]  # records() decompressed; record_crcs() reused it
    stored = [struct.unpack_from(">I", e.raw, 12)[0] for e in entries_of(bytes(inner))]
    computed = [zlib.crc32(e.raw[16:]) for e in entries_of(bytes(inner))]
    assert crcs == list(zip(stored, computed, strict=True)) and len(crcs) == len(records)
    assert [s == c for s, c in crcs] == [True, True, False]
    # Decoded without the check, the records still fail it when it is asked for.
    kind, detail = kind_and_detail(batch.records)
    assert kind == "invalid_records"
    assert (
        detail
        == f"Record for offset 2 is corrupt (stored crc = {stored[2]}, computed crc = {computed[2]})"
    )


def test_record_crcs_without_records_first_and_of_a_plain_entry() -> None:
    batch = LegacyBatch.parse(wrapper(INNER, offset=2))
    assert [s == c for s, c in batch.record_crcs()] == [True, True, True]
    plain = bytearray(build_legacy_batch([Record(0, 1, b"k", b"v")], magic=1, base_offset=0))
    plain[-1] ^= 0x01
    entry_ = LegacyBatch.parse(plain)
    assert entry_.record_crcs() == [(entry_.crc, zlib.crc32(bytes(plain[16:])))]


def test_decompression_is_capped() -> None:
    inner = entry(0, message(1, 0, 0, None, bytes(100_000)))
    batch = LegacyBatch.parse(wrapper(inner, offset=0))
    kind, detail = kind_and_detail(lambda: batch.records(max_output=50_000))
    assert kind == "decompression_failed" and "decompression bomb" in detail
    assert batch.records()[0].value == bytes(100_000)


# --- the shared read interface and the dump JSON --------------------------------------------------


def test_batch_protocol_and_v2_only_fields() -> None:
    batch = LegacyBatch.parse(build_legacy_batch([Record(0, 0, None, b"")], magic=1, base_offset=0))
    assert isinstance(batch, Batch)
    assert batch.is_transactional is False and batch.is_control is False
    assert all(getattr(batch, name) is None for name in V2_ONLY)


def test_to_json() -> None:
    records = [Record(10, 1000, b"k", None), Record(12, 1200, None, b"v")]
    data = build_legacy_batch(records, magic=1, base_offset=10, codec=Codec.SNAPPY)
    batch = LegacyBatch.parse(data)
    out = batch.to_json()
    assert set(out) == BATCH_JSON_KEYS
    assert out == {
        "position": 0,
        "size": len(data),
        "magic": 1,
        "base_offset": 10,
        "last_offset": 12,
        "count": 2,
        "codec": "snappy",
        "crc": zlib.crc32(data[16:]),
        "crc_valid": True,
        "is_transactional": False,
        "is_control": False,
        "producer_id": None,
        "producer_epoch": None,
        "base_sequence": None,
        "partition_leader_epoch": None,
        "timestamp_type": "create",
        "first_timestamp": 1000,
        "max_timestamp": 1200,
    }
    deep = batch.to_json(deep=True)
    assert deep["records"] == [
        {
            "offset": 10,
            "timestamp": 1000,
            "key": base64.b64encode(b"k").decode(),
            "value": None,
            "headers": [],
        },
        {
            "offset": 12,
            "timestamp": 1200,
            "key": None,
            "value": base64.b64encode(b"v").decode(),
            "headers": [],
        },
    ]


def test_to_json_magic_0_and_undecodable_wrapper() -> None:
    out = LegacyBatch.parse(
        build_legacy_batch([Record(4, 0, None, b"x")], magic=0, base_offset=4)
    ).to_json(deep=True)
    assert out["timestamp_type"] is None and out["max_timestamp"] is None
    assert out["codec"] == "none" and out["records"][0]["timestamp"] is None
    broken = LegacyBatch.parse(entry(9, message(1, 3, 5, None, b"not lz4")))
    shallow = broken.to_json()
    assert (
        shallow["base_offset"] is None and shallow["count"] is None and shallow["last_offset"] == 9
    )
    assert shallow["codec"] == "lz4" and shallow["max_timestamp"] == 5
    with pytest.raises(FormatError):
        broken.to_json(deep=True)


# --- properties -----------------------------------------------------------------------------------

optional_bytes = st.none() | st.binary(max_size=60)


@st.composite
def legacy_specs(draw):
    magic = draw(st.sampled_from([0, 1]))
    codec = draw(st.sampled_from([0, 1, 2, 3]))
    base = draw(st.integers(0, 2**40))
    offset = base
    records = []
    for i in range(draw(st.integers(1, 8))):
        offset += draw(st.integers(1, 50)) if i else draw(st.integers(0, 3))
        records.append(
            Record(offset, draw(st.integers(-1, 2**42)), draw(optional_bytes), draw(optional_bytes))
        )
    append = magic == 1 and draw(st.booleans())
    return {
        "records": records,
        "magic": magic,
        "base_offset": base,
        "codec": codec,
        "timestamp_type": "append" if append else "create",
        "log_append_time": draw(st.integers(0, 2**42)) if append else None,
    }


def expected_records(spec) -> list[Record]:
    def ts(r: Record):
        if spec["magic"] == 0:
            return None
        return spec["log_append_time"] if spec["timestamp_type"] == "append" else r.timestamp

    return [r._replace(timestamp=ts(r)) for r in spec["records"]]


@settings(max_examples=150)
@given(legacy_specs())
def test_round_trip(spec) -> None:
    data = build_legacy_batch(**spec)
    batches = entries_of(data)
    assert all(b.crc_valid for b in batches)
    assert [r for b in batches for r in b.records()] == expected_records(spec)
    if spec["codec"]:
        assert len(batches) == 1
        (batch,) = batches
        assert batch.base_offset == spec["records"][0].offset
        assert batch.count == len(spec["records"])
    assert batches[-1].last_offset == spec["records"][-1].offset
    for batch in batches:
        assert set(batch.to_json(deep=True)) == BATCH_JSON_KEYS | {"records"}


@settings(max_examples=200)
@given(legacy_specs(), st.data())
def test_mutations_raise_only_format_errors(spec, data) -> None:
    buf = bytearray(build_legacy_batch(**spec))
    for _ in range(data.draw(st.integers(1, 3))):
        action = data.draw(st.sampled_from(["flip", "cut", "insert", "int"]))
        i = data.draw(st.integers(0, max(0, len(buf) - 1)))
        if action == "flip" and buf:
            buf[i] ^= data.draw(st.integers(1, 255))
        elif action == "cut":
            del buf[i:]
        elif action == "insert":
            buf[i:i] = data.draw(st.binary(min_size=1, max_size=8))
        elif i + 4 <= len(buf):
            buf[i : i + 4] = struct.pack(
                ">i", data.draw(st.sampled_from([-1, -2, 0, 13, 14, 2**31 - 1]))
            )
    pos = 0
    while pos < len(buf):
        try:
            batch = LegacyBatch.parse(buf, pos)
        except FormatError:
            break
        assert batch.crc_valid in (True, False)
        try:
            batch.to_json(deep=True)
        except FormatError:
            pass
        pos += batch.size
