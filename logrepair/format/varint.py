"""Kafka's varints (spec fmt §1.2-1.4): zig-zag varint/varlong and unsigned varints.

Readers follow Kafka's limits exactly: at most 5 bytes for a varint and 10 for a varlong, non-minimal
encodings accepted, only the low bits of the last byte kept. Running out of bytes or an overlong
encoding raises `FormatError` naming the position, never IndexError.
"""

from __future__ import annotations

from .errors import FormatError


def read_unsigned_varint(buf, pos: int) -> tuple[int, int]:
    """Returns (value as uint32, position after it)."""
    end = len(buf)
    value = 0
    shift = 0
    start = pos
    for _ in range(5):
        if pos >= end:
            raise FormatError("truncated_varint", "input ended inside a varint", start)
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value & 0xFFFFFFFF, pos
        shift += 7
    raise FormatError(
        "overlong_varint",
        "Varint is too long, the most significant bit in the 5th byte is set",
        start,
    )


def read_varint(buf, pos: int) -> tuple[int, int]:
    """Zig-zag int32: returns (value, position after it)."""
    u, pos = read_unsigned_varint(buf, pos)
    n = (u >> 1) ^ -(u & 1)
    return n, pos


def read_unsigned_varlong(buf, pos: int) -> tuple[int, int]:
    end = len(buf)
    value = 0
    shift = 0
    start = pos
    for _ in range(10):
        if pos >= end:
            raise FormatError("truncated_varint", "input ended inside a varlong", start)
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value & 0xFFFFFFFFFFFFFFFF, pos
        shift += 7
    raise FormatError(
        "overlong_varint",
        "Varlong is too long, most significant bit in the 10th byte is set",
        start,
    )


def read_varlong(buf, pos: int) -> tuple[int, int]:
    """Zig-zag int64: returns (value, position after it)."""
    u, pos = read_unsigned_varlong(buf, pos)
    return (u >> 1) ^ -(u & 1), pos


def write_unsigned_varint(value: int) -> bytes:
    if not 0 <= value <= 0xFFFFFFFF:
        raise ValueError(f"unsigned varint out of range: {value}")
    return _write_unsigned(value)


def write_unsigned_varlong(value: int) -> bytes:
    if not 0 <= value <= 0xFFFFFFFFFFFFFFFF:
        raise ValueError(f"unsigned varlong out of range: {value}")
    return _write_unsigned(value)


def write_varint(value: int) -> bytes:
    if not -(2**31) <= value < 2**31:
        raise ValueError(f"varint out of int32 range: {value}")
    return _write_unsigned(((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def write_varlong(value: int) -> bytes:
    if not -(2**63) <= value < 2**63:
        raise ValueError(f"varlong out of int64 range: {value}")
    return _write_unsigned(((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


def _write_unsigned(u: int) -> bytes:
    if u < 0x80:
        return _SMALL[u]
    out = bytearray()
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


_SMALL = [bytes([i]) for i in range(0x80)]


def size_of_varint(value: int) -> int:
    return len(write_varint(value))


def size_of_varlong(value: int) -> int:
    return len(write_varlong(value))
