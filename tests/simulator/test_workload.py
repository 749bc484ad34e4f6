"""Workloads: deterministic, parameterised, driving the real Log; I/O errors end the run."""

from __future__ import annotations

import pytest

from simulator.disk import IoFault, SimDisk
from simulator.invariants import partitions, segments
from simulator.workload import SpecError, WorkloadSpec, run_workload


def test_same_spec_same_trace() -> None:
    spec = WorkloadSpec(appends=30, partitions=2, transactions=0.5, codecs=("none", "zstd"))
    a, b = SimDisk(), SimDisk()
    run_workload(spec, a)
    run_workload(spec, b)
    assert [op.describe() for op in a.trace] == [op.describe() for op in b.trace]
    assert a.volatile_image() == b.volatile_image()


def test_history_matches_the_log_on_disk() -> None:
    spec = WorkloadSpec(appends=25, partitions=2, segment_bytes=700)
    disk = SimDisk()
    history = run_workload(spec, disk)
    assert history.error is None
    image = disk.volatile_image()
    for p, part in enumerate(partitions(image, spec.log_dir)):
        offsets = [b.last for s in segments(image, part) for b in s.batches]
        assert offsets[-1] + 1 == history.log_end_offsets[p]
        acked = [last for q, _, last in history.appended if q == p]
        assert acked == offsets
    assert len(segments(image, f"{spec.log_dir}/sim-0")) > 1  # it rolled


def test_checkpoints_retention_truncation_and_epochs() -> None:
    spec = WorkloadSpec(
        appends=40,
        segment_bytes=600,
        retention_bytes=1500,
        retention_every=4,
        truncate_every=9,
        leader_epoch_every=10,
        checkpoint_every=5,
    )
    disk = SimDisk()
    history = run_workload(spec, disk)
    files = disk.volatile_image().files
    assert history.truncations
    rp = files[f"{spec.log_dir}/recovery-point-offset-checkpoint"].decode().splitlines()
    assert rp[:2] == ["0", "1"] and rp[2].startswith("sim 0 ")
    epochs = files[f"{spec.log_dir}/sim-0/leader-epoch-checkpoint"].decode().splitlines()
    assert int(epochs[1]) >= 2  # elections, minus epochs retention dropped
    assert (
        any(p.endswith(".deleted") for p in files)
        or segments(disk.volatile_image(), f"{spec.log_dir}/sim-0")[0].base > 0
    )


def test_compaction_follows_the_swap_protocol() -> None:
    spec = WorkloadSpec(appends=20, segment_bytes=600, compact_at_end=True)
    disk = SimDisk()
    run_workload(spec, disk)
    kinds = [(op.kind, op.path.rpartition("/")[2], op.dst.rpartition("/")[2]) for op in disk.trace]
    renames = [k for k in kinds if k[0] == "rename" and "0000000000000000000" in k[1]]
    swaps = [i for i, k in enumerate(renames) if k[2].endswith(".swap")]
    deleted = [i for i, k in enumerate(renames) if k[2].endswith(".deleted")]
    final = [i for i, k in enumerate(renames) if k[1].endswith(".swap")]
    assert swaps and deleted and final
    assert max(swaps) < min(deleted) and max(deleted) < min(final)
    assert kinds[-1][0] == "fsync_dir"


def test_an_io_error_ends_the_run_and_is_recorded() -> None:
    disk = SimDisk(io_faults=[IoFault("eio_write", 10, ".log")])
    history = run_workload(WorkloadSpec(appends=30), disk)
    assert history.error is not None and "Input/output error" in history.error
    assert len(history.appended) < 30


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"codecs": ["brotli"]}, "unknown codec"),
        ({"records": [3, 1]}, "records"),
        ({"transactions": 2}, "share"),
        ({"appendz": 3}, "unknown workload key"),
        ({"topic": "bad/topic"}, "bad topic"),
        ({"log_dir": "relative"}, "absolute"),
        ({"segment_bytes": 300, "record_bytes": 200}, "does not fit segment_bytes"),
        ({"compact_at_end": True, "clean_shutdown": True}, "exclude"),
        ({"appends": "many"}, "appends must be"),
    ],
)
def test_bad_specs_are_one_clear_error(bad, message) -> None:
    with pytest.raises(SpecError, match=message):
        WorkloadSpec.from_dict(bad)


def test_history_records_what_each_fsync_made_durable() -> None:
    spec = WorkloadSpec(appends=15, flush_messages=1, flush_every=0, checkpoint_every=0)
    disk = SimDisk()
    history = run_workload(spec, disk, record_durability=True)
    part = f"{spec.log_dir}/sim-0"
    ends = [d[part] for _, d in history.durable if part in d]
    assert ends == sorted(ends) and ends[-1] == history.log_end_offsets[0]
    # flush.messages=1: every acknowledged append was durable by the next append.
    acked = [last + 1 for _, _, last in history.appended]
    assert set(acked) <= set(ends)
    assert all(disk.trace[i].kind in ("fsync", "fsync_dir") for i, _ in history.durable)


def test_record_durability_needs_a_simdisk(tmp_path) -> None:
    from logrepair.storage.osdisk import OsDisk

    with pytest.raises(SpecError, match="SimDisk"):
        run_workload(WorkloadSpec(log_dir=str(tmp_path)), OsDisk(), record_durability=True)
