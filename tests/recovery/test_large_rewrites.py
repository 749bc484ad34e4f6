"""Rewrites of megabytes on the real OS (issue 16.4): the copies a split, a cut's saved tail and
their undo make from 1 MiB up are written around the page cache (`OsFile.copy_to` with O_DIRECT),
and must leave exactly the files, and quarantine, the kernel copy leaves; undo restores every byte,
and the zero blocks of a removed tail stay holes in the quarantine."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from logrepair.recovery.invariants import tree_digest
from logrepair.recovery.settings import Settings
from logrepair.storage import layout, os_copy

from .builders import DISK, batch, flip_byte, write_offsets, write_segment
from .checks import repair_checked

BATCHES = 200
ZERO_TAIL = 1 << 20


def _log_dir(root: Path, bad: list[int]) -> Path:
    """One segment of 200 batches of ~16 KiB (3.1 MiB), the batches `bad` corrupt, then a zero
    tail of 1 MiB and a few junk bytes (a preallocated end)."""
    log_dir = root / "kafka-logs"
    pdir = log_dir / "t-0"
    data = [batch(i, value_size=16_000) for i in range(BATCHES)]
    write_segment(pdir, 0, data)
    with open(pdir / layout.log_file_name(0), "ab") as f:
        f.write(bytes(ZERO_TAIL) + b"junk")
    write_offsets(log_dir, layout.RECOVERY_POINT_CHECKPOINT, {("t", 0): 0})
    for i in bad:
        flip_byte(pdir / layout.log_file_name(0), len(data[0]) * i + 70)
    return log_dir


def _quarantine(log_dir: Path) -> dict[str, tuple[bytes, int]]:
    """Each file of the run's quarantine (its manifest's times aside): bytes and allocated KiB."""
    out = {}
    for path in sorted(Path(str(log_dir) + ".logrepair-quarantine").rglob("*")):
        if path.is_file() and path.name != "manifest.json":
            out[path.name] = (path.read_bytes(), path.stat().st_blocks // 2)
    return out


@pytest.mark.parametrize(
    ("mode", "bad"),
    [("salvage", [60]), ("salvage", [20, 150]), ("point-in-time", [40]), ("kafka", [30])],
)
def test_large_rewrites_leave_what_the_kernel_copy_leaves(tmp_path, monkeypatch, mode, bad):
    written = []
    direct = os_copy._direct_write

    def spy(*args):
        n = direct(*args)
        written.append(n)
        return n

    monkeypatch.setattr(os_copy, "_direct_write", spy)
    around = _log_dir(tmp_path / "direct", bad)
    repair_checked(around, mode, Settings())  # (repairs, undoes every byte, repairs again)
    if not sum(written):
        pytest.skip("this file system refuses O_DIRECT")
    monkeypatch.setattr(os_copy, "_DIRECT_MIN", 1 << 62)
    kernel = _log_dir(tmp_path / "kernel", bad)
    repair_checked(kernel, mode, Settings())
    assert tree_digest(DISK, str(around)) == tree_digest(DISK, str(kernel))
    ours, theirs = _quarantine(around), _quarantine(kernel)
    assert {k: v[0] for k, v in ours.items()} == {k: v[0] for k, v in theirs.items()}
    # the zero tail saved as a hole (its 1 MiB takes no space), as the kernel copy leaves it
    tail = max(ours.values(), key=lambda v: len(v[0]))
    assert tail[1] * 1024 < len(tail[0]) - ZERO_TAIL // 2
    assert all(v[1] <= theirs[k][1] + 64 for k, v in ours.items())
    assert os.path.getsize(around / "t-0" / layout.log_file_name(0)) < BATCHES * 16_200
