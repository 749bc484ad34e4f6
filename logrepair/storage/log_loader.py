"""Loading a clean partition directory: what Kafka's `LogLoader` does when nothing needs recovery.

The file names found (leftovers removed or refused), each segment opened with its indexes checked,
the leader-epoch checkpoint, and producer state from the newest readable snapshot. Recovery of a
damaged directory is `logrepair.recovery`'s job; these functions refuse one with LogNotCleanError.
"""

from __future__ import annotations

import logging
from typing import NamedTuple

from . import layout
from .abstract_index import IndexFileError
from .clock import Clock
from .disk import Disk, join, parent_of
from .leader_epoch import EpochEntry, read_leader_epochs
from .log_config import LogConfig
from .log_errors import LogError, LogNotCleanError
from .producer_snapshot import CorruptSnapshotError, read_snapshot
from .producer_state import ProducerState
from .segment import Segment

log = logging.getLogger(__name__)


def partition_dir(disk: Disk, dir: str) -> layout.TopicPartition:
    """The partition a directory is named for; the directory is created if missing."""
    name = dir.rstrip("/").rpartition("/")[2]
    try:
        tp = layout.parse_partition_dir_name(name, dir).topic_partition
    except layout.LayoutError as e:
        raise LogError(str(e)) from None
    if not disk.exists(dir):
        disk.make_dirs(dir)
        disk.fsync_dir(parent_of(dir))
    elif not disk.is_dir(dir):
        raise LogError(f"{dir} is not a directory")
    return tp


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


class LoadedLog(NamedTuple):
    """What loading found (Kafka's `LoadedLogOffsets` and the state beside it)."""

    segments: list[Segment]  # the live ones, oldest first
    doomed: list[Segment]  # renamed `.deleted`, for the log to delete after its delay
    log_start_offset: int
    recovery_point: int
    high_watermark: int
    log_end_offset: int
    epoch_entries: list[EpochEntry]
    producer_state: ProducerState
    snapshot_offset: int  # the snapshot producer state came from, -1 for none


def load_log(
    disk: Disk,
    dir: str,
    config: LogConfig,
    clock: Clock,
    bases: list[int],
    snapshots: list[int],
    segments: list[Segment],
    log_start_offset: int,
    recovery_point: int | None,
    high_watermark: int | None,
) -> LoadedLog:
    """The segments named by `bases` opened (each goes into `segments`, for the caller to close on
    failure), the active one checked to end with a whole batch, the offsets settled, the
    leader-epoch checkpoint read and producer state loaded; an empty directory gets one segment.
    """
    for base in bases:
        segments.append(open_segment(disk, dir, base, config, clock))
    if not segments:
        segments.append(Segment.create(disk, dir, log_start_offset, config, clock))
        disk.fsync_dir(dir)
    active = segments[-1]
    active.resize_indexes(config.segment_index_bytes)
    leo, end = active.next_offset_and_end()
    if end != active.size:
        raise LogNotCleanError(
            f"{active.log_path} does not end with a whole batch (the last valid one ends "
            f"at byte {end} of {active.size}); run `logrepair repair` first"
        )
    doomed: list[Segment] = []
    if leo < log_start_offset:
        # Kafka's deleteSegmentsIfLogStartGreaterThanLogEnd (KAFKA-10101): nothing left is
        # visible, so the log starts over, empty, at the log start offset.
        log.warning(
            "Deleting all segments because logEndOffset (%d) is smaller than logStartOffset "
            "%d. This could happen if segment files were deleted from the file system.",
            leo,
            log_start_offset,
        )
        doomed = list(segments)
        for s in doomed:
            s.change_file_suffixes("", layout.DELETED_SUFFIX)
        for offset in snapshots:
            disk.unlink(join(dir, layout.snapshot_file_name(offset)))
        snapshots = []
        segments.append(Segment.create(disk, dir, log_start_offset, config, clock))
        segments[-1].resize_indexes(config.segment_index_bytes)
        disk.fsync_dir(dir)
        leo = log_start_offset
    live = segments[len(doomed) :]
    lso = max(log_start_offset, live[0].base_offset)
    rp = leo if recovery_point is None else min(recovery_point, leo)
    rp = max(rp, lso)
    hw = lso if high_watermark is None else min(max(high_watermark, lso), leo)
    epoch_entries = read_epoch_checkpoint(disk, dir)
    producer_state, snapshot_offset = load_producer_state(disk, dir, snapshots, lso, leo)
    if snapshot_offset < 0 and recovery_point is not None:
        # An unclean start without a snapshot: Kafka's rebuildProducerState replays the log
        # from its start (only a clean shutdown may skip that), or open transactions and
        # producer sequences would be forgotten.
        producer_state = ProducerState(lso)
    return LoadedLog(live, doomed, lso, rp, hw, leo, epoch_entries, producer_state, snapshot_offset)
