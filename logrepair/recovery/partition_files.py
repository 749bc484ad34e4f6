"""What a partition dir holds, sorted by what Kafka does with each file.

`sort_files` lists the dir once: the segments and indexes to scan (`PartitionFiles`), the
`.swap` files of an interrupted operation, the producer snapshots, the state files (read as they
are found), and a finding for each entry Kafka would not load as it is: leftovers, temporary
files, stray names. A symlink or special file among them is never read (`look`), and leaves the
partition to every mode as it is.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..storage import layout
from ..storage.disk import SPECIAL_TYPES, Disk, join
from ..storage.layout import FileKind, printable
from ..storage.producer_snapshot import ProducerSnapshotEntry
from .findings import Finding
from .settings import Settings
from .state_checks import check_partition_metadata, load_leader_epochs
from .symlinks import FollowedLink, follow

if TYPE_CHECKING:
    from .scan import PartitionScan


@dataclass(slots=True)
class Snapshot:
    """A producer snapshot file of the partition: its offset, its name, and what is wrong with it
    (None: it decodes)."""

    offset: int
    file: str
    corrupt: str | None
    entries: tuple[ProducerSnapshotEntry, ...] | None = None
    """The producers it holds, when it decodes: kafka mode's producer-state replay starts from
    them instead of reading the file again."""


def look(
    disk: Disk, path: str, shown: str, settings: Settings, kind: str
) -> tuple[str, Finding | None, FollowedLink | None]:
    """What the entry at `path` of type `kind` (`Disk.file_type`) is, found without opening it (a
    FIFO would block a read), and the finding it needs: 'file', 'dir', 'missing', 'symlink' (not
    followed) or 'special'. A symlink to a regular file is 'file' under `--follow-symlinks`,
    with the link resolved (symlinks.py), unless it cannot be followed (then: why)."""
    if kind == "symlink":
        target = printable(disk.read_link(path))
        if not settings.follow_symlinks:
            why = f"a symbolic link to {target}; never followed"
            return "symlink", Finding("symlink", shown, detail=why), None
        link, why_not = follow(disk, path, shown, settings)
        if link is None:
            why = f"a symbolic link to {target}; not followed: {why_not}"
            return "symlink", Finding("symlink", shown, detail=why), None
        why = (
            f"a symbolic link to {target}; followed (--follow-symlinks): read as the file "
            f"{printable(link.target)}"
        )
        return "file", Finding("symlink", shown, detail=why), link
    if kind in SPECIAL_TYPES:
        why = f"{SPECIAL_TYPES[kind]}; never opened (Kafka would hang or fail on it)"
        return "special", Finding("special_file", shown, detail=why), None
    return kind, None, None


_INDEX_FILE_KINDS = (FileKind.INDEX, FileKind.TIME_INDEX, FileKind.TXN_INDEX)


@dataclass(slots=True)
class PartitionFiles:
    """A partition dir's segment files by base offset (names in the dir)."""

    logs: dict[int, str] = field(default_factory=dict)
    swap_logs: dict[int, str] = field(default_factory=dict)
    indexes: dict[tuple[int, FileKind], str] = field(default_factory=dict)
    swap_indexes: dict[tuple[int, FileKind], str] = field(default_factory=dict)
    min_cleaned: int | None = None
    """The lowest base offset of a `.cleaned` file: swaps from it on are discarded at load."""
    unread: set[str] = field(default_factory=set)
    """Names that are symlinks or special files: not read, and not missing either."""

    def index_paths(self, path: str, base: int) -> tuple[str | None, str | None, str | None]:
        """The offset, time and transaction index Kafka loads for the segment at `base` (None:
        absent): a `.swap` of one is renamed over it first (LogLoader's third pass, 4.1.1),
        unless a `.cleaned` file at or below it makes the swap part of an unfinished split."""
        swaps = self.swap_indexes if self.min_cleaned is None or base < self.min_cleaned else {}
        out = []
        for k in _INDEX_FILE_KINDS:
            name = (swaps and swaps.get((base, k))) or self.indexes.get((base, k))
            out.append(None if name is None else join(path, name))
        return tuple(out)


_LEFTOVER_KINDS = {
    layout.DELETED_SUFFIX: "deleted_leftover",
    layout.CLEANED_SUFFIX: "cleaned_leftover",
    layout.SWAP_SUFFIX: "swap_leftover",
}


def sort_files(disk: Disk, p: PartitionScan) -> PartitionFiles:
    """Every entry of the dir: segments and indexes to scan, snapshots to check, the state files
    read, and a finding for each entry Kafka would not load as it is."""
    files = PartitionFiles()
    for fname, file_type in disk.list_dir_types(p.path):
        if file_type != "file":  # (a regular file needs no look: the listing said what it is)
            fpath = join(p.path, fname)
            kind, finding, link = look(disk, fpath, p.file(fname), p.settings, file_type)
            if finding is not None:
                p.findings.append(finding)
            if link is not None:
                p.links.append(link)
            if kind in ("symlink", "special"):
                _leave_alone(p, finding)
                files.unread.add(fname)
                continue
            if kind == "dir":
                p.findings.append(
                    Finding("stray_file", p.file(fname), detail="a directory; Kafka ignores it")
                )
                continue
            if kind != "file":
                continue  # gone since the listing
        p.files.append(fname)
        fn = _plain_segment_file(fname)
        if fn is not None:  # (most names: a segment's files as Kafka names them)
            if fn.kind is FileKind.LOG:
                files.logs[fn.offset] = fname
            elif fn.kind is FileKind.SNAPSHOT:
                p.snapshots.append(Snapshot(fn.offset, fname, None))
            else:
                files.indexes[(fn.offset, fn.kind)] = fname
            continue
        fn = layout.classify_partition_file(fname)
        if fn.blocks_kafka_load or (fn.offset is not None and not fn.canonical and not fn.leftover):
            detail = fn.detail or "a non-canonical segment name; Kafka ignores it"
            p.findings.append(Finding("stray_file", p.file(fname), detail=detail))
        elif fn.leftover in _LEFTOVER_KINDS:
            if fn.kind is FileKind.KRAFT_SNAPSHOT:
                continue  # the raft layer's own snapshot files
            p.findings.append(
                Finding(
                    _LEFTOVER_KINDS[fn.leftover],
                    p.file(fname),
                    length=disk.size(join(p.path, fname)),
                    offset=fn.offset,
                )
            )
            if fn.leftover == layout.SWAP_SUFFIX and fn.kind is FileKind.LOG:
                files.swap_logs[fn.offset] = fname
            elif (
                fn.leftover == layout.SWAP_SUFFIX and fn.kind in _INDEX_FILE_KINDS and fn.canonical
            ):
                files.swap_indexes[(fn.offset, fn.kind)] = fname
            elif fn.leftover == layout.CLEANED_SUFFIX:
                offset = layout.offset_from_file_name(fname)  # parsed: blocks_kafka_load else
                if files.min_cleaned is None or offset < files.min_cleaned:
                    files.min_cleaned = offset
        elif fn.tmp:
            p.findings.append(
                Finding(
                    "tmp_leftover",
                    p.file(fname),
                    length=disk.size(join(p.path, fname)),
                    detail="left by an interrupted write",
                )
            )
        elif fn.kind is FileKind.LOG:
            files.logs[fn.offset] = fname
        elif fn.kind in _INDEX_FILE_KINDS:
            files.indexes[(fn.offset, fn.kind)] = fname
        elif fn.kind is FileKind.SNAPSHOT:
            p.snapshots.append(Snapshot(fn.offset, fname, None))
        elif fn.kind is FileKind.LEADER_EPOCH_CHECKPOINT:
            load_leader_epochs(disk, join(p.path, fname), p)
        elif fn.kind is FileKind.PARTITION_METADATA:
            check_partition_metadata(disk, join(p.path, fname), p, fname)
        elif fn.kind is FileKind.UNKNOWN:
            p.findings.append(
                Finding("stray_file", p.file(fname), detail="not a file Kafka keeps here")
            )
    return files


@functools.lru_cache(maxsize=1 << 16)
def _plain_segment_file(fname: str) -> layout.FileName | None:
    """The name when it is a `.log`, index or producer snapshot as Kafka names it (no leftover
    suffix): `sort_files` files it at once. Remembered, as the classification is: most names
    recur in every partition dir."""
    fn = layout.classify_partition_file(fname)
    plain = fn.kind in _PLAIN_KINDS and fn.offset is not None and not fn.leftover
    return fn if plain and not fn.tmp and not fn.blocks_kafka_load and fn.canonical else None


_PLAIN_KINDS = (FileKind.LOG, *_INDEX_FILE_KINDS, FileKind.SNAPSHOT)


def _leave_alone(p: PartitionScan, finding: Finding) -> None:
    """A symlink or special file among the partition's files: what Kafka reads there is not what
    a repair would change, so every mode leaves the partition as it is."""
    what, _, why_not = finding.detail.partition("; not followed: ")
    why = f"{printable(finding.file)} is {what.partition(';')[0]}"
    if why_not:
        why += f", not followed: {why_not}"
    elif finding.kind == "symlink":
        why += " (--follow-symlinks reads a link to a regular file as that file)"
    p.add_left_alone(why)
