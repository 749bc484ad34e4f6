"""Heal under crashes of three simulated brokers: no invariant violated, and heal never loses more
acknowledged offsets than kafka mode or salvage."""

from __future__ import annotations

from simulator.heal_explore import HealOptions, explore_heal
from simulator.replicas import ReplicaSpec


def test_heal_explored_over_crash_states_of_three_brokers():
    report = explore_heal(
        ReplicaSpec(appends=25, seed=21),
        HealOptions(samples=3, seed=21, faults=("lose_unsynced", "torn_write", "bit_rot")),
    )
    assert report.states >= 20
    assert not report.violations, [str(v) for v in report.violations[:3]]
    assert report.cases > 0
    assert not report.worse_than_local()
    assert report.lossless["heal"] == report.cases


def test_logsim_replicas_prints_the_figures_as_json():
    import json
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "simulator.cli", "replicas", "--samples", "2", "--appends", "20"]
        + ["--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert set(data["lossless"]) == {"heal", "kafka", "salvage"}
    assert data["crash_states"] > 0 and data["violations"] == []
