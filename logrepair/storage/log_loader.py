"""Loading a clean partition directory: what Kafka's `LogLoader` does when nothing needs recovery.

The file names found (leftovers removed or refused), each segment opened with its indexes checked,
the leader-epoch checkpoint, and producer state from the newest readable snapshot. Recovery of a
damaged directory is `logrepair.recovery`'s job; these functions refuse one with LogNotCleanError.
"""

from __future__ import annotations

import logging

from . import layout
from .abstract_index import IndexFileError
from .clock import Clock
from .disk import Disk, join
from .leader_epoch import EpochEntry, read_leader_epochs
from .log_config import LogConfig
from .log_errors import LogNotCleanError
from .producer_snapshot import CorruptSnapshotError, read_snapshot
from .producer_state import ProducerState
from .segment import Segment

log = logging.getLogger(__name__)


def load_file_names(disk: Disk, dir: str) -> tuple[list[int], list[int]]:
    """Kafka's load-time file handling for a clean directory: `.deleted` leftovers and orphan
    indexes removed; `.cleaned`/`.swap` leftovers and unparsable names refused.

    Returns the base offsets of the `.log` files and the offsets of the snapshots."""
    names = [n for n in disk.list_dir(dir) if not disk.is_dir(join(dir, n))]
    found = [layout.classify_partition_file(n) for n in names]
    for f in found:
        if f.blocks_kafka_load:
            raise LogNotCleanError(f"{join(dir, f.name)}: {f.detail}")
        if f.leftover in (layout.CLEANED_SUFFIX, layout.SWAP_SUFFIX):
            raise LogNotCleanError(
                f"{join(dir, f.name)} is left from an interrupted compaction or split; "
                "run `logrepair repair` first"
            )
    for f in found:
        if f.leftover == layout.DELETED_SUFFIX and f.kind is not layout.FileKind.KRAFT_SNAPSHOT:
            disk.unlink(join(dir, f.name))
    bases = sorted(f.offset for f in found if f.kind is layout.FileKind.LOG and f.leftover is None)
    base_set = set(bases)
    for f in found:
        if (
            f.kind in (layout.FileKind.INDEX, layout.FileKind.TIME_INDEX, layout.FileKind.TXN_INDEX)
            and f.leftover is None
            and f.offset not in base_set
        ):
            log.warning(
                "Found an orphaned index file %s, with no corresponding log file.",
                join(dir, f.name),
            )
            disk.unlink(join(dir, f.name))
    snapshots = sorted(
        f.offset
        for f in found
        if f.kind is layout.FileKind.SNAPSHOT and f.leftover is None and not f.tmp
    )
    return bases, snapshots


def open_segment(disk: Disk, dir: str, base: int, config: LogConfig, clock: Clock) -> Segment:
    """Opens one segment; a missing `.index` is rebuilt from the `.log` (Kafka recovers the
    segment), a missing `.timeindex` starts empty (Kafka does not rebuild it)."""
    segment = Segment.open_existing(disk, dir, base, config, clock)
    try:
        if not disk.exists(segment.index_path):
            defect = segment.rebuild_indexes()
            if defect is not None:
                raise LogNotCleanError(
                    f"{segment.log_path}: {defect.kind} at byte {defect.position} "
                    f"({defect.detail}); run `logrepair repair` first"
                )
        elif not disk.exists(segment.time_index_path):
            segment.time_index.resize(0)
        try:
            segment.txn_index.sanity_check()
        except IndexFileError as e:
            raise LogNotCleanError(f"{e}; run `logrepair repair` first") from None
    except BaseException:
        segment.close_handlers()
        raise
    return segment


def read_epoch_checkpoint(disk: Disk, dir: str) -> list[EpochEntry]:
    """The checkpoint's entries; a missing file is created empty, as Kafka's `CheckpointFile`."""
    path = join(dir, layout.LEADER_EPOCH_CHECKPOINT)
    if not disk.exists(path):
        disk.open(path, create=True).close()
        return []
    try:
        return read_leader_epochs(disk, path)
    except ValueError as e:
        raise LogNotCleanError(f"{e}; run `logrepair repair` first") from None


def snapshot_offsets(disk: Disk, dir: str) -> list[int]:
    out = []
    for name in disk.list_dir(dir):
        f = layout.classify_partition_file(name)
        if f.kind is layout.FileKind.SNAPSHOT and f.leftover is None and f.offset is not None:
            out.append(f.offset)
    return sorted(out)


def load_producer_state(
    disk: Disk, dir: str, snapshots: list[int], log_start_offset: int, log_end_offset: int
) -> tuple[ProducerState, int]:
    """The newest readable snapshot at or below the log end (corrupt ones deleted, as Kafka does).

    Returns the state and the snapshot's offset (-1 without one). Without any snapshot the state
    starts empty at the log end: Kafka's clean-shutdown path does not replay the log either."""
    for offset in sorted((o for o in snapshots if o <= log_end_offset), reverse=True):
        path = join(dir, layout.snapshot_file_name(offset))
        try:
            entries = read_snapshot(disk, path)
        except CorruptSnapshotError as e:
            log.warning("Failed to load producer snapshot from '%s': %s", path, e)
            disk.unlink(path)
            continue
        return ProducerState(offset, tuple(entries)), offset
    return ProducerState(max(log_end_offset, log_start_offset)), -1
