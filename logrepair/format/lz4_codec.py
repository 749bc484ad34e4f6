"""LZ4 as Kafka reads and writes it (spec fmt §4.3): Kafka's own frame (`Lz4BlockOutputStream`,
`Lz4BlockInputStream`), including the magic-0 header-checksum bug, and the `xxh32` it needs.

Every failure is a `FormatError('decompression_failed')` naming the codec (`codec_output`).
"""

from __future__ import annotations

import struct

import lz4.block
import lz4.frame

from .codec_output import Codec, Output, failed

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


def compress(data, magic: int, level: int | None) -> bytes:
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


def decompress(mv: memoryview, out: Output, magic: int) -> None:
    """`Lz4BlockInputStream`: Kafka's own partial LZ4 frame reader.

    The frame is read block by block (Kafka's rules differ from liblz4's: dependent blocks are
    rejected, the content checksum is skipped unverified, the header checksum skipped for magic 0),
    and each block goes to liblz4. A block with a checksum is handed to liblz4's frame decoder as a
    one-block frame, which verifies the xxh32 in C.
    """
    total = len(mv)
    if total < 6:
        raise failed(Codec.LZ4, _PREMATURE_EOS)
    if mv[:4] != _LZ4_MAGIC:
        raise failed(Codec.LZ4, "Stream unsupported (invalid magic bytes)")
    flg, bd = mv[4], mv[5]
    if flg & 0x03:
        raise failed(Codec.LZ4, "Reserved bits must be 0")
    if not flg & 0x20:
        raise failed(Codec.LZ4, "Dependent block stream is unsupported")
    if flg >> 6 != 1:
        raise failed(Codec.LZ4, f"Version {flg >> 6} is unsupported")
    if bd & 0x0F:
        raise failed(Codec.LZ4, "Reserved2 field must be 0")
    size_code = (bd >> 4) & 0x07
    if not 4 <= size_code <= 7:
        raise failed(Codec.LZ4, "Block size value must be between 4 and 7")
    if bd & 0x80:
        raise failed(Codec.LZ4, "Reserved3 field must be 0")
    max_block = 1 << (2 * size_code + 8)
    block_checksum = bool(flg & 0x10)
    content_checksum = bool(flg & 0x04)
    pos = 6
    if flg & 0x08:
        if total - pos < 8:
            raise failed(Codec.LZ4, _PREMATURE_EOS)
        pos += 8
    if pos >= total:
        raise failed(Codec.LZ4, _PREMATURE_EOS)
    if magic != 0 and mv[pos] != _lz4_header_checksum(mv[4:pos]):
        raise failed(Codec.LZ4, "Stream frame descriptor corrupted")
    pos += 1
    if block_checksum:
        mini_descriptor = bytes((0x70, bd))  # independent blocks with block checksums, nothing else
        mini_header = _LZ4_MAGIC + mini_descriptor + bytes((_lz4_header_checksum(mini_descriptor),))
    while True:
        start = pos
        if total - pos < 4:
            raise failed(Codec.LZ4, _PREMATURE_EOS)
        (word,) = struct.unpack_from("<I", mv, pos)
        pos += 4
        length = word & ~_LZ4_UNCOMPRESSED
        if length == 0:
            if content_checksum and total - pos < 4:
                raise failed(Codec.LZ4, _PREMATURE_EOS)
            return  # the content checksum is skipped unverified; later bytes are ignored
        if length > max_block:
            raise failed(Codec.LZ4, f"Block size {length} exceeded max: {max_block}")
        if total - pos < length:
            raise failed(Codec.LZ4, _PREMATURE_EOS)
        block = mv[pos : pos + length]
        pos += length
        if block_checksum:
            if total - pos < 4:
                raise failed(Codec.LZ4, _PREMATURE_EOS)
            pos += 4
            piece = _lz4_checked_block(b"".join((mini_header, mv[start:pos], _LZ4_END_MARK)))
        elif word & _LZ4_UNCOMPRESSED:
            piece = bytes(block)
        else:
            try:
                piece = lz4.block.decompress(block, uncompressed_size=max_block)
            except lz4.block.LZ4BlockError as e:
                raise failed(Codec.LZ4, str(e)) from None
        out.add(piece)


def _lz4_checked_block(frame: bytes) -> bytes:
    try:
        return lz4.frame.decompress(frame)
    except RuntimeError as e:
        if "blockChecksum" in str(e):
            raise failed(Codec.LZ4, "Block checksum mismatch") from None
        raise failed(Codec.LZ4, str(e)) from None
