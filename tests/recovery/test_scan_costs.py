"""What a scan of many partitions pays per partition, counted on a real log dir (not timed): one
listing per partition dir, each small file read once in one call, no stat the listing answers; and
rebuild-index planned from the scan without reading a `.log` again, to the same plan."""

from __future__ import annotations

import os
from collections import Counter
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from logrepair.recovery import rebuild
from logrepair.recovery.rebuild import plan_rebuild
from logrepair.recovery.repair import repair
from logrepair.recovery.scan import scan_path
from logrepair.recovery.settings import Settings
from logrepair.storage import layout
from logrepair.storage.osdisk import OsDisk
from simulator.disk import SimDisk
from simulator.faults import crash_states
from simulator.testing import workload_specs
from simulator.workload import WorkloadSpec, run_workload

from .builders import batches, write_segment


class CountingDisk(OsDisk):
    """OsDisk counting each call by (method, path)."""

    def __init__(self) -> None:
        self.calls: Counter[tuple[str, str]] = Counter()

    def _count(self, method: str, path: str) -> None:
        self.calls[(method, path)] += 1

    def open(self, path, **kw):
        self._count("open", path)
        return super().open(path, **kw)

    def read_small(self, path, limit):
        self._count("read_small", path)
        return super().read_small(path, limit)

    def list_dir_types(self, path):
        self._count("list_dir_types", path)
        return super().list_dir_types(path)


for _method in (
    "exists",
    "is_dir",
    "is_symlink",
    "list_dir",
    "size",
    "mtime",
    "file_type",
    "links",
):

    def _counted(self, path, *a, _name=_method, **kw):
        self._count(_name, path)
        return getattr(OsDisk, _name)(self, path, *a, **kw)

    setattr(CountingDisk, _method, _counted)


def broker_log_dir(root: str, transactions: float = 0.3) -> WorkloadSpec:
    """Three partitions of several segments each, with snapshots, epochs and (some of them)
    transactions, closed cleanly by the storage `Log`."""
    spec = WorkloadSpec(
        log_dir=root,
        appends=60,
        partitions=3,
        segment_bytes=1500,
        index_interval_bytes=256,
        transactions=transactions,
        leader_epoch_every=20,
        clean_shutdown=True,
    )
    assert run_workload(spec, OsDisk()).error is None
    return spec


def test_each_partition_dir_is_listed_once_and_each_small_file_read_once(tmp_path) -> None:
    spec = broker_log_dir(str(tmp_path / "kafka-logs"))
    disk = CountingDisk()
    result = scan_path(disk, spec.log_dir, Settings(index_interval_bytes=256))
    assert result.clean and len(result.partitions) == 3
    listed = [n.rpartition("/")[2] for (m, n), _ in disk.calls.items() if m == "list_dir_types"]
    assert sorted(listed) == ["kafka-logs", "sim-0", "sim-1", "sim-2"]
    assert all(count == 1 for (m, _), count in disk.calls.items() if m == "list_dir_types")
    small = ("index", "timeindex", "txnindex", "snapshot", "checkpoint")
    reads = {(m, n): c for (m, n), c in disk.calls.items() if n.endswith(small)}
    assert reads and all(m == "read_small" and c == 1 for (m, _), c in reads.items()), reads
    # what the listing already said is never asked again: no type or existence check of a file
    # in a partition dir, and a `.log` is opened once for its one pass
    asked = {m for (m, n), _ in disk.calls.items() if n.endswith((".log", *small))}
    assert asked <= {"open", "read_small", "size"}, asked
    assert all(c == 1 for (m, n), c in disk.calls.items() if n.endswith(".log"))


def test_rebuild_index_plans_a_clean_log_dir_without_reading_a_log_again(tmp_path) -> None:
    """(A partition with transactions is replayed from its first segment: the producer state
    that decides each aborted transaction's entry is not kept by the scan.)"""
    spec = broker_log_dir(str(tmp_path / "kafka-logs"), transactions=0.0)
    disk = CountingDisk()
    result = scan_path(disk, spec.log_dir, Settings(index_interval_bytes=256))
    disk.calls.clear()
    plan = plan_rebuild(disk, result)
    assert not [n for (_, n) in disk.calls if n.endswith(".log")], disk.calls
    assert plan.notes == [] and plan.actions == []  # the Log wrote the indexes Kafka rebuilds


@settings(
    max_examples=500 if os.environ.get("HYPOTHESIS_PROFILE") == "thorough" else 40, deadline=None
)
@given(
    spec=workload_specs(max_appends=25, index_intervals=True, compaction=True),
    fault=st.sampled_from(["torn_write", "bit_rot", "lose_unsynced", "garbage_block"]),
    seed=st.integers(0, 2**16),
)
def test_rebuild_plan_from_the_scan_is_the_plan_from_rereading(
    spec: WorkloadSpec, fault: str, seed: int
) -> None:
    """Crashed and damaged log dirs with transactions: planning from the scan's comparison and
    from re-reading every log give the same actions and notes."""
    disk = SimDisk()
    run_workload(spec, disk)
    state = next(iter(crash_states(disk, 0, [fault], seed, max_variants=1)), None)
    crashed = SimDisk.from_image(state.image if state else disk.volatile_image())
    options = Settings(index_interval_bytes=spec.index_interval_bytes)
    result = scan_path(crashed, spec.log_dir, options)
    fast = plan_rebuild(crashed, result)
    with mock.patch.object(rebuild, "_read_whole", lambda seg: False):
        slow = plan_rebuild(crashed, result)
    assert [a.to_json() for a in fast.actions] == [a.to_json() for a in slow.actions]
    assert fast.notes == slow.notes


def test_kafka_mode_plans_from_the_snapshots_the_scan_read(tmp_path) -> None:
    """An unclean shutdown (no marker: Kafka recovers past the recovery point and replays
    producer state from the latest snapshot): each snapshot file is still read once."""
    spec = broker_log_dir(str(tmp_path / "kafka-logs"))
    (tmp_path / "kafka-logs" / ".kafka_cleanshutdown").unlink(missing_ok=True)
    disk = CountingDisk()
    result = repair(disk, spec.log_dir, "kafka", Settings(index_interval_bytes=256), dry_run=True)
    assert result.scan.partitions and any(p.snapshots for p in result.scan.partitions)
    snapshots = {(m, n): c for (m, n), c in disk.calls.items() if n.endswith(".snapshot")}
    assert snapshots and all(m == "read_small" and c == 1 for (m, _), c in snapshots.items())


def test_an_index_swap_leaves_the_rebuild_to_compare_the_files_themselves(log_dir) -> None:
    """The scan reads an index's `.swap` in its place (Kafka's loader renames it in): the
    rebuild-index plan still compares the file under its own name, as a reread would."""
    pdir = log_dir / "t-0"
    write_segment(pdir, 0, batches(0, 8, value_size=2000))  # indexes as Kafka's recovery writes
    index = pdir / layout.index_file_name(0)
    (pdir / (index.name + layout.SWAP_SUFFIX)).write_bytes(b"")
    disk = OsDisk()
    result = scan_path(disk, str(log_dir), Settings())
    fast = plan_rebuild(disk, result)
    with mock.patch.object(rebuild, "_read_whole", lambda seg: False):
        slow = plan_rebuild(disk, result)
    assert [a.to_json() for a in fast.actions] == [a.to_json() for a in slow.actions]
