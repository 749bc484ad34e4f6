"""Crash testing for your own suite: a pytest fixture, hypothesis strategies, and one assertion.

In a conftest.py: `pytest_plugins = ["simulator.testing"]` (or import the fixtures you want).

    from hypothesis import given
    from simulator.testing import assert_recovers, workload_specs

    @given(workload_specs(max_appends=20))
    def test_my_settings_survive_power_loss(spec):
        assert_recovers(spec, faults=["torn_write", "lose_unsynced"], modes=["kafka"], samples=30)
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from hypothesis import strategies as st

from simulator.disk import SECTOR_SIZES, PersistenceModel, SimDisk
from simulator.explore import ExploreOptions, ExploreReport, explore
from simulator.faults import CRASH_FAULTS
from simulator.repair import MODES
from simulator.workload import CODECS, WorkloadSpec


@pytest.fixture
def sim_disk() -> SimDisk:
    """A fresh SimDisk with the default persistence model (512-byte sectors, everything allowed)."""
    return SimDisk()


@pytest.fixture(
    params=[PersistenceModel(), PersistenceModel(4096, False, False, False)], ids=["lax", "strict"]
)
def sim_disk_models(request) -> SimDisk:
    """A SimDisk per persistence model: the laxest disk and the most orderly one."""
    return SimDisk(request.param)


def persistence_models() -> st.SearchStrategy[PersistenceModel]:
    return st.builds(
        PersistenceModel,
        sector_size=st.sampled_from(SECTOR_SIZES),
        size_before_data=st.booleans(),
        reorder=st.booleans(),
        atomic_rename=st.booleans(),
    )


def crash_faults() -> st.SearchStrategy[str]:
    return st.sampled_from(list(CRASH_FAULTS))


def repair_modes() -> st.SearchStrategy[str]:
    return st.sampled_from(MODES)


@st.composite
def workload_specs(
    draw,
    max_appends: int = 30,
    max_partitions: int = 2,
    truncations: bool = True,
    index_intervals: bool = False,
    compaction: bool = False,
) -> WorkloadSpec:
    """Small workloads over the whole parameter space (codecs, transactions, retention, ...).

    `truncations=False` leaves out follower truncations: a lost fsync of a truncation can make a
    stale segment overlap a newer one, which `kafka` mode leaves as Kafka does
    (scenarios/truncation-fsync-lost.toml). `index_intervals` also varies the index interval and
    `compaction` compacts the log at the end."""
    extra = {}
    lo = draw(st.integers(8, 120))
    segment_bytes = draw(st.sampled_from([600, 1200, 4096]))
    records = draw(st.integers(1, 4))
    # Keep every batch within a segment: Kafka refuses a batch larger than segment.bytes.
    hi = min(lo + draw(st.integers(0, 200)), (segment_bytes - 200) // records - 20)
    if index_intervals:
        extra["index_interval_bytes"] = draw(st.sampled_from([0, 64, 256, 4096]))
    return WorkloadSpec(
        seed=draw(st.integers(0, 2**16)),
        partitions=draw(st.integers(1, max_partitions)),
        appends=draw(st.integers(1, max_appends)),
        records=(1, records),
        record_bytes=(min(lo, hi), hi),
        keys=draw(st.integers(0, 8)),
        codecs=tuple(
            draw(st.lists(st.sampled_from(list(CODECS)), min_size=1, max_size=3, unique=True))
        ),
        transactions=draw(st.sampled_from([0.0, 0.3, 1.0])),
        segment_bytes=segment_bytes,
        **extra,
        flush_every=draw(st.integers(0, 6)),
        checkpoint_every=draw(st.integers(0, 6)),
        retention_bytes=draw(st.sampled_from([-1, 2500])),
        retention_every=draw(st.integers(0, 5)),
        truncate_every=draw(st.sampled_from([0, 7])) if truncations else 0,
        leader_epoch_every=draw(st.sampled_from([0, 5])),
        compact_at_end=compaction and draw(st.booleans()),
    )


def assert_recovers(
    spec: WorkloadSpec,
    *,
    faults: Iterable[str] = ("torn_write", "lose_unsynced"),
    modes: Iterable[str] = ("kafka",),
    samples: int | None = 30,
    model: PersistenceModel | None = None,
    seed: int = 0,
) -> ExploreReport:
    """Explores `spec` and fails the test with the first violations if any invariant breaks."""
    opts = ExploreOptions(
        faults=tuple(faults),
        modes=tuple(modes),
        samples=samples,
        seed=seed,
        model=model or PersistenceModel(),
    )
    report = explore(spec, opts)
    if report.violations:
        shown = "\n".join(f"  {v}" for v in report.violations[:5])
        raise AssertionError(f"{len(report.violations)} invariant violations for {spec}:\n{shown}")
    return report
