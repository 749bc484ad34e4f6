"""What every codec's reader shares: the codec ids and names, the failure they raise, and the
capped output they write into (no declared size is trusted for an allocation).
"""

from __future__ import annotations

from enum import IntEnum

from .errors import FormatError


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


def failed(codec: Codec, detail: str) -> FormatError:
    return FormatError("decompression_failed", f"{CODEC_NAMES[codec]}: {detail}")


class Output:
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
        return failed(
            self.codec,
            f"decompression bomb: output exceeds the limit of {self.limit} bytes",
        )

    def value(self) -> bytes:
        return b"".join(self.parts)
