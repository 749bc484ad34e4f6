"""Decompression bombs: 1 GiB of zeros in each codec stops at the cap, memory bounded by the cap.

Each bomb is a valid stream built by repeating one compressed piece (identical input compresses the
same after a full flush or a block boundary), so no test spends seconds compressing 1 GiB.
"""

from __future__ import annotations

import struct
import tracemalloc
import zlib

import lz4.block
import pytest
import snappy
import zstandard

from logrepair.format.compression import Codec, compress, decompress
from logrepair.format.errors import FormatError

GIB = 1 << 30
MIB = 1 << 20
CAP = 4 * MIB


def gzip_bomb() -> bytes:
    deflater = zlib.compressobj(9, zlib.DEFLATED, -15)
    zeros = bytes(MIB)
    first = deflater.compress(zeros) + deflater.flush(zlib.Z_FULL_FLUSH)
    piece = deflater.compress(zeros) + deflater.flush(zlib.Z_FULL_FLUSH)
    rest = deflater.compress(zeros) + deflater.flush(zlib.Z_FULL_FLUSH)
    assert piece == rest  # after a full flush, the same input deflates the same
    crc = 0
    for _ in range(1024):
        crc = zlib.crc32(zeros, crc)
    body = first + piece * 1023 + deflater.flush()
    return bytes.fromhex("1f8b08000000000000ff") + body + struct.pack("<II", crc, GIB & 0xFFFFFFFF)


def snappy_bomb() -> bytes:
    block = snappy.compress(bytes(32768))
    chunk = struct.pack(">i", len(block)) + block
    return bytes.fromhex("82534e41505059000000000100000001") + chunk * (GIB // 32768)


def lz4_bomb() -> bytes:
    block = lz4.block.compress(bytes(65536), store_size=False)
    body = (struct.pack("<I", len(block)) + block) * (GIB // 65536)
    return bytes.fromhex("04224d18604082") + body + bytes(4)


def zstd_bomb() -> bytes:
    compressor = zstandard.ZstdCompressor(level=1).compressobj()
    zeros = bytes(MIB)
    return b"".join([compressor.compress(zeros) for _ in range(1024)] + [compressor.flush()])


def zstd_bomb_declaring_its_size() -> bytes:
    compressor = zstandard.ZstdCompressor(level=1).compressobj(size=GIB)
    zeros = bytes(MIB)
    return b"".join([compressor.compress(zeros) for _ in range(1024)] + [compressor.flush()])


BOMBS = {
    "gzip": (Codec.GZIP, gzip_bomb),
    "snappy": (Codec.SNAPPY, snappy_bomb),
    "lz4": (Codec.LZ4, lz4_bomb),
    "zstd": (Codec.ZSTD, zstd_bomb),
    "zstd-sized": (Codec.ZSTD, zstd_bomb_declaring_its_size),
}


@pytest.fixture(scope="module", params=sorted(BOMBS))
def bomb(request) -> tuple[Codec, bytes]:
    codec, build = BOMBS[request.param]
    return codec, build()


def test_bomb_is_stopped_at_the_cap_with_bounded_memory(bomb) -> None:
    codec, data = bomb
    assert len(data) < 64 * MIB
    tracemalloc.start()
    try:
        with pytest.raises(FormatError) as info:
            decompress(codec, data, max_output=CAP)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert info.value.kind == "decompression_failed"
    assert "decompression bomb" in info.value.detail
    assert str(CAP) in info.value.detail
    assert peak < 3 * CAP, peak


@pytest.mark.parametrize("codec", [c for c in Codec if c])
def test_output_exactly_at_the_cap_is_accepted(codec: Codec) -> None:
    data = bytes(range(256)) * 1000
    packed = compress(codec, data)
    assert decompress(codec, packed, max_output=len(data)) == data
    with pytest.raises(FormatError, match="decompression bomb"):
        decompress(codec, packed, max_output=len(data) - 1)


def test_declared_snappy_length_is_refused_before_allocating() -> None:
    raw = b"\x80\x80\x80\x80\x04" + b"\x00"  # declares 1 GiB, holds one tag byte
    tracemalloc.start()
    try:
        with pytest.raises(FormatError, match="decompression bomb"):
            decompress(Codec.SNAPPY, raw, max_output=CAP)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < MIB


def test_default_cap_applies() -> None:
    with pytest.raises(FormatError, match="limit of 67108864 bytes"):
        decompress(Codec.LZ4, lz4_bomb())
