"""The fleet audit and the export on a real local Spark: same results as the single machine."""

from __future__ import annotations

import glob
import json
import os

import pyarrow.parquet as pq
import pytest

from logrepair.audit.export import export_local
from logrepair.audit.local import audit_paths
from logrepair.audit.spark import audit_paths_spark, export_spark
from logrepair.storage.layout import TopicPartition
from logrepair.storage.osdisk import OsDisk

from .conftest import findings_by_place, run_cli
from .fleetgen import LogDirSpec, PartitionSpec, history, write_log_dir
from .test_cli_audit_export import corrupt_second_batch

pytestmark = pytest.mark.spark


def test_spark_audit_equals_local_and_writes_parquet(spark, fleet, tmp_path):
    out = str(tmp_path / "out")
    report = audit_paths_spark(spark, [fleet.root], recovery_rate=2**20, out=out)
    local = audit_paths([fleet.root], recovery_rate=2**20)
    assert report.to_json() == local.to_json()
    assert findings_by_place(report, fleet.root) == fleet.expected

    logs = glob.glob(os.path.join(fleet.root, "*", "*", "*.log"))
    segments = pq.read_table(os.path.join(out, "segments")).to_pylist()
    assert sorted(s["file"] for s in segments) == sorted(logs)
    assert sum(s["size"] for s in segments) == sum(os.path.getsize(f) for f in logs)
    assert sum(s["batches"] for s in segments) == sum(p.batches for p in local.partitions)

    partitions = pq.read_table(os.path.join(out, "partitions")).to_pylist()
    assert [(p["path"], p["log_end_offset"], p["unflushed_bytes"]) for p in partitions] == [
        (p.path, p.log_end_offset, p.unflushed_bytes) for p in local.partitions
    ]
    findings = pq.read_table(os.path.join(out, "findings")).to_pylist()
    assert sorted((f["kind"], f["detail"]) for f in findings) == sorted(
        (f.kind, f.detail) for _, _, f in local.all_findings()
    )
    replicas = {
        (r["topic"], r["partition"]): r
        for r in pq.read_table(os.path.join(out, "replicas")).to_pylist()
    }
    assert replicas[("orders", 1)]["diverged_at"] == 24
    assert replicas[("orders", 2)]["log_end_offsets"] == [40, 20]
    offsets = pq.read_table(os.path.join(out, "consumer_offsets")).to_pylist()
    assert {(c["group"], c["status"]) for c in offsets} == {("g1", "ok"), ("g2", "beyond_end")}
    assert len(pq.read_table(os.path.join(out, "log_dirs"))) == 3


def test_spark_audit_splits_a_big_partition_by_segment(spark, tmp_path):
    """One partition holding most of the bytes: its segments become separate tasks and meet
    again in a shuffle; the result is still the local one."""
    big = history(40, epochs={0: 0, 25: 3})
    write_log_dir(
        str(tmp_path / "b1"),
        LogDirSpec(
            partitions={
                TopicPartition("big", 0): PartitionSpec(big, recovery_point=30, tail=b"\0" * 40),
                TopicPartition("small", 0): PartitionSpec(history(1)),
                TopicPartition("empty", 0): PartitionSpec([]),
            },
            clean_shutdown=False,
        ),
    )
    out = str(tmp_path / "out")
    report = audit_paths_spark(spark, [str(tmp_path / "b1")], recovery_rate=2**20, out=out)
    assert report.to_json() == audit_paths([str(tmp_path / "b1")], recovery_rate=2**20).to_json()
    assert len(pq.read_table(os.path.join(out, "segments"))) == 10 + 1 + 1


def test_spark_export_equals_local(spark, tmp_path):
    t0 = TopicPartition("t", 0)
    write_log_dir(
        str(tmp_path / "b1"),
        LogDirSpec(
            partitions={
                t0: PartitionSpec(history(9, records=3)),
                TopicPartition("u", 1): PartitionSpec(history(2, value_size=3000)),
            }
        ),
    )
    corrupt_second_batch(tmp_path / "b1" / "t-0" / "00000000000000000000.log")
    export_spark(spark, str(tmp_path / "b1"), str(tmp_path / "spark"), include_corrupt=True)
    export_local(OsDisk(), str(tmp_path / "b1"), str(tmp_path / "local"), include_corrupt=True)

    def rows(path):
        table = pq.read_table(path)
        return sorted(table.to_pylist(), key=lambda r: (r["topic"], r["partition"], r["offset"]))

    spark_rows, local_rows = rows(tmp_path / "spark"), rows(tmp_path / "local")
    assert len(local_rows) == 27 + 8
    assert spark_rows == local_rows
    assert sum(r["corrupt"] for r in spark_rows) == 3


@pytest.mark.slow
def test_cli_audit_on_spark(fleet):
    """The real command line: its own Spark (local[*]), JSON equal to the local audit (the
    Parquet tables are checked in-process above: writing them costs ~10 s of Spark jobs)."""
    proc = run_cli("audit", "--spark", fleet.root, "--json")  # PATH right after --spark
    assert proc.returncode == 1, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    # the CLI adds whether a live process holds each log dir's `.lock` (none here)
    assert not any(d.pop("locked_by_other_process") for d in out["log_dirs"])
    assert out == audit_paths([fleet.root]).to_json()
