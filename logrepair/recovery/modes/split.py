"""Rewriting one segment as several, each named by its first offset: salvage's way of keeping the
valid batches after a damaged range, and Kafka's offset-overflow split (spec rec §6.7)."""

from __future__ import annotations

from dataclasses import dataclass

from ...storage import layout
from ..plan import Action
from ..segment_scan import Run, SegmentScan
from .partition_plan import INT_MAX, PartitionPlan, Seg


@dataclass(slots=True)
class Piece:
    """A stretch `[start, end)` of a segment's `.log` that becomes (or stays) one segment."""

    start: int
    end: int
    first_offset: int
    last_offset: int


def split_segment(
    pp: PartitionPlan, seg: Seg, pieces: list[Piece], reason: str, *, rename_first: bool = False
) -> list[Seg]:
    """Rewrites one segment as `pieces`, each its own segment named by its first offset.

    The first piece stays in the file when it starts at byte 0 under the segment's own name (with
    `rename_first`, only when that name is its first offset: Kafka's overflow split names every
    piece by its first batch); the rest are copied out of the truncated tail. Bytes in no piece
    are removed. Returns the new segments (which replace `seg` in the partition's list)."""
    scan = seg.scan
    size = scan.size if seg.new_size is None else seg.new_size
    keep_first = (
        bool(pieces)
        and pieces[0].start == 0
        and seg.base <= pieces[0].first_offset
        and pieces[0].last_offset - seg.base <= INT_MAX
        and not (rename_first and pieces[0].first_offset != seg.base)
    )
    cut = pieces[0].end if keep_first else 0
    kept_bytes = sum(pc.end - pc.start for pc in pieces)
    lost_runs = [
        r
        for r in scan.runs
        if not any(pc.start <= r.start and r.end <= pc.end for pc in pieces) and r.start < size
    ]
    removed_offsets = (lost_runs[0].first_offset, lost_runs[-1].last_offset) if lost_runs else None
    directory = seg.log.rpartition("/")[0]
    out: list[Seg] = []
    truncate = None
    if cut < size:
        truncate = Action(
            "truncate",
            seg.log,
            reason,
            size=cut,
            removed_bytes=size - kept_bytes,
            removed_offsets=removed_offsets,
            keeps_offsets=(pieces[0].first_offset, pieces[0].last_offset) if keep_first else None,
        )
        if size - kept_bytes:
            pp.data_removed = True
    splits: list[Action] = []
    index = pp.segs.index(seg)
    pp.segs.remove(seg)
    reuses_name = keep_first
    for n, pc in enumerate(pieces):
        if n == 0 and keep_first:
            new_scan = _sub_scan(scan, pc, seg.base, seg.log)
            out.append(
                Seg(
                    new_scan,
                    seg.log,
                    seg.base,
                    new_size=pc.end,
                    derived=True,
                    rebuild=cut < size,
                    txn_entries=_txn_for(seg, new_scan),
                    disk_txn=scan.txn_entries,
                )
            )
            continue
        name = layout.log_file_name(pc.first_offset)
        rel = f"{directory}/{name}" if directory else name
        reuses_name = reuses_name or rel == seg.log
        splits.append(
            Action(
                "split",
                seg.log,
                f"valid batches from offset {pc.first_offset} continue in a segment of their own",
                to=rel,
                position=pc.start,
                length=pc.end - pc.start,
            )
        )
        new_scan = _sub_scan(scan, pc, pc.first_offset, rel)
        new = Seg(
            new_scan,
            rel,
            pc.first_offset,
            derived=True,
            rebuild=True,
            txn_entries=_txn_for(seg, new_scan),
            disk_txn=scan.txn_entries if rel == seg.log else [],
        )
        pp.created.append(new)
        out.append(new)
    if truncate is not None and any(a.to == seg.log for a in splits):
        pp.add(truncate)  # the batches go back into this very file: copied from the saved tail
        for a in splits:
            pp.add(a)
    else:
        for a in splits:
            pp.add(a)
        if truncate is not None:
            truncate.moved = [(a.position, a.length, a.to) for a in splits]
            pp.add(truncate)
    if not reuses_name:
        if pieces:
            pp.delete_segment_files(seg, "its batches moved to segments named by their offsets")
        else:
            # nothing valid is left: keep the segment, empty, under its own name
            empty = _sub_scan(scan, Piece(0, 0, seg.base, seg.base), seg.base, seg.log)
            out.append(
                Seg(
                    empty,
                    seg.log,
                    seg.base,
                    new_size=0,
                    derived=True,
                    rebuild=True,
                    txn_entries=[],
                    disk_txn=scan.txn_entries,
                )
            )
    pp.segs[index:index] = out
    return out


def _sub_scan(scan: SegmentScan, piece: Piece, base: int, name: str) -> SegmentScan:
    shift = piece.start
    sub = SegmentScan(base, name, piece.end - piece.start)
    for r in scan.runs:
        start, end = max(r.start, piece.start), min(r.end, piece.end)
        if start < end:
            sub.runs.append(Run(start - shift, end - shift, r.first_offset, r.last_offset))
    sub.strict_epochs = [
        (e, b, pos - shift) for e, b, pos in scan.strict_epochs if piece.start <= pos < piece.end
    ]
    sub.max_timestamp = scan.max_timestamp
    indexes = _piece_indexes(scan, piece, base)
    if indexes is not None:
        sub.kafka_indexes = indexes
        sub.kafka_valid_bytes = piece.end - piece.start
        sub.kafka_index_entries = len(indexes[0]) // 8
    return sub


def _piece_indexes(scan: SegmentScan, piece: Piece, base: int) -> tuple[bytes, bytes] | None:
    """The indexes of the piece as a segment based at `base`, when the scan's pass computed them
    for exactly its batches: a run past byte 0 as its own segment (`run_indexes`), or the start of
    the segment up to where Kafka's recovery stops too (Kafka's own rebuild)."""
    if piece.start:
        run = scan.run_indexes.get((piece.start, piece.end))
        return run if run is not None and base == piece.first_offset else None
    return scan.prefix_indexes(piece.end) if base == scan.base_offset else None


def _txn_for(seg: Seg, sub: SegmentScan) -> list[tuple[int, int, int, int]]:
    """The aborted transactions whose markers fall in the piece `sub` of `seg`."""
    if not sub.runs:
        return []
    first, end = sub.runs[0].first_offset, sub.runs[-1].last_offset + 1
    entries = seg.scan.txn_entries if seg.txn_entries is None else seg.txn_entries
    return [e for e in entries if first <= e[2] < end]
