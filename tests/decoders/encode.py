"""A schema-driven encoder for tests: writes a struct dict as Kafka's generated writers would.

It is written independently of the decoder's reader (only the schema tables are shared), so a round
trip checks the reader against the encoding rules of spec fmt §1.6, not against itself.
"""

from __future__ import annotations

import struct
from typing import Any

from logrepair.decoders.schema import Array, Message, Struct
from logrepair.format.varint import write_unsigned_varint

_FMT = {"int8": ">b", "int16": ">h", "int32": ">i", "int64": ">q"}


def encode(message: Message, data: dict[str, Any], version: int, *, prefix: bool = True) -> bytes:
    """`data` uses JSON field names; missing fields take their default (or 0 / "" / [])."""
    flexible = message.is_flexible(version)
    body = _struct(message, data, version, flexible)
    return (struct.pack(">h", version) if prefix else b"") + body


def _struct(st: Struct, data: dict[str, Any], version: int, flexible: bool) -> bytes:
    out = bytearray()
    tagged: list[tuple[int, bytes]] = []
    for f in st.fields:
        if not f.in_version(version):
            continue
        value = data.get(f.json_name, f.default if f.default is not None else _zero(f.type))
        if f.tag is not None:
            if value != f.default and f.json_name in data:
                enc = value if f.type == "raw" else _value(f.type, value, version, flexible)
                tagged.append((f.tag, enc))
            continue
        out += _value(f.type, value, version, flexible)
    if flexible:
        out += write_unsigned_varint(len(tagged))
        for tag, enc in sorted(tagged):
            out += write_unsigned_varint(tag) + write_unsigned_varint(len(enc)) + enc
    return bytes(out)


def _zero(t: Any) -> Any:
    if isinstance(t, Array):
        return []
    if isinstance(t, Struct):
        return {}
    return {"string": "", "bytes": b""}.get(t, 0)


def _length(n: int, flexible: bool, fixed: str) -> bytes:
    if flexible:
        return write_unsigned_varint(n + 1)
    return struct.pack(fixed, n)


def _value(t: Any, value: Any, version: int, flexible: bool) -> bytes:
    if isinstance(t, Struct):
        return _struct(t, value, version, flexible)
    if isinstance(t, Array):
        if value is None:
            return _length(-1, flexible, ">i") if not flexible else write_unsigned_varint(0)
        return _length(len(value), flexible, ">i") + b"".join(
            _value(t.element, v, version, flexible) for v in value
        )
    if t in _FMT:
        return struct.pack(_FMT[t], value)
    if t == "string":
        if value is None:
            return struct.pack(">h", -1) if not flexible else write_unsigned_varint(0)
        raw = value.encode()
        return _length(len(raw), flexible, ">h") + raw
    if t == "bytes":
        if value is None:
            return struct.pack(">i", -1) if not flexible else write_unsigned_varint(0)
        return _length(len(value), flexible, ">i") + bytes(value)
    raise AssertionError(t)
