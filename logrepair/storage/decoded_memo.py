"""The decoded entries of small files, remembered by their bytes.

The leader-epoch checkpoints and producer snapshots of thousands of partitions are a few distinct
texts (an empty one, an epoch or two, a producer or two): each is decoded once a run. The entries
must be immutable; each caller gets its own list of them."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Generic, TypeVar

T = TypeVar("T")


class DecodedMemo(Generic[T]):
    """At most `most` files' entries, each file at most `largest` bytes (the caller decodes a
    larger one itself); forgotten all at once when full."""

    def __init__(self, largest: int = 256, most: int = 1024) -> None:
        self.largest = largest
        self._most = most
        self._known: dict[Hashable, tuple[T, ...]] = {}

    def entries(self, key: Hashable, decode: Callable[[], Iterable[T]]) -> list[T]:
        """The entries `decode` gives for the file whose bytes (with how they are read) `key` is."""
        known = self._known.get(key)
        if known is None:
            if len(self._known) >= self._most:
                self._known.clear()
            known = self._known[key] = tuple(decode())
        return list(known)
