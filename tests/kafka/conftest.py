"""Fixtures of the Kafka-oracle tests: the built harness and one long-lived `recover` JVM.

Under CI (CI=true) the Kafka tests are required: a missing Java or Maven, or a harness Maven cannot
build, fails the run with one line saying which. Elsewhere they are skipped with that line.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from . import harness


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"Kafka oracle required under CI: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def kafka_harness() -> Path:
    """The harness's build dir (built once per source, cached under build/kafka-harness/)."""
    try:
        return harness.ensure_built()
    except harness.HarnessUnavailable as e:
        _unavailable(str(e))
        raise  # unreachable: skip and fail raise


@pytest.fixture(scope="session")
def kafka_recover(kafka_harness) -> Iterator[harness.RecoverServer]:
    """One JVM answering every `recover` request of the session."""
    with harness.recover_server() as server:
        yield server


@pytest.fixture
def work_dir() -> Iterator[Path]:
    """A scratch dir on tmpfs when there is one: cases fsync a lot, and nothing here needs a disk."""
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    d = Path(tempfile.mkdtemp(prefix="logrepair-oracle-", dir=base))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)
