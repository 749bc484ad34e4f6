"""Step 3 of `heal` (heal.py): the healed batches of a partition laid out into segments.

Segment boundaries differ between brokers, so batches are placed by offset: each goes to the local
segment whose base offset is the highest at or below its own. A damaged segment (or one receiving
healed batches before its end) is written anew whole; healed batches past an intact segment's
last batch (a lost segment) are written as segments of their own; where a range stays unfilled,
the batches after it start a segment of their own, named by their first offset, as salvage does.
Each segment written is one `write_file` action with `pieces`.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from ...storage import layout
from ..plan import Action
from ..replicas import BatchRef, PartitionCopy, Step
from ..segment_scan import Run, SegmentScan
from .partition_plan import INT_MAX, PartitionPlan, Seg


@dataclass(slots=True)
class Held:
    """A batch of the healed partition and the copy it comes from."""

    ref: BatchRef
    copy: PartitionCopy
    break_before: bool = False
    """An unfilled damaged range lies just before it: it starts a segment of its own."""


def layout_partition(
    pp: PartitionPlan, local: PartitionCopy, steps: list[Step], fills: dict
) -> None:
    """The healed batches, in offset order, into segments; the actions that write them."""
    segs = list(pp.segs)
    held: list[Held] = []
    owners: list[int] = []
    bases = [s.base for s in segs]
    gaps = {id(b): (a, b) for a, b in fills}

    def add_fill(key) -> bool:
        rng = fills[key]
        for copy, refs in rng.filled:
            for r in refs:
                held.append(Held(r, copy))
                owners.append(max(0, bisect_right(bases, r.base_offset) - 1))
        if rng.lost is not None:
            pp.gaps.append(rng.lost)
            pp.data_removed = True
        return not rng.complete

    for step in steps:
        key = gaps.get(id(step))
        broken = add_fill(key) if key is not None else False
        held.append(Held(step.batch, local, break_before=broken))
        owners.append(step.segment)
    tail = next((k for k in fills if k[1] is None), None)
    if tail is not None:
        add_fill(tail)

    damaged = {i for i, s in enumerate(segs) if s.scan.valid_bytes < s.scan.size}
    rewritten = set(damaged)
    new_after: dict[int, list[Held]] = {}
    by_owner: dict[int, list[Held]] = {}
    for h, owner in zip(held, owners, strict=True):
        by_owner.setdefault(owner, []).append(h)
    for owner, items in by_owner.items():
        fills_here = [h for h in items if not h.copy.local]
        if not fills_here or owner in rewritten:
            continue
        own_last = segs[owner].scan.last_offset
        if own_last is None or fills_here[0].ref.base_offset <= own_last:
            rewritten.add(owner)
        else:
            new_after[owner] = fills_here
            by_owner[owner] = [h for h in items if h.copy.local]
    out: list[Seg] = []
    for i, seg in enumerate(segs):
        if i in rewritten:
            out.extend(_rewrite(pp, seg, by_owner.get(i, []), out))
        else:
            out.append(seg)
        if i in new_after:
            out.extend(_write_new(pp, seg, new_after[i]))
    pp.segs = out


def _split(items: list[Held]) -> list[list[Held]]:
    groups: list[list[Held]] = []
    for h in items:
        if not groups or h.break_before:
            groups.append([])
        groups[-1].append(h)
    return groups


def _rewrite(pp: PartitionPlan, seg: Seg, items: list[Held], before: list[Seg]) -> list[Seg]:
    """A damaged segment (or one receiving healed batches) written anew from its healed batches."""
    directory = seg.log.rpartition("/")[0]
    damaged_bytes = seg.scan.size - seg.scan.valid_bytes
    groups = _split(items)
    if not groups:
        previous_end = before[-1].end_offset if before else None
        if previous_end is not None and previous_end > seg.base:
            pp.delete_segment(seg, "an emptied segment whose name overlaps the previous one")
            return []
        groups = [[]]
    out: list[Seg] = []
    reuses = False
    for n, group in enumerate(groups):
        first = group[0] if group else None
        keep_name = n == 0 and (
            first is None
            or first.ref.base_offset == seg.base
            or (first.copy.local and first.ref.position == 0 and first.ref.file == seg.scan.name)
        )
        if keep_name:
            rel, base = seg.log, seg.base
            reuses = True
        else:
            name = layout.log_file_name(first.ref.base_offset)
            rel = f"{directory}/{name}" if directory else name
            base = first.ref.base_offset
        out.append(
            _write(
                pp,
                rel,
                base,
                group,
                seg,
                existing=keep_name,
                removed=damaged_bytes if n == 0 else 0,
            )
        )
    if not reuses:
        pp.delete_segment_files(seg, "its batches moved to segments named by their offsets")
    return out


def _write_new(pp: PartitionPlan, after: Seg, items: list[Held]) -> list[Seg]:
    """Healed batches past an intact segment's last batch: segments of their own."""
    directory = after.log.rpartition("/")[0]
    out = []
    for group in _split(items):
        name = layout.log_file_name(group[0].ref.base_offset)
        rel = f"{directory}/{name}" if directory else name
        out.append(
            _write(pp, rel, group[0].ref.base_offset, group, after, existing=False, removed=0)
        )
    return out


def pieces_of(items: list[Held]) -> list[tuple[str, int, int]]:
    """The byte ranges the batches come from, neighbouring ranges of one file merged."""
    out: list[tuple[str, int, int]] = []
    for h in items:
        f, pos, n = h.ref.file, h.ref.position, h.ref.size
        if out and out[-1][0] == f and out[-1][1] + out[-1][2] == pos:
            out[-1] = (f, out[-1][1], out[-1][2] + n)
        else:
            out.append((f, pos, n))
    return out


def _write(
    pp: PartitionPlan,
    rel: str,
    base: int,
    group: list[Held],
    origin: Seg,
    *,
    existing: bool,
    removed: int,
) -> Seg:
    pieces = pieces_of(group)
    size = sum(n for _, _, n in pieces)
    healed = sum(1 for h in group if not h.copy.local)
    reason = (
        f"healed: {healed} batches from replicas spliced in by offset"
        if healed
        else "salvage: the damaged byte ranges removed (no replica had them)"
    )
    pp.add(
        Action(
            "write_file",
            rel,
            reason,
            pieces=pieces if pieces else None,
            content=None if pieces else b"",
            removed_bytes=removed,
        )
    )
    scan = SegmentScan(base, rel, size)
    if existing:
        # a `.txnindex` found corrupt is rewritten, even where the healed batches agree with it
        scan.index_findings = [
            f for f in origin.scan.index_findings if f.kind == "txn_index_corrupt"
        ]
    if group:
        scan.runs.append(Run(0, size, group[0].ref.base_offset, group[-1].ref.last_offset))
    position = 0
    top = -1
    markers: list[tuple[int, int]] = []
    entries = []
    for h in group:
        r = h.ref
        if r.magic >= 2 and r.epoch > top:
            scan.strict_epochs.append((r.epoch, r.base_offset, position))
            top = r.epoch
        scan.max_timestamp = max(scan.max_timestamp, r.max_timestamp)
        position += r.size
        if r.is_txn_marker:
            markers.append((r.base_offset, r.last_offset))
            entry = h.copy.txn_by_marker.get(r.base_offset)
            if entry is not None:
                entries.append(entry)
    if group and group[-1].ref.last_offset - base > INT_MAX:
        pp.plan.notes.append(f"{rel}: its offsets overflow a segment's relative range")
    seg = Seg(
        scan,
        rel,
        base,
        derived=True,
        rebuild=True,
        txn_entries=entries,
        disk_txn=origin.scan.txn_entries if existing else [],
    )
    if not existing:
        pp.created.append(seg)
    return seg
