"""A whole repair run: lock, finish interrupted runs, scan, plan, quarantine, apply. `repair` and
`rebuild-index` are both such runs, with different plans.

The quarantine lives beside the log dir, never inside it (Kafka would take a directory there for a
partition and refuse to start): `<log dir>.logrepair-quarantine/<UTC time>-<mode>/`. With
`--quarantine ROOT` the runs go under ROOT instead. Each run's directory is what `undo` takes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..storage import layout
from ..storage.disk import Disk, DiskLock, join, parent_of
from . import apply, indexes
from .plan import Plan
from .planner import make_plan
from .rebuild import plan_rebuild
from .scan import ROOT_MARKERS, LogDirScan, Progress, classify, scan_path
from .settings import Settings

QUARANTINE_SUFFIX = ".logrepair-quarantine"


class RepairRefused(ValueError):
    """The repair cannot start safely (a lock is held, the quarantine is inside the log dir)."""


@dataclass(slots=True)
class RepairResult:
    plan: Plan
    scan: LogDirScan
    applied: bool = False
    quarantine: str | None = None
    finished: list[str] = field(default_factory=list)
    """Interrupted runs this run completed or rolled back first."""

    @property
    def lost_data(self) -> bool:
        """Records removed or acknowledged offsets lost (removing only zero padding is not)."""
        return bool(self.plan.lost)

    def to_json(self) -> dict:
        return {
            "path": self.plan.root,
            "mode": self.plan.mode,
            "applied": self.applied,
            "dry_run": not self.applied and bool(self.plan.actions),
            "actions": [a.to_json() for a in self.plan.actions],
            "removed_bytes": self.plan.removed_bytes,
            "removed_offsets": [list(r) for r in self.plan.removed_offsets],
            "gaps": [list(g) for g in self.plan.gaps],
            "partitions": [p.to_json() for p in self.plan.partitions],
            "quarantine": self.quarantine,
            "left": self.plan.left,
            "notes": self.plan.notes,
            "finished_interrupted": self.finished,
        }


def log_dir_of(disk: Disk, path: str, is_log_dir: bool) -> str | None:
    """The broker log dir holding PATH, when there is one."""
    if is_log_dir:
        return path
    parent = parent_of(path)
    names = disk.list_dir(parent) if disk.is_dir(parent) else []
    return parent if any(n in ROOT_MARKERS for n in names) else None


def default_quarantine_root(disk: Disk, path: str, is_log_dir: bool) -> str:
    owner = log_dir_of(disk, path, is_log_dir) or path
    return owner.rstrip("/") + QUARANTINE_SUFFIX


def _inside(child: str, parent: str) -> bool:
    child, parent = child.rstrip("/"), parent.rstrip("/")
    return child == parent or child.startswith(parent + "/")


def repair(
    disk: Disk,
    path: str,
    mode: str,
    settings: Settings,
    *,
    dry_run: bool = False,
    quarantine_root: str | None = None,
    progress: Progress | None = None,
) -> RepairResult:
    """Scan, plan in `mode`, quarantine and apply (after finishing interrupted runs)."""
    return _run(
        disk,
        path,
        settings,
        mode,
        lambda scan: make_plan(scan, mode),
        validated=True,
        dry_run=dry_run,
        quarantine_root=quarantine_root,
        progress=progress,
    )


def rebuild_indexes(
    disk: Disk,
    path: str,
    settings: Settings,
    *,
    dry_run: bool = False,
    quarantine_root: str | None = None,
    progress: Progress | None = None,
) -> RepairResult:
    """`rebuild-index`: every index that disagrees with its log rewritten, as a journaled run.

    The plan is not a repair's (nothing in a `.log` was validated), so the rebuild checks CRCs."""
    return _run(
        disk,
        path,
        settings,
        "rebuild-index",
        lambda scan: plan_rebuild(disk, scan),
        validated=False,
        dry_run=dry_run,
        quarantine_root=quarantine_root,
        progress=progress,
    )


def batch_caps(scan: LogDirScan) -> dict[str, int]:
    """The batch-size cap each partition was scanned with, by its dir relative to the root: the
    journal records it, so that a replay rebuilds indexes over the batches the plan saw."""
    return {p.rel: p.settings.max_batch_size for p in scan.partitions}


def _run(
    disk: Disk,
    path: str,
    settings: Settings,
    name: str,
    make: Callable[[LogDirScan], Plan],
    *,
    validated: bool,
    dry_run: bool,
    quarantine_root: str | None,
    progress: Progress | None,
) -> RepairResult:
    """The run every plan goes through: lock, finish interrupted runs, scan, plan, quarantine,
    apply. `name` labels the run's quarantine directory."""
    path = path.rstrip("/") or "/"
    is_log_dir = classify(disk, path)
    owner = log_dir_of(disk, path, is_log_dir)
    root = quarantine_root or default_quarantine_root(disk, path, is_log_dir)
    for protected in (path, owner):
        if protected is not None and _inside(root, protected):
            raise RepairRefused(
                f"quarantine {root} is inside {protected}; Kafka would take it for a partition"
            )
    lock = lock_log_dir(disk, owner or path)
    try:
        finished: list[str] = []
        pending = apply.pending(disk, root, path)
        for journal in pending:
            if journal.state == apply.UNDOING:
                raise RepairRefused(
                    f"the undo of {journal.qdir} was interrupted: run `logrepair undo "
                    f"{journal.qdir}` to finish it first"
                )
        if not dry_run:
            apply.remove_discarded(disk, root)
            for journal in pending:
                finished.append(apply.finish(journal, indexes.rebuild))
        scan = scan_path(disk, path, settings, progress)
        plan = make(scan)
        for journal in pending if dry_run else []:
            plan.notes.append(
                f"an interrupted repair in {journal.qdir} ({journal.state}) will be "
                f"{'rolled back' if journal.state == apply.SAVING else 'completed'} first; this "
                "plan is what remains after that as the log dir looks now"
            )
        result = RepairResult(plan, scan, finished=finished)
        if dry_run or not plan.actions:
            return result
        qdir = _new_run_dir(disk, root, name)
        summary = {
            "removed_bytes": plan.removed_bytes,
            "removed_offsets": [list(r) for r in plan.removed_offsets],
            "gaps": [list(g) for g in plan.gaps],
            "partitions": [p.to_json() for p in plan.partitions],
            "notes": plan.notes,
        }
        journal = apply.start(
            disk, plan, qdir, summary, max_batch_sizes=batch_caps(scan), validated=validated
        )
        apply.run(journal, indexes.rebuild)
        result.applied = True
        result.quarantine = qdir
        return result
    finally:
        if lock is not None:
            lock.release()


def lock_log_dir(disk: Disk, log_dir: str) -> DiskLock | None:
    """Kafka's `.lock`, held for the whole run. Only an existing file is locked: a broker always
    has one, and creating it would leave a file the repair did not account for."""
    lock_path = join(log_dir, layout.LOCK_FILE)
    if not disk.exists(lock_path):
        return None
    return disk.lock(lock_path)


def _new_run_dir(disk: Disk, root: str, mode: str) -> str:
    apply.make_dirs_durable(disk, root)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    base = join(root, f"{stamp}-{mode}")
    candidate, n = base, 1
    while disk.exists(candidate):
        n += 1
        candidate = f"{base}-{n}"
    return candidate
