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
