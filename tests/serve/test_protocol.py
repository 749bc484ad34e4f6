"""The sans-I/O protocol: every served API at every served version round-trips, flexible versions
use compact fields and tagged fields, and no byte string makes the parser do anything but return a
request or raise ProtocolError."""

from __future__ import annotations

import struct
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from logrepair.protocol.codec import (
    decode_response,
    encode_request,
    encode_response,
    read_struct,
    write_struct,
)
from logrepair.protocol.connection import (
    CLOSED,
    NEED_DATA,
    Request,
    ServerConnection,
    UnsupportedRequest,
    parse_request,
)
from logrepair.protocol.errors import ProtocolError
from logrepair.protocol.fields import Field
from logrepair.protocol.primitives import Reader, Writer
from logrepair.protocol.schema import APIS

_INTS = {
    "int8": st.integers(-(2**7), 2**7 - 1),
    "int16": st.integers(-(2**15), 2**15 - 1),
    "uint16": st.integers(0, 2**16 - 1),
    "int32": st.integers(-(2**31), 2**31 - 1),
    "int64": st.integers(-(2**63), 2**63 - 1),
}


def _primitive(kind: str, nullable: bool):
    if kind in _INTS:
        return _INTS[kind]
    base = {
        "bool": st.booleans(),
        "float64": st.floats(allow_nan=False),
        "string": st.text(max_size=8),
        "bytes": st.binary(max_size=8),
        "records": st.binary(max_size=16),
        "uuid": st.uuids(),
    }[kind]
    return st.none() | base if nullable and kind != "bool" else base


def values(fields: tuple[Field, ...], version: int):
    """Bodies of a schema at a version: every present field."""
    strategies = {}
    for f in fields:
        if not f.present(version):
            continue
        nullable = f.nullable(version)
        if f.type == "[]":
            s = st.lists(values(f.fields, version), max_size=3)
        elif f.type == "{}":
            s = values(f.fields, version)
        elif f.type.startswith("["):
            s = st.lists(_primitive(f.type[1:-1], False), max_size=3)
        else:
            s = _primitive(f.type, nullable)
            strategies[f.name] = s
            continue
        strategies[f.name] = st.none() | s if nullable else s
    return st.fixed_dictionaries(strategies)


SERVED = [(a, v) for a in APIS.values() for v in range(a.min_version, a.max_version + 1)]


@st.composite
def bodies(draw, side: str):
    api, version = draw(st.sampled_from(SERVED))
    fields = api.request if side == "request" else api.response
    return api, version, draw(values(fields, version))


@given(bodies("request"), st.integers(-(2**31), 2**31 - 1), st.none() | st.text(max_size=10))
def test_every_request_round_trips(case, correlation_id, client_id) -> None:
    api, version, body = case
    frame = encode_request(api, version, correlation_id, client_id, body)
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4
    request = parse_request(frame[4:])
    assert isinstance(request, Request)
    assert request.header.correlation_id == correlation_id
    assert request.header.client_id == client_id
    assert request.body == body


@given(bodies("response"), st.integers(-(2**31), 2**31 - 1))
def test_every_response_round_trips(case, correlation_id) -> None:
    api, version, body = case
    frame = encode_response(api, version, correlation_id, body)
    got_id, got = decode_response(api, version, frame[4:])
    assert got_id == correlation_id
    assert got == body


def test_flexible_versions_use_compact_fields_and_tagged_fields() -> None:
    api = APIS[18]  # ApiVersions v3: compact arrays, tagged fields, response header v0
    body = {"error_code": 0, "api_keys": [{"api_key": 0, "min_version": 3, "max_version": 8}],
            "throttle_time_ms": 0, "finalized_features_epoch": 7}  # fmt: skip
    frame = encode_response(api, 3, 5, body)
    # size, correlation id, no header tags (header v0), error 0, compact array of 1 (=2), one
    # entry with its own empty tag section, throttle time, one tagged field (tag 1, 8 bytes).
    assert frame[4:8] == struct.pack(">i", 5)
    assert frame[8:11] == b"\x00\x00\x02"
    assert frame[11:18] == b"\x00\x00\x00\x03\x00\x08\x00"
    assert frame[18:22] == b"\x00\x00\x00\x00"
    assert frame[22:] == b"\x01\x01\x08" + struct.pack(">q", 7)
    assert decode_response(api, 3, frame[4:])[1]["finalized_features_epoch"] == 7
    # The same body at v2: INT32 array length, no tagged fields at all.
    v2 = encode_response(api, 2, 5, body)
    assert v2[10:14] == b"\x00\x00\x00\x01" and len(v2) == 4 + 4 + 2 + 4 + 6 + 4


def test_unknown_tagged_fields_are_skipped() -> None:
    fields = APIS[18].request
    w = Writer()
    w.string("client", compact=True)
    w.string("1.0", compact=True)
    w.uvarint(2)  # two tagged fields no schema knows
    for tag, data in ((5, b"abc"), (9, b"")):
        w.uvarint(tag)
        w.uvarint(len(data))
        w.out += data
    r = Reader(bytes(w.out))
    assert read_struct(r, fields, 3, True) == {
        "client_software_name": "client",
        "client_software_version": "1.0",
    }
    assert r.remaining == 0


def test_request_header_v2_client_id_is_not_compact() -> None:
    frame = encode_request(APIS[18], 3, 1, "abc", {})
    # size, key 18, version 3, correlation id 1, INT16 length 3 + "abc", empty header tags
    assert frame[4:18] == struct.pack(">hhih", 18, 3, 1, 3) + b"abc" + b"\x00"


def test_connection_frames_a_byte_stream() -> None:
    frames = [encode_request(APIS[18], v, v, "c", {}) for v in range(4)]
    stream = b"".join(frames)
    conn = ServerConnection()
    seen = []
    for i in range(0, len(stream), 3):  # three bytes at a time
        conn.receive_data(stream[i : i + 3])
        while (event := conn.next_event()) is not NEED_DATA:
            seen.append(event.header.correlation_id)
    conn.receive_data(b"")
    assert seen == [0, 1, 2, 3] and conn.next_event() is CLOSED


def test_unsupported_versions() -> None:
    conn = ServerConnection()
    conn.receive_data(encode_request(APIS[18], 3, 9, "c", {})[:8] + b"")  # header only, partial
    assert conn.next_event() is NEED_DATA
    # ApiVersions v9: the body is not read; the answer is a v0 response.
    frame = struct.pack(">hhih", 18, 9, 9, 1) + b"c" + b"\xff\xff\xff"
    event = parse_request(frame)
    assert isinstance(event, UnsupportedRequest)
    out = conn.respond(event, {"error_code": 35, "api_keys": []})
    assert decode_response(APIS[18], 0, out[4:]) == (9, {"error_code": 35, "api_keys": []})
    # Produce v1 (below the served v3) is refused too.
    assert isinstance(parse_request(struct.pack(">hhih", 0, 1, 1, -1)), UnsupportedRequest)


@pytest.mark.parametrize(
    "frame, message",
    [
        (struct.pack(">hhih", 99, 0, 1, -1), "unknown api key 99"),
        (struct.pack(">hhi", 18, 0, 1), "frame ended"),
        (struct.pack(">hhih", 18, 0, 1, 10) + b"abc", "runs past the frame"),
        (encode_request(APIS[18], 0, 1, None, {})[4:] + b"x", "bytes left"),
        (struct.pack(">hhih", 3, 1, 1, -1) + struct.pack(">i", 2**30), "claims"),
        (struct.pack(">hhih", 3, 0, 1, -1) + struct.pack(">i", -1), "null array"),
        (struct.pack(">hhih", 18, 3, 1, -1) + b"\xff\xff\xff\xff\xff\xff", "too long"),
    ],
)
def test_malformed_requests_raise_protocol_error(frame: bytes, message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        parse_request(frame)


@pytest.mark.parametrize("size", [-1, 104_857_601])
def test_impossible_frame_sizes(size: int) -> None:
    conn = ServerConnection()
    conn.receive_data(struct.pack(">i", size))
    with pytest.raises(ProtocolError, match="frame size"):
        conn.next_event()


@given(st.binary(max_size=64))
def test_any_bytes_parse_or_raise_protocol_error(data: bytes) -> None:
    try:
        parse_request(data)
    except ProtocolError:
        pass


@given(bodies("request"), st.data())
def test_truncated_and_flipped_requests_never_escape(case, data) -> None:
    api, version, body = case
    frame = bytearray(encode_request(api, version, 1, "c", body)[4:])
    cut = data.draw(st.integers(0, len(frame)))
    if frame:
        i = data.draw(st.integers(0, len(frame) - 1))
        frame[i] ^= data.draw(st.integers(1, 255))
    try:
        parse_request(bytes(frame[:cut]))
    except ProtocolError:
        pass


def test_uuid_and_nullable_primitives() -> None:
    w = Writer()
    u = uuid.uuid4()
    w.uuid(u)
    w.string(None, compact=True)
    w.bytes_(None, compact=False)
    r = Reader(bytes(w.out))
    assert r.uuid() == u and r.string(True) is None and r.bytes_(False) is None
    with pytest.raises(ValueError, match="not nullable"):
        write_struct(Writer(), APIS[18].response, {"api_keys": None}, 0, False)
