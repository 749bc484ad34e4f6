"""The two checksums Kafka uses: CRC-32C for v2 batches and producer snapshots, CRC-32 for v0/v1.

Both take any buffer (bytes, bytearray, memoryview slice) without copying. CRC-32C comes from the
`crc32c` package, which uses the CPU's CRC instruction where there is one.
"""

from __future__ import annotations

import zlib

from crc32c import crc32c as _crc32c


def crc32c(data, value: int = 0) -> int:
    """CRC-32C (Castagnoli) of `data`, continuing from `value`."""
    return _crc32c(data, value)


def crc32(data, value: int = 0) -> int:
    """CRC-32 (IEEE 802.3, zlib's), as `java.util.zip.CRC32`."""
    return zlib.crc32(data, value)
