"""Fixtures of the real-broker tests: the session's broker log dirs (written once per harness and
workload version; the harness itself comes from conftest's `kafka_harness`, required under CI), and
the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from . import harness
from .broker_workload import broker_dirs

REPO = harness.REPO


@pytest.fixture(scope="session")
def real_broker_dirs(kafka_harness) -> dict[str, Any]:
    """{"clean": Path, "killed": Path, "facts": dict}: what a real Kafka 4 broker left (see
    `broker_workload.broker_dirs`). Read-only: copy before changing."""
    dirs = broker_dirs()
    return {**dirs, "facts": json.loads(dirs["facts"].read_text())}


def logrepair(*args: str, check: bool = False) -> subprocess.CompletedProcess[bytes]:
    """The real CLI in a subprocess, from this checkout."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    result = subprocess.run(
        [sys.executable, "-m", "logrepair", *args], capture_output=True, env=env, check=False
    )
    if check and result.returncode not in (0, 1):
        raise AssertionError(f"logrepair {' '.join(args)}: {result.stderr.decode()[-2000:]}")
    return result


def logrepair_json(*args: str) -> dict[str, Any]:
    return json.loads(logrepair(*args, "--json", check=True).stdout)


def segment_files(log_dir: Path) -> list[Path]:
    """Every file kafka-dump-log reads, in a stable order."""
    suffixes = {".log", ".index", ".timeindex", ".txnindex", ".snapshot", ".checkpoint"}
    return sorted(
        p
        for p in log_dir.rglob("*")
        if p.is_file() and p.suffix in suffixes and not p.name.endswith("offset-checkpoint")
    )
