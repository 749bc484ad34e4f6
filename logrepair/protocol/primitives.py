"""The protocol's primitive types (the guide's "协议原始类型"), read from and written to buffers.

Fixed-size integers are big-endian; STRING/BYTES/ARRAY carry an INT16/INT32 length (-1 for null)
and their COMPACT forms (flexible versions) an unsigned varint of length + 1 (0 for null). A reader
that runs past its buffer raises `ProtocolError` naming the position, never IndexError.
"""

from __future__ import annotations

import struct
import uuid

from ..format.errors import FormatError
from ..format.varint import read_unsigned_varint, write_unsigned_varint
from .errors import ProtocolError

_FIXED = {
    "int8": struct.Struct(">b"),
    "int16": struct.Struct(">h"),
    "uint16": struct.Struct(">H"),
    "int32": struct.Struct(">i"),
    "int64": struct.Struct(">q"),
    "float64": struct.Struct(">d"),
}
_INT32 = _FIXED["int32"]
_INT16 = _FIXED["int16"]


class Reader:
    """A cursor over one frame's bytes."""

    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes | memoryview, pos: int = 0) -> None:
        self.buf = memoryview(buf)
        self.pos = pos

    @property
    def remaining(self) -> int:
        return len(self.buf) - self.pos

    def fixed(self, kind: str) -> int | float:
        s = _FIXED[kind]
        if self.pos + s.size > len(self.buf):
            raise ProtocolError(f"frame ended inside an {kind} at byte {self.pos}")
        (value,) = s.unpack_from(self.buf, self.pos)
        self.pos += s.size
        return value

    def boolean(self) -> bool:
        return self.fixed("int8") != 0

    def uvarint(self) -> int:
        try:
            value, self.pos = read_unsigned_varint(self.buf, self.pos)
        except FormatError as e:
            raise ProtocolError(str(e)) from None
        return value

    def take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.buf):
            raise ProtocolError(f"a field of {n} bytes at byte {self.pos} runs past the frame")
        out = self.buf[self.pos : self.pos + n]
        self.pos += n
        return out

    def length(self, compact: bool, wide: bool) -> int:
        """A STRING/BYTES/ARRAY length; -1 means null."""
        if compact:
            return self.uvarint() - 1
        return self.fixed("int32" if wide else "int16")

    def string(self, compact: bool) -> str | None:
        n = self.length(compact, wide=False)
        if n < 0:
            return None
        raw = self.take(n)
        try:
            return str(raw, "utf-8")
        except UnicodeDecodeError:
            raise ProtocolError(f"a string at byte {self.pos - n} is not UTF-8") from None

    def bytes_(self, compact: bool) -> bytes | None:
        n = self.length(compact, wide=True)
        return None if n < 0 else bytes(self.take(n))

    def uuid(self) -> uuid.UUID:
        return uuid.UUID(bytes=bytes(self.take(16)))


class Writer:
    """An output buffer; `bytes(w.out)` is the encoding."""

    __slots__ = ("out",)

    def __init__(self) -> None:
        self.out = bytearray()

    def fixed(self, kind: str, value) -> None:
        try:
            self.out += _FIXED[kind].pack(value)
        except struct.error as e:
            raise ValueError(f"{kind} value {value!r}: {e}") from None

    def boolean(self, value: bool) -> None:
        self.out.append(1 if value else 0)

    def uvarint(self, value: int) -> None:
        self.out += write_unsigned_varint(value)

    def length(self, n: int, compact: bool, wide: bool) -> None:
        if compact:
            self.uvarint(n + 1)
        else:
            self.out += (_INT32 if wide else _INT16).pack(n)

    def string(self, value: str | None, compact: bool) -> None:
        if value is None:
            self.length(-1, compact, wide=False)
            return
        data = value.encode("utf-8")
        self.length(len(data), compact, wide=False)
        self.out += data

    def bytes_(self, value: bytes | memoryview | None, compact: bool) -> None:
        if value is None:
            self.length(-1, compact, wide=True)
            return
        self.length(len(value), compact, wide=True)
        self.out += value

    def uuid(self, value: uuid.UUID) -> None:
        self.out += value.bytes
