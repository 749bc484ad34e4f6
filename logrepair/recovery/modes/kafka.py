"""`kafka` mode: what Kafka's LogLoader does at an unclean start (spec rec §6), offline.

It always recovers as after an unclean shutdown (a clean-shutdown marker is reported, not
trusted), from the checkpointed recovery point, or from 0 when there is none. Kafka's quirks are
kept because the point of this mode is to reach the state the broker would reach:

- a segment whose `.index` is missing (or whose `.txnindex` fails its sanity check) is recovered
  while loading, and what that recovery truncates does not delete later segments (§6.4);
- from the segment holding the recovery point on, each segment is recovered until one truncates;
  every later segment is then deleted (§6.6), valid or not;
- segments below the recovery point are not read: their defects are left, and reported.

A recovered segment gets the indexes Kafka's recovery writes wherever the existing ones differ
from them (an identical one is left alone, so a second run plans nothing), and the transaction
index Kafka's producer-state replay from its latest snapshot gives (`txn_replay`); producer
snapshots are not written. Where Kafka's load would throw and the broker not start, the plan says
so (docs/spec-notes.md, "Proven against Kafka 4.1.1": each rule here is checked against Kafka's own
recovery by tests/kafka).
"""

from __future__ import annotations

from ...storage import layout
from ..segment_scan import SegmentScan
from ..txn_replay import TxnEntry, TxnReplay
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
    pieces_of: dict[int, list[Seg]] = {}
    cut_at_load: list[Seg] = []
    for seg in segs:
        missing_index = not pp.exists(seg.stem() + layout.INDEX_SUFFIX)
        if (missing_index or seg.scan.txn_corrupt_for_kafka) and seg not in pp.created:
            if not missing_index and seg.scan.txn_kafka_fatal:
                pp.plan.notes.append(
                    f"{seg.stem()}.txnindex: {seg.scan.txn_kafka_fatal}: Kafka's load throws "
                    "(KafkaException) and the broker does not start; kafka mode recovers the "
                    "segment and rebuilds the index instead, as for a corrupt one"
                )
            if seg.scan.kafka_invalid_offset:
                pp.plan.notes.append(
                    f"{seg.log}: Kafka recovers it while loading and throws there "
                    "(InvalidOffsetException: offsets go back at an index entry), which nothing "
                    "catches: the broker does not start. kafka mode empties it, as Kafka's "
                    "recovery does for the same exception after loading"
                )
            before = {id(s) for s in pp.segs}
            truncated = _recover(
                pp,
                seg,
                "Kafka recovers a segment whose offset index is missing or whose "
                "transaction index is corrupt while loading it",
                recovery_point,
            )
            recovered_at_load.add(seg.log)
            # its leader epochs are assigned while loading (a split's: its pieces')
            pieces = [s for s in pp.segs if id(s) not in before]
            pp.epochs_before.extend(pieces or [seg])
            if pieces:
                pieces_of[id(seg)] = pieces
                if truncated:
                    # the split's pieces are recovered by the recovery pass, which cut one
                    cut_at_load.append(pieces[-1])
            _note_split_while_loading(pp, seg, recovery_point)
    for piece in cut_at_load:
        if piece in pp.segs:
            _delete_after(pp, piece, pp.segs[pp.segs.index(piece) + 1 :])
    # (a segment split while loading: the recovery pass begins at its first piece)
    anchor = segs[start] if segs else None
    anchor = pieces_of.get(id(anchor), [anchor])[0]
    start = pp.segs.index(anchor) if anchor in pp.segs else len(pp.segs)
    queue = pp.segs[start:]
    for n, seg in enumerate(list(queue)):
        if seg not in pp.segs or seg.derived:
            continue  # gone, or a piece of a split: Kafka retries on pieces known to be valid
        if seg.log in recovered_at_load:
            # the second recovery finds nothing left to cut (spec rec §6.4), but rewrites the
            # `.txnindex` from the producer state of this pass
            truncated = 0
            _replay_txn_index(pp, seg)
        else:
            truncated = _recover(
                pp, seg, "Kafka's recovery truncates at the first invalid batch", recovery_point
            )
        if truncated:
            _delete_after(pp, seg, queue[n + 1 :])
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
    _check_first_unstable_offset(pp)
    return min(start, len(pp.segs))


def _delete_after(pp: PartitionPlan, seg: Seg, later: list[Seg]) -> None:
    """`recoverLog`: a segment cut (a piece of a split too) and every later one is deleted."""
    for s in later:
        if s in pp.segs:
            pp.delete_segment(
                s, f"Kafka deletes every segment after the one it truncated ({seg.base})"
            )


def _note_split_while_loading(pp: PartitionPlan, seg: Seg, recovery_point: int) -> None:
    """Kafka's split of a segment recovered while loading: `replaceSegments` deletes only an old
    segment already in the log's list, which this one is not yet, so the original file stays
    beside its pieces; reloaded, it is dropped only if the recovery pass reaches it again (the
    recovery point below its first piece). Where not, Kafka's log holds the offsets twice; kafka
    mode removes the original (docs/spec-notes.md)."""
    pieces = seg.scan.kafka_pieces
    if seg in pp.segs or not pieces or pieces[0].base_offset == seg.base:
        return
    if recovery_point >= pieces[0].base_offset:
        pp.plan.notes.append(
            f"{seg.log}: Kafka splits it while loading (its offsets overflow the segment's "
            "relative range) and keeps the original file beside its pieces, whose offsets it "
            "then holds twice; kafka mode removes the original, as Kafka does when its recovery "
            "pass reaches it"
        )


def _recover(pp: PartitionPlan, seg: Seg, reason: str, recovery_point: int) -> int:
    """`LogLoader.recoverSegment`; returns the bytes it truncates (for an overflow split, those
    its retry cuts from a piece it recovers)."""
    scan = seg.scan
    if scan.kafka_split_fails:
        pp.unrecoverable.append(seg.base)
        pp.plan.notes.append(
            f"{seg.log}: a batch's offset is outside the segment's relative range and Kafka's "
            "overflow split fails on it (the last batch does not overflow, the pieces would go "
            "back, or bytes at its end do not frame as a batch): the broker does not start. Left "
            "as it is; --mode point-in-time or salvage fixes it."
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
    _replay_txn_index(pp, seg)
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
        # no piece is recovered where a later segment holds the recovery point
        later_bases = [s.base for s in pp.segs[pp.segs.index(seg) + 1 :]]
        past = any(b <= recovery_point for b in later_bases)
        pieces, truncated = _pieces_kept(scan, None if past else recovery_point)
        later = [_base_after_split(s) for s in pp.segs[pp.segs.index(seg) + 1 :]]
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
            rename_first=True,
        )
        return truncated
    seg.next_offset = scan.kafka_next_offset  # `readNextOffset`: after the last batch kept
    if end < size:
        pp.truncate_segment(seg, end, reason)
        seg.next_offset = scan.kafka_next_offset
        return size - end
    return 0


def _pieces_kept(scan: SegmentScan, recovery_point: int | None) -> tuple[list[Piece], int]:
    """The segments Kafka's overflow split and its retry leave, and the bytes the retry cuts.

    The split copies every batch, framed by its size field; the retry recovers only from the
    piece holding the recovery point on (`segments.values(recoveryPoint, ...)` begins at the
    floor), each piece from its own start, until one is cut: the later ones are deleted. A piece
    below keeps its damage, as a segment below the recovery point does. A recovered piece that
    begins with an invalid batch is emptied and stays, an empty segment named by that batch (the
    log end jumps to it). `recovery_point` None: the floor is a later segment, no piece is
    recovered."""
    found = scan.kafka_pieces
    ends = [pc.position for pc in found[1:]] + [scan.size]
    if recovery_point is None:
        first = len(found)
    else:
        bases = [i for i, pc in enumerate(found) if pc.base_offset <= recovery_point]
        first = max(bases, default=0)
    pieces = []
    for i, (pc, end) in enumerate(zip(found, ends, strict=True)):
        stop = end if i < first or pc.valid_end is None else pc.valid_end
        if stop == end:
            pieces.append(Piece(pc.position, end, pc.base_offset, pc.last_offset))
            continue
        if pc.position < stop:
            lasts = [r.last_offset for r in scan.runs if r.start < stop and r.end > pc.position]
            pieces.append(
                Piece(pc.position, stop, pc.base_offset, max(lasts, default=pc.base_offset))
            )
        else:
            pieces.append(Piece(stop, stop, pc.base_offset, pc.base_offset))
        return pieces, scan.size - stop
    return pieces, 0


def _base_after_split(seg: Seg) -> int:
    """The base offset a segment after a split one ends up with: Kafka's retry recovers it too,
    so one whose own overflow split is clean (no piece cut, no invalid piece) is renamed for its
    first batch, as its pieces are; any other keeps its name (the split before it is refused
    where it would pass it)."""
    scan = seg.scan
    clean = (
        scan.kafka_pieces
        and not seg.derived
        and scan.kafka_piece_invalid is None
        and scan.kafka_valid_bytes >= scan.size
    )
    if not clean:
        return seg.base
    # the piece under the segment's own name is empty when its first batch already overflows
    return [pc for pc in scan.kafka_pieces if pc.position == 0][-1].base_offset


def _replay_txn_index(pp: PartitionPlan, seg: Seg) -> None:
    """`LogSegment.recover` empties the `.txnindex` and appends each aborted transaction the
    producer-state replay completes in this segment (spec rec §6.6.1 steps 1, 3f). (A completed
    swap keeps its own index.)"""
    replayed = _replayed_txn_entries(pp, seg)
    if replayed is not None and seg.scan.name.endswith(layout.LOG_SUFFIX):
        seg.txn_entries = replayed


def _replayed_txn_entries(pp: PartitionPlan, seg: Seg) -> list[TxnEntry] | None:
    """The aborted transactions Kafka's recovery of `seg` writes to its `.txnindex`: its
    producer-state replay from its latest snapshot (`txn_replay`), set up once per partition;
    entries are replayed only when a marker is there (else none). None for a log not on disk.
    Where the replay throws, a note says so."""
    p = pp.p
    replay = _txn_replay(pp)
    if replay is None:
        return None
    seen, fatal = len(replay.problems), replay.fatal
    with_state = any(s.has_txn_markers for s in p.segments)
    next_offset = seg.scan.kafka_next_offset
    entries = replay.recover(
        sorted(s.base for s in pp.segs),
        seg.base,
        seg.base if next_offset is None else next_offset,
        with_state=with_state,
    )
    pp.plan.notes.extend(
        f"{seg.log}: Kafka's producer-state replay fails here (its startup aborts): {problem}"
        for problem in replay.problems[seen:]
    )
    if replay.fatal is not None and fatal is None:
        pp.plan.notes.append(
            f"{seg.log}: to recover it Kafka replays producer state through the segments below, "
            f"and throws there (CorruptRecordException: {replay.fatal}); the broker does not "
            "start. kafka mode repairs the partition as the rest of Kafka's recovery would"
        )
    return entries


def _txn_replay(pp: PartitionPlan) -> TxnReplay | None:
    """The partition's replay, set up on first use (None for a log not on disk)."""
    p = pp.p
    if p.disk is None:
        return None
    if pp.txn_replay is None:
        # (a snapshot the scan decoded is not read again)
        snapshots = {s.offset: s.file if s.entries is None else s.entries for s in p.snapshots}
        pp.txn_replay = TxnReplay(
            p.disk, p.path, p.log_start_checkpoint or 0, snapshots, p.settings.max_batch_size
        )
    pp.txn_replay.sizes = {
        s.base: s.scan.size if s.new_size is None else s.new_size for s in pp.segs
    }
    return pp.txn_replay


def _check_first_unstable_offset(pp: PartitionPlan) -> None:
    """Kafka's load ends by reading the log at the first offset of the earliest open
    transaction; where that read throws, the broker does not start: a note says so."""
    p = pp.p
    if not pp.segs or not (p.snapshots or any(s.has_txn_batches for s in p.segments)):
        return  # no transaction anywhere: none is open
    replay = _txn_replay(pp)
    if replay is None or replay.fatal is not None:
        return  # a replay already failed, and said so
    bases = sorted(s.base for s in pp.segs)
    log_start = max(p.log_start_checkpoint or 0, bases[0])
    failed = replay.load_fails(bases, log_start, pp.log_end_offset)
    if failed is not None:
        base, message = failed
        pp.plan.notes.append(
            f"{p.file(layout.log_file_name(base))}: Kafka's load ends by reading the log at the "
            f"earliest open transaction's first offset and throws here (CorruptRecordException: "
            f"{message}); the broker does not start. --mode point-in-time or salvage fixes it"
        )


def _leave(pp: PartitionPlan, seg: Seg, why: str) -> int:
    """A segment Kafka's recovery would fail on, left as it is (the broker still meets it)."""
    pp.plan.notes.append(f"{seg.log}: {why}; --mode point-in-time or salvage fixes it.")
    pp.recovered.discard(seg.log)
    pp.unrecoverable.append(seg.base)
    return 0
