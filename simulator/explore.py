"""Exploration: crash a workload at every operation (or at seeded random ones), under every fault,
repair each crash state, and check the invariants.

Like ALICE, the workload runs once to learn its trace, then again with a listener on the SimDisk
that, just after each chosen operation, builds that moment's crash states and checks them; the
workload's determinism makes the second run's trace the first one's. I/O errors are explored by
re-running the workload with one armed at each matching call. A violation is shrunk to the
smallest workload spec that still shows it.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from simulator.disk import IoFault, PersistenceModel, SimDisk
from simulator.faults import CRASH_FAULTS, IO_FAULTS, CrashState, crash_states
from simulator.invariants import (
    ACCOUNTED,
    CRASH_SAFE,
    IDEMPOTENT,
    Expectation,
    Violation,
    check_result,
    durable_live_batches,
    image_digest,
    walk,
)
from simulator.repair import MODES, Repairer, RepairError, RepairRun, repairer_for
from simulator.workload import WorkloadSpec, run_workload

# Modes a fault is checked under: Kafka trusts data below the recovery point, so bit rot there
# is left in place by design in `kafka` mode (a scenario can still ask for it and expect that).
FAULT_MODES = {"bit_rot": ("point-in-time", "salvage")}
ALL_FAULTS = (*CRASH_FAULTS, *IO_FAULTS)
WORKLOAD_FAILED = "workload_failed"


class ExploreError(ValueError):
    """Bad exploration options, or a workload that did not replay the same way."""


@dataclass
class ExploreOptions:
    faults: tuple[str, ...] = tuple(CRASH_FAULTS)
    modes: tuple[str, ...] = ("kafka",)
    seed: int = 0
    samples: int | None = None
    """Crash points to sample at random; None visits every operation."""
    io_samples: int = 20
    """Armed calls per I/O fault kind, at most."""
    io_path: str = ""
    """Arm I/O faults only on paths containing this (e.g. "checkpoint")."""
    max_variants: int | None = None
    deep_every: int = 0
    """Every n-th checked state also gets the idempotence, undo and crash-during-repair checks."""
    repair_crash_points: int | None = None
    """Repair operations to crash at in those checks, spread evenly; None crashes at every one."""
    model: PersistenceModel = field(default_factory=PersistenceModel)
    enforce_modes: bool = True
    """Skip fault/mode pairs that FAULT_MODES rules out (scenarios may turn this off)."""

    def __post_init__(self) -> None:
        for f in self.faults:
            if f not in ALL_FAULTS:
                raise ExploreError(f"unknown fault {f!r}; one of {', '.join(ALL_FAULTS)}")
        for m in self.modes:
            if m not in MODES:
                raise ExploreError(f"unknown mode {m!r}; one of {', '.join(MODES)}")


@dataclass
class ExploreReport:
    ops: int = 0
    points: int = 0
    states: int = 0
    distinct: int = 0
    """States whose image (and expectation) no earlier state had: the ones actually repaired."""
    checks: int = 0
    elapsed: float = 0.0
    by_fault: Counter = field(default_factory=Counter)
    violations: list[Violation] = field(default_factory=list)

    @property
    def states_per_second(self) -> float:
        return self.states / self.elapsed if self.elapsed else 0.0

    def to_json(self) -> dict:
        return {
            "ops": self.ops,
            "crash_points": self.points,
            "crash_states": self.states,
            "distinct_states": self.distinct,
            "checks": self.checks,
            "seconds": round(self.elapsed, 3),
            "states_per_second": round(self.states_per_second, 1),
            "states_by_fault": dict(sorted(self.by_fault.items())),
            "violations": [v.to_json() for v in self.violations],
        }


Progress = Callable[[int, int], None]


class _Checker:
    def __init__(
        self, spec: WorkloadSpec, opts: ExploreOptions, repairer: Repairer, report: ExploreReport
    ) -> None:
        self.spec = spec
        self.opts = opts
        self.repairer = repairer
        self.report = report
        self.seen: set[tuple] = set()

    def modes_for(self, fault: str) -> tuple[str, ...]:
        allowed = FAULT_MODES.get(fault) if self.opts.enforce_modes else None
        return tuple(m for m in self.opts.modes if allowed is None or m in allowed)

    def check(self, state: CrashState, expect: Expectation, written: set[bytes]) -> None:
        """Repairs and checks one crash state in every mode that applies to its fault.

        Many crash points leave the same image (nothing changed on the platter in between): an
        image already checked against the same expectation is counted but not repaired again,
        and its violations (already reported, with the first state that showed them) are not
        repeated."""
        report = self.report
        report.states += 1
        report.by_fault[state.fault] += 1
        expect.state = state.label
        expect.destroyed = _destroyed(state)
        destroyed = tuple(sorted((p, tuple(d)) for p, d in expect.destroyed.items()))
        key = (image_digest(state.image), expect.key(), destroyed)
        if key in self.seen:
            return
        self.seen.add(key)
        report.distinct += 1
        deep = self.opts.deep_every and report.distinct % self.opts.deep_every == 0
        for mode in self.modes_for(state.fault):
            report.checks += 1
            try:
                run = self.repairer(state.image, self.spec.log_dir, mode)
            except RepairError as e:
                report.violations.append(Violation("repair_failed", state.label, f"{mode}: {e}"))
                continue
            found = check_result(run.image, state.image, expect, written, mode)
            if deep and not found:
                found = self.deep(state, mode, run)
            for v in found:
                report.violations.append(replace(v, detail=f"{mode}: {v.detail}"))

    def deep(self, state: CrashState, mode: str, run: RepairRun) -> list[Violation]:
        """Invariants 5-7 on one state: a second repair changes nothing and verify finds nothing
        but what the repair reported as left, undo restores the crash image, and a crash at any
        step of the repair is finished by the next run."""
        label = state.label
        out = []
        try:
            again = self.repairer(run.image, self.spec.log_dir, mode)
            if again.actions or again.image.files != run.image.files:
                did = "; ".join(a.describe() for a in again.actions[:3])
                out.append(Violation(IDEMPOTENT, label, f"a second repair changes more: {did}"))
            problems = self.repairer.not_well_formed(run, self.spec.log_dir, mode)
            if problems:
                out.append(Violation(IDEMPOTENT, label, f"after the repair: {problems[0]}"))
        except RepairError as e:
            out.append(Violation(IDEMPOTENT, label, f"second repair or verify failed: {e}"))
        try:
            restored = self.repairer.undo(run)
            if restored is not None and restored.files != state.image.files:
                path = _first_changed_file(state.image.files, restored.files)
                out.append(
                    Violation(ACCOUNTED, label, "undo did not restore the crash image", file=path)
                )
        except RepairError as e:
            out.append(Violation(ACCOUNTED, label, str(e)))
        out += self._crashes_during_repair(state, mode, run)
        return out

    def _crashes_during_repair(
        self, state: CrashState, mode: str, run: RepairRun
    ) -> list[Violation]:
        crashes = self.repairer.crash_during_repair(
            state.image, self.spec.log_dir, mode, limit=self.opts.repair_crash_points
        )
        try:
            for point, crashed, second in crashes:
                if isinstance(second, RepairError):
                    detail = (
                        f"after a crash at repair op {point} ({crashed}) "
                        f"the next run failed: {second}"
                    )
                    return [Violation(CRASH_SAFE, state.label, detail)]
                if second.files != run.image.files:
                    path = _first_changed_file(run.image.files, second.files)
                    detail = f"crash at repair op {point} ({crashed}) ends differently"
                    return [Violation(CRASH_SAFE, state.label, detail, file=path)]
        except RepairError as e:  # the uncrashed run that learns the repair's operations failed
            return [Violation(CRASH_SAFE, state.label, f"the repair failed: {e}")]
        return []


def _first_changed_file(a: dict[str, bytes], b: dict[str, bytes]) -> str | None:
    for path in sorted(set(a) | set(b)):
        if a.get(path) != b.get(path):
            return path
    return None


def _destroyed(state: CrashState) -> dict[str, list[tuple[str, int]]]:
    if not state.destroyed_durable:
        return {}
    out: dict[str, list[tuple[str, int]]] = {}
    for d in state.damage:
        part = d.file.rpartition("/")[0]
        out.setdefault(part, []).append((d.file, d.position))
    return out


def _crash_faults(opts: ExploreOptions, checker: _Checker) -> list[str]:
    """The crash faults to generate: those with at least one mode to check them in."""
    return [f for f in opts.faults if f in CRASH_FAULTS and checker.modes_for(f)]


def explore(
    spec: WorkloadSpec,
    opts: ExploreOptions | None = None,
    *,
    repairer: Repairer | None = None,
    progress: Progress | None = None,
) -> ExploreReport:
    """Every crash point (or `opts.samples` of them) × every fault variant, checked after repair."""
    opts = opts or ExploreOptions()
    repairer = repairer or repairer_for(spec, opts.model)
    report = ExploreReport()
    start = time.perf_counter()
    checker = _Checker(spec, opts, repairer, report)

    baseline = SimDisk(opts.model)
    failure = _run_guarded(spec, baseline, "baseline run")
    if failure is not None:
        report.violations.append(failure)
        report.elapsed = time.perf_counter() - start
        return report
    n = len(baseline.trace)
    report.ops = n
    rng = random.Random(f"explore:{opts.seed}")
    if opts.samples is None or opts.samples >= n:
        points = set(range(n))
    else:
        points = set(rng.sample(range(n), opts.samples))
    report.points = len(points)
    faults = _crash_faults(opts, checker)
    io = [f for f in opts.faults if f in IO_FAULTS]
    total = (len(points) if faults else 0) + len(io)
    done = 0

    if faults:
        disk = SimDisk(opts.model)
        written: set[bytes] = set()

        def on_op(op) -> None:
            nonlocal done
            if op.kind == "write" and ".log" in op.path:
                written.update(b.data for b in walk(op.data, op.path, resync=True)[0])
            if op.index not in points:
                return
            expect = Expectation(spec.log_dir, "", durable_live_batches(disk, spec.log_dir))
            for state in crash_states(
                disk, op.index, faults, opts.seed, max_variants=opts.max_variants
            ):
                checker.check(state, expect, written)
            done += 1
            if progress:
                progress(done, total)

        disk.listeners.append(on_op)
        run_workload(spec, disk)
        if len(disk.trace) != n:
            raise ExploreError(
                f"the workload is not deterministic ({n} then {len(disk.trace)} operations)"
            )

    for kind in io:
        _explore_io(spec, opts, kind, checker, rng)
        done += 1
        if progress:
            progress(done, total)
    report.elapsed = time.perf_counter() - start
    return report


def _run_guarded(spec: WorkloadSpec, disk: SimDisk, label: str) -> Violation | None:
    """Runs the workload; an exception other than the I/O errors a broker handles (the storage
    code under test raising where it should have gone offline) is a finding, not a crash of logsim."""
    try:
        history = run_workload(spec, disk)
    except Exception as e:
        op = disk.trace[-1].describe() if disk.trace else "before any operation"
        return Violation(WORKLOAD_FAILED, label, f"{type(e).__name__}: {e} (after {op})")
    if history.error and not any(f.fired for f in disk.io_faults):
        return Violation(WORKLOAD_FAILED, label, f"the workload stopped: {history.error}")
    return None


def _explore_io(
    spec: WorkloadSpec, opts: ExploreOptions, kind: str, checker: _Checker, rng: random.Random
) -> None:
    """Arms `kind` at each matching call in turn; the run stops at the error, then power fails."""
    counter = IoFault(kind, 1 << 62, opts.io_path)
    probe = SimDisk(opts.model, io_faults=[counter])
    run_workload(spec, probe)
    calls = list(range(counter.seen))
    if len(calls) > opts.io_samples:
        calls = sorted(rng.sample(calls, opts.io_samples))
    for nth in calls:
        disk = SimDisk(opts.model, io_faults=[IoFault(kind, nth, opts.io_path)])
        written: set[bytes] = set()

        def on_op(op, written=written) -> None:
            if op.kind == "write" and ".log" in op.path:
                written.update(b.data for b in walk(op.data, op.path, resync=True)[0])

        disk.listeners.append(on_op)
        failure = _run_guarded(spec, disk, f"{kind}@{nth}")
        if failure is not None:
            checker.report.violations.append(failure)
            continue
        point = len(disk.trace) - 1
        expect = Expectation(spec.log_dir, "", durable_live_batches(disk, spec.log_dir))
        for state in crash_states(disk, point, ["process_crash", "lose_unsynced"], opts.seed):
            state.fault = f"{kind}@{nth}+{state.fault}"
            checker.check(state, expect, written)


# --- shrinking -----------------------------------------------------------------------------------

SHRINK_EXHAUSTIVE = 30
_SIMPLER = (
    {"partitions": 1},
    {"codecs": ("none",)},
    {"transactions": 0.0},
    {"truncate_every": 0},
    {"retention_every": 0, "retention_bytes": -1},
    {"keys": 0},
    {"records": (1, 1)},
)


def shrink(
    spec: WorkloadSpec,
    opts: ExploreOptions,
    invariant: str,
    *,
    repairer: Repairer | None = None,
    budget: int = 24,
) -> tuple[WorkloadSpec, Violation] | None:
    """The smallest spec (fewest appends, fewest features) whose exploration still violates
    `invariant`, with its first violation; None if `spec` itself does not reproduce it."""
    repairer = repairer or repairer_for(spec, opts.model)
    tries = 0

    def failing(candidate: WorkloadSpec) -> Violation | None:
        nonlocal tries
        tries += 1
        # Sampled points differ from spec to spec: a small candidate is explored at every point.
        every = replace(opts, samples=None) if candidate.appends <= SHRINK_EXHAUSTIVE else opts
        found = explore(candidate, every, repairer=repairer).violations
        return next((v for v in found if v.invariant == invariant), None)

    best = failing(spec)
    if best is None:
        return None
    lo, hi = 0, spec.appends
    while lo < hi and tries < budget:
        mid = (lo + hi) // 2
        v = failing(replace(spec, appends=mid))
        if v is not None:
            spec, best, hi = replace(spec, appends=mid), v, mid
        else:
            lo = mid + 1
    for change in _SIMPLER:
        if tries >= budget:
            break
        if all(getattr(spec, k) == v for k, v in change.items()):
            continue
        candidate = replace(spec, **change)
        v = failing(candidate)
        if v is not None:
            spec, best = candidate, v
    return spec, best
