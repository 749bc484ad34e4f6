"""`leader-epoch-checkpoint`: the epoch → start offset history of one partition (spec fmt §8.3).

Reading is strict (checkpoints.read_checkpoint); loading replays the entries through the leader
epoch cache's `assign`, which silently repairs a non-monotonic file: `load_leader_epochs` does the
same and reports what Kafka would drop or ignore, so a verifier can say so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from . import java_text
from .checkpoints import EntryFormatError, format_checkpoint, read_checkpoint
from .disk import Disk

LEADER_EPOCH_CHECKPOINT_VERSION = 0


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int

    def __str__(self) -> str:
        return f"EpochEntry(epoch={self.epoch}, startOffset={self.start_offset})"


class InvalidLeaderEpochError(ValueError):
    """Kafka's IllegalArgumentException from `assign`: it escapes log loading and stops the broker."""


def parse_epoch_entry(line: str) -> EpochEntry:
    parts = java_text.split_whitespace(line)
    if len(parts) != 2:
        raise EntryFormatError(True, "expected 2 fields")
    try:
        return EpochEntry(java_text.parse_int(parts[0]), java_text.parse_int(parts[1], bits=64))
    except ValueError as e:
        raise EntryFormatError(False, str(e)) from None


def read_leader_epochs(disk: Disk, path: str, *, limit: int | None = None) -> list[EpochEntry]:
    """The entries as written, in file order (CheckpointError if malformed; `limit` as for
    `checkpoints.iter_lines`)."""
    return read_checkpoint(
        disk, path, LEADER_EPOCH_CHECKPOINT_VERSION, parse_epoch_entry, limit=limit
    )


def format_leader_epochs(entries: list[EpochEntry]) -> bytes:
    return format_checkpoint(
        LEADER_EPOCH_CHECKPOINT_VERSION, [f"{e.epoch} {e.start_offset}" for e in entries]
    )


def write_leader_epochs(disk: Disk, path: str, entries: list[EpochEntry]) -> None:
    disk.write_file_atomic(path, format_leader_epochs(entries))


@dataclass
class LeaderEpochLoad:
    """The cache Kafka ends with, and what it threw away on the way."""

    entries: list[EpochEntry] = field(default_factory=list)
    ignored: list[EpochEntry] = field(default_factory=list)
    """Lines repeating the newest epoch at an equal or later start offset (no effect)."""
    truncated: list[EpochEntry] = field(default_factory=list)
    """Loaded entries removed by a later, conflicting line."""
    warned: bool = False
    """Whether Kafka logs "caused truncation of conflicting entries" while loading."""

    @property
    def monotonic(self) -> bool:
        return not self.ignored and not self.truncated


def assign(entries: list[EpochEntry], entry: EpochEntry) -> list[EpochEntry] | None:
    """`LeaderEpochFileCache.assign` on `entries`, in place: None when no update is needed (the
    newest epoch again, at an equal or later start offset), else the entries it removed first
    (newer epochs, or ones starting at or after `entry`), oldest first.

    The one copy of the rules: loading a checkpoint and the live cache both go through it."""
    if entry.epoch < 0 or entry.start_offset < 0:
        raise InvalidLeaderEpochError(f"Received invalid partition leader epoch entry {entry}")
    if (
        entries
        and entry.epoch == entries[-1].epoch
        and entry.start_offset >= entries[-1].start_offset
    ):
        return None
    removed: list[EpochEntry] = []
    while entries and (
        entries[-1].epoch >= entry.epoch or entries[-1].start_offset >= entry.start_offset
    ):
        removed.append(entries.pop())
    removed.reverse()
    entries.append(entry)
    return removed


def load_leader_epochs(entries: list[EpochEntry]) -> LeaderEpochLoad:
    """`LeaderEpochFileCache`'s load: every entry through `assign`, in file order."""
    load = LeaderEpochLoad()
    for entry in entries:
        removed = assign(load.entries, entry)
        if removed is None:
            load.ignored.append(entry)
            continue
        # Kafka's maybeTruncateNonMonotonicEntries warns unless it only replaced one entry.
        if len(removed) > 1 or (removed and removed[0].start_offset != entry.start_offset):
            load.warned = True
        load.truncated.extend(removed)
    return load


def truncate_from_end(entries: list[EpochEntry], end_offset: int) -> list[EpochEntry]:
    """Entries after the log end offset go (`LeaderEpochFileCache.truncateFromEndAsyncFlush`)."""
    return [e for e in entries if e.start_offset < end_offset]


def truncate_from_start(entries: list[EpochEntry], start_offset: int) -> list[EpochEntry]:
    """Entries below the log start offset go; the newest of them is kept, moved to `start_offset`
    (`LeaderEpochFileCache.truncateFromStartAsyncFlush`)."""
    below = [e for e in entries if e.start_offset <= start_offset]
    if not below:
        return list(entries)
    kept = [EpochEntry(below[-1].epoch, start_offset)]
    return kept + [e for e in entries if e.start_offset > start_offset]
