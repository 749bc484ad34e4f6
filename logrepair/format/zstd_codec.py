"""zstd as Kafka reads and writes it (spec fmt §4.4): zstd-jni's stream, frames with or without
a content size, the frame headers checked before anything is allocated.

Every failure is a `FormatError('decompression_failed')` naming the codec (`codec_output`).
"""

from __future__ import annotations

import struct

import zstandard

from .codec_output import Codec, Output, failed

_ZSTD_MAGIC = 0xFD2FB528
_ZSTD_DEFAULT_LEVEL = 3
_ZSTD_MIN_LEVEL = -131072
_DICT_ID_SIZES = (0, 1, 2, 4)
_CONTENT_SIZE_SIZES = (0, 2, 4, 8)
_DRAIN = 1024 * 1024  # output taken from the stream per call


def compress(data, level: int | None) -> bytes:
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
            raise failed(Codec.ZSTD, "Truncated source")
        (magic,) = struct.unpack_from("<I", mv, pos)
        if magic & 0xFFFFFFF0 == 0x184D2A50:  # skippable frame
            if total - pos < 8:
                raise failed(Codec.ZSTD, "Truncated source")
            (length,) = struct.unpack_from("<I", mv, pos + 4)
            pos += 8 + length
            continue
        if magic != _ZSTD_MAGIC:
            raise failed(Codec.ZSTD, "Unknown frame descriptor")
        if total - pos < 5:
            raise failed(Codec.ZSTD, "Truncated source")
        descriptor = mv[pos + 4]
        if descriptor & 0x08:
            raise failed(Codec.ZSTD, "Unsupported frame parameter")
        single_segment = descriptor & 0x20
        content_size = _CONTENT_SIZE_SIZES[descriptor >> 6]
        if single_segment and not content_size:
            content_size = 1
        pos += 5 + (0 if single_segment else 1) + _DICT_ID_SIZES[descriptor & 3] + content_size
        while True:
            if total - pos < 3:
                raise failed(Codec.ZSTD, "Truncated source")
            header = mv[pos] | mv[pos + 1] << 8 | mv[pos + 2] << 16
            block_type = (header >> 1) & 3
            if block_type == 3:
                raise failed(Codec.ZSTD, "Corrupted block detected")
            pos += 3 + (1 if block_type == 1 else header >> 3)
            if header & 1:
                break
        if descriptor & 0x04:
            pos += 4
    if pos > total:
        raise failed(Codec.ZSTD, "Truncated source")


def decompress(mv: memoryview, out: Output) -> None:
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
        raise failed(Codec.ZSTD, str(e).removeprefix("zstd decompress error: ")) from None
