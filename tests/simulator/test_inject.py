"""`logsim inject`: every fault kind damages a real log dir copy detectably, and `salvage` repair
brings it back to a state verify calls clean."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from logrepair.recovery.repair import repair
from logrepair.recovery.scan import scan_path
from logrepair.recovery.settings import Settings
from logrepair.storage.osdisk import OsDisk
from simulator.inject import INJECT_FAULTS, InjectError, batches, find_partitions, inject
from simulator.workload import WorkloadSpec, run_workload


@pytest.fixture(scope="module")
def clean_log_dir(tmp_path_factory) -> str:
    root = str(tmp_path_factory.mktemp("inject") / "kafka-logs")
    spec = WorkloadSpec(
        log_dir=root,
        appends=40,
        partitions=2,
        segment_bytes=1500,
        index_interval_bytes=256,
        transactions=0.3,
        codecs=("none", "lz4"),
        clean_shutdown=True,
    )
    assert run_workload(spec, OsDisk()).error is None
    return root


def settings() -> Settings:
    return Settings(index_interval_bytes=256, segment_index_bytes=max(64, 1500 // 8))


def test_the_undamaged_dir_is_clean(clean_log_dir: str) -> None:
    assert scan_path(OsDisk(), clean_log_dir, settings()).clean


@pytest.mark.parametrize("fault", sorted(INJECT_FAULTS))
def test_every_fault_is_detected_and_salvage_repairs_it(
    fault: str, clean_log_dir: str, tmp_path
) -> None:
    copy = str(tmp_path / "copy")
    damage = inject(clean_log_dir, fault, seed=5, out=copy)
    assert damage and all(d.file.startswith(copy) for d in damage)
    disk = OsDisk()
    assert not scan_path(disk, copy, settings()).clean, fault
    repair(disk, copy, "salvage", settings(), quarantine_root=str(tmp_path / "q"))
    after = scan_path(disk, copy, settings())
    assert after.clean, [f.to_json() for f in after.all_findings()]


def test_inject_is_deterministic_and_leaves_the_original(clean_log_dir: str, tmp_path) -> None:
    before = {
        p: os.path.getsize(os.path.join(dp, p)) for dp, _, fs in os.walk(clean_log_dir) for p in fs
    }
    a = inject(clean_log_dir, "bit_flip", seed=9, out=str(tmp_path / "a"))
    b = inject(clean_log_dir, "bit_flip", seed=9, out=str(tmp_path / "b"))
    assert [(d.position, d.length) for d in a] == [(d.position, d.length) for d in b]
    after = {
        p: os.path.getsize(os.path.join(dp, p)) for dp, _, fs in os.walk(clean_log_dir) for p in fs
    }
    assert before == after


def test_a_partition_dir_alone(clean_log_dir: str, tmp_path) -> None:
    part = os.path.join(clean_log_dir, "sim-1")
    assert [p.path for p in find_partitions(part)] == [part]
    with pytest.raises(InjectError, match="must be named topic-partition"):
        inject(part, "torn_tail", seed=1, out=str(tmp_path / "p"))
    [d] = inject(part, "torn_tail", seed=1, out=str(tmp_path / "p" / "sim-1"))
    seg = d.file
    assert os.path.getsize(seg) == d.position + d.length  # the torn batch, what is left of it
    with pytest.raises(InjectError, match="no recovery-point-offset-checkpoint"):
        inject(part, "recovery_point_beyond_end", seed=1, out=str(tmp_path / "p2" / "sim-1"))
    assert not os.path.exists(tmp_path / "p2" / "sim-1")


def test_refusals(clean_log_dir: str, tmp_path) -> None:
    with pytest.raises(InjectError, match="unknown fault"):
        inject(clean_log_dir, "meteor", seed=1, out=str(tmp_path / "x"))
    with pytest.raises(InjectError, match="either --out"):
        inject(clean_log_dir, "torn_tail", seed=1)
    with pytest.raises(InjectError, match="already exists"):
        inject(clean_log_dir, "torn_tail", seed=1, out=str(tmp_path))
    with pytest.raises(InjectError, match="no partition"):
        inject(str(tmp_path), "torn_tail", seed=1, in_place=True)


def test_in_place_damage_takes_the_lock(clean_log_dir: str, tmp_path) -> None:
    """Never under a live broker: a process holding the log dir's `.lock` makes it refuse."""
    log_dir = str(tmp_path / "copy")
    shutil.copytree(clean_log_dir, log_dir)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
            "fcntl.lockf(fd, fcntl.LOCK_EX); print('locked', flush=True); sys.stdin.read()",
            os.path.join(log_dir, ".lock"),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(InjectError, match="Failed to acquire lock on file .lock"):
            inject(log_dir, "torn_tail", seed=1, in_place=True)
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    assert inject(log_dir, "torn_tail", seed=1, in_place=True)


def test_batches_walks_a_segment_through_a_small_window(clean_log_dir: str, monkeypatch) -> None:
    import simulator.inject as mod

    seg = find_partitions(clean_log_dir)[0].segments()[0]
    whole = list(batches(seg))
    monkeypatch.setattr(mod, "WINDOW", 100)  # smaller than one batch: the window must grow
    assert list(batches(seg)) == whole and len(whole) > 3


@pytest.mark.parametrize("fault", ["torn_tail", "garbage_tail", "junk_tail"])
def test_inject_and_verify_name_a_tail_with_the_same_byte_range(
    fault: str, clean_log_dir: str, tmp_path
) -> None:
    """One notation (README): `FILE @P+N` is the same bytes in `logsim inject` and in verify."""
    copy = str(tmp_path / "copy")
    (d,) = inject(clean_log_dir, fault, seed=3, out=copy)
    found = [
        (os.path.join(copy, f.file), f.position, f.length)
        for f in scan_path(OsDisk(), copy, settings()).all_findings()
        if f.kind in ("torn_tail", "garbage_tail")
    ]
    assert found == [(d.file, d.position, d.length)]
