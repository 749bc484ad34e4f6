"""What every mode does first, as Kafka's loader does: stray `.deleted` and `.cleaned` files,
interrupted swaps finished or discarded (spec rec §6.2-6.3), orphaned indexes, `.tmp` leftovers."""

from __future__ import annotations

from ...storage import layout
from ..plan import Action, Plan
from ..scan import PartitionScan
from .partition_plan import PartitionPlan, Seg


def start_partition(p: PartitionScan, plan: Plan) -> PartitionPlan:
    """Leftovers (spec rec §6.2), interrupted swaps (§6.3) and orphaned indexes, as Kafka does."""
    pp = PartitionPlan(p, plan, [Seg(s, s.name, s.base_offset) for s in p.segments])
    left = [f for f in p.files if f.endswith(_LEFTOVER_SUFFIXES)]  # (most dirs: none)
    deleted = [f for f in left if f.endswith(layout.DELETED_SUFFIX)]
    cleaned = [f for f in left if f.endswith(layout.CLEANED_SUFFIX)]
    swaps = [f for f in left if f.endswith(layout.SWAP_SUFFIX)]
    for f in deleted:
        pp.add(Action("delete", p.file(f), "stray .deleted file (Kafka deletes it at load)"))
    min_cleaned = min((layout.offset_from_file_name(f) for f in cleaned), default=None)
    valid_swaps = []
    for f in swaps:
        offset = layout.offset_from_file_name(f)
        if min_cleaned is not None and offset >= min_cleaned:
            pp.add(
                Action(
                    "delete",
                    p.file(f),
                    f"swap file of an unfinished clean or split (offset {offset} >= "
                    f"{min_cleaned}, the lowest .cleaned file)",
                )
            )
        else:
            valid_swaps.append(f)
    for f in cleaned:
        pp.add(Action("delete", p.file(f), "stray .cleaned file of an unfinished clean or split"))
    swap_logs = {
        s.base_offset: s for s in p.swap_segments if s.name.rpartition("/")[2] in valid_swaps
    }
    if swap_logs:
        low = min(swap_logs)
        high = max(s.kafka_next_offset for s in swap_logs.values())
        for f in p.files:
            if f in valid_swaps or f.endswith(
                (layout.DELETED_SUFFIX, layout.CLEANED_SUFFIX, layout.SWAP_SUFFIX)
            ):
                continue
            fn = layout.classify_partition_file(f)
            if (
                fn.offset is not None
                and low <= fn.offset < high
                and fn.kind
                in (
                    layout.FileKind.LOG,
                    layout.FileKind.INDEX,
                    layout.FileKind.TIME_INDEX,
                    layout.FileKind.TXN_INDEX,
                    layout.FileKind.SNAPSHOT,
                )
            ):
                pp.add(
                    Action(
                        "delete",
                        p.file(f),
                        f"replaced by the swap segments {low}..{high} (compacted but not yet "
                        "deleted)",
                    )
                )
        pp.segs = [s for s in pp.segs if s.log not in pp.deleted]
    kept_logs = {s.base for s in pp.segs}
    for f in valid_swaps:
        target = f[: -len(layout.SWAP_SUFFIX)]
        offset = layout.offset_from_file_name(f)
        if target.endswith(layout.LOG_SUFFIX) or offset in swap_logs:
            pp.add(Action("rename", p.file(f), "finish the interrupted swap", to=p.file(target)))
        elif offset in kept_logs and _is_index_swap(f):
            _rename_index_swap(pp, f, target)
        else:
            pp.add(
                Action(
                    "delete",
                    p.file(f),
                    "swap index without a segment (Kafka renames it in, then deletes it as an "
                    "orphaned index)",
                )
            )
    for base, scan in sorted(swap_logs.items()):
        name = scan.name[: -len(layout.SWAP_SUFFIX)]
        seg = Seg(scan, name, base, rebuild=True)
        pp.created.append(seg)
        pp.segs.append(seg)
    pp.segs.sort(key=lambda s: s.base)
    logs = {s.base for s in pp.segs}
    tmp = []
    for f in p.files:
        fn = layout.classify_partition_file(f)
        if fn.tmp:
            tmp.append(f)
        elif fn.leftover is None and fn.kind in _INDEX_KINDS and fn.offset not in logs:
            pp.add(
                Action(
                    "delete",
                    p.file(f),
                    f"orphaned index file: no {layout.log_file_name(fn.offset)}",
                )
            )
    for f in tmp:
        pp.add(Action("delete", p.file(f), "leftover of an interrupted write"))
    return pp


_INDEX_KINDS = (layout.FileKind.INDEX, layout.FileKind.TIME_INDEX, layout.FileKind.TXN_INDEX)


_LEFTOVER_SUFFIXES = (layout.DELETED_SUFFIX, layout.CLEANED_SUFFIX, layout.SWAP_SUFFIX)


def _is_index_swap(name: str) -> bool:
    fn = layout.classify_partition_file(name)
    return fn.canonical and fn.kind in (
        layout.FileKind.INDEX,
        layout.FileKind.TIME_INDEX,
        layout.FileKind.TXN_INDEX,
    )


def _rename_index_swap(pp: PartitionPlan, swap: str, target: str) -> None:
    """Kafka 4.1.1's loader renames every `.swap` file to its name without the suffix (replacing
    the file there), an index's too, before it opens the segments: the segment then loads with
    that index (the scan already reads it in its place). A file it replaces goes to quarantine."""
    p = pp.p
    if pp.exists(p.file(target)):
        pp.add(
            Action("delete", p.file(target), "Kafka renames the interrupted swap's index over it")
        )
    pp.add(
        Action(
            "rename",
            p.file(swap),
            "finish the interrupted swap: Kafka renames an index's swap in beside its segment",
            to=p.file(target),
        )
    )
