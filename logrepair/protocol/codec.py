"""Reads and writes messages of any schema at any version, and the request/response headers.

Values are dicts keyed by field name; nested structs are dicts, arrays lists. Decoding yields every
field present at the version (tagged fields absent from the bytes get their defaults); encoding
takes missing fields as their defaults. Unknown tagged fields are skipped on read, as Kafka does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .errors import ProtocolError
from .fields import Field
from .primitives import Reader, Writer
from .schema import API_VERSIONS_KEY, APIS, Api

# --- plans: the fields present at a version, their defaults and nullability, computed once -----


@dataclass(frozen=True, slots=True)
class _Slot:
    field: Field
    name: str
    default: object
    nullable: bool


@dataclass(frozen=True, slots=True)
class _Plan:
    fields: Sequence[Field]  # held so that the id() key stays this object's
    regular: tuple[_Slot, ...]
    tagged: dict[int, _Slot]


_PLANS: dict[tuple[int, int, bool], _Plan] = {}


def _plan(fields: Sequence[Field], version: int, flexible: bool) -> _Plan:
    key = (id(fields), version, flexible)
    plan = _PLANS.get(key)
    if plan is None or plan.fields is not fields:
        regular, tagged = [], {}
        for f in fields:
            if not f.present(version):
                continue
            slot = _Slot(f, f.name, f.default_value(version), f.nullable(version))
            if f.tag is not None and flexible:
                tagged[f.tag] = slot
            else:
                regular.append(slot)
        plan = _PLANS[key] = _Plan(fields, tuple(regular), tagged)
    return plan


def _fresh(default):
    """A default that is a list or dict is copied: decoded values are the caller's to change."""
    return type(default)() if isinstance(default, list | dict) else default


# --- decoding --------------------------------------------------------------------------------


def _read_value(r: Reader, fld: Field, nullable: bool, version: int, flexible: bool):
    kind = fld.type
    if kind == "[]" or kind.startswith("["):
        n = r.length(flexible, wide=True)
        if n < 0:
            if not nullable:
                raise ProtocolError(f"null array {fld.name} at byte {r.pos} in version {version}")
            return None
        if n > r.remaining:  # every element takes at least one byte
            raise ProtocolError(f"array {fld.name} claims {n} elements at byte {r.pos}")
        if kind == "[]":
            return [read_struct(r, fld.fields, version, flexible) for _ in range(n)]
        return [_read_primitive(r, kind[1:-1], fld, False, version, flexible) for _ in range(n)]
    if kind == "{}":
        return read_struct(r, fld.fields, version, flexible)
    return _read_primitive(r, kind, fld, nullable, version, flexible)


def _read_primitive(r: Reader, kind: str, fld: Field, nullable: bool, version: int, flexible: bool):
    if kind == "string":
        value = r.string(flexible)
    elif kind in ("bytes", "records"):
        value = r.bytes_(flexible)
    elif kind == "bool":
        return r.boolean()
    elif kind == "uuid":
        return r.uuid()
    else:
        return r.fixed(kind)
    if value is None and not nullable:
        raise ProtocolError(f"null {fld.name} at byte {r.pos} in version {version}")
    return value


def read_struct(r: Reader, fields: Sequence[Field], version: int, flexible: bool) -> dict:
    plan = _plan(fields, version, flexible)
    out: dict = {}
    for slot in plan.regular:
        out[slot.name] = _read_value(r, slot.field, slot.nullable, version, flexible)
    if flexible:
        for slot in plan.tagged.values():
            out[slot.name] = _fresh(slot.default)
        for _ in range(r.uvarint()):
            tag, size = r.uvarint(), r.uvarint()
            data = r.take(size)
            slot = plan.tagged.get(tag)
            if slot is not None:
                out[slot.name] = _read_value(
                    Reader(data), slot.field, slot.nullable, version, flexible
                )
    return out


# --- encoding --------------------------------------------------------------------------------


def _write_value(
    w: Writer, fld: Field, nullable: bool, value, version: int, flexible: bool
) -> None:
    kind = fld.type
    if value is None and not nullable:
        raise ValueError(f"field {fld.name} is not nullable in version {version}")
    if kind == "[]" or kind.startswith("["):
        if value is None:
            w.length(-1, flexible, wide=True)
            return
        w.length(len(value), flexible, wide=True)
        if kind == "[]":
            for item in value:
                write_struct(w, fld.fields, item, version, flexible)
        else:
            base = kind[1:-1]
            for item in value:
                _write_primitive(w, base, item, flexible)
        return
    if kind == "{}":
        write_struct(w, fld.fields, value, version, flexible)
        return
    _write_primitive(w, kind, value, flexible)


def _write_primitive(w: Writer, kind: str, value, flexible: bool) -> None:
    if kind == "string":
        w.string(value, flexible)
    elif kind in ("bytes", "records"):
        w.bytes_(value, flexible)
    elif kind == "bool":
        w.boolean(value)
    elif kind == "uuid":
        w.uuid(value)
    else:
        w.fixed(kind, value)


def write_struct(
    w: Writer, fields: Sequence[Field], value: Mapping, version: int, flexible: bool
) -> None:
    plan = _plan(fields, version, flexible)
    get = value.get
    for slot in plan.regular:
        _write_value(w, slot.field, slot.nullable, get(slot.name, slot.default), version, flexible)
    if flexible:
        tagged = []
        for tag, slot in sorted(plan.tagged.items()):
            item = get(slot.name, slot.default)
            if item != slot.default and item != [] and item != {}:
                tagged.append((tag, slot, item))
        w.uvarint(len(tagged))
        for tag, slot, item in tagged:
            inner = Writer()
            _write_value(inner, slot.field, slot.nullable, item, version, flexible)
            w.uvarint(tag)
            w.uvarint(len(inner.out))
            w.out += inner.out


# --- headers and whole messages --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def read_request_header(r: Reader) -> RequestHeader:
    """The header of v1 (and, for a known flexible version, v2: its tagged fields are skipped).

    The client id is always an INT16-length string, even in flexible versions."""
    api_key = r.fixed("int16")
    version = r.fixed("int16")
    correlation_id = r.fixed("int32")
    client_id = r.string(compact=False)
    api = APIS.get(api_key)
    if api is not None and api.flexible(version) and _known_version(api, version):
        read_struct(r, (), version, True)  # the header's tagged fields
    return RequestHeader(api_key, version, correlation_id, client_id)


def _known_version(api: Api, version: int) -> bool:
    return api.min_version <= version <= api.max_version


def decode_request_body(api: Api, version: int, r: Reader) -> dict:
    body = read_struct(r, api.request, version, api.flexible(version))
    if r.remaining:
        raise ProtocolError(
            f"{r.remaining} bytes left after a {api.name} v{version} request at byte {r.pos}"
        )
    return body


def encode_response(api: Api, version: int, correlation_id: int, body: Mapping) -> bytes:
    """A whole response frame: size, header, body."""
    w = Writer()
    w.fixed("int32", 0)
    w.fixed("int32", correlation_id)
    flexible = api.flexible(version)
    if flexible and api.key != API_VERSIONS_KEY:
        w.uvarint(0)  # response header v1: no tagged fields
    write_struct(w, api.response, body, version, flexible)
    w.out[0:4] = (len(w.out) - 4).to_bytes(4, "big")
    return bytes(w.out)


def encode_request(
    api: Api, version: int, correlation_id: int, client_id: str | None, body: Mapping
) -> bytes:
    """A whole request frame (for tests and tools that talk to a broker)."""
    w = Writer()
    w.fixed("int32", 0)
    w.fixed("int16", api.key)
    w.fixed("int16", version)
    w.fixed("int32", correlation_id)
    w.string(client_id, compact=False)
    flexible = api.flexible(version)
    if flexible:
        w.uvarint(0)
    write_struct(w, api.request, body, version, flexible)
    w.out[0:4] = (len(w.out) - 4).to_bytes(4, "big")
    return bytes(w.out)


def decode_response(api: Api, version: int, frame: bytes | memoryview) -> tuple[int, dict]:
    """(correlation id, body) of a response frame without its size prefix."""
    r = Reader(frame)
    correlation_id = r.fixed("int32")
    flexible = api.flexible(version)
    if flexible and api.key != API_VERSIONS_KEY:
        read_struct(r, (), version, True)
    body = read_struct(r, api.response, version, flexible)
    if r.remaining:
        raise ProtocolError(f"{r.remaining} bytes left after a {api.name} v{version} response")
    return correlation_id, body
