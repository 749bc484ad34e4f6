"""gzip as Kafka reads and writes it (spec fmt §4.1): the JDK's `GZIPOutputStream` and
`GZIPInputStream`, concatenated members, any header a producer's JDK wrote.

Every failure is a `FormatError('decompression_failed')` naming the codec (`codec_output`).
"""

from __future__ import annotations

import struct
import zlib

from .codec_output import Codec, Output, failed

# What the JDK's GZIPOutputStream writes: no flags, MTIME 0, XFL 0, and OS 255 ("unknown") since
# JDK 16 (JDK-8244706). JDK 8 and 11 wrote OS 0, and a broker keeps a producer's compressed bytes,
# so logs hold both; readers accept any header. Kafka 4 brokers run on JDK 17 or later.
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
_FHCRC, _FEXTRA, _FNAME, _FCOMMENT = 0x02, 0x04, 0x08, 0x10
_JDK_BUFFER = 8192  # GZIPInputStream's input buffer as Kafka sizes it
_FEED = 256 * 1024  # input fed to zlib per call: bounds the copy of an unconsumed tail
_DRAIN = 1024 * 1024  # output taken from zlib per call


def compress(data, level: int | None) -> bytes:
    if level is None:
        level = -1
    if level != -1 and not 1 <= level <= 9:
        raise ValueError(f"gzip level must be -1 or within 1..9, not {level}")
    # The JDK's Deflater with nowrap: zlib's raw deflate, default memLevel and strategy.
    deflater = zlib.compressobj(level, zlib.DEFLATED, -15)
    body = deflater.compress(data) + deflater.flush()
    trailer = struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)
    return _GZIP_HEADER + body + trailer


class _GzipHeaderError(Exception):
    """A header `GZIPInputStream.readHeader` rejects; fatal first, the end of the data later on."""


def _gzip_header(mv: memoryview, pos: int) -> int:
    """`GZIPInputStream.readHeader`: returns the position after the member header."""
    end = len(mv)
    # Field by field, as the JDK reads them: a wrong magic is reported before a short header.
    if end - pos < 2:
        raise _GzipHeaderError("Unexpected end of ZLIB input stream")
    if mv[pos] != 0x1F or mv[pos + 1] != 0x8B:
        raise _GzipHeaderError("Not in GZIP format")
    if end - pos < 3:
        raise _GzipHeaderError("Unexpected end of ZLIB input stream")
    if mv[pos + 2] != 8:
        raise _GzipHeaderError("Unsupported compression method")
    if end - pos < 10:
        raise _GzipHeaderError("Unexpected end of ZLIB input stream")
    flags = mv[pos + 3]
    p = pos + 10
    if flags & _FEXTRA:
        if end - p < 2:
            raise _GzipHeaderError("Unexpected end of ZLIB input stream")
        p += 2 + (mv[p] | mv[p + 1] << 8)
    for flag in (_FNAME, _FCOMMENT):
        if flags & flag:
            while True:
                if p >= end:
                    raise _GzipHeaderError("Unexpected end of ZLIB input stream")
                p += 1
                if mv[p - 1] == 0:
                    break
    if flags & _FHCRC:
        if p + 2 > end:
            raise _GzipHeaderError("Unexpected end of ZLIB input stream")
        if zlib.crc32(mv[pos:p]) & 0xFFFF != mv[p] | mv[p + 1] << 8:
            raise _GzipHeaderError("Corrupt GZIP header")
        p += 2
    if p > end:
        raise _GzipHeaderError("Unexpected end of ZLIB input stream")
    return p


def decompress(mv: memoryview, out: Output) -> None:
    """`GZIPInputStream` over Kafka's buffer, concatenated members included.

    The JDK reads the deflate data through an 8 KiB buffer; after a member's trailer it looks for
    another member only when the stream has unread bytes or more than 18 bytes sit in that buffer
    (`readTrailer`), and a header that does not parse there ends the data silently. `stream` tracks
    how far the JDK has read, so trailing junk is judged exactly as the JDK judges it.
    """
    total = len(mv)
    try:
        pos = _gzip_header(mv, 0)
    except _GzipHeaderError as e:
        raise failed(Codec.GZIP, str(e)) from None
    stream = pos  # the first header is read straight from the stream
    while True:
        deflate_end, crc, size = _inflate_member(mv, pos, out)
        # The inflater's input came in 8 KiB fills from `stream`; it stopped at the first fill
        # that reached the end of the deflate data.
        if deflate_end > stream:
            stream += -(-(deflate_end - stream) // _JDK_BUFFER) * _JDK_BUFFER
            stream = min(stream, total)
        buffered = stream - deflate_end
        trailer_end = deflate_end + 8
        if trailer_end > total:
            raise failed(Codec.GZIP, "Unexpected end of ZLIB input stream")
        stored_crc, stored_size = struct.unpack_from("<II", mv, deflate_end)
        if stored_crc != crc or stored_size != size & 0xFFFFFFFF:
            raise failed(Codec.GZIP, "Corrupt GZIP trailer")
        stream = max(stream, trailer_end)
        if not (stream < total or buffered > 26):
            return
        try:
            pos = _gzip_header(mv, trailer_end)
        except _GzipHeaderError:
            return  # GZIPInputStream.readTrailer: "ignore any malformed, do nothing"
        stream = max(stream, pos)


def _inflate_member(mv: memoryview, pos: int, out: Output) -> tuple[int, int, int]:
    """Inflates one member's raw deflate data from `pos`: (end of deflate data, CRC-32, size)."""
    inflater = zlib.decompressobj(-15)
    crc = 0
    size = 0
    total = len(mv)
    feed = pos
    try:
        while not inflater.eof:
            if feed >= total:
                raise failed(Codec.GZIP, "Unexpected end of ZLIB input stream")
            chunk = mv[feed : feed + _FEED]
            feed += len(chunk)
            while True:
                want = min(out.room + 1, _DRAIN)
                piece = inflater.decompress(chunk, want)
                if piece:
                    out.add(piece)
                    crc = zlib.crc32(piece, crc)
                    size += len(piece)
                chunk = inflater.unconsumed_tail
                # zlib may hold output back once `want` is reached even with no input left.
                if inflater.eof or (not chunk and len(piece) < want):
                    break
    except zlib.error as e:
        raise failed(Codec.GZIP, str(e)) from None
    return feed - len(inflater.unused_data), crc, size
