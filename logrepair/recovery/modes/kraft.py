"""KRaft's metadata log (`__cluster_metadata-0`) after a repair, as the raft layer loads it.

LogManager never loads this partition; `KafkaMetadataLog.apply` (Kafka 4.1.1) does, with
`UnifiedLog.create(recoveryPoint = 0, logStartOffset = 0, lastShutdownClean = false)`: at every
start the whole log is recovered as after an unclean shutdown, whatever the checkpoints say (the
scan gives it no checkpoint entries, so every mode plans it that way). Then two steps of its own:

- `recoverSnapshots`: `.checkpoint.part` and `.checkpoint.deleted` files and snapshots below the
  log start are deleted; a log start above 0 (its first segment's base) with no snapshot at or past
  it is an IllegalStateException: the broker does not start;
- `truncateToLatestSnapshot`: when the latest snapshot is past the log end, the log is emptied and
  starts at the snapshot's offset: the metadata is the snapshot's, and the records the log held
  past the snapshot are gone.

The plan says where either happens to the log it leaves (docs/spec-notes.md).
"""

from __future__ import annotations

from ...storage import layout
from .partition_plan import PartitionPlan


def note_metadata_log_start(pp: PartitionPlan) -> None:
    """Notes what the raft layer's start does to the repaired metadata log, where it matters."""
    p = pp.p
    if p.topic != layout.CLUSTER_METADATA_TOPIC or p.dir_kind != "live":
        return
    snapshots = sorted(
        (fn.offset, fn.epoch or 0, fn.name)
        for fn in map(layout.classify_partition_file, p.files)
        if fn.kind is layout.FileKind.KRAFT_SNAPSHOT
        and fn.leftover is None
        and fn.offset is not None
    )
    where = p.rel or p.path
    start = pp.segs[0].base if pp.segs else 0
    if start > 0 and not any(offset >= start for offset, _, _ in snapshots):
        pp.plan.notes.append(
            f"{where}: the metadata log would start at offset {start} with no KRaft snapshot at or "
            "past it: the raft layer's start fails (IllegalStateException: inconsistent snapshot "
            "state) and the broker does not start"
        )
        return
    end = pp.log_end_offset
    if snapshots and snapshots[-1][0] > end:
        offset, _, name = snapshots[-1]
        pp.plan.notes.append(
            f"{where}: its latest KRaft snapshot {name} is past the log end {end} this repair "
            f"leaves: at start the raft layer empties the metadata log and starts it at {offset} "
            "(KafkaMetadataLog.truncateToLatestSnapshot), so the cluster's metadata is the "
            "snapshot's and no metadata record the log held past it is kept"
        )
