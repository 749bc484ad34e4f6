from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass

import pytest

from logrepair.storage import layout
from logrepair.storage.layout import TopicPartition

from .fleetgen import LogDirSpec, PartitionSpec, commit_batches, diverge, history, write_log_dir

ORDERS = [TopicPartition("orders", p) for p in range(3)]
PAYMENTS = [TopicPartition("payments", p) for p in range(2)]
OFFSETS0 = TopicPartition("__consumer_offsets", 0)


@dataclass
class Fleet:
    root: str
    expected: set[tuple[str, str]]
    """(where, kind) of every finding the fleet was built to have: `where` is the partition dir
    relative to the root, a log dir relative to the root, `topic-partition` for replicas, or
    `fleet`."""


def build_fleet(root: str) -> Fleet:
    """Three brokers; orders ×3 and payments ×2 replicated, `__consumer_offsets-0` on two of them,
    each anomaly planted once."""
    orders = {tp: history(10, epochs={0: 0, 6: 1}, seed=tp.partition) for tp in ORDERS}
    payments = {tp: history(6, records=8, seed=10 + tp.partition) for tp in PAYMENTS}
    commits = commit_batches(
        [
            ("g1", "orders", 0, 20),
            ("g3", "orders", 1, 4),
            ("g2", "payments", 1, 500),  # past every replica's end
            ("g3", "orders", 1, None),  # tombstone: g3's commit is gone
            ("g1", "orders", 0, 24),  # last value wins
        ]
    )
    b1 = LogDirSpec(
        node_id=1,
        partitions={
            ORDERS[0]: PartitionSpec(orders[ORDERS[0]], recovery_point=48),  # stale: past end
            ORDERS[1]: PartitionSpec(orders[ORDERS[1]]),
            ORDERS[2]: PartitionSpec(orders[ORDERS[2]]),
            PAYMENTS[0]: PartitionSpec(payments[PAYMENTS[0]]),
            OFFSETS0: PartitionSpec(commits),
        },
    )
    b2 = LogDirSpec(
        node_id=2,
        partitions={
            ORDERS[0]: PartitionSpec(orders[ORDERS[0]]),
            ORDERS[1]: PartitionSpec(diverge(orders[ORDERS[1]], 6)),  # diverged at offset 24
            PAYMENTS[0]: PartitionSpec(payments[PAYMENTS[0]], recovery_point=None),  # missing
            PAYMENTS[1]: PartitionSpec(payments[PAYMENTS[1]]),
            OFFSETS0: PartitionSpec(commits),
        },
        extra_checkpoint_entries={layout.REPLICATION_CHECKPOINT: {TopicPartition("gone", 0): 5}},
    )
    b3 = LogDirSpec(
        node_id=3,
        clean_shutdown=False,
        partitions={
            ORDERS[2]: PartitionSpec(orders[ORDERS[2]][:5], recovery_point=8),  # lagging
            PAYMENTS[1]: PartitionSpec(payments[PAYMENTS[1]], recovery_point=16),
        },
    )
    for name, spec in (("b1", b1), ("b2", b2), ("b3", b3)):
        write_log_dir(os.path.join(root, name), spec)
    expected = {
        ("b1/orders-0", "recovery_point_beyond_end"),
        ("b2/payments-0", "recovery_point_missing"),
        ("b2", "checkpoint_orphan_entry"),
        ("orders-1", "replica_diverged"),
        ("orders-2", "replica_behind_high_watermark"),
        ("orders-2", "replica_healable"),  # another replica holds the missing tail
        ("fleet", "consumer_offset_beyond_end"),
    }
    return Fleet(root, expected)


def findings_by_place(report, root: str) -> set[tuple[str, str]]:
    out = set()
    for _scope, where, f in report.all_findings():
        place = os.path.relpath(where, root) if where.startswith("/") else (where or "fleet")
        out.add((place, f.kind))
    return out


@pytest.fixture(scope="session")
def fleet(tmp_path_factory) -> Fleet:
    return build_fleet(str(tmp_path_factory.mktemp("fleet")))


@pytest.fixture(scope="session")
def spark():
    """One local Spark session for every Spark test (start-up costs ~10 s)."""
    if shutil.which("java") is None:
        pytest.skip("Spark needs Java: no `java` on PATH (apt-get install openjdk-17-jre-headless)")
    from logrepair.audit.spark import spark_session

    session = spark_session("local[2]", app_name="logrepair-tests", shuffle_partitions=4)
    yield session
    session.stop()


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "logrepair", *args], capture_output=True, text=True, timeout=300
    )
