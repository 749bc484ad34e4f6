"""Kafka's varints: round trips, limits and the leniencies a byte-exact reader must copy (spec fmt §1.2-1.4)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from logrepair.format.errors import FormatError
from logrepair.format.varint import (
    read_unsigned_varint,
    read_unsigned_varlong,
    read_varint,
    read_varlong,
    size_of_varint,
    size_of_varlong,
    write_unsigned_varint,
    write_unsigned_varlong,
    write_varint,
    write_varlong,
)

int32 = st.integers(min_value=-(2**31), max_value=2**31 - 1)
int64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)


@given(int32, st.binary(max_size=4))
def test_varint_round_trip(n: int, trailer: bytes) -> None:
    encoded = write_varint(n)
    assert len(encoded) == size_of_varint(n) <= 5
    assert read_varint(encoded + trailer, 0) == (n, len(encoded))


@given(int64)
def test_varlong_round_trip(n: int) -> None:
    encoded = write_varlong(n)
    assert len(encoded) == size_of_varlong(n) <= 10
    assert read_varlong(b"\xaa" + encoded, 1) == (n, 1 + len(encoded))


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_unsigned_varint_round_trip(u: int) -> None:
    assert read_unsigned_varint(write_unsigned_varint(u), 0)[0] == u


@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_unsigned_varlong_round_trip(u: int) -> None:
    assert read_unsigned_varlong(write_unsigned_varlong(u), 0)[0] == u


@pytest.mark.parametrize(
    ("n", "encoded"),
    [
        (0, "00"),
        (-1, "01"),
        (1, "02"),
        (63, "7e"),
        (-64, "7f"),
        (64, "8001"),
        (2**31 - 1, "feffffff0f"),
    ],
)
def test_known_zigzag_encodings(n: int, encoded: str) -> None:
    assert write_varint(n).hex() == encoded
    assert read_varint(bytes.fromhex(encoded), 0) == (n, len(encoded) // 2)


def test_non_minimal_encodings_are_accepted() -> None:
    assert read_varint(b"\x80\x00", 0) == (0, 2)
    assert read_varint(b"\x81\x80\x80\x80\x00", 0) == (-1, 5)
    assert read_varlong(b"\x82\x80\x80\x80\x80\x80\x80\x80\x80\x00", 0) == (1, 10)


def test_fifth_byte_high_bits_are_discarded_as_kafka_does() -> None:
    # 0x7f in the 5th byte: only its low 4 bits reach the int32; the rest fall off.
    assert read_unsigned_varint(b"\xff\xff\xff\xff\x7f", 0) == (0xFFFFFFFF, 5)
    assert read_unsigned_varint(b"\x80\x80\x80\x80\x70", 0) == (0, 5)
    assert read_varint(b"\x80\x80\x80\x80\x70", 0) == (0, 5)


def test_tenth_byte_keeps_only_bit_63() -> None:
    assert read_unsigned_varlong(b"\x80" * 9 + b"\x01", 0) == (1 << 63, 10)
    assert read_unsigned_varlong(b"\x80" * 9 + b"\x7e", 0) == (0, 10)


def test_overlong_varint_names_its_position() -> None:
    with pytest.raises(FormatError) as e:
        read_varint(b"\x00\x00\x80\x80\x80\x80\x80\x00", 2)
    assert e.value.kind == "overlong_varint"
    assert e.value.position == 2
    assert "most significant bit in the 5th byte is set" in e.value.detail


def test_overlong_varlong() -> None:
    with pytest.raises(FormatError) as e:
        read_varlong(b"\xff" * 11, 0)
    assert e.value.kind == "overlong_varint"
    assert "10th byte" in e.value.detail


@pytest.mark.parametrize("data", [b"", b"\x80", b"\xff\xff\xff\xff"])
def test_truncated_varint(data: bytes) -> None:
    with pytest.raises(FormatError) as e:
        read_varint(data, 0)
    assert e.value.kind == "truncated_varint"
    assert e.value.position == 0


def test_truncated_varlong_reads_no_further_than_the_buffer() -> None:
    with pytest.raises(FormatError) as e:
        read_varlong(memoryview(b"\x01\xff\xff")[1:], 0)
    assert e.value.kind == "truncated_varint"


@pytest.mark.parametrize(
    ("writer", "value"),
    [
        (write_varint, 2**31),
        (write_varint, -(2**31) - 1),
        (write_varlong, 2**63),
        (write_unsigned_varint, -1),
        (write_unsigned_varint, 2**32),
        (write_unsigned_varlong, 2**64),
    ],
)
def test_writers_refuse_out_of_range(writer, value: int) -> None:
    with pytest.raises(ValueError):
        writer(value)
