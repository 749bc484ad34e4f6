"""snappy as Kafka reads and writes it (spec fmt §4.2): snappy-java's xerial framing
(`SnappyOutputStream`, `SnappyInputStream`), and the raw blocks librdkafka writes.

Every failure is a `FormatError('decompression_failed')` naming the codec (`codec_output`).
"""

from __future__ import annotations

import struct

import snappy

from .codec_output import Codec, Output, failed

_SNAPPY_MAGIC = b"\x82SNAPPY\x00"
_SNAPPY_HEADER = _SNAPPY_MAGIC + struct.pack(">ii", 1, 1)
_SNAPPY_MAGIC_HEAD = struct.unpack(">i", _SNAPPY_MAGIC[:4])[0]
_SNAPPY_BLOCK = 32 * 1024  # SnappyOutputStream's default block size
_SNAPPY_MAX_CHUNK = 512 * 1024 * 1024  # SnappyInputStream's maxChunkSize


def compress(data) -> bytes:
    """`SnappyOutputStream`: the 16-byte header, then one length-prefixed raw block per 32 KiB."""
    mv = memoryview(data).cast("B")
    parts = [_SNAPPY_HEADER]
    for start in range(0, len(mv), _SNAPPY_BLOCK):
        block = snappy.compress(mv[start : start + _SNAPPY_BLOCK])
        parts.append(struct.pack(">i", len(block)))
        parts.append(block)
    return b"".join(parts)


def _snappy_block(block: memoryview, out: Output) -> None:
    """One raw snappy block; its declared length is checked against the cap first."""
    declared = 0
    for i in range(5):
        if i >= len(block):
            raise failed(Codec.SNAPPY, "invalid input: truncated block length")
        b = block[i]
        declared |= (b & 0x7F) << (7 * i)
        if not b & 0x80:
            break
    else:
        raise failed(Codec.SNAPPY, "invalid input: block length varint is too long")
    out.check(declared)
    try:
        piece = snappy.uncompress(block)
    except snappy.UncompressError as e:
        cause = e.__cause__ or e
        raise failed(Codec.SNAPPY, f"invalid input: {cause}".rstrip(": ")) from None
    if len(piece) != declared:
        raise failed(
            Codec.SNAPPY,
            f"expected {declared} bytes, but decompressed chunk has {len(piece)} bytes",
        )
    out.add(piece)


def decompress(mv: memoryview, out: Output) -> None:
    """`SnappyInputStream`: xerial framing when the magic is there, else one raw block."""
    total = len(mv)
    if total == 0:
        raise failed(Codec.SNAPPY, "Cannot decompress empty stream")
    if total < len(_SNAPPY_HEADER) or mv[:8] != _SNAPPY_MAGIC:
        _snappy_block(mv, out)  # unframed, as librdkafka writes it
        return
    pos = len(_SNAPPY_HEADER)  # the first header's version fields are not checked
    while total - pos >= 4:
        (length,) = struct.unpack_from(">i", mv, pos)
        pos += 4
        if length == _SNAPPY_MAGIC_HEAD:
            if total - pos < 12:
                raise failed(Codec.SNAPPY, "Insufficient header size in a concatenated block")
            if mv[pos - 4 : pos + 4] != _SNAPPY_MAGIC:
                return  # an invalid magic ends the stream silently
            (version,) = struct.unpack_from(">i", mv, pos + 4)
            if version < 1:
                raise failed(
                    Codec.SNAPPY,
                    f"Compressed with an incompatible codec version {version}. "
                    "At least version 1 is required",
                )
            pos += 12
            continue
        if length < 0:
            raise failed(Codec.SNAPPY, f"chunkSize is too big or negative : {length}")
        if length > _SNAPPY_MAX_CHUNK:
            raise failed(
                Codec.SNAPPY,
                f"Received chunkSize {length:,} is greater than max configured chunk size "
                f"{_SNAPPY_MAX_CHUNK:,}",
            )
        if total - pos < length:
            raise failed(Codec.SNAPPY, "failed to read chunk")
        _snappy_block(mv[pos : pos + length], out)
        pos += length
