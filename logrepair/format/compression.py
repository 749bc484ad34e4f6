"""Kafka's five compression codecs (spec fmt §4): read as Kafka reads them, written as Kafka writes.

Readers follow the Java classes Kafka uses, not the codec libraries' own framing rules: the JDK's
`GZIPInputStream`, snappy-java's `SnappyInputStream`, Kafka's `Lz4BlockInputStream` and zstd-jni's
stream. Every failure is a `FormatError('decompression_failed')` whose detail names the codec and
Kafka's message where it has one.

Decompression is streamed and stops at `max_output`: no declared size (snappy's block length, an LZ4
or zstd content size) is trusted for an allocation: a small bomb costs at most `max_output` bytes.
"""

from __future__ import annotations

from . import gzip_codec, lz4_codec, snappy_codec, zstd_codec
from .codec_output import CODEC_NAMES, Codec, Output, failed
from .errors import FormatError

__all__ = [
    "CODEC_NAMES",
    "DEFAULT_MAX_OUTPUT",
    "Codec",
    "compress",
    "decompress",
]

DEFAULT_MAX_OUTPUT = 64 * 1024 * 1024


def _codec(codec: int) -> Codec:
    try:
        return Codec(codec)
    except ValueError:
        raise FormatError("unknown_codec", f"Unknown compression type id: {codec}") from None


def compress(codec: int, data, *, magic: int = 2, level: int | None = None) -> bytes:
    """`data` compressed as Kafka's producer and broker write it for a batch of `magic`.

    `level` follows Kafka's `compression.<codec>.level` ranges; None is Kafka's default.
    """
    codec = _codec(codec)
    if codec is Codec.NONE:
        return bytes(data)
    if codec is Codec.GZIP:
        return gzip_codec.compress(data, level)
    if codec is Codec.SNAPPY:
        return snappy_codec.compress(data)
    if codec is Codec.LZ4:
        return lz4_codec.compress(data, magic, level)
    if magic < 2:
        raise ValueError(f"ZStandard compression is not supported for magic {magic}")
    return zstd_codec.compress(data, level)


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
    out = Output(codec, max_output)
    if codec is Codec.GZIP:
        gzip_codec.decompress(mv, out)
    elif codec is Codec.SNAPPY:
        snappy_codec.decompress(mv, out)
    elif codec is Codec.LZ4:
        lz4_codec.decompress(mv, out, magic)
    else:
        if magic < 2:
            raise failed(codec, f"zstd is not supported for magic {magic}")
        zstd_codec.decompress(mv, out)
    return out.value()
