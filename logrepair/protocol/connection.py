"""The server side of one connection, sans-I/O: feed it bytes, take requests, hand it responses.

    conn = ServerConnection()
    conn.receive_data(chunk)            # b"" at end of stream
    while (event := conn.next_event()) is not NEED_DATA:
        ...                              # a Request, an UnsupportedRequest or CLOSED
    data = conn.respond(request, body)   # the bytes to send

Frames are INT32-size-delimited (the guide's "请求和响应都以大小为前缀"). A frame that cannot be a
request (a negative or oversized size, a header or body that does not parse, bytes left over)
raises `ProtocolError`: the caller closes the connection, as Kafka's SocketServer does.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from .codec import RequestHeader, decode_request_body, encode_response, read_request_header
from .errors import ProtocolError
from .primitives import Reader
from .schema import API_VERSIONS_KEY, APIS, Api

DEFAULT_MAX_FRAME = 104_857_600
"""Kafka's `socket.request.max.bytes`."""


class Sentinel(Enum):
    NEED_DATA = "need data"
    CLOSED = "closed"


NEED_DATA = Sentinel.NEED_DATA
CLOSED = Sentinel.CLOSED


@dataclass(frozen=True, slots=True)
class Request:
    header: RequestHeader
    api: Api
    body: dict

    @property
    def version(self) -> int:
        return self.header.api_version


@dataclass(frozen=True, slots=True)
class UnsupportedRequest:
    """A request of a known API at a version outside the served range (its body is not read).

    Kafka answers an ApiVersions request of any version with UNSUPPORTED_VERSION in a v0 response
    (`respond` encodes it so); other APIs close the connection."""

    header: RequestHeader
    api: Api


class ServerConnection:
    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self.max_frame = max_frame
        self._buf = bytearray()
        self._eof = False

    def receive_data(self, data: bytes) -> None:
        if not data:
            self._eof = True
        else:
            self._buf += data

    def next_event(self) -> Request | UnsupportedRequest | Sentinel:
        if len(self._buf) < 4:
            if self._eof:
                if self._buf:
                    raise ProtocolError(
                        f"connection closed inside a frame size ({len(self._buf)} bytes)"
                    )
                return CLOSED
            return NEED_DATA
        size = int.from_bytes(self._buf[:4], "big", signed=True)
        if size < 0 or size > self.max_frame:
            raise ProtocolError(
                f"frame size {size} is outside 0..{self.max_frame} (socket.request.max.bytes)"
            )
        if len(self._buf) < 4 + size:
            if self._eof:
                raise ProtocolError(
                    f"connection closed inside a frame of {size} bytes ({len(self._buf) - 4} read)"
                )
            return NEED_DATA
        frame = bytes(self._buf[4 : 4 + size])
        del self._buf[: 4 + size]
        return parse_request(frame)

    def respond(self, request: Request | UnsupportedRequest, body: dict) -> bytes:
        if isinstance(request, UnsupportedRequest):
            if request.api.key != API_VERSIONS_KEY:
                raise ValueError("only ApiVersions answers an unsupported version")
            return encode_response(request.api, 0, request.header.correlation_id, body)
        return encode_response(request.api, request.version, request.header.correlation_id, body)


def parse_request(frame: bytes) -> Request | UnsupportedRequest:
    """One frame (without its size) → a request; ProtocolError if it is not one."""
    r = Reader(frame)
    header = read_request_header(r)
    api = APIS.get(header.api_key)
    if api is None:
        raise ProtocolError(
            f"unknown api key {header.api_key} (correlation id {header.correlation_id})"
        )
    if not api.min_version <= header.api_version <= api.max_version:
        return UnsupportedRequest(header, api)
    return Request(header, api, decode_request_body(api, header.api_version, r))
