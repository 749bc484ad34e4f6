"""The dump contract's JSON Lines for a `.log` batch, written directly as bytes.

A deep dump is mostly records, and building a dict per record and header for `json.dumps` was
three quarters of its time (decoding under 1%). So a v2 batch's line is formatted straight from
the decoded `Record` tuples: integers with `%d`, keys and values as base64 (ASCII, nothing to
escape), and text (the file name, header keys, decoded payloads) through `json`'s own C string
encoder, so the bytes are `json.dumps(obj, separators=(",", ":"))`'s: ASCII only, everything
outside `' '..'~'` escaped as `\\uXXXX`. A property test holds the two equal.

A JSON library (orjson) would not do: it writes non-ASCII text as UTF-8 and leaves DEL unescaped,
refuses lone surrogates (which file names can hold), and cannot base64 bytes, so the per-record
dicts this module avoids would still have to be built. Legacy (magic 0/1) entries, rare in any
log written since Kafka 0.11, keep the dict-and-`json.dumps` path of the contract's definition.
"""

from __future__ import annotations

import json
from binascii import b2a_base64
from collections.abc import Callable

from ..format.batch import RecordBatch
from ..format.batch_layout import (
    COMPRESSION_MASK,
    CONTROL_MASK,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    Record,
    codec_name,
)
from .lines import Parser

# The `"key"` prefix of a header object for each header key text seen; keys repeat across records.
_HEADER_PREFIXES: dict[str, bytes] = {}
_MAX_HEADER_PREFIXES = 4096

_V2_HEAD = (
    b'{"file":%s,"position":%d,"size":%d,"magic":%d,"base_offset":%d,"last_offset":%d,'
    b'"count":%d,"codec":%s,"crc":%d,"crc_valid":%s,"is_transactional":%s,"is_control":%s,'
    b'"producer_id":%d,"producer_epoch":%d,"base_sequence":%d,"partition_leader_epoch":%d,'
    b'"timestamp_type":%s,"first_timestamp":%d,"max_timestamp":%d'
)
_RECORD = b'{"offset":%d,"timestamp":%d,"key":"%s","value":"%s","headers":[]}'
_RECORD_ONE_HEADER = b'{"offset":%d,"timestamp":%d,"key":"%s","value":"%s","headers":[%s"%s"}]}'
_RECORD_ANY = b'{"offset":%d,"timestamp":%s,"key":%s,"value":%s,"headers":[%s]}'
_DECODED = b'%s,"decoded":{"key":%s,"payload":%s}}'
_BOOL = {False: b"false", True: b"true"}
_TIMESTAMP_TYPES = {False: b'"create"', True: b'"append"'}
_encode_text: Callable[[str], str] = json.encoder.encode_basestring_ascii  # type: ignore[attr-defined]


def text(value: str) -> bytes:
    """A JSON string as `json.dumps` writes it (ASCII, quoted)."""
    return _encode_text(value).encode("ascii")


_CODECS = {codec: text(codec_name(codec)) for codec in range(COMPRESSION_MASK + 1)}


class BatchLines:
    """The JSON lines of one file's batches: `{"file": path, **batch.to_json(deep)}`, and with a
    `parser` (print-data) each non-control record's `decoded` key and payload."""

    def __init__(self, path: str, deep: bool, parser: Parser | None) -> None:
        self.path = path
        self.file = text(path)
        self.deep = deep
        self.parser = parser
        self.parse = None if parser is None else _parse(parser)

    def line(self, batch) -> bytes:
        """The batch's line, newline included. Raises what `batch.records()` raises, before
        anything is written."""
        if type(batch) is not RecordBatch:
            return self._legacy_line(batch)
        attributes = batch.attributes
        head = _V2_HEAD % (
            self.file,
            batch.position,
            len(batch.raw),
            batch.magic,
            batch.base_offset,
            batch.base_offset + batch.last_offset_delta,
            batch.count,
            _CODECS[attributes & COMPRESSION_MASK],
            batch.crc,
            _BOOL[batch.crc_valid],
            _BOOL[attributes & TRANSACTIONAL_MASK != 0],
            _BOOL[attributes & CONTROL_MASK != 0],
            batch.producer_id,
            batch.producer_epoch,
            batch.base_sequence,
            batch.partition_leader_epoch,
            _TIMESTAMP_TYPES[attributes & TIMESTAMP_TYPE_MASK != 0],
            batch.base_timestamp,
            batch.max_timestamp,
        )
        if not self.deep:
            return head + b"}\n"
        records = batch.records()
        if self.parse is None or attributes & CONTROL_MASK:
            body = b",".join(map(record_json, records))
        else:
            body = b",".join(map(_decoded_record, records, map(self.parse, records)))
        return b'%s,"records":[%s]}\n' % (head, body)

    def _legacy_line(self, batch) -> bytes:
        """A magic 0/1 entry's line through the contract's dicts and `json.dumps`."""
        obj = {"file": self.path, **batch.to_json(self.deep)}
        if self.deep and self.parse is not None:
            for rec_obj, record in zip(obj["records"], batch.records(), strict=True):
                key_text, payload = self.parse(record)
                rec_obj["decoded"] = {"key": key_text, "payload": payload}
        return json.dumps(obj, separators=(",", ":")).encode("ascii") + b"\n"


def record_json(record: Record) -> bytes:
    """The contract's record object: `batch.record_to_json`'s dict as `json.dumps` writes it."""
    offset, timestamp, key, value, headers, _ = record
    if key is not None and value is not None and timestamp is not None:
        # the common shapes, each in one format: no header, or one with a value
        if not headers:
            return _RECORD % (
                offset,
                timestamp,
                b2a_base64(key, newline=False),
                b2a_base64(value, newline=False),
            )
        if len(headers) == 1 and headers[0][1] is not None:
            header_key, header_value = headers[0]
            return _RECORD_ONE_HEADER % (
                offset,
                timestamp,
                b2a_base64(key, newline=False),
                b2a_base64(value, newline=False),
                _HEADER_PREFIXES.get(header_key) or _header_prefix(header_key),
                b2a_base64(header_value, newline=False),
            )
    return _RECORD_ANY % (
        offset,
        b"null" if timestamp is None else b"%d" % timestamp,
        _nullable_base64(key),
        _nullable_base64(value),
        b",".join(map(_header_json, headers)),
    )


def _header_json(header: tuple[str, bytes | None]) -> bytes:
    key, value = header
    prefix = _HEADER_PREFIXES.get(key) or _header_prefix(key)
    if value is None:
        return prefix + b"null}"
    return b'%s"%s"}' % (prefix, b2a_base64(value, newline=False))


def _header_prefix(key: str) -> bytes:
    """A header object up to its value, kept for the next record with the same key."""
    if len(_HEADER_PREFIXES) >= _MAX_HEADER_PREFIXES:
        _HEADER_PREFIXES.clear()  # a file of random keys must not grow memory
    prefix = _HEADER_PREFIXES[key] = b'{"key":%s,"value":' % text(key)
    return prefix


def _nullable_base64(data: bytes | None) -> bytes:
    return b"null" if data is None else b'"%s"' % b2a_base64(data, newline=False)


def _nullable_text(value: str | None) -> bytes:
    return b"null" if value is None else text(value)


def _parse(parser: Parser) -> Callable[[Record], tuple[str | None, str | None]]:
    """The parser over a record, as kafka-dump-log calls it: key, value, offset."""

    def parse(record: Record) -> tuple[str | None, str | None]:
        key, value = record.key, record.value
        return parser(
            None if key is None else bytes(key),
            None if value is None else bytes(value),
            record.offset,
        )

    return parse


def _decoded_record(record: Record, decoded: tuple[str | None, str | None]) -> bytes:
    key_text, payload = decoded
    return _DECODED % (record_json(record)[:-1], _nullable_text(key_text), _nullable_text(payload))
