"""Kafka's five compression codecs (spec fmt §4): read as Kafka reads them, written as Kafka writes.

Readers follow the Java classes Kafka uses, not the codec libraries' own framing rules: the JDK's
`GZIPInputStream`, snappy-java's `SnappyInputStream`, Kafka's `Lz4BlockInputStream` and zstd-jni's
stream. Every failure is a `FormatError('decompression_failed')` whose detail names the codec and
Kafka's message where it has one.

Decompression is streamed and stops at `max_output`: no declared size (snappy's block length, an LZ4
or zstd content size) is trusted for an allocation: a small bomb costs at most `max_output` bytes.
"""

from __future__ import annotations

import struct
import zlib
from enum import IntEnum

import lz4.block
import lz4.frame
import snappy
import zstandard

from .errors import FormatError

__all__ = [
    "CODEC_NAMES",
    "DEFAULT_MAX_OUTPUT",
    "Codec",
    "compress",
    "decompress",
    "xxh32",
]

DEFAULT_MAX_OUTPUT = 64 * 1024 * 1024


class Codec(IntEnum):
    """Compression ids of the attributes' low three bits (spec fmt §2.4, §3.2)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


CODEC_NAMES: dict[int, str] = {
    Codec.NONE: "none",
    Codec.GZIP: "gzip",
    Codec.SNAPPY: "snappy",
    Codec.LZ4: "lz4",
    Codec.ZSTD: "zstd",
}


def _codec(codec: int) -> Codec:
    try:
        return Codec(codec)
    except ValueError:
        raise FormatError("unknown_codec", f"Unknown compression type id: {codec}") from None


def _failed(codec: Codec, detail: str) -> FormatError:
    return FormatError("decompression_failed", f"{CODEC_NAMES[codec]}: {detail}")


class _Output:
    """Collects decompressed chunks and raises as soon as they pass the cap."""

    __slots__ = ("codec", "limit", "parts", "size")

    def __init__(self, codec: Codec, limit: int) -> None:
        self.codec = codec
        self.limit = limit
        self.parts: list[bytes] = []
        self.size = 0

    @property
    def room(self) -> int:
        return self.limit - self.size

    def check(self, declared: int) -> None:
        """Refuses a piece whose declared size alone would pass the cap, before allocating it."""
        if declared > self.limit - self.size:
            raise self.bomb()

    def add(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.size > self.limit:
            raise self.bomb()
        self.parts.append(chunk)

    def bomb(self) -> FormatError:
        return _failed(
            self.codec,
            f"decompression bomb: output exceeds the limit of {self.limit} bytes",
        )

    def value(self) -> bytes:
        return b"".join(self.parts)


def compress(codec: int, data, *, magic: int = 2, level: int | None = None) -> bytes:
    """`data` compressed as Kafka's producer and broker write it for a batch of `magic`.

    `level` follows Kafka's `compression.<codec>.level` ranges; None is Kafka's default.
    """
    codec = _codec(codec)
    if codec is Codec.NONE:
        return bytes(data)
    if codec is Codec.GZIP:
        return _gzip_compress(data, level)
    if codec is Codec.SNAPPY:
        return _snappy_compress(data)
    if codec is Codec.LZ4:
        return _lz4_compress(data, magic, level)
    if magic < 2:
        raise ValueError(f"ZStandard compression is not supported for magic {magic}")
    return _zstd_compress(data, level)


def decompress(codec: int, data, *, magic: int = 2, max_output: int = DEFAULT_MAX_OUTPUT) -> bytes:
    """The bytes Kafka's reader gets from `data`, compressed with `codec` in a batch of `magic`.

    Raises `FormatError('decompression_failed')` for anything Kafka's reader would reject, and for
    output past `max_output` (a decompression bomb, or a batch larger than the caller allows).
    """
    codec = _codec(codec)
    mv = data if isinstance(data, memoryview) else memoryview(data)
    if mv.ndim != 1 or mv.itemsize != 1:
        mv = mv.cast("B")
    if codec is Codec.NONE:
        return bytes(mv)
    out = _Output(codec, max_output)
    if codec is Codec.GZIP:
        _gzip_decompress(mv, out)
    elif codec is Codec.SNAPPY:
        _snappy_decompress(mv, out)
    elif codec is Codec.LZ4:
        _lz4_decompress(mv, out, magic)
    else:
        if magic < 2:
            raise _failed(codec, f"zstd is not supported for magic {magic}")
        _zstd_decompress(mv, out)
    return out.value()


# --- gzip (spec fmt §4.1) -------------------------------------------------------------------------

# What the JDK's GZIPOutputStream writes: no flags, MTIME 0, XFL 0, and OS 255 ("unknown") since
# JDK 16 (JDK-8244706). JDK 8 and 11 wrote OS 0, and a broker keeps a producer's compressed bytes,
# so logs hold both; readers accept any header. Kafka 4 brokers run on JDK 17 or later.
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
_FHCRC, _FEXTRA, _FNAME, _FCOMMENT = 0x02, 0x04, 0x08, 0x10
_JDK_BUFFER = 8192  # GZIPInputStream's input buffer as Kafka sizes it
_FEED = 256 * 1024  # input fed to zlib per call: bounds the copy of an unconsumed tail
_DRAIN = 1024 * 1024  # output taken from zlib per call


def _gzip_compress(data, level: int | None) -> bytes:
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


def _gzip_decompress(mv: memoryview, out: _Output) -> None:
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
        raise _failed(Codec.GZIP, str(e)) from None
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
            raise _failed(Codec.GZIP, "Unexpected end of ZLIB input stream")
        stored_crc, stored_size = struct.unpack_from("<II", mv, deflate_end)
        if stored_crc != crc or stored_size != size & 0xFFFFFFFF:
            raise _failed(Codec.GZIP, "Corrupt GZIP trailer")
        stream = max(stream, trailer_end)
        if not (stream < total or buffered > 26):
            return
        try:
            pos = _gzip_header(mv, trailer_end)
        except _GzipHeaderError:
            return  # GZIPInputStream.readTrailer: "ignore any malformed, do nothing"
        stream = max(stream, pos)


def _inflate_member(mv: memoryview, pos: int, out: _Output) -> tuple[int, int, int]:
    """Inflates one member's raw deflate data from `pos`: (end of deflate data, CRC-32, size)."""
    inflater = zlib.decompressobj(-15)
    crc = 0
    size = 0
    total = len(mv)
    feed = pos
    try:
        while not inflater.eof:
            if feed >= total:
                raise _failed(Codec.GZIP, "Unexpected end of ZLIB input stream")
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
        raise _failed(Codec.GZIP, str(e)) from None
    return feed - len(inflater.unused_data), crc, size


# --- snappy (spec fmt §4.2) -----------------------------------------------------------------------

_SNAPPY_MAGIC = b"\x82SNAPPY\x00"
_SNAPPY_HEADER = _SNAPPY_MAGIC + struct.pack(">ii", 1, 1)
_SNAPPY_MAGIC_HEAD = struct.unpack(">i", _SNAPPY_MAGIC[:4])[0]
_SNAPPY_BLOCK = 32 * 1024  # SnappyOutputStream's default block size
_SNAPPY_MAX_CHUNK = 512 * 1024 * 1024  # SnappyInputStream's maxChunkSize


def _snappy_compress(data) -> bytes:
    """`SnappyOutputStream`: the 16-byte header, then one length-prefixed raw block per 32 KiB."""
    mv = memoryview(data).cast("B")
    parts = [_SNAPPY_HEADER]
    for start in range(0, len(mv), _SNAPPY_BLOCK):
        block = snappy.compress(mv[start : start + _SNAPPY_BLOCK])
        parts.append(struct.pack(">i", len(block)))
        parts.append(block)
    return b"".join(parts)


def _snappy_block(block: memoryview, out: _Output) -> None:
    """One raw snappy block; its declared length is checked against the cap first."""
    declared = 0
    for i in range(5):
        if i >= len(block):
            raise _failed(Codec.SNAPPY, "invalid input: truncated block length")
        b = block[i]
        declared |= (b & 0x7F) << (7 * i)
        if not b & 0x80:
            break
    else:
        raise _failed(Codec.SNAPPY, "invalid input: block length varint is too long")
    out.check(declared)
    try:
        piece = snappy.uncompress(block)
    except snappy.UncompressError as e:
        cause = e.__cause__ or e
        raise _failed(Codec.SNAPPY, f"invalid input: {cause}".rstrip(": ")) from None
    if len(piece) != declared:
        raise _failed(
            Codec.SNAPPY,
            f"expected {declared} bytes, but decompressed chunk has {len(piece)} bytes",
        )
    out.add(piece)


def _snappy_decompress(mv: memoryview, out: _Output) -> None:
    """`SnappyInputStream`: xerial framing when the magic is there, else one raw block."""
    total = len(mv)
    if total == 0:
        raise _failed(Codec.SNAPPY, "Cannot decompress empty stream")
    if total < len(_SNAPPY_HEADER) or mv[:8] != _SNAPPY_MAGIC:
        _snappy_block(mv, out)  # unframed, as librdkafka writes it
        return
    pos = len(_SNAPPY_HEADER)  # the first header's version fields are not checked
    while total - pos >= 4:
        (length,) = struct.unpack_from(">i", mv, pos)
        pos += 4
        if length == _SNAPPY_MAGIC_HEAD:
            if total - pos < 12:
                raise _failed(Codec.SNAPPY, "Insufficient header size in a concatenated block")
            if mv[pos - 4 : pos + 4] != _SNAPPY_MAGIC:
                return  # an invalid magic ends the stream silently
            (version,) = struct.unpack_from(">i", mv, pos + 4)
            if version < 1:
                raise _failed(
                    Codec.SNAPPY,
                    f"Compressed with an incompatible codec version {version}. "
                    "At least version 1 is required",
                )
            pos += 12
            continue
        if length < 0:
            raise _failed(Codec.SNAPPY, f"chunkSize is too big or negative : {length}")
        if length > _SNAPPY_MAX_CHUNK:
            raise _failed(
                Codec.SNAPPY,
                f"Received chunkSize {length:,} is greater than max configured chunk size "
                f"{_SNAPPY_MAX_CHUNK:,}",
            )
        if total - pos < length:
            raise _failed(Codec.SNAPPY, "failed to read chunk")
        _snappy_block(mv[pos : pos + length], out)
        pos += length


# --- lz4 (spec fmt §4.3) --------------------------------------------------------------------------

_LZ4_MAGIC = b"\x04\x22\x4d\x18"
_LZ4_FLG = 0x60  # version 01, independent blocks, no checksums, no content size
_LZ4_BD = 0x40  # 64 KiB blocks
_LZ4_BLOCK = 64 * 1024
_LZ4_UNCOMPRESSED = 0x80000000
_LZ4_END_MARK = b"\x00\x00\x00\x00"
_LZ4_DEFAULT_LEVEL = 9
_PREMATURE_EOS = "Stream ended prematurely"

_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data, seed: int = 0) -> int:
    """xxHash32, for the LZ4 frame descriptor's few bytes (the `lz4` package does not export it)."""
    mv = memoryview(data).cast("B")
    n = len(mv)
    i = 0
    if n >= 16:
        v = [(seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed & _M32, (seed - _P1) & _M32]
        lanes = struct.unpack_from(f"<{n // 16 * 4}I", mv)
        for j, lane in enumerate(lanes):
            k = j & 3
            v[k] = (_rotl((v[k] + lane * _P2) & _M32, 13) * _P1) & _M32
        i = n // 16 * 16
        h = _rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)
    else:
        h = seed + _P5
    h = (h + n) & _M32
    while i + 4 <= n:
        (word,) = struct.unpack_from("<I", mv, i)
        h = (_rotl((h + word * _P3) & _M32, 17) * _P4) & _M32
        i += 4
    while i < n:
        h = (_rotl((h + mv[i] * _P5) & _M32, 11) * _P1) & _M32
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    return h ^ (h >> 16)


def _lz4_header_checksum(descriptor: bytes) -> int:
    return (xxh32(descriptor) >> 8) & 0xFF


def _lz4_compress(data, magic: int, level: int | None) -> bytes:
    """`Lz4BlockOutputStream`: 64 KiB blocks, stored raw when compressing does not shrink them.

    For magic 0 the header checksum also covers the magic bytes: Kafka's old bug, kept for readers.
    """
    if level is None:
        level = _LZ4_DEFAULT_LEVEL
    if not 1 <= level <= 17:
        raise ValueError(f"lz4 level must be within 1..17, not {level}")
    descriptor = bytes((_LZ4_FLG, _LZ4_BD))
    hc = _lz4_header_checksum(_LZ4_MAGIC + descriptor if magic == 0 else descriptor)
    parts = [_LZ4_MAGIC, descriptor, bytes((hc,))]
    mv = memoryview(data).cast("B")
    for start in range(0, len(mv), _LZ4_BLOCK):
        block = mv[start : start + _LZ4_BLOCK]
        if level == _LZ4_DEFAULT_LEVEL:  # lz4-java's fast compressor, as Kafka picks it
            packed = lz4.block.compress(block, mode="default", store_size=False)
        else:
            packed = lz4.block.compress(
                block, mode="high_compression", compression=level, store_size=False
            )
        if len(packed) >= len(block):
            parts.append(struct.pack("<I", len(block) | _LZ4_UNCOMPRESSED))
            parts.append(bytes(block))
        else:
            parts.append(struct.pack("<I", len(packed)))
            parts.append(packed)
    parts.append(_LZ4_END_MARK)
    return b"".join(parts)


def _lz4_decompress(mv: memoryview, out: _Output, magic: int) -> None:
    """`Lz4BlockInputStream`: Kafka's own partial LZ4 frame reader.

    The frame is read block by block (Kafka's rules differ from liblz4's: dependent blocks are
    rejected, the content checksum is skipped unverified, the header checksum skipped for magic 0),
    and each block goes to liblz4. A block with a checksum is handed to liblz4's frame decoder as a
    one-block frame, which verifies the xxh32 in C.
    """
    total = len(mv)
    if total < 6:
        raise _failed(Codec.LZ4, _PREMATURE_EOS)
    if mv[:4] != _LZ4_MAGIC:
        raise _failed(Codec.LZ4, "Stream unsupported (invalid magic bytes)")
    flg, bd = mv[4], mv[5]
    if flg & 0x03:
        raise _failed(Codec.LZ4, "Reserved bits must be 0")
    if not flg & 0x20:
        raise _failed(Codec.LZ4, "Dependent block stream is unsupported")
    if flg >> 6 != 1:
        raise _failed(Codec.LZ4, f"Version {flg >> 6} is unsupported")
    if bd & 0x0F:
        raise _failed(Codec.LZ4, "Reserved2 field must be 0")
    size_code = (bd >> 4) & 0x07
    if not 4 <= size_code <= 7:
        raise _failed(Codec.LZ4, "Block size value must be between 4 and 7")
    if bd & 0x80:
        raise _failed(Codec.LZ4, "Reserved3 field must be 0")
    max_block = 1 << (2 * size_code + 8)
    block_checksum = bool(flg & 0x10)
    content_checksum = bool(flg & 0x04)
    pos = 6
    if flg & 0x08:
        if total - pos < 8:
            raise _failed(Codec.LZ4, _PREMATURE_EOS)
        pos += 8
    if pos >= total:
        raise _failed(Codec.LZ4, _PREMATURE_EOS)
    if magic != 0 and mv[pos] != _lz4_header_checksum(mv[4:pos]):
        raise _failed(Codec.LZ4, "Stream frame descriptor corrupted")
    pos += 1
    if block_checksum:
        mini_descriptor = bytes((0x70, bd))  # independent blocks with block checksums, nothing else
        mini_header = _LZ4_MAGIC + mini_descriptor + bytes((_lz4_header_checksum(mini_descriptor),))
    while True:
        start = pos
        if total - pos < 4:
            raise _failed(Codec.LZ4, _PREMATURE_EOS)
        (word,) = struct.unpack_from("<I", mv, pos)
        pos += 4
        length = word & ~_LZ4_UNCOMPRESSED
        if length == 0:
            if content_checksum and total - pos < 4:
                raise _failed(Codec.LZ4, _PREMATURE_EOS)
            return  # the content checksum is skipped unverified; later bytes are ignored
        if length > max_block:
            raise _failed(Codec.LZ4, f"Block size {length} exceeded max: {max_block}")
        if total - pos < length:
            raise _failed(Codec.LZ4, _PREMATURE_EOS)
        block = mv[pos : pos + length]
        pos += length
        if block_checksum:
            if total - pos < 4:
                raise _failed(Codec.LZ4, _PREMATURE_EOS)
            pos += 4
            piece = _lz4_checked_block(b"".join((mini_header, mv[start:pos], _LZ4_END_MARK)))
        elif word & _LZ4_UNCOMPRESSED:
            piece = bytes(block)
        else:
            try:
                piece = lz4.block.decompress(block, uncompressed_size=max_block)
            except lz4.block.LZ4BlockError as e:
                raise _failed(Codec.LZ4, str(e)) from None
        out.add(piece)


def _lz4_checked_block(frame: bytes) -> bytes:
    try:
        return lz4.frame.decompress(frame)
    except RuntimeError as e:
        if "blockChecksum" in str(e):
            raise _failed(Codec.LZ4, "Block checksum mismatch") from None
        raise _failed(Codec.LZ4, str(e)) from None


# --- zstd (spec fmt §4.4) -------------------------------------------------------------------------

_ZSTD_MAGIC = 0xFD2FB528
_ZSTD_DEFAULT_LEVEL = 3
_ZSTD_MIN_LEVEL = -131072
_DICT_ID_SIZES = (0, 1, 2, 4)
_CONTENT_SIZE_SIZES = (0, 2, 4, 8)


def _zstd_compress(data, level: int | None) -> bytes:
    """zstd-jni's stream: one frame, no checksum; streaming leaves the content size out."""
    if level is None:
        level = _ZSTD_DEFAULT_LEVEL
    if not _ZSTD_MIN_LEVEL <= level <= zstandard.MAX_COMPRESSION_LEVEL:
        raise ValueError(f"zstd level must be within {_ZSTD_MIN_LEVEL}..22, not {level}")
    compressor = zstandard.ZstdCompressor(level=level).compressobj()
    return compressor.compress(data) + compressor.flush()


def _check_zstd_frames(mv: memoryview) -> None:
    """Walks the frame and block headers so a cut frame is `Truncated source`, as zstd-jni says.

    The decoder behind `stream_reader` reports a truncated last frame as a clean end of data, so the
    structure is checked here before decoding; the block contents are left to libzstd.
    """
    total = len(mv)
    pos = 0
    while pos < total:
        if total - pos < 4:
            raise _failed(Codec.ZSTD, "Truncated source")
        (magic,) = struct.unpack_from("<I", mv, pos)
        if magic & 0xFFFFFFF0 == 0x184D2A50:  # skippable frame
            if total - pos < 8:
                raise _failed(Codec.ZSTD, "Truncated source")
            (length,) = struct.unpack_from("<I", mv, pos + 4)
            pos += 8 + length
            continue
        if magic != _ZSTD_MAGIC:
            raise _failed(Codec.ZSTD, "Unknown frame descriptor")
        if total - pos < 5:
            raise _failed(Codec.ZSTD, "Truncated source")
        descriptor = mv[pos + 4]
        if descriptor & 0x08:
            raise _failed(Codec.ZSTD, "Unsupported frame parameter")
        single_segment = descriptor & 0x20
        content_size = _CONTENT_SIZE_SIZES[descriptor >> 6]
        if single_segment and not content_size:
            content_size = 1
        pos += 5 + (0 if single_segment else 1) + _DICT_ID_SIZES[descriptor & 3] + content_size
        while True:
            if total - pos < 3:
                raise _failed(Codec.ZSTD, "Truncated source")
            header = mv[pos] | mv[pos + 1] << 8 | mv[pos + 2] << 16
            block_type = (header >> 1) & 3
            if block_type == 3:
                raise _failed(Codec.ZSTD, "Corrupted block detected")
            pos += 3 + (1 if block_type == 1 else header >> 3)
            if header & 1:
                break
        if descriptor & 0x04:
            pos += 4
    if pos > total:
        raise _failed(Codec.ZSTD, "Truncated source")


def _zstd_decompress(mv: memoryview, out: _Output) -> None:
    """zstd-jni's `ZstdInputStream`: consecutive frames, content size optional, bounded reads."""
    _check_zstd_frames(mv)
    reader = zstandard.ZstdDecompressor().stream_reader(mv, read_across_frames=True)
    try:
        while True:
            piece = reader.read(min(out.room + 1, _DRAIN))
            if not piece:
                return
            out.add(piece)
    except zstandard.ZstdError as e:
        raise _failed(Codec.ZSTD, str(e).removeprefix("zstd decompress error: ")) from None
