"""The audit points at `repair --mode heal` where one replica's damage another replica holds."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from logrepair.storage.osdisk import OsDisk
from simulator.replicas import ReplicaSpec, run_replicated


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cluster")
    run_replicated(ReplicaSpec(appends=30, root=str(root), seed=4), OsDisk())
    return root


def audit(*paths: Path, report: Path | None = None) -> dict:
    extra = ["--report", str(report)] if report else []
    out = subprocess.run(
        [sys.executable, "-m", "logrepair", "audit", *map(str, paths), "--json", *extra],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)


def test_a_lost_segment_is_healable_from_another_broker_and_the_report_says_so(cluster, tmp_path):
    root = tmp_path / "c"
    shutil.copytree(cluster, root)
    pdir = root / "broker1" / "orders-0"
    logs = sorted(p for p in pdir.iterdir() if p.name.endswith(".log"))
    os.remove(logs[2])
    brokers = [root / f"broker{n}" for n in range(3)]
    result = audit(*brokers, report=tmp_path / "r.html")
    (replicas,) = result["replicas"]
    assert replicas["diverged_at"] is None
    healable = [f for f in replicas["findings"] if f["kind"] == "replica_healable"]
    assert len(healable) == 1
    detail = healable[0]["detail"]
    assert str(pdir) in detail and "healable from " in detail
    assert str(root / "broker1") not in detail.split("healable from ")[1]
    assert "healable from" in (tmp_path / "r.html").read_text()


def test_no_hint_where_every_replica_lost_the_range(cluster, tmp_path):
    root = tmp_path / "c"
    shutil.copytree(cluster, root)
    for n in range(3):
        pdir = root / f"broker{n}" / "orders-0"
        logs = sorted(p for p in pdir.iterdir() if p.name.endswith(".log"))
        data = bytearray(logs[0].read_bytes())
        data[80] ^= 0x40  # the same batch corrupt on every broker
        logs[0].write_bytes(bytes(data))
    result = audit(*(root / f"broker{n}" for n in range(3)))
    assert not [
        f for r in result["replicas"] for f in r["findings"] if f["kind"] == "replica_healable"
    ]
