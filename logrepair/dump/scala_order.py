"""The order in which kafka-dump-log prints its end-of-run stderr sections.

DumpLogSegments keeps index mismatches, time-index errors and non-consecutive offsets per file in
Scala 2.13 `mutable.HashMap`s keyed by absolute path and prints each map in its iteration order:
buckets in index order, and within a bucket by hash, where a key's hash is Java's
`String.hashCode` spread as `h ^ (h >>> 16)` and the table (16 slots, load factor 0.75) doubles when
a put finds `size + 1 >= threshold` — replacing a value counts as a put, so a file with many
entries can grow the table too. This reproduces that order from the sequence of puts.
"""

from __future__ import annotations

_INITIAL_LENGTH = 16
_LOAD_FACTOR = 0.75


def java_string_hash(text: str) -> int:
    """`String.hashCode` over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def _improved(h: int) -> int:
    u = h & 0xFFFFFFFF
    u ^= u >> 16
    return u - (1 << 32) if u & 0x80000000 else u


def hash_map_order(puts: list[tuple[str, int]]) -> list[str]:
    """Iteration order of a `mutable.HashMap[String, _]` after `puts`: each key (in the order it was
    first put) with how many times it was put, all of one key's puts coming together."""
    length = _INITIAL_LENGTH
    size = 0

    def put() -> None:
        nonlocal length
        if size + 1 >= int(length * _LOAD_FACTOR):
            length *= 2

    for _, count in puts:
        put()
        size += 1
        if count > 1:
            put()
    hashes = {key: _improved(java_string_hash(key)) for key, _ in puts}
    # sorted is stable: keys of equal hash stay in insertion order, as in a bucket's chain
    return sorted(hashes, key=lambda k: (hashes[k] & (length - 1), hashes[k]))
