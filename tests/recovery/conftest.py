"""Fixtures of the recovery tests: a fresh log dir under tmp_path."""

from __future__ import annotations

import pytest


@pytest.fixture
def log_dir(tmp_path):
    d = tmp_path / "kafka-logs"
    d.mkdir()
    # a broker's log dir always carries its root checkpoints
    (d / "recovery-point-offset-checkpoint").write_text("0\n0\n")
    return d
