"""What every mode does last for a partition: indexes, transaction indexes, producer snapshots and
leader epochs brought in line with the repaired log."""

from __future__ import annotations

from ...storage import layout
from ...storage.checkpoints import format_checkpoint
from ...storage.leader_epoch import (
    EpochEntry,
    load_leader_epochs,
    truncate_from_end,
    truncate_from_start,
)
from ..plan import Action
from ..segment_scan import SegmentScan
from .partition_plan import PartitionPlan, Seg


def index_needs_rebuild(seg: Seg, pp: PartitionPlan) -> bool:
    """The segment's offset or time index is missing or does not agree with its log."""
    if seg.scan.index_findings and any(
        f.kind in ("offset_index_corrupt", "time_index_corrupt") for f in seg.scan.index_findings
    ):
        return True
    stem = seg.stem()
    return not pp.exists(stem + layout.INDEX_SUFFIX) or not pp.exists(
        stem + layout.TIME_INDEX_SUFFIX
    )


def finish_partition(pp: PartitionPlan, *, epochs_from: int | None, mode: str) -> None:
    """Index rebuilds, transaction indexes, snapshots and leader epochs of the repaired partition.

    `epochs_from`: the position in segment order from which batches' leader epochs are replayed
    into the cache (Kafka: the recovered segments; the strict modes: every segment)."""
    p = pp.p
    # an emptied log dir gets the segment Kafka creates at the log start (spec rec §6.6)
    if not pp.segs:
        start = pp.log_start or 0
        name = p.file(layout.log_file_name(start))
        pp.add(Action("create_segment", name, "Kafka starts an empty segment at the log start"))
        empty = SegmentScan(start, name, 0)
        seg = Seg(empty, name, start, rebuild=False)
        pp.segs.append(seg)
        pp.created.append(seg)
    for seg in pp.segs:
        if mode == "kafka" and seg.log not in pp.recovered and not seg.rebuild:
            # Kafka leaves a segment it does not recover as it is, its `.txnindex` too
            _kafka_missing_time_index(pp, seg)
            continue
        stale = index_needs_rebuild(seg, pp) or (mode == "kafka" and seg.scan.kafka_index_differs)
        if seg.rebuild or (seg.new_size is None and stale):
            if seg in pp.created and seg.scan.size == 0 and not seg.rebuild:
                continue  # create_segment writes its indexes
            _plan_indexes(pp, seg, mode)
        _plan_txn_index(pp, seg)
    leo = pp.log_end_offset
    removed_bases = {
        layout.offset_from_file_name(f.rpartition("/")[2])
        for f in pp.deleted
        if f.endswith(layout.LOG_SUFFIX)
    }
    for snap in p.snapshots:
        rel = p.file(snap.file)
        if rel in pp.deleted:
            continue
        if snap.corrupt is not None:
            pp.add(Action("delete", rel, "corrupt producer snapshot (Kafka deletes it at load)"))
        elif snap.offset > leo:
            pp.add(Action("delete", rel, f"producer snapshot past the log end {leo}"))
        elif snap.offset in removed_bases:
            pp.add(Action("delete", rel, "producer snapshot of a segment the repair deletes"))
    _plan_leader_epochs(pp, epochs_from, keep_data=mode != "kafka")


def _plan_indexes(pp: PartitionPlan, seg: Seg, mode: str) -> None:
    """The indexes Kafka's recovery writes: from the scan when it computed them for exactly the
    bytes that remain (kafka mode), else rebuilt from the repaired `.log` when applied."""
    scan = seg.scan
    size = scan.size if seg.new_size is None else seg.new_size
    if any(
        f.kind in ("offset_overflow", "segment_name_mismatch") and (f.position or 0) < size
        for f in scan.findings
    ):
        return  # offsets outside the relative range cannot be indexed; the segment is left
    limit = pp.p.settings.segment_index_bytes // 8
    if scan.kafka_index_entries > limit:
        pp.plan.notes.append(
            f"{seg.log}: its rebuilt offset index needs {scan.kafka_index_entries} entries, more "
            f"than segment.index.bytes allows ({limit}); Kafka's recovery fails on it "
            "(IllegalArgumentException); the index is written whole here"
        )
    precomputed = scan.kafka_indexes
    # kafka mode keeps what Kafka's recovery keeps; a piece a split made (salvage, Kafka's
    # overflow split) has the indexes of its own batches when the scan computed them, and so
    # has a cut where Kafka's reading stopped too (point-in-time at its first damage)
    ours = (mode == "kafka" and seg not in pp.created) or seg.derived
    if not ours and seg.new_size is not None and seg not in pp.created:
        precomputed = scan.prefix_indexes(seg.new_size)
        ours = precomputed is not None
    if ours and precomputed is not None and seg.new_size in (None, scan.kafka_valid_bytes):
        stem = seg.stem()
        for suffix, content in zip(
            (layout.INDEX_SUFFIX, layout.TIME_INDEX_SUFFIX), precomputed, strict=True
        ):
            pp.add(
                Action(
                    "write_file",
                    stem + suffix,
                    "the index Kafka's recovery writes",
                    content=content,
                )
            )
        return
    pp.add(Action("rebuild_indexes", seg.log, "indexes that agree with the log"))


def _kafka_missing_time_index(pp: PartitionPlan, seg: Seg) -> None:
    """Below the recovery point Kafka only creates a missing `.timeindex`, empty (spec rec §6.4)."""
    rel = seg.stem() + layout.TIME_INDEX_SUFFIX
    if pp.exists(seg.stem() + layout.INDEX_SUFFIX) and not pp.exists(rel):
        pp.add(
            Action(
                "write_file",
                rel,
                "Kafka creates a missing time index empty below the recovery point",
                content=b"",
            )
        )


def _plan_txn_index(pp: PartitionPlan, seg: Seg) -> None:
    """Keeps the aborted transactions whose markers remain in the segment (Kafka's truncateTo)."""
    stem = seg.stem()
    rel = stem + layout.TXN_INDEX_SUFFIX
    entries = seg.scan.txn_entries if seg.txn_entries is None else seg.txn_entries
    if not pp.exists(rel) and not [e for e in entries if seg.base <= e[2] < seg.end_offset]:
        return
    end = seg.end_offset
    kept = [e for e in entries if seg.base <= e[2] < end and e[1] <= e[2]]
    kept_sorted: list[tuple[int, int, int, int]] = []
    for e in kept:
        if not kept_sorted or e[2] > kept_sorted[-1][2]:
            kept_sorted.append(e)
    txn_findings = [f for f in seg.scan.index_findings if f.kind == "txn_index_corrupt"]
    on_disk = seg.scan.txn_entries if seg.disk_txn is None else seg.disk_txn
    if kept_sorted == on_disk and not txn_findings and pp.exists(rel):
        return
    content = b"".join(
        (0).to_bytes(2, "big")
        + pid.to_bytes(8, "big", signed=True)
        + first.to_bytes(8, "big", signed=True)
        + last.to_bytes(8, "big", signed=True)
        + lso.to_bytes(8, "big", signed=True)
        for pid, first, last, lso in kept_sorted
    )
    pp.add(
        Action(
            "write_file",
            rel,
            f"keep the {len(kept_sorted)} aborted transactions whose markers remain",
            content=content,
        )
    )


def _plan_leader_epochs(pp: PartitionPlan, epochs_from: int | None, *, keep_data: bool) -> None:
    """The leader-epoch-checkpoint as Kafka's load and recovery leave it: the file's entries
    through `assign`, the epochs of the recovered batches added, cut to the log's bounds.

    Where the file contradicts the batches (`_contradiction`), the data-keeping modes rebuild it
    from the batches' epochs instead: Kafka's load would keep the impossible entries and drop the
    epochs the log holds. kafka mode keeps them, as Kafka does."""
    p = pp.p
    rel = p.file(layout.LEADER_EPOCH_CHECKPOINT)
    written = p.leader_epochs
    valid = [EpochEntry(e, s) for e, s in (written or []) if e >= 0 and s >= 0]
    if len(valid) != len(written or []):
        pp.plan.notes.append(
            f"{rel}: negative epochs or offsets make Kafka's startup fail; they are dropped"
        )
    load = load_leader_epochs(valid)
    cache = [] if pp.clear_epochs else load.entries
    contradiction = _contradiction(pp, load.entries) if keep_data and written else None
    if contradiction is not None:
        cache, epochs_from = [], 0
    # Twice: where the first pass cuts an epoch at the log end whose batches remain (an entry
    # starting at the end, over batches of its epoch), the broker's next recovery adds it back
    # from the batches; the plan writes that fixed point, so a second run has nothing to do.
    for _ in range(2):
        if epochs_from is not None:
            # kafka mode: segments Kafka recovered while loading assign their epochs first
            replayed = [s for s in pp.epochs_before if s in pp.segs[:epochs_from]]
            for seg in replayed + pp.segs[epochs_from:]:
                size = seg.scan.size if seg.new_size is None else seg.new_size
                for epoch, base, position in seg.scan.strict_epochs:
                    if position < size and (not cache or epoch > cache[-1].epoch):
                        cache = load_leader_epochs([*cache, EpochEntry(epoch, base)]).entries
        cache = truncate_from_end(cache, pp.log_end_offset)
        if pp.log_start is not None:
            cache = truncate_from_start(cache, pp.log_start)
    entries = [(e.epoch, e.start_offset) for e in cache]
    prefix = p.file("")
    # (a `-delete` dir is never flushed nor checkpointed: Kafka only deletes it)
    # (a log dir's partitions are planned one after another: only this one's actions can be in
    # its dir; a partition dir on its own also counts what was planned before it, at its root)
    mine = pp.plan.actions[pp.first_action :] if p.rel else pp.plan.actions
    changed = p.dir_kind != "delete" and any(a.file.startswith(prefix) for a in mine)
    if written is None and p.leader_epoch_malformed is None and not (entries and changed):
        # Kafka creates the file at load from what it recovers; only a repair that moves the
        # recovery point past those segments (it changed the partition) must write it
        return
    if written is not None and entries == written:
        return
    content = format_checkpoint(0, [f"{e} {s}" for e, s in entries])
    if p.leader_epoch_malformed is not None:
        reason = (
            "malformed (Kafka cannot load it: the log dir goes offline or the broker does not "
            "start); rewritten from the epochs in the log"
        )
    elif contradiction is not None:
        reason = f"{contradiction}; rewritten from the epochs in the log"
    elif written is None:
        reason = "missing: Kafka creates it at load with the epochs its recovery assigns"
    else:
        reason = "leader epochs that agree with the log"
    pp.add(Action("write_file", rel, reason, content=content))


def _contradiction(pp: PartitionPlan, entries: list[EpochEntry]) -> str | None:
    """Why the checkpoint's entries (as Kafka loads them) cannot describe the kept batches, or
    None: an entry (epoch E from offset S) while a batch at or after S carries an epoch below E,
    or an epoch above every batch's starting before the last batch. (An epoch with no batch left,
    compacted away, the newest leader's with nothing written yet, or an entry a batch of the log
    starts, is no contradiction.)"""
    transitions = [
        (epoch, base)
        for seg in pp.segs
        for epoch, base, position in seg.scan.strict_epochs
        if position < (seg.scan.size if seg.new_size is None else seg.new_size)
    ]
    if not transitions:
        return None  # no v2 batch: nothing to hold the file to
    top = max(epoch for epoch, _ in transitions)
    last_batch = pp.verified_end_offset - 1
    starts = set(transitions)
    for entry in entries:
        if (entry.epoch, entry.start_offset) in starts:
            # the log's own batch starts this epoch here: a later batch below it is the log's
            # batch_epoch_regression (reported only), and a rebuild would write this entry again
            continue
        for epoch, base in transitions:
            if base >= entry.start_offset and epoch < entry.epoch:
                return (
                    f"epoch {entry.epoch} from offset {entry.start_offset}, but the batch at "
                    f"offset {base} has epoch {epoch}"
                )
        if entry.epoch > top and entry.start_offset <= last_batch:
            return (
                f"epoch {entry.epoch} from offset {entry.start_offset}, but no batch has an epoch "
                f"above {top}"
            )
    return None
