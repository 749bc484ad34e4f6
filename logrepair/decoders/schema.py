"""Kafka's generated-message encoding (spec fmt §1.6), driven by schemas declared as data.

Kafka generates a Java class per JSON schema; here one small interpreter reads any schema declared with
`Message`/`Struct`/`Field`, so each internal-topic record type is a table, not a parser. The reader
follows the generated readers' checks and messages (so dump output can match kafka-dump-log), and every
length is checked against the bytes left before anything is allocated: hostile input ends in
`DecodeError`, never in another exception or a huge allocation.

Decoded structs are dicts keyed by Kafka's JSON field names (schema name, first letter lower-cased), in
schema order, holding only what the version carries: fields outside the version are absent, tagged
fields only when present with a non-default value, exactly what Kafka's JsonConverter writes.
"""

from __future__ import annotations

import base64
import struct
from dataclasses import dataclass
from typing import Any

MAX_VERSION = 0x7FFF
MAX_STRING_LENGTH = 0x7FFF


class Uuid(bytes):
    """A `uuid` field's 16 bytes; JSON shows it as Kafka's `Uuid.toString()` (URL-safe base64, no
    padding)."""

    def __str__(self) -> str:
        return base64.urlsafe_b64encode(self).decode("ascii").rstrip("=")


class DecodeError(ValueError):
    """Bytes that are not a valid record of the schema. The message is Kafka's text where it has one."""


class UnknownRecordType(DecodeError):
    """A `__consumer_offsets` key whose record type no known schema has."""

    def __init__(self, record_type: int) -> None:
        super().__init__(f"Unknown record type {record_type}")
        self.record_type = record_type


def versions(spec: str) -> tuple[int, int] | None:
    """Kafka's version-range notation: "3", "1+", "0-4", "none"."""
    if spec == "none":
        return None
    if spec.endswith("+"):
        return int(spec[:-1]), MAX_VERSION
    lo, _, hi = spec.partition("-")
    return int(lo), int(hi or lo)


@dataclass(frozen=True)
class Array:
    """`[]<element>`: element is a primitive type name or a `Struct`."""

    element: str | Struct


@dataclass(frozen=True)
class Field:
    """One schema field. `name` is the schema's (PascalCase); JSON uses `json_name`.

    Type "raw" (tagged fields only) keeps a tagged field's bytes undecoded, for a structure the spec
    does not give.
    """

    name: str
    type: str | Array | Struct
    versions: str = "0+"
    nullable: str = "none"
    tag: int | None = None
    default: Any = None

    @property
    def json_name(self) -> str:
        return self.name[0].lower() + self.name[1:]

    def in_version(self, version: int) -> bool:
        rng = versions(self.versions)
        return rng is not None and rng[0] <= version <= rng[1]

    def nullable_in(self, version: int) -> bool:
        rng = versions(self.nullable)
        return rng is not None and rng[0] <= version <= rng[1]


@dataclass(frozen=True)
class Struct:
    name: str
    fields: tuple[Field, ...]


@dataclass(frozen=True)
class Message(Struct):
    """A top-level schema: readable versions and the first flexible (compact + tagged) one."""

    valid: str = "0"
    flexible: str = "none"

    def is_flexible(self, version: int) -> bool:
        rng = versions(self.flexible)
        return rng is not None and rng[0] <= version <= rng[1]


_INT = {
    "int8": struct.Struct(">b"),
    "int16": struct.Struct(">h"),
    "int32": struct.Struct(">i"),
    "int64": struct.Struct(">q"),
}


class Reader:
    """A cursor over one buffer, with the generated readers' primitives."""

    def __init__(self, buf: bytes | memoryview) -> None:
        self.buf = memoryview(buf)
        self.pos = 0

    @property
    def remaining(self) -> int:
        return len(self.buf) - self.pos

    def int(self, kind: str) -> int:
        s = _INT[kind]
        if self.remaining < s.size:
            # Java's BufferUnderflowException has no message; Kafka prints "null".
            raise DecodeError("null")
        (value,) = s.unpack_from(self.buf, self.pos)
        self.pos += s.size
        return value

    def unsigned_varint(self) -> int:
        """As Java's `readUnsignedVarint`: an int32 (bit 31 of a 5-byte varint makes it negative)."""
        value = 0
        for i in range(5):
            if self.pos >= len(self.buf):
                raise DecodeError("null")
            b = self.buf[self.pos]
            self.pos += 1
            if i == 4:
                if b & 0x80:
                    raise DecodeError(
                        "Varint is too long, the most significant bit in the 5th byte is set, "
                        f"converted value: {value:x}"
                    )
                value = (value | (b << 28)) & 0xFFFFFFFF
                return value - (1 << 32) if value & 0x80000000 else value
            value |= (b & 0x7F) << (7 * i)
            if not b & 0x80:
                return value
        raise AssertionError("unreachable")

    def take(self, length: int) -> bytes:
        if length > self.remaining:
            raise DecodeError(
                f"Error reading byte array of {length} byte(s): only {self.remaining} byte(s) available"
            )
        out = bytes(self.buf[self.pos : self.pos + length])
        self.pos += length
        return out


def read_message(message: Message, buf: bytes | memoryview, version: int) -> dict[str, Any]:
    """Reads `message` at `version` from the start of `buf` (trailing bytes are not checked, as Kafka)."""
    lo, hi = versions(message.valid) or (0, -1)
    if version > hi or (lo > 0 and version < lo):
        raise DecodeError(f"Can't read version {version} of {message.name}")
    return _read_struct(message, Reader(buf), version, message.is_flexible(version))


def read_version(buf: bytes | None, name: str) -> int:
    """The int16 version (record type for a key) that prefixes a coordinator record's key or value,
    read as `CoordinatorRecordSerde.readVersion` does."""
    if buf is None:
        raise DecodeError(f"the record has no {name}")
    if len(buf) < 2:
        raise DecodeError(f"Could not read version from {name}'s buffer.")
    return struct.unpack_from(">h", buf)[0]


def read_record_part(schema: Message, buf: bytes, version: int, name: str) -> dict[str, Any]:
    """A coordinator record's key or value after its version, with `CoordinatorRecordSerde`'s
    message when it does not parse."""
    try:
        return read_message(schema, memoryview(buf)[2:], version)
    except DecodeError as exc:
        raise DecodeError(
            f"Could not read record with version {version} from {name}'s buffer due to: {exc}."
        ) from exc


def missing_key_text(offset: int) -> str:
    """What kafka-dump-log's coordinator decoders say of a record without a key (Kafka stops the
    dump there; logrepair prints it as the key and goes on)."""
    return (
        f"Failed to decode message at offset {offset} using the specified decoder "
        "(message had a missing key)"
    )


def _read_struct(st: Struct, r: Reader, version: int, flexible: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    tagged: dict[int, Field] = {}
    for f in st.fields:
        if not f.in_version(version):
            continue
        if f.tag is not None:
            tagged[f.tag] = f
            continue
        out[f.json_name] = _read_value(f, f.type, r, version, flexible)
    if flexible:
        found: dict[str, Any] = {}
        count = r.unsigned_varint()
        for _ in range(max(count, 0)):
            tag = r.unsigned_varint()
            size = r.unsigned_varint()
            f = tagged.get(tag)
            if f is None:
                r.take(size)  # unknown tags are kept by size in Kafka; nothing to show
            elif f.type == "raw":
                found[f.json_name] = r.take(size)
            else:
                found[f.json_name] = _read_value(f, f.type, r, version, flexible)
        # JsonConverter writes tagged fields in schema order, and only when not the default.
        for f in tagged.values():
            if f.json_name in found and found[f.json_name] != f.default:
                out[f.json_name] = found[f.json_name]
    return out


def _read_value(f: Field, t: str | Array | Struct, r: Reader, version: int, flexible: bool) -> Any:
    if isinstance(t, Struct):
        return _read_struct(t, r, version, flexible)
    if isinstance(t, Array):
        count = r.unsigned_varint() - 1 if flexible else r.int("int32")
        if count < 0:
            if f.nullable_in(version):
                return None
            raise DecodeError(f"non-nullable field {f.json_name} was serialized as null")
        if count > r.remaining:
            raise DecodeError(
                f"Tried to allocate a collection of size {count}, but there are only "
                f"{r.remaining} bytes remaining."
            )
        return [_read_value(f, t.element, r, version, flexible) for _ in range(count)]
    if t in _INT:
        return r.int(t)
    if t == "uint16":
        return r.int("int16") & 0xFFFF
    if t == "uuid":
        return Uuid(r.take(16))
    if t == "string":
        length = r.unsigned_varint() - 1 if flexible else r.int("int16")
        if length < 0:
            if f.nullable_in(version):
                return None
            raise DecodeError(f"non-nullable field {f.json_name} was serialized as null")
        if length > MAX_STRING_LENGTH:
            raise DecodeError(f"string field {f.json_name} had invalid length {length}")
        return r.take(length).decode("utf-8", "replace")
    if t == "bytes":
        length = r.unsigned_varint() - 1 if flexible else r.int("int32")
        if length < 0:
            if f.nullable_in(version):
                return None
            raise DecodeError(f"non-nullable field {f.json_name} was serialized as null")
        return r.take(length)
    raise AssertionError(f"schema type {t!r} has no reader")


def to_kafka_json(value: Any) -> str:
    """Compact JSON as Jackson's `JsonNode.toString()` writes it; bytes become base64 (with padding)."""
    out: list[str] = []
    _emit(value, out)
    return "".join(out)


def _emit(value: Any, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True or value is False:
        out.append("true" if value else "false")
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, str):
        out.append(_quote(value))
    elif isinstance(value, Uuid):
        out.append(_quote(str(value)))
    elif isinstance(value, bytes | bytearray | memoryview):
        out.append('"' + base64.b64encode(value).decode("ascii") + '"')
    elif isinstance(value, dict):
        out.append("{")
        for i, (k, v) in enumerate(value.items()):
            if i:
                out.append(",")
            out.append(_quote(k))
            out.append(":")
            _emit(v, out)
        out.append("}")
    elif isinstance(value, list | tuple):
        out.append("[")
        for i, v in enumerate(value):
            if i:
                out.append(",")
            _emit(v, out)
        out.append("]")
    else:
        raise TypeError(f"cannot write {type(value).__name__} as JSON")


_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}


def _quote(s: str) -> str:
    # Jackson escapes only '"', '\\' and control characters (upper-case hex), never non-ASCII.
    if s.isprintable() and '"' not in s and "\\" not in s:
        return '"' + s + '"'
    parts = ['"']
    for ch in s:
        if ch in _ESCAPES:
            parts.append(_ESCAPES[ch])
        elif ord(ch) < 0x20:
            parts.append(f"\\u{ord(ch):04X}")
        else:
            parts.append(ch)
    parts.append('"')
    return "".join(parts)
