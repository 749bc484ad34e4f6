"""`kafka` mode: what Kafka's LogLoader does at an unclean start (spec rec §6), offline.

It always recovers as after an unclean shutdown (a clean-shutdown marker is reported, not
trusted), from the checkpointed recovery point, or from 0 when there is none. Kafka's quirks are
kept because the point of this mode is to reach the state the broker would reach:

- a segment whose `.index` is missing (or whose `.txnindex` fails its sanity check) is recovered
  while loading, and what that recovery truncates does not delete later segments (§6.4);
- from the segment holding the recovery point on, each segment is recovered until one truncates;
  every later segment is then deleted (§6.6), valid or not;
- segments below the recovery point are not read: their defects are left, and reported.

Indexes are rebuilt where Kafka would rebuild them and the existing ones disagree with the log; a
valid index Kafka would merely rewrite identically is left alone, so a second run plans nothing. A
recovered segment's transaction index is what a producer-state replay gives, as Kafka's recovery
writes it; producer snapshots are not written (docs/spec-notes.md).
"""

from __future__ import annotations

from ...storage import layout
from ..rebuild import txn_entries_by_segment
from ..segment_scan import TXN_ENTRY, TXN_ENTRY_SIZE
from .partition_plan import PartitionPlan, Seg
from .split import Piece, split_segment


def plan_partition(pp: PartitionPlan, recovery_point: int) -> int:
    """Plans one partition; returns the index (in the repaired segment list) of the first
    recovered segment, from which leader epochs are replayed."""
    segs = list(pp.segs)
    start = 0
    for i, seg in enumerate(segs):
        if seg.base <= recovery_point:
            start = i
    recovered_at_load: set[str] = set()
    for seg in segs:
        missing_index = not pp.exists(seg.stem() + layout.INDEX_SUFFIX)
        if (missing_index or seg.scan.txn_corrupt_for_kafka) and seg not in pp.created:
            if not missing_index and seg.scan.txn_kafka_fatal:
                pp.plan.notes.append(
                    f"{seg.stem()}.txnindex: {seg.scan.txn_kafka_fatal}: Kafka's load throws "
                    "(KafkaException) and the broker does not start; kafka mode recovers the "
                    "segment and rebuilds the index instead, as for a corrupt one"
                )
            _recover(
                pp,
                seg,
                "Kafka recovers a segment whose offset index is missing or whose "
                "transaction index is corrupt while loading it",
            )
            recovered_at_load.add(seg.log)
    first_recovered = pp.segs[start] if start < len(pp.segs) else None
    queue = pp.segs[start:] if first_recovered is not None else []
    for n, seg in enumerate(list(queue)):
        if seg not in pp.segs or seg.derived:
            continue  # gone, or a piece of a split: Kafka retries on pieces known to be valid
        if seg.log in recovered_at_load:
            truncated = 0  # the second recovery finds nothing left to cut (spec rec §6.4)
        else:
            truncated = _recover(pp, seg, "Kafka's recovery truncates at the first invalid batch")
        if truncated:
            for later in [s for s in queue[n + 1 :] if s in pp.segs]:
                pp.delete_segment(
                    later, f"Kafka deletes every segment after the one it truncated ({seg.base})"
                )
            break
    lso = pp.p.log_start_checkpoint
    if lso is not None and pp.log_end_offset < lso:
        for seg in list(pp.segs):
            pp.delete_segment(
                seg,
                f"the log end {pp.log_end_offset} is below the log start {lso}: Kafka deletes "
                "every segment",
            )
        pp.clear_epochs = True
    return min(start, len(pp.segs))


def _recover(pp: PartitionPlan, seg: Seg, reason: str) -> int:
    """`LogLoader.recoverSegment`; returns the bytes it truncates."""
    scan = seg.scan
    if scan.kafka_split_fails:
        pp.unrecoverable.append(seg.base)
        pp.plan.notes.append(
            f"{seg.log}: a batch's offset is outside the segment's relative range and Kafka "
            "cannot split it off (IllegalArgumentException: the broker does not start). Left as "
            "it is; --mode point-in-time or salvage fixes it."
        )
        return 0
    if scan.misnamed:
        pp.unrecoverable.append(seg.base)
        pp.plan.notes.append(
            f"{seg.log}: its first batch is below its base offset; Kafka's recovery fails on it "
            "(IllegalArgumentException) and the broker does not start. Left as it is; "
            "--mode salvage renames the segment."
        )
        return 0
    pp.recovered.add(seg.log)
    replayed = _replayed_txn_entries(pp, seg.base)
    if replayed is not None and scan.name.endswith(layout.LOG_SUFFIX):
        # `LogSegment.recover` empties the `.txnindex` and appends each aborted transaction the
        # producer-state replay completes in this segment (spec rec §6.6.1 steps 1, 3f). (A
        # completed swap keeps its own index.)
        seg.txn_entries = replayed.get(seg.base, [])
    size = scan.size
    if scan.kafka_invalid_offset:
        pp.truncate_segment(
            seg,
            0,
            "Kafka's recovery found offsets going backwards at an index entry "
            "(InvalidOffsetException) and empties the segment",
        )
        return size
    end = scan.kafka_valid_bytes
    if scan.kafka_pieces and scan.kafka_piece_invalid is not None:
        return _leave(
            pp,
            seg,
            f"after Kafka's overflow split, the recovery of the piece at offset "
            f"{scan.kafka_piece_invalid} finds offsets going back at an index entry "
            "(InvalidOffsetException); a base offset field, outside the CRC, is corrupt. Left as "
            "it is",
        )
    if scan.kafka_pieces:
        pieces = []
        bounds = [pc.position for pc in scan.kafka_pieces[1:]] + [end]
        for pc, stop in zip(scan.kafka_pieces, bounds, strict=True):
            if pc.position < stop:
                lasts = [r.last_offset for r in scan.runs if r.start < stop and r.end > pc.position]
                last = max(lasts, default=pc.base_offset)
                pieces.append(Piece(pc.position, stop, pc.base_offset, last))
        later = [s.base for s in pp.segs if s.base > seg.base]
        if later and max(pc.last_offset for pc in pieces) >= min(later):
            return _leave(
                pp,
                seg,
                f"Kafka would split it into segments at offsets "
                f"{[pc.first_offset for pc in pieces]}, past the next segment {min(later)} (a base "
                "offset field, outside the CRC, is corrupt): that would reorder the log, so it is "
                "left as it is",
            )
        split_segment(
            pp,
            seg,
            pieces,
            "Kafka splits a segment whose offsets overflow its relative range (spec rec §6.7)",
        )
        return 0 if end >= size else size - end
    seg.next_offset = scan.kafka_next_offset  # `readNextOffset`: after the last batch kept
    if end < size:
        pp.truncate_segment(seg, end, reason)
        seg.next_offset = scan.kafka_next_offset
        return size - end
    return 0


def _replayed_txn_entries(
    pp: PartitionPlan, base: int
) -> dict[int, list[tuple[int, int, int, int]]] | None:
    """Each segment's aborted transactions (by base offset), from a producer-state replay of the
    bytes Kafka's recovery keeps; read once per partition, and only when a marker is there.

    Kafka replays from its latest producer snapshot; this replays from the first segment, which
    gives the same entries when the whole history is there (the log starts at offset 0) and
    intact below the segment at `base` (Kafka never reads a damaged segment below the recovery
    point; the replay would stop in it): only then is it used. Otherwise None: each segment keeps
    the entries of its old index that still fit."""
    p = pp.p
    if not p.segments or p.segments[0].base_offset != 0:
        return None
    if any(s.findings for s in p.segments if s.base_offset < base):
        return None
    if pp.replayed_txn is None:
        pp.replayed_txn = {}
        if p.disk is not None and any(s.has_txn_markers for s in p.segments):
            bases = [s.base_offset for s in p.segments]
            raw, problems = txn_entries_by_segment(p.disk, p.path, bases, p.settings.max_batch_size)
            pp.plan.notes.extend(
                f"Kafka's producer-state replay fails here (its startup aborts): {problem}"
                for problem in problems
            )
            pp.replayed_txn = {
                base: [
                    TXN_ENTRY.unpack_from(data, k)[1:]
                    for k in range(0, len(data) - TXN_ENTRY_SIZE + 1, TXN_ENTRY_SIZE)
                ]
                for base, data in raw.items()
            }
    return pp.replayed_txn


def _leave(pp: PartitionPlan, seg: Seg, why: str) -> int:
    """A segment Kafka's recovery would fail on, left as it is (the broker still meets it)."""
    pp.plan.notes.append(f"{seg.log}: {why}; --mode point-in-time or salvage fixes it.")
    pp.recovered.discard(seg.log)
    pp.unrecoverable.append(seg.base)
    return 0
