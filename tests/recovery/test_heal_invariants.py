"""The heal invariant checks catch what they are for (a check that cannot fail proves nothing)."""

from __future__ import annotations

from logrepair.recovery.heal_invariants import committed_equal, from_replicas, nothing_diverged
from logrepair.recovery.invariants import BatchId


def b(base: int, last: int, digest: str = "x") -> BatchId:
    return BatchId(base, last, f"{digest}{base}")


def test_from_replicas_flags_an_invented_batch_only():
    before = {"t-0": [b(0, 1)]}
    replica = {"t-0": [b(0, 1), b(2, 3)]}
    assert not from_replicas(before, {"t-0": [b(0, 1), b(2, 3)]}, [replica])
    (problem,) = from_replicas(before, {"t-0": [b(0, 1), b(2, 3, "other")]}, [replica])
    assert "2..3" in problem


def test_nothing_diverged_flags_a_batch_only_the_diverged_copy_has():
    shared = {"t-0": [b(0, 1)]}
    diverged = {"t-0": [b(0, 1), b(2, 2, "zombie")]}
    assert not nothing_diverged(shared, {"t-0": [b(0, 1)]}, diverged, [shared])
    (problem,) = nothing_diverged(shared, {"t-0": [b(0, 1), b(2, 2, "zombie")]}, diverged, [shared])
    assert "diverged" in problem


def test_committed_equal_flags_a_missing_committed_batch():
    healthy = {"t-0": [b(0, 1), b(2, 3), b(4, 4)]}
    assert not committed_equal({"t-0": [b(0, 1), b(2, 3)]}, healthy, 4)
    (problem,) = committed_equal({"t-0": [b(0, 1)]}, healthy, 4)
    assert "first missing at offset 2" in problem
