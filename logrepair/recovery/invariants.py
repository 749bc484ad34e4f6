"""The repair invariants of design.md as reusable checks: each returns the violations it finds.

Tests assert them after every repair; the simulator checks them on crash states. A check never
raises on a damaged dir: it describes what is wrong, precisely enough to start debugging from.

- well-formed (1) and idempotent (6): `well_formed` — verify finds nothing, and a second plan in
  the same mode is empty;
- no invention (3): `no_invention` — every batch after the repair was there before, byte for byte,
  at the same offsets, in the same order (a prefix of each partition for kafka / point-in-time);
- minimal loss (4): `minimal_loss` — salvage keeps every batch the scan called valid; kafka keeps
  each recovered segment's longest valid prefix;
- accounted (5): `accounted` — the bytes removed from the logs equal what the plan reported, and
  each removed range is in the quarantine; undo is checked byte for byte by `tree_digest`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from ..format.errors import Defect
from ..storage import layout
from ..storage.disk import Disk, join
from ..storage.scan import LogScan
from .defects import KINDS
from .findings import Finding
from .path_kind import classify
from .plan import Plan
from .planner import make_plan
from .scan import LogDirScan, scan_path
from .settings import Settings


@dataclass(frozen=True, slots=True)
class BatchId:
    base_offset: int
    last_offset: int
    digest: str


def inventory(disk: Disk, path: str, *, stale: bool = True) -> dict[str, list[BatchId]]:
    """Every well-framed, CRC-valid batch of every partition under PATH, in log order.

    Segments of an interrupted swap (`.log.swap`) count: completing the swap makes them the log.
    `stale=False` leaves out each segment's batches at or past the next segment's base offset (a
    truncation never made durable, which the strict modes cut)."""
    out: dict[str, list[BatchId]] = {}
    is_log_dir = classify(disk, path)
    stale_from = {} if stale else _stale_tails(disk, path)
    dirs = (
        [(n, join(path, n)) for n in disk.list_dir(path) if _partition_dir(disk, path, n)]
        if is_log_dir
        else [("", path)]
    )
    for name, d in dirs:
        batches: list[BatchId] = []
        logs = sorted(
            n
            for n in disk.list_dir(d)
            if n.endswith((layout.LOG_SUFFIX, layout.LOG_SUFFIX + layout.SWAP_SUFFIX))
            and not disk.is_symlink(join(d, n))
        )
        for log in logs:
            cut = stale_from.get(join(d, log))
            for item in LogScan(
                disk, join(d, log), resync=True, check_offsets=False, max_batch_size=None
            ):
                if isinstance(item, Defect):
                    continue
                if cut is not None and item.position >= cut:
                    break
                batches.append(
                    BatchId(
                        item.base_offset,
                        item.last_offset,
                        hashlib.blake2b(item.raw, digest_size=16).hexdigest(),
                    )
                )
        out[name] = batches
    return out


def _stale_tails(disk: Disk, path: str) -> dict[str, int]:
    """`.log` path → where its stale tail starts (see `SegmentScan.stale_from`)."""
    return {
        join(p.path, seg.name.rpartition("/")[2]): seg.stale_from
        for p in scan_path(disk, path, Settings()).partitions
        for seg in p.segments
        if seg.stale_from is not None
    }


def _partition_dir(disk: Disk, root: str, name: str) -> bool:
    p = join(root, name)
    if not disk.is_dir(p) or disk.is_symlink(p):
        return False
    try:
        layout.parse_partition_dir_name(name)
    except layout.LayoutError:
        return False
    return True


def well_formed(
    disk: Disk,
    path: str,
    mode: str,
    settings: Settings | None = None,
    left: list[dict] | None = None,
    before: LogDirScan | None = None,
) -> list[str]:
    """Verify finds nothing but what the repair said it leaves (`plan.left`), and a second run in
    the same mode plans nothing.

    kafka mode may leave what Kafka's recovery leaves (defects below the recovery point, listed
    with the modes that fix them); the strict modes promise a clean result, so they may leave only
    kinds that no mode fixes. The tests and the simulator's deep check both hold a repair to this.

    With `before` (the scan the repair planned from), a finding about a stretch of batches that no
    mode removes (`batch_epoch_regression`, `batch_too_large`) may be left only about batches it
    was reported for before: a repair that moves them (salvage's splits) moves the finding too."""
    settings = settings or Settings()
    scan = scan_path(disk, path, settings)
    allowed = {(f["kind"], f["file"]) for f in left or []}
    reported = _stretches(before) if before is not None else None
    problems = []
    for f in scan.all_findings():
        if f.kind in ("stray_file", "stray_directory", "symlink"):
            continue
        if reported is not None and f.last_offset is not None:
            if not _covered(reported.get((f.kind, _partition_of(f)), []), f):
                problems.append(
                    f"not well-formed: {f.kind} in {f.file} at offsets {f.offset}.."
                    f"{f.last_offset}, which the scan before the repair did not report: {f.detail}"
                )
        elif (f.kind, f.file) not in allowed:
            problems.append(
                f"not well-formed: {f.kind} in {f.file or path} at {f.position}: {f.detail}"
            )
    if mode != "kafka":
        problems += [
            f"not well-formed: {mode} left {f['kind']} in {f['file']}, which it should fix"
            for f in left or []
            if KINDS[f["kind"]].fixed_by
        ]
    again = make_plan(scan, mode)
    problems += [f"not idempotent: a second {mode} run plans {a.describe()}" for a in again.actions]
    return problems


def _partition_of(f: Finding) -> str:
    return f.file.rpartition("/")[0]


def _stretches(scan: LogDirScan) -> dict[tuple[str, str], list[tuple[int, int]]]:
    """(kind, partition dir) → the offset ranges of the batch-stretch findings, in order."""
    out: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for f in scan.all_findings():
        if f.last_offset is not None and f.offset is not None:
            out.setdefault((f.kind, _partition_of(f)), []).append((f.offset, f.last_offset))
    for ranges in out.values():
        ranges.sort()
    return out


def _covered(ranges: list[tuple[int, int]], f: Finding) -> bool:
    """`[f.offset, f.last_offset]` lies within the union of `ranges` (sorted)."""
    need = f.offset
    for first, last in ranges:
        if first > need:
            break
        need = max(need, last + 1)
        if need > f.last_offset:
            return True
    return False


def no_invention(
    before: dict[str, list[BatchId]], after: dict[str, list[BatchId]], *, prefix: bool
) -> list[str]:
    problems = []
    for name, kept in after.items():
        original = before.get(name)
        if original is None:
            if kept:
                problems.append(f"no invention: partition {name or '.'} appeared with data")
            continue
        if prefix:
            if kept != original[: len(kept)]:
                first = next(
                    (i for i, (a, b) in enumerate(zip(kept, original, strict=False)) if a != b),
                    len(original),
                )
                problems.append(
                    f"no invention: {name or '.'} is not a prefix of the original log "
                    f"(first difference at batch {first})"
                )
            continue
        it = iter(original)
        for batch in kept:
            if not any(batch == b for b in it):
                problems.append(
                    f"no invention: {name or '.'} batch {batch.base_offset}..{batch.last_offset} "
                    "was not in the original log, or is out of order"
                )
                break
    return problems


def minimal_loss(
    before: dict[str, list[BatchId]],
    after: dict[str, list[BatchId]],
    must_keep: dict[str, list[BatchId]],
) -> list[str]:
    """`must_keep`: per partition, the batches the mode promised to keep."""
    problems = []
    for name, batches in must_keep.items():
        present = set(after.get(name, []))
        for b in batches:
            if b not in present:
                problems.append(
                    f"minimal loss: {name or '.'} lost the valid batch {b.base_offset}..{b.last_offset}"
                )
                break
    return problems


def accounted(disk: Disk, plan: Plan, quarantine: str | None) -> list[str]:
    """Every removed `.log` byte range is reported and kept in the quarantine."""
    problems = []
    if not plan.actions:
        return problems
    if quarantine is None:
        return ["accounted: a plan with actions was applied without a quarantine"]
    from .journal import Journal

    journal = Journal.load(disk, quarantine)
    for entry in journal.data["actions"]:
        saved = entry.get("saved", {})
        if entry["action"] == "truncate":
            tail = join(quarantine, saved["tail"])
            moved = sum(length for _, length, _ in entry.get("moved") or [])
            if disk.size(tail) != saved["original_size"] - entry["size"] - moved:
                problems.append(f"accounted: the tail of {entry['file']} is not all in quarantine")
        if entry["action"] == "delete" and not disk.exists(join(quarantine, saved["moved_to"])):
            problems.append(f"accounted: {entry['file']} is not in quarantine")
    return problems


def tree_digest(disk: Disk, path: str) -> dict[str, str]:
    """File name → digest of every regular file under PATH (for undo's byte-for-byte check)."""
    out: dict[str, str] = {}

    def walk(d: str, rel: str) -> None:
        for n in disk.list_dir(d):
            p = join(d, n)
            r = f"{rel}/{n}" if rel else n
            if disk.is_symlink(p):
                out[r] = "symlink"
            elif disk.is_dir(p):
                walk(p, r)
            else:
                out[r] = hashlib.blake2b(disk.read_file(p), digest_size=16).hexdigest()

    walk(path, "")
    return out


def valid_batches(
    disk: Disk, path: str, settings: Settings | None = None
) -> dict[str, list[BatchId]]:
    """The batches the scan calls valid (inside its runs): what salvage must keep."""
    scan = scan_path(disk, path, settings or Settings())
    out: dict[str, list[BatchId]] = {}
    for p in scan.partitions:
        kept: list[BatchId] = []
        for seg in p.segments:
            if not seg.runs:
                continue
            runs = seg.runs
            for item in LogScan(
                disk,
                join(p.path, seg.name.rpartition("/")[2]),
                resync=True,
                check_offsets=False,
                max_batch_size=p.settings.max_batch_size,
            ):
                if isinstance(item, Defect):
                    continue
                if any(r.start <= item.position < r.end for r in runs):
                    kept.append(
                        BatchId(
                            item.base_offset,
                            item.last_offset,
                            hashlib.blake2b(item.raw, digest_size=16).hexdigest(),
                        )
                    )
        out[p.rel] = kept
    return out
