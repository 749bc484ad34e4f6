"""Records inside a v2 batch (spec fmt §2.4): `encode_record` as `DefaultRecord.writeTo`, and the
deep reading of a batch's records region, `decode_records` (the records) and `check_records` (the
same checks, nothing built).

Deep reading runs in C when the optional extension `logrepair.format._records` is built (it is, at
install, wherever a C compiler and Python's headers are present); otherwise, or with
`LOGREPAIR_PURE_PYTHON=1` in the environment, the pure-Python functions here do it, with the same
results and the same errors. `ACCELERATED` says which is active.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from itertools import repeat

from .batch_layout import INT32_MAX, NO_SEQUENCE, Record
from .errors import FormatError
from .varint import read_varint, read_varlong, write_varint, write_varlong

# One-byte varint tables, indexed by the byte (entries from 0x80 mean "longer varint"). The hot loops
# below use them instead of `&`/`>>`, which the 3.11 interpreter does not specialize for ints, while
# tuple indexing, `+`, `*` and int comparisons are specialized.
_ZIGZAG = tuple((b >> 1) ^ -(b & 1) if b < 0x80 else 0 for b in range(256))
# A length field's length: >= 0, -1 for null (any negative length), -2 for a longer varint.
_LENGTH1 = tuple((-1 if b & 1 else b >> 1) if b < 0x80 else -2 for b in range(256))
# Bytes a nullable length-prefixed field takes, its one-byte length included; 0 for a longer varint.
_SKIP1 = tuple((1 if b & 1 else 1 + (b >> 1)) if b < 0x80 else 0 for b in range(256))
# The first byte's share of a two-byte varint's value, and its sign bit.
_HALF = tuple((b & 0x7F) >> 1 for b in range(256))
_ODD = tuple(b & 1 for b in range(256))


def _invalid(detail: str, position: int) -> FormatError:
    return FormatError("invalid_records", detail, position)


def _premature_eof(position: int) -> FormatError:
    return FormatError(
        "record_count_mismatch", "Incorrect declared batch size, premature EOF reached", position
    )


def _read_length(data: bytes, pos: int, position: int) -> tuple[int, int]:
    """A record's length varint at `pos` and the position after it."""
    try:
        return read_varint(data, pos)
    except FormatError:
        raise _premature_eof(position) from None


def _bad_length(length: int, remaining: int, position: int) -> FormatError:
    return _invalid(
        f"Invalid record size: expected {length} bytes in record payload, but instead the "
        f"buffer has only {remaining} remaining bytes.",
        position,
    )


def _read_record(data: bytes, pos: int, length: int, end: int, position: int) -> tuple:
    """The record whose body (`length` bytes) starts at `pos`, read exactly as
    `DefaultRecord.readFrom` reads it: the reference the fast paths fall back to whenever they meet
    anything unusual, so every error comes from here. Returns (timestamp delta, offset delta, key,
    value, headers)."""
    try:
        # attributes at pos: no bits defined, ignored as Kafka ignores them
        ts_delta, p = read_varlong(data, pos + 1)
        offset_delta, p = read_varint(data, p)
        n, p = read_varint(data, p)  # a negative length is null, as in Kafka
        key = data[p : (p := p + n)] if n >= 0 else None
        n, p = read_varint(data, p)
        value = data[p : (p := p + n)] if n >= 0 else None
        headers, p = _decode_headers(data, p, end, position)
    except FormatError as e:
        if e.kind == "invalid_records":
            raise
        raise _invalid("Found invalid record structure", position) from None
    if p > end:
        # The last header value's length runs past the records: Kafka's `position()` throws
        # IllegalArgumentException there (any earlier field that does fails the next varint).
        raise _invalid("Found invalid record structure", position)
    if p != pos + length:
        raise _invalid(
            f"Invalid record size: expected to read {length} bytes in record payload, but "
            f"instead read {p - pos}",
            position,
        )
    return ts_delta, offset_delta, key, value, headers


def _decode_headers(
    data: bytes, p: int, end: int, position: int
) -> tuple[tuple[tuple[str, bytes | None], ...], int]:
    """A record's header count and headers at `p`; the count is checked against the bytes left in
    the batch, as Kafka checks it against its buffer's remaining bytes."""
    n, p = read_varint(data, p)
    if n < 0:
        raise _invalid(f"Found invalid number of record headers {n}", position)
    if n > end - p:
        raise _invalid(
            f"Found invalid number of record headers. {n} is larger than the "
            "remaining size of the buffer",
            position,
        )
    headers = []
    for _ in range(n):
        key_length, p = read_varint(data, p)
        if key_length < 0:
            raise _invalid(f"Invalid negative header key size {key_length}", position)
        # Java's UTF-8 decoder replaces malformed input; so does this one.
        key = data[p : (p := p + key_length)].decode("utf-8", "replace")
        value_length, p = read_varint(data, p)
        value = data[p : (p := p + value_length)] if value_length >= 0 else None
        headers.append((key, value))
    return tuple(headers), p


def decode_records_python(
    data: bytes | bytearray | memoryview,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None,
    base_sequence: int,
    position: int = 0,
) -> list[Record]:
    """Decodes exactly `count` records filling all of `data` (`DefaultRecord.readFrom` semantics).

    Written for speed (deep iteration has a stated target against kafka-python). Each record body
    is copied out (`rec`) so that positions inside it stay small ints, which CPython does not
    allocate; varints of one and two bytes, nearly all deltas and lengths, are decoded inline
    through the tables above. A record the fast path cannot take whole (a longer varint, a read
    past its body, a bad length) is read again by `_read_record`, which raises what Kafka raises.
    Fields are gathered as plain tuples and made `Record`s in one `map` at the end. Any buffer is
    copied to bytes first, so keys and values are bytes whatever the input.

    The reference for the C accelerator's `decode_records` (see `ACCELERATED`).
    """
    if type(data) is not bytes:
        data = bytes(data)
    rows: list[tuple] = []
    append = rows.append
    zigzag, length1, half, odd = _ZIGZAG, _LENGTH1, _HALF, _ODD
    end = len(data)
    pos = 0
    no_headers: tuple = ()
    # Records of one batch nearly always repeat their header keys: each distinct key is decoded
    # once per batch (so the cache is bounded by the batch).
    header_keys: dict[bytes, str] = {}
    sequenced = base_sequence >= 0
    seq = NO_SEQUENCE
    append_time = log_append_time is not None
    for _ in range(count):
        if pos >= end:
            raise _premature_eof(position)
        b = data[pos]
        if b < 0x80:
            length = zigzag[b]
            pos += 1
        elif pos + 1 < end and (c := data[pos + 1]) < 0x80:
            length = -1 - half[b] - c * 64 if odd[b] else half[b] + c * 64
            pos += 2
        else:
            length, pos = _read_length(data, pos, position)
        body_end = pos + length
        if length < 0 or body_end > end:
            raise _bad_length(length, end - pos, position)
        rec = data[pos:body_end]
        try:
            b = rec[1]
            if b < 0x80:
                ts_delta = zigzag[b]
                q = 2
            elif (c := rec[2]) < 0x80:
                ts_delta = -1 - half[b] - c * 64 if odd[b] else half[b] + c * 64
                q = 3
            else:
                ts_delta, q = read_varlong(rec, 1)
            b = rec[q]
            if b < 0x80:
                offset_delta = zigzag[b]
                q += 1
            elif (c := rec[q + 1]) < 0x80:
                offset_delta = -1 - half[b] - c * 64 if odd[b] else half[b] + c * 64
                q += 2
            else:
                offset_delta, q = read_varint(rec, q)
            n = length1[rec[q]]
            if n >= 0:
                key = rec[q + 1 : (q := q + 1 + n)]
            elif n == -1:
                key = None
                q += 1
            else:
                n, q = read_varint(rec, q)
                key = rec[q : (q := q + n)] if n >= 0 else None
            b = rec[q]
            n = length1[b]
            if n >= 0:
                value = rec[q + 1 : (q := q + 1 + n)]
            elif n == -1:
                value = None
                q += 1
            elif (c := rec[q + 1]) < 0x80:
                if odd[b]:
                    value = None
                    q += 2
                else:
                    value = rec[q + 2 : (q := q + 2 + half[b] + c * 64)]
            else:
                n, q = read_varint(rec, q)
                value = rec[q : (q := q + n)] if n >= 0 else None
            b = rec[q]
            if b == 0:
                headers = no_headers
                q += 1
            elif b == 2 and (k := length1[rec[q + 1]]) >= 0:
                # One header (the common case beside none), its lengths of one byte.
                raw_key = rec[q + 2 : (q := q + 2 + k)]
                header_key = header_keys.get(raw_key)
                if header_key is None:
                    # Java's UTF-8 decoder replaces malformed input; so does this one.
                    header_key = header_keys[raw_key] = raw_key.decode("utf-8", "replace")
                k = length1[rec[q]]
                if k >= 0:
                    headers = ((header_key, rec[q + 1 : (q := q + 1 + k)]),)
                elif k == -1:
                    headers = ((header_key, None),)
                    q += 1
                else:
                    q = -1
            else:
                # A one-byte header count, each header's lengths of one byte; anything else
                # goes to `_read_record`.
                n = length1[b]
                q += 1
                hs = []
                for _h in range(n):
                    k = length1[rec[q]]
                    if k < 0:
                        break
                    raw_key = rec[q + 1 : (q := q + 1 + k)]
                    header_key = header_keys.get(raw_key)
                    if header_key is None:
                        header_key = header_keys[raw_key] = raw_key.decode("utf-8", "replace")
                    k = length1[rec[q]]
                    if k >= 0:
                        hs.append((header_key, rec[q + 1 : (q := q + 1 + k)]))
                    elif k == -1:
                        hs.append((header_key, None))
                        q += 1
                    else:
                        break
                headers = tuple(hs)
                if len(hs) != n:
                    q = -1
        except (IndexError, FormatError):
            q = -1
        if q != length:
            ts_delta, offset_delta, key, value, headers = _read_record(
                data, pos, length, end, position
            )
        pos = body_end
        if sequenced:
            seq = base_sequence + offset_delta
            if seq > INT32_MAX:
                seq -= 2**31
        append(
            (
                base_offset + offset_delta,
                log_append_time if append_time else base_timestamp + ts_delta,
                key,
                value,
                headers,
                seq,
            )
        )
    if pos != end:
        raise FormatError(
            "record_count_mismatch",
            "Incorrect declared batch size, records still remaining in file",
            position,
        )
    return list(map(tuple.__new__, repeat(Record), rows))


def check_records_python(
    data: bytes | bytearray | memoryview, count: int, position: int = 0
) -> None:
    """What `decode_records` checks, with the same errors, but nothing built: deep verification.

    Kept apart from `decode_records` because skipping every slice and tuple makes it about twice
    as fast; the same fast path shape and the same `_read_record` fallback, so the same verdicts
    (tests/format/test_batch_check.py holds the two to them).
    """
    if type(data) is not bytes:
        data = bytes(data)
    zigzag, length1, skip1, half, odd = _ZIGZAG, _LENGTH1, _SKIP1, _HALF, _ODD
    end = len(data)
    pos = 0
    for _ in range(count):
        if pos >= end:
            raise _premature_eof(position)
        b = data[pos]
        if b < 0x80:
            length = zigzag[b]
            pos += 1
        elif pos + 1 < end and (c := data[pos + 1]) < 0x80:
            length = -1 - half[b] - c * 64 if odd[b] else half[b] + c * 64
            pos += 2
        else:
            length, pos = _read_length(data, pos, position)
        body_end = pos + length
        if length < 0 or body_end > end:
            raise _bad_length(length, end - pos, position)
        rec = data[pos:body_end]
        try:
            # timestamp and offset deltas
            if rec[1] < 0x80:
                q = 2
            elif rec[2] < 0x80:
                q = 3
            else:
                q = read_varlong(rec, 1)[1]
            if rec[q] < 0x80:
                q += 1
            elif rec[q + 1] < 0x80:
                q += 2
            else:
                q = read_varint(rec, q)[1]
            s = skip1[rec[q]]  # key
            if s > 0:
                q += s
            else:
                n, q = read_varint(rec, q)
                if n > 0:
                    q += n
            b = rec[q]  # value
            s = skip1[b]
            if s > 0:
                q += s
            elif (c := rec[q + 1]) < 0x80:
                q += 2 if odd[b] else 2 + half[b] + c * 64
            else:
                n, q = read_varint(rec, q)
                if n > 0:
                    q += n
            b = rec[q]
            if b == 0:
                q += 1
            elif b == 2 and (k := length1[rec[q + 1]]) >= 0:
                q += 2 + k
                s = skip1[rec[q]]
                q = q + s if s > 0 else -1
            else:
                n = length1[b]  # as in decode_records: one-byte count and lengths
                q += 1
                for _h in range(n):
                    k = length1[rec[q]]
                    if k < 0:
                        q = -1
                        break
                    q += 1 + k
                    s = skip1[rec[q]]
                    if s == 0:
                        q = -1
                        break
                    q += s
                if n < 0:
                    q = -1
        except (IndexError, FormatError):
            q = -1
        if q != length:
            _read_record(data, pos, length, end, position)
        pos = body_end
    if pos != end:
        raise FormatError(
            "record_count_mismatch",
            "Incorrect declared batch size, records still remaining in file",
            position,
        )


def _accelerator():
    """The C reader (`logrepair.format._records`, built from `_records.c` when a compiler is
    present at install), or None: not built, or `LOGREPAIR_PURE_PYTHON` set to anything but `0`."""
    if os.environ.get("LOGREPAIR_PURE_PYTHON", "0") not in ("", "0"):
        return None
    try:
        from . import _records
    except ImportError:
        return None
    _records.bind(Record, FormatError)
    return _records


_ACCELERATOR = _accelerator()
# Whether `decode_records` and `check_records` are the C ones (same arguments, results and errors
# as the `*_python` reference functions above, which tests/format/test_records_accel.py holds them to).
ACCELERATED: bool = _ACCELERATOR is not None
if _ACCELERATOR is not None:
    decode_records = _ACCELERATOR.decode_records
    check_records = _ACCELERATOR.check_records
else:
    decode_records = decode_records_python
    check_records = check_records_python


# --- writer ----------------------------------------------------------------------------------------

_NULL = b"\x01"  # varint -1


def encode_record(
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[tuple[str, bytes | None]] = (),
) -> bytes:
    """`DefaultRecord.writeTo`: length varint, then the body."""
    body = bytearray(b"\x00")
    body += write_varlong(timestamp_delta)
    body += write_varint(offset_delta)
    if key is None:
        body += _NULL
    else:
        body += write_varint(len(key))
        body += key
    if value is None:
        body += _NULL
    else:
        body += write_varint(len(value))
        body += value
    body += write_varint(len(headers))
    for header_key, header_value in headers:
        if header_key is None:
            raise ValueError("Invalid null header key found in headers")
        encoded = header_key.encode("utf-8")
        body += write_varint(len(encoded))
        body += encoded
        if header_value is None:
            body += _NULL
        else:
            body += write_varint(len(header_value))
            body += header_value
    return write_varint(len(body)) + bytes(body)
