"""The leader-epoch cache of one partition (`LeaderEpochFileCache`, spec rec §4.4).

The file format and the pure list rules live in `leader_epoch`; this class keeps the entries of a
live log and calls `persist` with the new list whenever Kafka would write `leader-epoch-checkpoint`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .leader_epoch import (
    EpochEntry,
    assign,
    load_leader_epochs,
    truncate_from_end,
    truncate_from_start,
)


class LeaderEpochCache:
    def __init__(
        self,
        persist: Callable[[list[EpochEntry]], None],
        entries: Iterable[EpochEntry] = (),
    ) -> None:
        self._persist = persist
        # Loading replays the file through `assign`'s rules without writing (spec fmt §8.3).
        self._entries = load_leader_epochs(list(entries)).entries

    @property
    def entries(self) -> list[EpochEntry]:
        return list(self._entries)

    @property
    def latest(self) -> EpochEntry | None:
        return self._entries[-1] if self._entries else None

    def assign(self, epoch: int, start_offset: int) -> None:
        """Records that `epoch` starts at `start_offset`; writes the checkpoint if that changed it."""
        if assign(self._entries, EpochEntry(epoch, start_offset)) is not None:
            self._persist(self.entries)

    def truncate_from_end(self, end_offset: int) -> None:
        """Drops epochs starting at or after `end_offset` (truncation, load)."""
        latest = self.latest
        if latest is None or latest.start_offset < end_offset:
            return
        self._entries = truncate_from_end(self._entries, end_offset)
        self._persist(self.entries)

    def truncate_from_start(self, offset: int) -> None:
        """Moves the cache's start up to a new log start offset, keeping the epoch that covers it."""
        if not self._entries or self._entries[0].start_offset > offset:
            return
        self._entries = truncate_from_start(self._entries, offset)
        self._persist(self.entries)

    def clear_and_flush(self) -> None:
        self._entries = []
        self._persist([])
