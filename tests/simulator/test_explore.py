"""Exploration: every crash point x every fault, checked after the real repair; a broken repair
is caught, named, and shrunk to a small reproducer."""

from __future__ import annotations

import pytest

from simulator.disk import DiskImage
from simulator.explore import ExploreError, ExploreOptions, explore, shrink
from simulator.invariants import MINIMAL_LOSS, segments, walk
from simulator.repair import Repairer, RepairRun, repairer_for
from simulator.workload import WorkloadSpec

SMALL = WorkloadSpec(appends=8, segment_bytes=600, flush_every=3, checkpoint_every=3)


def test_every_crash_point_of_a_small_workload_recovers_cleanly() -> None:
    report = explore(SMALL, ExploreOptions(faults=("torn_write", "lose_unsynced", "lost_dir_op")))
    assert report.points == report.ops > 30
    assert report.states >= report.points
    assert set(report.by_fault) == {"torn_write", "lose_unsynced", "lost_dir_op"}
    assert report.violations == []
    out = report.to_json()
    assert out["crash_states"] == report.states and out["violations"] == []


def test_sampling_visits_the_asked_number_of_points() -> None:
    report = explore(SMALL, ExploreOptions(faults=("process_crash",), samples=10, seed=3))
    assert report.points == 10 and report.states == 10


def test_io_faults_run_the_workload_to_the_error_then_crash() -> None:
    report = explore(SMALL, ExploreOptions(faults=("eio_fsync",), io_samples=4))
    assert report.states == 8  # 4 armed fsyncs x (process crash, power loss)
    assert all(f.startswith("eio_fsync@") for f in report.by_fault)
    assert report.violations == []


class DropsLastBatch(Repairer):
    """A repair with a bug: after the real repair it also cuts the last batch of every partition."""

    def __call__(self, image: DiskImage, log_dir: str, mode: str) -> RepairRun:
        run = super().__call__(image, log_dir, mode)
        files = dict(run.image.files)
        for part in {p.rpartition("/")[0] for p in files if p.endswith(".log")}:
            segs = [s for s in segments(run.image, part) if s.batches]
            if segs:
                last = segs[-1]
                batches = walk(files[last.path], last.path)[0]
                files[last.path] = files[last.path][: batches[-1].position]
        return RepairRun(
            DiskImage(files, run.image.dirs, run.image.nodes), run.disk, run.actions, None
        )


def test_a_lossy_repair_is_caught_with_its_crash_state() -> None:
    spec = WorkloadSpec(appends=6, flush_every=2)
    broken = DropsLastBatch(repairer_for(spec).settings)
    report = explore(spec, ExploreOptions(faults=("process_crash",)), repairer=broken)
    assert report.violations
    v = report.violations[0]
    assert v.invariant in ("durable", MINIMAL_LOSS)
    assert v.state.startswith("op ") and "process_crash#0" in v.state and v.offset is not None


def test_shrink_finds_a_smaller_reproducer() -> None:
    spec = WorkloadSpec(appends=12, partitions=2, codecs=("none", "lz4"), flush_every=2)
    broken = DropsLastBatch(repairer_for(spec).settings)
    opts = ExploreOptions(faults=("process_crash",), samples=15)
    small, violation = shrink(spec, opts, MINIMAL_LOSS, repairer=broken, budget=10)
    assert small.appends < spec.appends
    assert small.partitions == 1 and small.codecs == ("none",)
    assert violation.invariant == MINIMAL_LOSS


def test_deep_checks_run_undo_idempotence_and_crashes_during_repair() -> None:
    opts = ExploreOptions(faults=("garbage_block",), modes=("salvage",), samples=4, deep_every=1)
    report = explore(WorkloadSpec(appends=6, segment_bytes=700, flush_every=0), opts)
    assert report.states >= 4
    assert report.violations == []


@pytest.mark.parametrize(
    "kw, message",
    [({"faults": ("meteor",)}, "unknown fault"), ({"modes": ("yolo",)}, "unknown mode")],
)
def test_bad_options(kw, message) -> None:
    with pytest.raises(ExploreError, match=message):
        ExploreOptions(**kw)


def test_storage_code_raising_under_an_io_error_is_a_finding(monkeypatch) -> None:
    import simulator.explore as mod

    real = mod.run_workload

    def fragile(spec, disk, **kw):
        history = real(spec, disk, **kw)
        if history.error:
            raise ValueError("the log did not go offline")
        return history

    monkeypatch.setattr(mod, "run_workload", fragile)
    report = explore(SMALL, ExploreOptions(faults=("eio_write",), io_samples=2))
    assert [v.invariant for v in report.violations] == ["workload_failed"] * 2
    assert "the log did not go offline" in report.violations[0].detail
    assert report.violations[0].state.startswith("eio_write@")
