"""What `simulator.testing` gives users' suites: fixtures, strategies, one assertion."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from simulator.disk import PersistenceModel, SimDisk
from simulator.testing import assert_recovers, persistence_models, workload_specs
from simulator.workload import WorkloadSpec, run_workload


def test_fixtures(sim_disk: SimDisk, sim_disk_models: SimDisk) -> None:
    assert sim_disk.trace == [] and isinstance(sim_disk_models.model, PersistenceModel)


@settings(max_examples=15, deadline=None)
@given(workload_specs(max_appends=12, truncations=False), persistence_models())
def test_generated_workloads_run_and_recover(spec: WorkloadSpec, model: PersistenceModel) -> None:
    history = run_workload(spec, SimDisk(model))
    assert history.error is None
    assert_recovers(spec, faults=["torn_write", "lose_unsynced"], samples=8, model=model)


def test_assert_recovers_reports_violations() -> None:
    # A scenario Kafka itself loses data in (see scenarios/preallocated-trim-lost.toml).
    spec = WorkloadSpec(appends=20, segment_bytes=1200, preallocate=True, flush_every=5)
    with pytest.raises(AssertionError, match="invariant violations"):
        assert_recovers(spec, faults=["lose_unsynced"], samples=None)
