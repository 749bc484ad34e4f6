"""Memory flat in the number of batches (issue 16.5): verify, repair and audit of the same bytes in 8
times as many batches peak at about the same Python memory.

The two logs have the same size, so what grows with bytes (the read window, the indexes) is the
same in both; what differs is anything kept per batch. Kept per batch, the 7,000 extra batches
would cost 24 bytes each at least (a position, an offset and a timestamp); flat, the difference is
noise. Measured with tracemalloc's peak, not time, so a loaded machine does not change it."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from logrepair.audit.local import audit_paths
from logrepair.recovery.repair import repair
from logrepair.recovery.scan import scan_path
from logrepair.recovery.settings import Settings
from logrepair.storage import layout

from .recovery.builders import DISK, batch, flip_byte, write_offsets, write_segment

FEW = 1_000
MANY = 8 * FEW
PER_EXTRA_BATCH = 8
"""Bytes of peak memory allowed per extra batch: under what any per-batch record costs."""


def _log_dir(root: Path, count: int, value_size: int) -> Path:
    log_dir = root / f"kafka-logs-{count}"
    pdir = log_dir / "t-0"
    data = [batch(i, value_size=value_size) for i in range(count)]
    write_segment(pdir, 0, data)
    write_offsets(log_dir, layout.RECOVERY_POINT_CHECKPOINT, {("t", 0): count})
    return log_dir


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> tuple[Path, Path, int]:
    """(few big batches, many small ones, the log's size): the many at least as big as the few."""
    root = tmp_path_factory.mktemp("memory")
    small = 900
    many = _log_dir(root, MANY, small)
    size = (many / "t-0" / layout.log_file_name(0)).stat().st_size
    big = small
    while len(batch(0, value_size=big)) * FEW < size:
        big += 1
    return _log_dir(root, FEW, big), many, size


def _peak(run: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _salvage(log_dir: Path) -> Callable[[], object]:
    """A salvage of one corrupt batch in the middle: half the log copied to a segment of its own,
    with its indexes."""
    log = log_dir / "t-0" / layout.log_file_name(0)
    count = int(log_dir.name.rpartition("-")[2])
    step = log.stat().st_size // count  # (the batches of one log are all one size)
    flip_byte(log, count // 2 * step + 70)  # inside the CRC's range: one crc_mismatch
    return lambda: repair(DISK, str(log_dir), "salvage", Settings())


@pytest.mark.parametrize("command", ["verify", "audit", "salvage"])
def test_peak_memory_does_not_grow_with_the_number_of_batches(logs, command) -> None:
    few, many, size = logs
    runs = {
        "verify": lambda d: lambda: scan_path(DISK, str(d), Settings()),
        "audit": lambda d: lambda: audit_paths([str(d)]),
        "salvage": _salvage,
    }
    peaks = {d: _peak(runs[command](d)) for d in (few, many)}
    grown = peaks[many] - peaks[few]
    assert grown < PER_EXTRA_BATCH * (MANY - FEW), (command, size, peaks)
