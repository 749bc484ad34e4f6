"""Compression codecs: round trips, Kafka's writer bytes, each Java reader's rules (spec fmt §4)."""

from __future__ import annotations

import gzip
import struct
import zlib

import lz4.block
import lz4.frame
import pytest
import snappy
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from logrepair.format.compression import (
    CODEC_NAMES,
    DEFAULT_MAX_OUTPUT,
    Codec,
    compress,
    decompress,
)
from logrepair.format.errors import FormatError
from logrepair.format.lz4_codec import xxh32

SAMPLE = b"kafka log segment " * 5000 + bytes(range(256)) * 300  # several blocks of every codec
CODEC_MAGICS = [(c, m) for c in Codec for m in (0, 1, 2) if not (c is Codec.ZSTD and m < 2)]


def failure(codec: Codec, data: bytes, *, magic: int = 2, **kwargs) -> str:
    with pytest.raises(FormatError) as info:
        decompress(codec, data, magic=magic, **kwargs)
    assert info.value.kind == "decompression_failed"
    return info.value.detail


def test_codec_ids_and_names() -> None:
    assert [int(c) for c in Codec] == [0, 1, 2, 3, 4]
    assert CODEC_NAMES == {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
    assert DEFAULT_MAX_OUTPUT == 64 * 1024 * 1024


@pytest.mark.parametrize("codec_id", [5, 6, 7])
def test_unknown_codec_ids(codec_id: int) -> None:
    with pytest.raises(FormatError) as info:
        decompress(codec_id, b"\x00" * 16)
    assert info.value.kind == "unknown_codec"
    assert info.value.detail == f"Unknown compression type id: {codec_id}"
    with pytest.raises(FormatError):
        compress(codec_id, b"data")


@settings(max_examples=60)
@given(data=st.binary(max_size=3000) | st.binary(max_size=40).map(lambda b: b * 2000))
@pytest.mark.parametrize("codec,magic", CODEC_MAGICS)
def test_round_trip(codec: Codec, magic: int, data: bytes) -> None:
    packed = compress(codec, data, magic=magic)
    assert decompress(codec, packed, magic=magic) == data
    assert decompress(codec, memoryview(bytearray(packed)), magic=magic) == data


@pytest.mark.parametrize("codec,magic", CODEC_MAGICS)
def test_round_trip_multi_block(codec: Codec, magic: int) -> None:
    assert decompress(codec, compress(codec, SAMPLE, magic=magic), magic=magic) == SAMPLE


@pytest.mark.parametrize(
    "codec,level", [(Codec.GZIP, 1), (Codec.GZIP, 9), (Codec.LZ4, 1), (Codec.LZ4, 17)]
)
def test_levels(codec: Codec, level: int) -> None:
    assert decompress(codec, compress(codec, SAMPLE, level=level)) == SAMPLE


@pytest.mark.parametrize("level", [-5, 1, 22])
def test_zstd_levels(level: int) -> None:
    assert decompress(Codec.ZSTD, compress(Codec.ZSTD, SAMPLE, level=level)) == SAMPLE


@pytest.mark.parametrize(
    "codec,level",
    [(Codec.GZIP, 0), (Codec.GZIP, 10), (Codec.LZ4, 0), (Codec.LZ4, 18), (Codec.ZSTD, 23)],
)
def test_level_out_of_kafka_range(codec: Codec, level: int) -> None:
    with pytest.raises(ValueError):
        compress(codec, b"x", level=level)


def test_zstd_is_magic_2_only() -> None:
    with pytest.raises(ValueError, match="not supported for magic 1"):
        compress(Codec.ZSTD, b"x", magic=1)
    packed = compress(Codec.ZSTD, b"x")
    assert "not supported for magic 0" in failure(Codec.ZSTD, packed, magic=0)


# --- gzip -----------------------------------------------------------------------------------------


def test_gzip_writes_one_member_with_the_jdk_header() -> None:
    packed = compress(Codec.GZIP, SAMPLE)
    assert packed[:10] == bytes.fromhex("1f8b08000000000000ff")
    crc, size = struct.unpack("<II", packed[-8:])
    assert crc == zlib.crc32(SAMPLE) and size == len(SAMPLE)
    # the body is zlib's raw deflate at its default level, as the JDK's Deflater produces
    deflater = zlib.compressobj(-1, zlib.DEFLATED, -15)
    assert packed[10:-8] == deflater.compress(SAMPLE) + deflater.flush()
    assert gzip.decompress(packed) == SAMPLE


def test_gzip_reads_what_other_writers_write() -> None:
    for level in (1, 6, 9):
        assert decompress(Codec.GZIP, gzip.compress(SAMPLE, compresslevel=level)) == SAMPLE
    # FNAME and MTIME as Python's GzipFile writes them with a file name
    import io

    buf = io.BytesIO()
    with gzip.GzipFile(filename="batch.bin", mode="wb", fileobj=buf, mtime=1) as f:
        f.write(SAMPLE)
    assert buf.getvalue()[3] & 0x08
    assert decompress(Codec.GZIP, buf.getvalue()) == SAMPLE


def deflated(data: bytes, level: int = 6) -> bytes:
    deflater = zlib.compressobj(level, zlib.DEFLATED, -15)
    return deflater.compress(data) + deflater.flush()


def gzip_member(data: bytes, flags: int = 0, extra: bytes = b"", level: int = 6) -> bytes:
    body = deflated(data, level)
    header = bytes([0x1F, 0x8B, 8, flags, 0, 0, 0, 0, 0, 3]) + extra
    return header + body + struct.pack("<II", zlib.crc32(data), len(data))


def test_gzip_optional_header_fields() -> None:
    extra = struct.pack("<H", 4) + b"abcd" + b"name\x00" + b"comment\x00"
    header = bytes([0x1F, 0x8B, 8, 0x04 | 0x08 | 0x10 | 0x02, 0, 0, 0, 0, 0, 3]) + extra
    hcrc = struct.pack("<H", zlib.crc32(header) & 0xFFFF)
    member = gzip_member(b"payload", 0x04 | 0x08 | 0x10 | 0x02, extra + hcrc)
    assert decompress(Codec.GZIP, member) == b"payload"
    bad = bytearray(member)
    bad[len(header)] ^= 0xFF
    assert failure(Codec.GZIP, bytes(bad)) == "gzip: Corrupt GZIP header"


def test_gzip_reserved_flag_bits_are_accepted_as_the_jdk_does() -> None:
    assert decompress(Codec.GZIP, gzip_member(b"payload", 0xE0)) == b"payload"


def test_gzip_concatenated_members() -> None:
    data = gzip_member(b"first ") + gzip_member(b"") + gzip_member(b"second")
    assert decompress(Codec.GZIP, data) == b"first second"


@pytest.mark.parametrize(
    "junk", [b"\x00", b"garbage after the member", b"\x1f\x8b\x09" + bytes(40)]
)
def test_gzip_junk_after_a_member_ends_the_data_silently(junk: bytes) -> None:
    assert decompress(Codec.GZIP, gzip_member(SAMPLE) + junk) == SAMPLE


def test_gzip_next_member_header_then_broken_data_fails() -> None:
    second = gzip_member(SAMPLE[:5000])
    data = gzip_member(SAMPLE) + second[:40]
    assert failure(Codec.GZIP, data) == "gzip: Unexpected end of ZLIB input stream"


def test_gzip_short_tail_inside_the_jdk_buffer_is_ignored() -> None:
    """18 bytes or fewer after the trailer, already in the JDK's 8 KiB buffer: no header probe."""
    small = gzip_member(b"tiny payload")
    assert len(small) < 8192
    tail = gzip_member(b"")[:15]  # a valid header and a cut deflate stream
    assert decompress(Codec.GZIP, small + tail) == b"tiny payload"
    # When the deflate data ends exactly at a buffer fill, the trailer comes from the stream,
    # which then still has bytes: the tail is probed as a header, and the member after it fails.
    n = next(n for n in range(16300, 16400) if len(deflated(bytes(n), 0)) == 16384)
    aligned = gzip_member(bytes(n), level=0)
    assert decompress(Codec.GZIP, aligned) == bytes(n)
    assert "Unexpected end" in failure(Codec.GZIP, aligned + tail)
    assert decompress(Codec.GZIP, aligned + tail[:9]) == bytes(n)  # not a whole header


@pytest.mark.parametrize(
    "data,message",
    [
        (b"", "Unexpected end of ZLIB input stream"),
        (b"\x1f", "Unexpected end of ZLIB input stream"),
        (b"PK", "Not in GZIP format"),
        (b"\x1f\x8b", "Unexpected end of ZLIB input stream"),
        (b"\x1f\x8b\x07", "Unsupported compression method"),
        (b"\x1f\x8b\x08\x00", "Unexpected end of ZLIB input stream"),
        (b"PK\x03\x04" + bytes(20), "Not in GZIP format"),
        (b"\x1f\x8b\x07\x00" + bytes(20), "Unsupported compression method"),
    ],
)
def test_gzip_bad_headers(data: bytes, message: str) -> None:
    assert failure(Codec.GZIP, data) == f"gzip: {message}"


def test_gzip_corrupt_trailer_and_body() -> None:
    member = bytearray(gzip_member(SAMPLE))
    member[-6] ^= 1
    assert failure(Codec.GZIP, bytes(member)) == "gzip: Corrupt GZIP trailer"
    member = bytearray(gzip_member(SAMPLE))
    member[-1] ^= 1  # ISIZE
    assert failure(Codec.GZIP, bytes(member)) == "gzip: Corrupt GZIP trailer"
    assert "Unexpected end" in failure(Codec.GZIP, gzip_member(SAMPLE)[:-5])
    assert "Unexpected end" in failure(Codec.GZIP, gzip_member(SAMPLE)[:300])
    assert failure(Codec.GZIP, bytes.fromhex("1f8b0800000000000003") + b"\xff" * 20).startswith(
        "gzip: "
    )


# --- snappy ---------------------------------------------------------------------------------------

XERIAL_HEADER = bytes.fromhex("82534e41505059000000000100000001")


def test_snappy_writes_xerial_framing_in_32k_blocks() -> None:
    packed = compress(Codec.SNAPPY, SAMPLE)
    assert packed[:16] == XERIAL_HEADER
    pos, blocks = 16, []
    while pos < len(packed):
        (length,) = struct.unpack_from(">i", packed, pos)
        blocks.append(snappy.uncompress(packed[pos + 4 : pos + 4 + length]))
        pos += 4 + length
    assert [len(b) for b in blocks[:-1]] == [32768] * (len(blocks) - 1)
    assert b"".join(blocks) == SAMPLE
    assert compress(Codec.SNAPPY, b"") == XERIAL_HEADER


def test_snappy_reads_raw_unframed_blocks() -> None:
    assert decompress(Codec.SNAPPY, snappy.compress(SAMPLE)) == SAMPLE
    assert decompress(Codec.SNAPPY, snappy.compress(b"")) == b""
    short = snappy.compress(b"abc")
    assert len(short) < 16
    assert decompress(Codec.SNAPPY, short) == b"abc"


def test_snappy_empty_input() -> None:
    assert failure(Codec.SNAPPY, b"") == "snappy: Cannot decompress empty stream"


def test_snappy_header_versions_of_the_first_stream_are_not_checked() -> None:
    packed = compress(Codec.SNAPPY, b"payload")
    old = packed[:8] + bytes(8) + packed[16:]
    assert decompress(Codec.SNAPPY, old) == b"payload"


def test_snappy_concatenated_streams() -> None:
    data = compress(Codec.SNAPPY, b"first ") + compress(Codec.SNAPPY, b"second")
    assert decompress(Codec.SNAPPY, data) == b"first second"


def test_snappy_concatenated_stream_rules() -> None:
    one = compress(Codec.SNAPPY, b"first")
    bad_magic = XERIAL_HEADER[:4] + b"XXXX" + XERIAL_HEADER[8:] + one[16:]
    assert decompress(Codec.SNAPPY, one + bad_magic) == b"first"  # an invalid magic ends it
    old = XERIAL_HEADER[:8] + struct.pack(">ii", 0, 1)
    assert "incompatible codec version 0" in failure(Codec.SNAPPY, one + old)
    assert failure(Codec.SNAPPY, one + XERIAL_HEADER[:10]) == (
        "snappy: Insufficient header size in a concatenated block"
    )


def test_snappy_chunk_errors() -> None:
    one = compress(Codec.SNAPPY, SAMPLE[:1000])
    assert "chunkSize is too big or negative : -2" in failure(
        Codec.SNAPPY, XERIAL_HEADER + struct.pack(">i", -2)
    )
    assert "is greater than max configured chunk size" in failure(
        Codec.SNAPPY, XERIAL_HEADER + struct.pack(">i", 512 * 1024 * 1024 + 1)
    )
    assert failure(Codec.SNAPPY, one[:-3]) == "snappy: failed to read chunk"
    # fewer than 4 bytes after a chunk: the end of the stream
    assert decompress(Codec.SNAPPY, one + b"\x00\x00") == SAMPLE[:1000]
    bad_copy = b"\x64" + b"\x06\xff\xff"  # 100 bytes declared, then a copy from before the start
    assert failure(Codec.SNAPPY, XERIAL_HEADER + struct.pack(">i", 4) + bad_copy).startswith(
        "snappy: invalid input"
    )


def test_snappy_declared_length_must_match() -> None:
    block = bytearray(snappy.compress(b"abcdef" * 10))
    assert block[0] == 60
    block[0] = 61
    detail = failure(Codec.SNAPPY, XERIAL_HEADER + struct.pack(">i", len(block)) + bytes(block))
    assert detail.startswith("snappy: ")


# --- lz4 ------------------------------------------------------------------------------------------


def test_lz4_writer_headers_per_magic() -> None:
    assert compress(Codec.LZ4, b"", magic=2) == bytes.fromhex("04224d186040820000000000")[:11]
    assert compress(Codec.LZ4, b"", magic=1)[:7] == bytes.fromhex("04224d18604082")
    assert compress(Codec.LZ4, b"", magic=0)[:7] == bytes.fromhex("04224d1860401a")
    packed = compress(Codec.LZ4, SAMPLE)
    assert packed.endswith(b"\x00\x00\x00\x00")
    # standard LZ4 frames: liblz4's own frame decoder reads them
    assert lz4.frame.decompress(packed) == SAMPLE


def test_lz4_blocks_are_64k_and_incompressible_ones_stored() -> None:
    import os

    noise = os.urandom(70000)
    packed = compress(Codec.LZ4, noise)
    (first,) = struct.unpack_from("<I", packed, 7)
    assert first == 0x80000000 | 65536
    assert packed[11 : 11 + 65536] == noise[:65536]
    assert decompress(Codec.LZ4, packed) == noise


def test_lz4_header_checksum_is_checked_for_magic_1_and_2_only() -> None:
    broken = compress(Codec.LZ4, SAMPLE, magic=0)
    assert decompress(Codec.LZ4, broken, magic=0) == SAMPLE
    for magic in (1, 2):
        assert failure(Codec.LZ4, broken, magic=magic) == "lz4: Stream frame descriptor corrupted"
    good = compress(Codec.LZ4, SAMPLE, magic=2)
    assert decompress(Codec.LZ4, good, magic=0) == SAMPLE


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"store_size": True},
        {"block_checksum": True},
        {"content_checksum": True},
        {"store_size": True, "block_checksum": True, "content_checksum": True},
        {"block_size": lz4.frame.BLOCKSIZE_MAX4MB},
    ],
)
def test_lz4_reads_liblz4_frames(options: dict) -> None:
    frame = lz4.frame.compress(SAMPLE, block_linked=False, **options)
    assert decompress(Codec.LZ4, frame) == SAMPLE


def test_lz4_block_checksum_mismatch() -> None:
    frame = bytearray(
        lz4.frame.compress(SAMPLE, block_linked=False, block_checksum=True, store_size=False)
    )
    frame[30] ^= 0x01
    assert failure(Codec.LZ4, bytes(frame)) == "lz4: Block checksum mismatch"


def test_lz4_content_checksum_is_skipped_unverified() -> None:
    frame = bytearray(lz4.frame.compress(SAMPLE, block_linked=False, content_checksum=True))
    frame[-1] ^= 0xFF
    assert decompress(Codec.LZ4, bytes(frame)) == SAMPLE
    assert "prematurely" in failure(Codec.LZ4, bytes(frame[:-2]))


def header(flg: int, bd: int, magic: bytes = b"\x04\x22\x4d\x18") -> bytes:
    return magic + bytes((flg, bd, (xxh32(bytes((flg, bd))) >> 8) & 0xFF))


@pytest.mark.parametrize(
    "data,message",
    [
        (b"\x04\x22\x4d\x18\x60", "Stream ended prematurely"),
        (b"\x05\x22\x4d\x18\x60\x40\x82", "Stream unsupported (invalid magic bytes)"),
        (header(0x61, 0x40), "Reserved bits must be 0"),
        (header(0x40, 0x40), "Dependent block stream is unsupported"),
        (header(0xA0, 0x40), "Version 2 is unsupported"),
        (header(0x60, 0x41), "Reserved2 field must be 0"),
        (header(0x60, 0x30), "Block size value must be between 4 and 7"),
        (header(0x60, 0xC0), "Reserved3 field must be 0"),
        (header(0x68, 0x40)[:-1] + bytes(4), "Stream ended prematurely"),
        (header(0x60, 0x40), "Stream ended prematurely"),
        (header(0x60, 0x40) + struct.pack("<I", 65537), "Block size 65537 exceeded max: 65536"),
        (header(0x60, 0x40) + struct.pack("<I", 10) + b"abc", "Stream ended prematurely"),
        (header(0x70, 0x40) + struct.pack("<I", 0x80000003) + b"abc", "Stream ended prematurely"),
    ],
)
def test_lz4_reader_errors(data: bytes, message: str) -> None:
    assert failure(Codec.LZ4, data) == f"lz4: {message}"


def test_lz4_frame_details() -> None:
    stored = header(0x60, 0x40) + struct.pack("<I", 0x80000003) + b"abc" + bytes(4)
    assert decompress(Codec.LZ4, stored) == b"abc"
    sized = header(0x68, 0x40)[:6] + struct.pack("<Q", 3)
    sized += bytes(((xxh32(sized[4:]) >> 8) & 0xFF,))
    assert decompress(Codec.LZ4, sized + stored[7:]) == b"abc"
    # the end mark's high bit may be set; bytes after the end mark are ignored
    assert (
        decompress(Codec.LZ4, header(0x60, 0x40) + struct.pack("<I", 0x80000000) + b"junk") == b""
    )
    packed = compress(Codec.LZ4, SAMPLE)
    assert decompress(Codec.LZ4, packed + b"trailing") == SAMPLE
    assert "prematurely" in failure(Codec.LZ4, packed[:-4])  # no end mark
    block = lz4.block.compress(b"x" * 1000, store_size=False)
    corrupt = header(0x60, 0x40) + struct.pack("<I", len(block)) + b"\xff" + block[1:] + bytes(4)
    assert failure(Codec.LZ4, corrupt).startswith("lz4: ")


def test_xxh32_matches_liblz4() -> None:
    for data in (b"", b"a", b"abcd", b"0123456789abcde", b"0123456789abcdef", SAMPLE[:1001]):
        frame = lz4.frame.compress(data, content_checksum=True)
        assert xxh32(data) == struct.unpack("<I", frame[-4:])[0]
    assert xxh32(b"\x60\x40") >> 8 & 0xFF == 0x82
    assert xxh32(b"\x04\x22\x4d\x18\x60\x40") >> 8 & 0xFF == 0x1A


# --- zstd -----------------------------------------------------------------------------------------


def test_zstd_writer_is_one_frame_without_checksum_or_content_size() -> None:
    packed = compress(Codec.ZSTD, SAMPLE)
    params = zstandard.get_frame_parameters(packed)
    assert params.content_size == zstandard.CONTENTSIZE_UNKNOWN
    assert not params.has_checksum
    assert zstandard.ZstdDecompressor().decompressobj().decompress(packed) == SAMPLE


def test_zstd_frames_with_and_without_content_size_and_checksums() -> None:
    one_shot = zstandard.ZstdCompressor(write_checksum=True).compress(SAMPLE)
    assert zstandard.get_frame_parameters(one_shot).content_size == len(SAMPLE)
    streamed = compress(Codec.ZSTD, b"tail")
    assert decompress(Codec.ZSTD, one_shot + streamed) == SAMPLE + b"tail"
    skippable = struct.pack("<II", 0x184D2A5E, 3) + b"abc"
    assert decompress(Codec.ZSTD, skippable + streamed + skippable) == b"tail"
    assert decompress(Codec.ZSTD, b"") == b""


def test_zstd_truncation_and_garbage() -> None:
    packed = compress(Codec.ZSTD, SAMPLE)
    for cut in (1, 3, 5, 10, len(packed) // 2, len(packed) - 1):
        assert failure(Codec.ZSTD, packed[:cut]) == "zstd: Truncated source", cut
    assert failure(Codec.ZSTD, packed + b"junk!") == "zstd: Unknown frame descriptor"
    assert failure(Codec.ZSTD, packed + b"ju") == "zstd: Truncated source"
    assert failure(Codec.ZSTD, struct.pack("<II", 0x184D2A50, 10) + b"abc") == (
        "zstd: Truncated source"
    )
    checked = bytearray(zstandard.ZstdCompressor(write_checksum=True).compress(SAMPLE))
    checked[-1] ^= 0xFF
    assert failure(Codec.ZSTD, bytes(checked)).startswith("zstd: ")


# --- damaged input --------------------------------------------------------------------------------

PACKED = {(c, m): compress(c, SAMPLE[:20000], magic=m) for c, m in CODEC_MAGICS if c}


@settings(max_examples=150)
@given(st.data())
def test_truncated_or_corrupted_input_is_a_format_error(data) -> None:
    codec, magic = data.draw(st.sampled_from(sorted(PACKED)))
    packed = bytearray(PACKED[(codec, magic)])
    action = data.draw(st.sampled_from(["truncate", "flip", "splice"]))
    if action == "truncate":
        packed = packed[: data.draw(st.integers(0, len(packed) - 1))]
    elif action == "flip":
        for _ in range(data.draw(st.integers(1, 4))):
            i = data.draw(st.integers(0, len(packed) - 1))
            packed[i] ^= data.draw(st.integers(1, 255))
    else:
        i = data.draw(st.integers(0, len(packed)))
        packed[i:i] = data.draw(st.binary(min_size=1, max_size=12))
    try:
        out = decompress(codec, bytes(packed), magic=magic, max_output=1 << 20)
    except FormatError as e:
        assert e.kind == "decompression_failed"
    else:
        assert isinstance(out, bytes) and len(out) <= 1 << 20


@settings(max_examples=150)
@given(codec=st.sampled_from([c for c in Codec if c]), junk=st.binary(max_size=200))
def test_arbitrary_bytes_are_a_format_error_or_output(codec: Codec, junk: bytes) -> None:
    try:
        decompress(codec, junk, max_output=1 << 20)
    except FormatError as e:
        assert e.kind == "decompression_failed"
