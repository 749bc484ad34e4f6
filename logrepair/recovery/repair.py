"""A whole repair run: lock, settle interrupted runs, scan, plan, quarantine, apply. `repair` and
`rebuild-index` are both such runs, with different plans.

The quarantine lives beside the log dir, never inside it (Kafka would take a directory there for a
partition and refuse to start): `<log dir>.logrepair-quarantine/<UTC time>-<mode>/`. With
`--quarantine ROOT` the runs go under ROOT instead. Each run's directory is what `undo` takes.
Paths are resolved first, so every path to the same log dir takes the same lock (runs.py).

An I/O error (a full disk, a failing device) stops the run with one line that says the state it
left: the log dir untouched, or the run journaled with how far it got and how to finish or roll it
back, and where space is needed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial

from ..storage.disk import Disk
from ..storage.logdir import DirLock
from . import apply, indexes
from .failures import RepairFailed, io_errors
from .interrupted import ABANDON, FINISH, REPLAN, Settled, check_interrupted, settle
from .journal import (
    DISCARDED,
    SAVING,
    Journal,
    clean_marker,
    make_dirs_durable,
    pending,
    remove_discarded,
    unmark_pending,
)
from .path_kind import classify
from .plan import Plan
from .planner import make_plan, plan_partition_alone
from .rebuild import plan_rebuild, rebuild_partition
from .runs import (
    RepairRefused,
    inside,
    lock_run,
    log_dir_of,
    pending_marker,
    quarantine_roots,
)
from .scan import LogDirScan, PartitionMapper, PartitionStep, Progress, scan_path
from .settings import Settings

__all__ = ["RepairRefused", "RepairFailed", "RepairResult", "repair", "rebuild_indexes"]


@dataclass(slots=True)
class RepairResult:
    plan: Plan
    scan: LogDirScan
    applied: bool = False
    quarantine: str | None = None
    settled: list[Settled] = field(default_factory=list)
    """Interrupted runs this run completed, rolled back or abandoned first."""
    warnings: list[str] = field(default_factory=list)

    @property
    def finished(self) -> list[str]:
        return [s.describe() for s in self.settled]

    @property
    def lost_data(self) -> bool:
        """Records removed or acknowledged offsets lost, by this run's plan or by the interrupted
        runs it finished (removing only zero padding is not)."""
        return bool(self.plan.lost) or any(s.lost_data for s in self.settled)

    def to_json(self) -> dict:
        return {
            "path": self.plan.root,
            "mode": self.plan.mode,
            "applied": self.applied,
            "dry_run": not self.applied and bool(self.plan.actions),
            "actions": [a.output_json() for a in self.plan.actions],
            "removed_bytes": self.plan.removed_bytes,
            "removed_offsets": [list(r) for r in self.plan.removed_offsets],
            "gaps": [list(g) for g in self.plan.gaps],
            "partitions": [p.output_json() for p in self.plan.partitions],
            "quarantine": self.quarantine,
            "left": self.plan.left,
            "notes": self.plan.notes,
            "finished_interrupted": self.finished,
            "interrupted_runs": [s.to_json() for s in self.settled],
            "warnings": self.warnings,
            "links": [link.to_json() for link in self.plan.links],
        }


def repair(
    disk: Disk,
    path: str,
    mode: str,
    settings: Settings,
    *,
    dry_run: bool = False,
    quarantine_root: str | None = None,
    progress: Progress | None = None,
    interrupted: str = FINISH,
    partitions: PartitionMapper | None = None,
    render_json: bool = False,
) -> RepairResult:
    """Scan, plan in `mode`, quarantine and apply (after finishing interrupted runs).
    `render_json`: each partition's actions rendered as JSON beside its scan (`--json`)."""
    return _run(
        disk,
        path,
        settings,
        mode,
        lambda scan: make_plan(scan, mode),
        partial(plan_partition_alone, mode, render=render_json),
        validated=True,
        dry_run=dry_run,
        quarantine_root=quarantine_root,
        progress=progress,
        interrupted=interrupted,
        partitions=partitions,
    )


def rebuild_indexes(
    disk: Disk,
    path: str,
    settings: Settings,
    *,
    dry_run: bool = False,
    quarantine_root: str | None = None,
    progress: Progress | None = None,
    interrupted: str = FINISH,
    partitions: PartitionMapper | None = None,
    render_json: bool = False,
) -> RepairResult:
    """`rebuild-index`: every index that disagrees with its log rewritten, as a journaled run.

    The plan is not a repair's (nothing in a `.log` was validated), so the rebuild checks CRCs."""
    return _run(
        disk,
        path,
        settings,
        "rebuild-index",
        lambda scan: plan_rebuild(disk, scan),
        partial(rebuild_partition, render=render_json),
        validated=False,
        dry_run=dry_run,
        quarantine_root=quarantine_root,
        progress=progress,
        interrupted=interrupted,
        partitions=partitions,
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
    then: PartitionStep | None,
    *,
    validated: bool,
    dry_run: bool,
    quarantine_root: str | None,
    progress: Progress | None,
    interrupted: str,
    partitions: PartitionMapper | None = None,
) -> RepairResult:
    """The run every plan goes through: lock, settle interrupted runs, scan, plan, quarantine,
    apply. `name` labels the run's quarantine directory. The scan is spread over `partitions`
    (worker processes), each partition planned there by `then` beside its scan; `make` puts the
    plan together in partition order, and the journal and the apply are this process's alone,
    as in a serial run."""
    path = disk.real_path(path)
    is_log_dir = classify(disk, path)
    settings = _link_roots(disk, path, is_log_dir, settings)
    roots = quarantine_roots(disk, path, is_log_dir, quarantine_root)
    root = roots[-1]
    for protected in (path, log_dir_of(disk, path, is_log_dir)):
        if protected is not None and inside(root, protected):
            raise RepairRefused(
                f"quarantine {root} is inside {protected}; Kafka would take it for a partition"
            )
    with io_errors("taking the lock", "nothing was changed"):
        lock = lock_run(disk, path, is_log_dir)
    try:
        marker = pending_marker(disk, path, is_log_dir)
        with io_errors("reading the journals of earlier runs", "nothing was changed"):
            unfinished = pending(disk, roots, path, marker)
        settled, notes = _settle(disk, roots, marker, unfinished, interrupted, lock, dry_run)
        with io_errors(
            "scanning",
            "nothing was changed" if not settled else "nothing but the interrupted runs settled",
        ):
            scan = scan_path(disk, path, settings, progress, partitions, then)
        plan = make(scan)
        plan.notes += notes
        plan.links = scan.followed_links
        result = RepairResult(plan, scan, settled=settled)
        if dry_run or not plan.actions:
            return result
        journal = _start(disk, plan, scan, root, name, validated, lock.created, marker)
        result.warnings = list(journal.data["warnings"])
        with io_errors(
            "applying",
            lambda: (
                f"the run is journaled in {journal.qdir} with "
                f"{journal.data['applied']} of {len(plan.actions)} actions applied: re-run the "
                f"same command to finish it, or `logrepair undo {journal.qdir}` to roll it back"
            ),
            on_full=lambda: space_needed(plan, root),
        ):
            apply.run(journal, indexes.rebuild)
        result.applied = True
        result.quarantine = journal.qdir
        return result
    finally:
        lock.release()


def _link_roots(disk: Disk, path: str, is_log_dir: bool, settings: Settings) -> Settings:
    """With `--follow-symlinks`, where a followed link's target may lie: the log dir holding PATH
    (first: a link may not stand for one of its Kafka files), then each `--follow-symlinks-into`
    DIR."""
    if not settings.follow_symlinks:
        return settings
    owner = log_dir_of(disk, path, is_log_dir) or path
    into = tuple(disk.real_path(d) for d in settings.symlink_roots or ())
    return replace(settings, symlink_roots=(owner, *into))


def _settle(
    disk: Disk,
    roots: list[str],
    marker: str,
    unfinished: list[Journal],
    how: str,
    lock: DirLock,
    dry_run: bool,
) -> tuple[list[Settled], list[str]]:
    """The interrupted runs on the log dir, settled `how` (interrupted.py) before this run scans,
    with notes for those no run can settle any more (their run dir removed by hand); a dry run
    only says what would happen (or why it cannot), as notes."""
    if dry_run:
        try:
            check_interrupted(unfinished, how)
        except RepairRefused as e:
            return [], [str(e)]
        return [], [_dry_run_note(journal, how) for journal in unfinished]
    check_interrupted(unfinished, how)
    with io_errors(
        "settling the interrupted runs",
        "they stay journaled: re-run the same command once the error is fixed",
    ):
        for r in roots:
            remove_discarded(disk, r)
        settled = settle(unfinished, how, indexes.rebuild)
        gone = clean_marker(disk, marker)
    # a run that died holding a `.lock` it had created left it there: this run removes it
    lock.created = lock.created or any(j.data.get("lock_created") for j in unfinished)
    return settled, gone


def _dry_run_note(journal: Journal, how: str) -> str:
    if journal.state == SAVING:
        what = "rolled back (it had changed nothing)"
    else:
        what = {FINISH: "completed", ABANDON: "rolled back", REPLAN: "abandoned"}[how]
    return (
        f"an interrupted repair in {journal.qdir} ({journal.state}) will be {what} first; this "
        "plan is what remains after that as the log dir looks now"
    )


def _start(
    disk: Disk,
    plan: Plan,
    scan: LogDirScan,
    root: str,
    name: str,
    validated: bool,
    lock_created: bool,
    marker: str,
) -> Journal:
    """The run's quarantine, with everything the plan removes or replaces saved in it; on an
    I/O error the partial quarantine is discarded (by the next run, if this one cannot)."""
    summary = {
        "removed_bytes": plan.removed_bytes,
        "removed_offsets": [list(r) for r in plan.removed_offsets],
        "gaps": [list(g) for g in plan.gaps],
        "partitions": [p.to_json() for p in plan.partitions],
        "notes": plan.notes,
    }
    apply.refuse_unwritable(disk, plan)
    untouched = "the log dir is untouched (nothing was applied)"
    with io_errors("creating the quarantine", untouched, on_full=lambda: space_needed(plan, root)):
        qdir = _new_run_dir(disk, root, name)
    with io_errors(
        "saving what the plan removes", untouched, on_full=lambda: space_needed(plan, root)
    ):
        try:
            return apply.start(
                disk,
                plan,
                qdir,
                summary,
                max_batch_sizes=batch_caps(scan),
                validated=validated,
                lock_created=lock_created,
                marker=marker,
            )
        except OSError:
            _drop_partial(disk, qdir, root, marker)
            raise


def _drop_partial(disk: Disk, qdir: str, root: str, marker: str) -> None:
    """Removes what a failed start left of a run's quarantine (and its name in the pending-runs
    marker), as far as the disk lets it; what remains (`saving`, or `.discarded`) the next run
    removes."""
    try:
        unmark_pending(disk, marker, qdir, tmp=Journal(disk, qdir, {}).temp_name(marker))
        if disk.exists(qdir):
            disk.rename(qdir, qdir + DISCARDED)
        remove_discarded(disk, root)
    except OSError:
        pass


def space_needed(plan: Plan, quarantine: str) -> str:
    """What the run needs free: the quarantine holds every removed tail and replaced file (zero
    runs excepted), the log dir the segments split out and the files written anew."""
    removed = sum(a.removed_bytes for a in plan.actions)
    written = sum((a.length or 0) for a in plan.actions if a.action == "split") + sum(
        len(a.content or b"") for a in plan.actions if a.action == "write_file"
    )
    return (
        f"the quarantine under {quarantine} needs up to {removed:,} bytes for what the plan "
        f"removes plus the files it replaces, and the log dir about {written:,} bytes for new "
        "segments and files (more for rebuilt indexes); free space or pass --quarantine DIR on "
        "another filesystem"
    )


def _new_run_dir(disk: Disk, root: str, mode: str) -> str:
    make_dirs_durable(disk, root)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    base = f"{root.rstrip('/')}/{stamp}-{mode}"
    candidate, n = base, 1
    while disk.exists(candidate):
        n += 1
        candidate = f"{base}-{n}"
    return candidate
