"""Deep record reading three ways, held to one answer: the C accelerator (`logrepair.format._records`),
the pure-Python reader of record_codec.py, and a reference reader spelled out below.

On every records region, valid or damaged, each returns the same records (same values, same types)
or raises the same `FormatError` (kind, detail, position). The cross-implementation tests skip, saying
why, where the extension is not built; the reference tests always run.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logrepair.format import record_codec
from logrepair.format.batch_layout import Record
from logrepair.format.errors import FormatError
from logrepair.format.record_codec import check_records_python, decode_records_python, encode_record

try:
    from logrepair.format import _records
except ImportError:
    _records = None
else:
    _records.bind(Record, FormatError)  # record_codec.py skips this under LOGREPAIR_PURE_PYTHON=1

needs_accelerator = pytest.mark.skipif(
    _records is None,
    reason="the C accelerator logrepair.format._records is not built (no C compiler or Python "
    "headers when the project was installed)",
)

INT32_MAX = 2**31 - 1


# --- the reference reader ---------------------------------------------------------------------------


class _Underflow(Exception):
    """Kafka's BufferUnderflowException / IllegalArgumentException inside a record."""


def _varint(data: bytes, p: int, max_bytes: int = 5, bits: int = 32) -> tuple[int, int]:
    """A zig-zag varint (a varlong: 10 bytes, 64 bits): low bits of its last byte kept."""
    u = 0
    for i in range(max_bytes):
        if p >= len(data):
            raise _Underflow
        b = data[p]
        p += 1
        u |= (b & 0x7F) << (7 * i)
        if b < 0x80:
            u &= (1 << bits) - 1
            return (u >> 1) ^ -(u & 1), p
    raise _Underflow


def _bytes(data: bytes, p: int, n: int) -> tuple[bytes | None, int]:
    """A nullable field of `n` bytes: a negative length is null; one past the buffer is an error."""
    if n < 0:
        return None, p
    if p + n > len(data):
        raise _Underflow
    return data[p : p + n], p + n


def reference_decode(
    data, count, base_offset, base_timestamp, log_append_time, base_sequence, position=0
):
    """`DefaultRecord.readFrom` over a records region, straight from spec fmt §2.7: no fast paths."""
    data = bytes(data)

    def invalid(detail: str) -> FormatError:
        return FormatError("invalid_records", detail, position)

    records = []
    pos = 0
    for _ in range(count):
        try:
            length, pos = _varint(data, pos)
        except _Underflow:
            raise FormatError(
                "record_count_mismatch",
                "Incorrect declared batch size, premature EOF reached",
                position,
            ) from None
        if length < 0 or pos + length > len(data):
            raise invalid(
                f"Invalid record size: expected {length} bytes in record payload, but instead the "
                f"buffer has only {len(data) - pos} remaining bytes."
            )
        start = pos
        try:
            p = start + 1  # attributes: no bits defined
            timestamp_delta, p = _varint(data, p, 10, 64)
            offset_delta, p = _varint(data, p)
            n, p = _varint(data, p)
            key, p = _bytes(data, p, n)
            n, p = _varint(data, p)
            value, p = _bytes(data, p, n)
            header_count, p = _varint(data, p)
            if header_count < 0:
                raise invalid(f"Found invalid number of record headers {header_count}")
            if header_count > len(data) - p:
                raise invalid(
                    f"Found invalid number of record headers. {header_count} is larger than the "
                    "remaining size of the buffer"
                )
            headers = []
            for _ in range(header_count):
                n, p = _varint(data, p)
                if n < 0:
                    raise invalid(f"Invalid negative header key size {n}")
                header_key, p = _bytes(data, p, n)
                n, p = _varint(data, p)
                header_value, p = _bytes(data, p, n)
                headers.append((header_key.decode("utf-8", "replace"), header_value))
        except _Underflow:
            raise invalid("Found invalid record structure") from None
        if p != start + length:
            raise invalid(
                f"Invalid record size: expected to read {length} bytes in record payload, but "
                f"instead read {p - start}"
            )
        sequence = -1
        if base_sequence >= 0:
            sequence = base_sequence + offset_delta
            if sequence > INT32_MAX:
                sequence -= 2**31
        timestamp = base_timestamp + timestamp_delta if log_append_time is None else log_append_time
        records.append(
            Record(base_offset + offset_delta, timestamp, key, value, tuple(headers), sequence)
        )
        pos = start + length
    if pos != len(data):
        raise FormatError(
            "record_count_mismatch",
            "Incorrect declared batch size, records still remaining in file",
            position,
        )
    return records


def reference_check(data, count, position=0) -> None:
    """Deep verification: the reference's verdict, nothing returned."""
    reference_decode(data, count, 0, 0, None, -1, position)


# --- records regions ----------------------------------------------------------------------------------


def _uvarint(u: int, pad: int) -> bytes:
    """An unsigned varint with `pad` extra bytes (a non-minimal encoding, which Kafka accepts)."""
    out = bytearray()
    while u >= 0x80:
        out.append(u & 0x7F | 0x80)
        u >>= 7
    if pad:
        out.append(u | 0x80)
        out += b"\x80" * (pad - 1) + b"\x00"
    else:
        out.append(u)
    return bytes(out)


@st.composite
def varints(draw, value: int, bits: int = 32) -> bytes:
    zigzag = ((value << 1) ^ (value >> (bits - 1))) & ((1 << bits) - 1)
    minimal = len(_uvarint(zigzag, 0))
    return _uvarint(zigzag, draw(st.integers(0, (5 if bits == 32 else 10) - minimal)))


int32s = st.integers(-(2**31), INT32_MAX)
int64s = st.integers(-(2**63), 2**63 - 1)
# Negative lengths other than -1 are null too, as Kafka reads them.
null_lengths = st.sampled_from([-1, -1, -2, -(2**31)])
fields = st.none() | st.binary(max_size=40) | st.binary(min_size=100, max_size=300)
header_keys = st.text(max_size=6).map(str.encode) | st.binary(max_size=6)  # not always UTF-8


@st.composite
def lengths(draw, n: int, lie: bool) -> bytes:
    """The varint of the length `n`; with `lie`, now and then one the bytes after it do not match."""
    if lie and draw(st.integers(0, 5)) == 0:
        n = draw(st.sampled_from([n + 1, n + 2, n + 64, n - 1, INT32_MAX]))
    return draw(varints(n))


@st.composite
def nullable(draw, value: bytes | None, lie: bool) -> bytes:
    if value is None:
        return draw(varints(draw(null_lengths)))
    return draw(lengths(len(value), lie)) + value


@st.composite
def record_bodies(draw, lie: bool = False) -> bytes:
    """One record, length included, of any field shape Kafka reads, varints possibly non-minimal;
    with `lie`, some lengths and counts do not match what follows them."""
    body = bytes([draw(st.integers(0, 255))])
    body += draw(varints(draw(int64s | st.integers(-300, 300)), 64))
    body += draw(varints(draw(int32s | st.integers(-300, 300))))
    body += draw(nullable(draw(fields), lie))
    body += draw(nullable(draw(fields), lie))
    headers = draw(st.lists(st.tuples(header_keys, st.none() | st.binary(max_size=20)), max_size=4))
    body += draw(lengths(len(headers), lie))
    for key, value in headers:
        body += draw(lengths(len(key), lie)) + key + draw(nullable(value, lie))
    return draw(lengths(len(body), lie)) + body


@st.composite
def valid_regions(draw, lie: bool = False) -> tuple[bytes, int]:
    records = draw(st.lists(record_bodies(lie), max_size=6))
    return b"".join(records), len(records)


DAMAGE = [
    b"\xff\xff\xff\xff\x7f",  # varint of 5 bytes, the most it may have
    b"\xff\xff\xff\xff\xff\x01",  # overlong varint
    b"\x80" * 10 + b"\x01",  # overlong varlong
    b"\xfe\xff\xff\xff\x0f",  # length 2**31 - 1
    b"\x03",  # length -2
    b"\xff\xff\xff\xff\x0f",  # length -(2**31)
    b"\x80\x00",  # a zero of two bytes
]


@st.composite
def damaged_regions(draw) -> tuple[bytes, int]:
    """Records whose lengths may lie, then flipped, cut, grown or given odd varints."""
    data, count = draw(valid_regions(lie=True))
    data = bytearray(data)
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(["flip", "truncate", "insert", "delete", "varint"]))
        at = draw(st.integers(0, len(data)))
        if op == "flip" and at < len(data):
            data[at] ^= draw(st.integers(1, 255))
        elif op == "truncate":
            del data[at:]
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete":
            del data[at : at + draw(st.integers(1, 4))]
        elif op == "varint":
            data[at:at] = draw(st.sampled_from(DAMAGE))
    return bytes(data), count + draw(st.sampled_from([0, 0, 0, -1, 1, 2**31 - 1]))


bases = int64s | st.integers(-(2**80), 2**80)  # past 64 bits: the C reader's big-int path
sequences = st.sampled_from([-1, 0]) | st.integers(INT32_MAX - 400, INT32_MAX) | int32s | bases
decode_args = st.tuples(
    bases, bases, st.none() | st.none() | int64s, sequences, st.integers(0, 2**40)
)
buffers = st.sampled_from([bytes, bytearray, memoryview])


def outcome(fn, *args):
    """Records with their types, or the error as (kind, detail, position)."""
    try:
        result = fn(*args)
    except FormatError as e:
        return "error", e.kind, e.detail, e.position
    if result is None:
        return "ok", None
    return "ok", [
        (
            type(r),
            tuple(r),
            type(r.key),
            type(r.value),
            type(r.headers),
            [(type(h), type(k), type(v)) for h in r.headers for k, v in [h]],
        )
        for r in result
    ]


def decoders() -> list:
    found = [decode_records_python]
    if _records is not None:
        found.append(_records.decode_records)
    return found


# --- the reference holds the readers ------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(valid_regions(), decode_args)
def test_valid_regions_decode_as_the_reference_does(region, args) -> None:
    data, count = region
    expected = outcome(reference_decode, data, count, *args)
    assert expected[0] == "ok"
    for decode in decoders():
        assert outcome(decode, data, count, *args) == expected, decode


@settings(max_examples=300, deadline=None)
@given(damaged_regions(), decode_args)
def test_damaged_regions_read_as_the_reference_reads_them(region, args) -> None:
    data, count = region
    expected = outcome(reference_decode, data, count, *args)
    for decode in decoders():
        assert outcome(decode, data, count, *args) == expected, decode
    assert outcome(check_records_python, data, count, args[-1]) == outcome(
        reference_check, data, count, args[-1]
    )


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=48), st.integers(0, 5))
def test_noise_reads_as_the_reference_reads_it(data: bytes, count: int) -> None:
    expected = outcome(reference_decode, data, count, 5, 7, None, 3, 11)
    for decode in decoders():
        assert outcome(decode, data, count, 5, 7, None, 3, 11) == expected, decode


def test_last_header_value_past_the_records_is_invalid_structure() -> None:
    """Kafka's `position()` throws there; reading on would report a size mismatch instead."""
    body = b"\x00\x00\x00\x01\x01\x02\x04ab\x7e"  # one header "ab", value: 63 bytes, none there
    data = bytes([len(body) * 2]) + body
    expected = ("error", "invalid_records", "Found invalid record structure", 0)
    assert outcome(reference_decode, data, 1, 0, 0, None, -1) == expected
    for decode in decoders():
        assert outcome(decode, data, 1, 0, 0, None, -1) == expected


# --- C against Python --------------------------------------------------------------------------------


@needs_accelerator
@settings(max_examples=200, deadline=None)
@given(valid_regions() | damaged_regions(), decode_args, buffers)
def test_accelerator_decodes_as_python_does(region, args, buffer) -> None:
    data, count = region
    assert outcome(_records.decode_records, buffer(data), count, *args) == outcome(
        decode_records_python, buffer(data), count, *args
    )


@needs_accelerator
@settings(max_examples=200, deadline=None)
@given(valid_regions() | damaged_regions(), st.integers(0, 2**40), buffers)
def test_accelerator_checks_as_python_does(region, position, buffer) -> None:
    data, count = region
    assert outcome(_records.check_records, buffer(data), count, position) == outcome(
        check_records_python, buffer(data), count, position
    )


@needs_accelerator
@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64), st.integers(-2, 6))
def test_accelerator_reads_noise_as_python_does(data: bytes, count: int) -> None:
    assert outcome(_records.decode_records, data, count, 0, 0, 9, 0) == outcome(
        decode_records_python, data, count, 0, 0, 9, 0
    )
    assert outcome(_records.check_records, data, count) == outcome(
        check_records_python, data, count
    )


@needs_accelerator
@pytest.mark.parametrize("count", [2**31 - 1, 2**70])
def test_a_huge_count_fails_at_the_end_of_the_records(count: int) -> None:
    """No list of `count` entries is allocated: the count runs out of bytes first."""
    data = encode_record(0, 0, b"k", b"v")
    for fn, args in (
        (_records.decode_records, (data, count, 0, 0, None, -1, 4)),
        (_records.check_records, (data, count, 4)),
    ):
        with pytest.raises(FormatError) as e:
            fn(*args)
        assert (e.value.kind, e.value.position) == ("record_count_mismatch", 4)


@needs_accelerator
def test_arguments_are_taken_as_python_takes_them() -> None:
    data = encode_record(3, 4, None, b"v", [("h", None)])
    expected = decode_records_python(data, 1, 10, 20, None, 5, 0)
    assert (
        _records.decode_records(
            data, 1, base_offset=10, base_timestamp=20, log_append_time=None, base_sequence=5
        )
        == expected
    )
    assert _records.check_records(data, count=1, position=9) is None
    for call in (
        lambda: _records.decode_records(data, 1, 10, 20, None),
        lambda: _records.decode_records(data, 1, 10, 20, None, 5, 0, 1),
        lambda: _records.check_records(data, 1, where=0),
        lambda: _records.check_records(data, 1, 0, position=0),
        lambda: _records.check_records("text", 1),
        lambda: _records.decode_records(data, 1, "10", 20, None, 5),
    ):
        with pytest.raises(TypeError):
            call()


@needs_accelerator
def test_the_build_is_of_the_current_source() -> None:
    """An in-place build left over from an older `_records.c` would test the wrong code."""
    source = Path(record_codec.__file__).with_name("_records.c")
    if not source.exists():
        pytest.skip("installed without its C source")
    assert _records.SOURCE_SHA256 == hashlib.sha256(source.read_bytes()).hexdigest(), (
        "stale build of logrepair/format/_records.c: rebuild it (pip install -e .)"
    )


@needs_accelerator
def test_bind_takes_only_a_plain_tuple_subclass() -> None:
    class WithDict(tuple):
        pass  # no __slots__: its items would not be where a tuple's are

    with pytest.raises(TypeError):
        _records.bind(WithDict, FormatError)
    with pytest.raises(TypeError):
        _records.bind(Record, int)
    _records.bind(Record, FormatError)


# --- selection --------------------------------------------------------------------------------------


def _accelerated_in_child(**env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if k != "LOGREPAIR_PURE_PYTHON"} | env
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "from logrepair.format import record_codec as c; "
            "print(c.ACCELERATED, c.decode_records.__module__, c.check_records.__module__)",
        ],
        env=environ,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()


def test_pure_python_is_forced_by_the_environment() -> None:
    assert _accelerated_in_child(LOGREPAIR_PURE_PYTHON="1") == [
        "False",
        "logrepair.format.record_codec",
        "logrepair.format.record_codec",
    ]


def test_the_accelerator_is_used_when_built() -> None:
    built = _records is not None
    module = "logrepair.format._records" if built else "logrepair.format.record_codec"
    for env in ({}, {"LOGREPAIR_PURE_PYTHON": "0"}):
        assert _accelerated_in_child(**env) == [str(built), module, module]
    assert record_codec.ACCELERATED == (
        built and os.environ.get("LOGREPAIR_PURE_PYTHON", "0") in ("", "0")
    )
