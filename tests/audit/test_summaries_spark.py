"""The fleet audit from scan summaries on a real local Spark equals the direct audit, finding for
finding: on the fleet fixture, and on random fleets damaged after a first summary (so the second,
incremental summary must notice every change)."""

from __future__ import annotations

import json
import os
import shutil
import time

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logrepair.audit.local import audit_paths
from logrepair.audit.spark_summaries import audit_summaries_spark
from logrepair.audit.summary_writer import write_summaries
from logrepair.storage import layout
from logrepair.storage.layout import TopicPartition

from .conftest import findings_by_place, run_cli
from .fleetgen import (
    LogDirSpec,
    PartitionSpec,
    commit_batches,
    diverge,
    history,
    write_log_dir,
)

pytestmark = pytest.mark.spark
BROKERS = ("b1", "b2", "b3")


def summaries_of(log_dirs: list[str], dest: str, *, label_by_folder: bool = False) -> str:
    for d in log_dirs:  # as on each broker: one run per broker
        write_summaries([d], dest, broker=os.path.basename(d) if label_by_folder else None)
    return dest


def test_log_dirs_at_the_same_path_on_two_brokers(spark, tmp_path):
    """The usual fleet: every broker's log dir is /var/lib/kafka/data. Paths get their broker."""
    t0 = TopicPartition("t", 0)
    data = str(tmp_path / "data")
    batches = history(8)
    for node, spec in ((1, PartitionSpec(batches)), (2, PartitionSpec(diverge(batches, 5)))):
        shutil.rmtree(data, ignore_errors=True)
        write_log_dir(data, LogDirSpec(node_id=node, partitions={t0: spec}))
        write_summaries([data], str(tmp_path / "summaries"))
    one_cluster = tmp_path / "summaries" / "cluster=MkU3OEVBNTcwNTJENDM2Qg"  # a SRC may be one
    report = audit_summaries_spark(spark, [str(one_cluster)], recovery_rate=2**20)
    assert [d.path for d in report.log_dirs] == [f"node-1:{data}", f"node-2:{data}"]
    (replica,) = report.replicas
    assert replica.paths == [f"node-1:{data}/t-0", f"node-2:{data}/t-0"]
    assert (replica.diverged_at, [f.kind for f in replica.findings]) == (20, ["replica_diverged"])


TPS = [TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)]
OFFSETS = TopicPartition("__consumer_offsets", 0)
DAMAGE = ("overwrite", "truncate", "remove", "swap_leftover", "malformed_checkpoint", "append")


@st.composite
def fleets(draw) -> dict[str, LogDirSpec]:
    """Up to three brokers holding replicas of three partitions: lagging, diverged, with stale
    or missing checkpoints, torn or garbage tails, and consumer offsets committed past the end."""
    n = draw(st.integers(2, 3))
    specs = {
        BROKERS[b]: LogDirSpec(
            node_id=draw(st.sampled_from([b + 1, b + 1, 1])),
            clean_shutdown=draw(st.booleans()),
        )
        for b in range(n)
    }
    checkpoint = st.sampled_from(["end", "end", None, 0, 7, 60])
    for i, tp in enumerate(TPS):
        full = history(draw(st.integers(0, 9)), records=draw(st.integers(1, 3)), seed=i)
        for b in draw(st.sets(st.sampled_from(sorted(specs)), min_size=1)):
            batches = full[: draw(st.integers(0, len(full)))]
            if batches and draw(st.booleans()):
                batches = diverge(batches, draw(st.integers(0, len(batches) - 1)))
            specs[b].partitions[tp] = PartitionSpec(
                batches,
                segment_batches=draw(st.integers(1, 4)),
                recovery_point=draw(checkpoint),
                high_watermark=draw(checkpoint),
                log_start=draw(st.sampled_from([None, None, 2, 50])),
                leader_epochs=draw(st.sampled_from(["data", "data", None, [(3, 1)]])),
                tail=draw(st.sampled_from([b"", b"", b"\0" * 20, b"\x00\x00\x01junk"])),
            )
    commits = [("g", "a", 0, draw(st.integers(0, 40))), ("h", "b", 0, draw(st.integers(0, 40)))]
    for b in draw(st.sets(st.sampled_from(sorted(specs)), max_size=2)):
        specs[b].partitions[OFFSETS] = PartitionSpec(commit_batches(commits))
    return specs


def damage(log_dir: str, kind: str, pick: int) -> None:
    """One change to a log dir after its first summary; each makes a finding or changes one."""
    logs = sorted(
        os.path.join(f, n) for f, _, names in os.walk(log_dir) for n in names if n.endswith(".log")
    )
    if kind == "malformed_checkpoint":
        with open(os.path.join(log_dir, layout.REPLICATION_CHECKPOINT), "w") as f:
            f.write("0\n2\nt 0\n")
        return
    if not logs:
        return
    log = logs[pick % len(logs)]
    size = os.path.getsize(log)
    if kind == "overwrite" and size:
        with open(log, "r+b") as f:
            f.seek(pick % size)
            f.write(b"\xde\xad\xbe\xef")
    elif kind == "truncate":
        os.truncate(log, size * (pick % 3) // 3)
    elif kind == "remove":
        os.remove(log)
    elif kind == "swap_leftover":
        shutil.copy(log, log.removesuffix(".log") + ".log.swap")
    elif kind == "append":
        with open(log, "ab") as f:
            f.write(b"\x00" * (1 + pick % 40))


@settings(
    max_examples=max(3, settings.default.max_examples // 30),  # 3 by default: a Spark job each
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    specs=fleets(),
    damages=st.lists(
        st.tuples(st.sampled_from(BROKERS), st.sampled_from(DAMAGE), st.integers(0, 10**6)),
        max_size=4,
    ),
)
def test_randomly_damaged_fleets(spark, tmp_path_factory, specs, damages):
    """Brokers are labelled by folder, as the direct audit of the fleet's folder labels them (two
    may share a node id)."""
    root = str(tmp_path_factory.mktemp("random-fleet"))
    fleet = os.path.join(root, "fleet")
    try:
        log_dirs = [write_log_dir(os.path.join(fleet, b), spec) for b, spec in specs.items()]
        hour_ago = time.time_ns() - 3600 * 10**9  # old enough for stamps to be trusted
        for d in log_dirs:
            for folder, _, names in os.walk(d):
                for name in names:
                    os.utime(os.path.join(folder, name), ns=(hour_ago, hour_ago))
        dest = summaries_of(log_dirs, os.path.join(root, "summaries"), label_by_folder=True)
        for broker, kind, pick in damages:
            if broker in specs:
                damage(os.path.join(fleet, broker), kind, pick)
        # incremental: only what changed is scanned again
        summaries_of(log_dirs, dest, label_by_folder=True)
        direct = audit_paths([fleet], recovery_rate=2**20)
        os.rename(fleet, fleet + ".elsewhere")  # no executor may need a broker's disk
        report = audit_summaries_spark(spark, [dest], recovery_rate=2**20)
        assert report.to_json() == direct.to_json()
    finally:
        shutil.rmtree(root)


@pytest.mark.slow
def test_cli_fleet_audit_from_summaries_equals_the_direct_audit(fleet, tmp_path):
    """The real command lines on the fleet fixture: `--summaries-out` on each broker (to a
    file:// URI, through pyarrow's filesystems), then the fleet audit on Spark (its own session,
    local[1]) with its Parquet tables; the JSON equals the direct audit's."""
    log_dirs = [os.path.join(fleet.root, b) for b in BROKERS]
    for d in log_dirs:
        proc = run_cli("audit", d, "--summaries-out", f"file://{tmp_path}/summaries")
        assert proc.returncode == 0, proc.stderr
    out = str(tmp_path / "out")
    proc = run_cli(
        "audit", "--spark", "local[1]", "--from-summaries", f"{tmp_path}/summaries", "--out", out,
        "--json",
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr[-2000:]
    direct = audit_paths(log_dirs)
    result = json.loads(proc.stdout)
    # the CLI adds whether a live process holds each log dir's `.lock` (none here)
    assert not any(d.pop("locked_by_other_process") for d in result["log_dirs"])
    assert result == direct.to_json()
    assert findings_by_place(direct, fleet.root) == fleet.expected

    segments = pq.read_table(os.path.join(out, "segments")).to_pylist()
    logs = [os.path.join(f, n) for d in log_dirs for f, _, ns in os.walk(d) for n in ns]
    assert sorted(s["file"] for s in segments) == sorted(f for f in logs if f.endswith(".log"))
    assert sum(s["batches"] for s in segments) == sum(p.batches for p in direct.partitions)
    findings = pq.read_table(os.path.join(out, "findings")).to_pylist()
    assert sorted((f["kind"], f["detail"]) for f in findings) == sorted(
        (f.kind, f.detail) for _, _, f in direct.all_findings()
    )
    replicas = {
        (r["topic"], r["partition"]): r for r in pq.read_table(f"{out}/replicas").to_pylist()
    }
    assert replicas[("orders", 1)]["diverged_at"] == 24
