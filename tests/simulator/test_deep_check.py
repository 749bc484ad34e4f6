"""The deep check (idempotence, undo, crashes during the repair) holds each mode to what it
documents: kafka mode may leave the defects it reports as left, and a crash state without a log
dir is not a repair failure."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from simulator.disk import DiskImage, PersistenceModel
from simulator.explore import ExploreOptions, explore
from simulator.invariants import IDEMPOTENT
from simulator.repair import Repairer, RepairRun, repairer_for
from simulator.workload import WorkloadSpec

ROOT = Path(__file__).resolve().parents[2]
MODEL = PersistenceModel(sector_size=4096)
# A workload whose power losses leave zero-filled index tails below the recovery point (an index
# trim that was never fsynced), which kafka mode leaves in place and reports as left.
LEAVES_INDEX_TAILS = WorkloadSpec(
    seed=2,
    appends=20,
    segment_bytes=700,
    transactions=0.4,
    leader_epoch_every=5,
    truncate_every=9,
)
DEEP = ExploreOptions(
    faults=("lose_unsynced",),
    modes=("kafka",),
    seed=2,
    model=MODEL,
    deep_every=1,
    repair_crash_points=2,
)


class RecordsLeft(Repairer):
    """The real repair, noting what each run reports as left."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.left: list[str] = []

    def __call__(self, image: DiskImage, log_dir: str, mode: str) -> RepairRun:
        run = super().__call__(image, log_dir, mode)
        self.left += [f["kind"] for f in run.left]
        return run


class HidesLeft(Repairer):
    """A repair with a bug: it leaves defects without saying so."""

    def __call__(self, image: DiskImage, log_dir: str, mode: str) -> RepairRun:
        return replace(super().__call__(image, log_dir, mode), left=[])


def test_kafka_mode_may_leave_what_it_reports_as_left() -> None:
    repairer = RecordsLeft(repairer_for(LEAVES_INDEX_TAILS).settings, MODEL)
    report = explore(LEAVES_INDEX_TAILS, DEEP, repairer=repairer)
    assert "offset_index_corrupt" in repairer.left  # the case under test did come up
    assert report.violations == []


def test_a_defect_left_without_being_reported_is_still_a_violation() -> None:
    repairer = HidesLeft(repairer_for(LEAVES_INDEX_TAILS).settings, MODEL)
    report = explore(LEAVES_INDEX_TAILS, DEEP, repairer=repairer)
    assert report.violations
    assert {v.invariant for v in report.violations} == {IDEMPOTENT}
    assert all("offset_index_corrupt" in v.detail for v in report.violations)


def test_a_crash_state_without_a_log_dir_has_no_repair_to_crash() -> None:
    empty = DiskImage({}, {"/"}, {})
    assert list(Repairer().crash_during_repair(empty, "/kafka-logs", "kafka")) == []
    # The first operation of every workload creates the log dir: deep-check every state.
    spec = WorkloadSpec(appends=3, segment_bytes=600, flush_every=1)
    opts = ExploreOptions(
        faults=("process_crash", "lose_unsynced"),
        modes=("kafka", "salvage"),
        deep_every=1,
        repair_crash_points=2,
    )
    report = explore(spec, opts)
    assert report.distinct > 5 and report.violations == []


def logsim(*args: str, code: str | None = None) -> subprocess.CompletedProcess:
    argv = ["-c", code, *args] if code else ["-m", "simulator.cli", *args]
    env = {k: v for k, v in os.environ.items() if k != "LOGREPAIR_DEBUG"}
    return subprocess.run(
        [sys.executable, *argv], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120
    )


def test_explore_deep_checks_the_crash_before_the_log_dir_exists() -> None:
    p = logsim(
        "explore",
        "--appends",
        "3",
        "--faults",
        "process_crash",
        "--deep-every",
        "1",
        "--repair-crash-points",
        "2",
    )
    assert p.returncode == 0, p.stderr
    assert p.stderr == "" and "0 violations" in p.stdout


def test_an_internal_error_is_one_line_and_exit_2() -> None:
    boom = (
        "import sys, simulator.cli as cli\n"
        "def explode(*a, **k): raise RuntimeError('simulated bug')\n"
        "cli.explore = explode\n"
        "sys.exit(cli.main(sys.argv[1:]))\n"
    )
    p = logsim("explore", "--appends", "2", code=boom)
    assert p.returncode == 2
    assert p.stdout == ""
    assert p.stderr.splitlines() == [
        "logsim: internal error: RuntimeError: simulated bug (LOGREPAIR_DEBUG=1 shows where)"
    ]
