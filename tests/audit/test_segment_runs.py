"""The audit's summary runs change nothing it says: tallied in runs (in C, or the pure-Python
reference) or batch by batch, a segment's summary is the same, and so are the CLI's JSON, its
Parquet summaries and its exit status with the accelerator on and off."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from logrepair.audit.model import SegmentTask
from logrepair.audit.segments import summarize_segment
from logrepair.format.batch_builder import build_batch
from logrepair.format.batch_layout import Record
from logrepair.storage import layout
from logrepair.storage.osdisk import OsDisk

from ..format.test_summary_runs import logs
from .conftest import Fleet

DISK = OsDisk()
INT_MAX = 2**31 - 1


@settings(max_examples=60)
@given(
    log=logs(),
    shift=st.sampled_from([0, 0, 0, 1, 3, -3, -INT_MAX]),
    recovery_point=st.none() | st.integers(0, 2**41),
    digests=st.booleans(),
    details=st.booleans(),
    near_cut=st.booleans(),
    listed=st.sampled_from([0, 0, 0, -1, 1, 100]),
)
def test_runs_tally_what_one_batch_at_a_time_does(
    tmp_path_factory, log, shift, recovery_point, digests, details, near_cut, listed
):
    """Valid, damaged and legacy bytes; batches the segment's name cannot hold (below its base,
    past its int32 relative offsets); recovery points before, inside and after the data; a file
    that grew or shrank since it was listed (`listed`: its listed size minus its size)."""
    raw, first = log
    base = max(0, first + shift)
    if near_cut and recovery_point is not None:
        recovery_point = first + recovery_point % 64
    folder = tmp_path_factory.mktemp("runs")
    path = os.path.join(folder, layout.log_file_name(base))
    with open(path, "wb") as f:
        f.write(raw)
    size = max(0, len(raw) + listed)
    task = SegmentTask(str(folder), str(folder), "t", 0, path, base, size, 0)
    options = {"details": details, "digests": digests, "recovery_point": recovery_point}
    try:
        runs = summarize_segment(DISK, task, **options)
        one_by_one = summarize_segment(DISK, task, runs=False, **options)
    finally:
        shutil.rmtree(folder)
    assert runs == one_by_one


def test_a_segment_at_the_top_of_the_offsets(tmp_path):
    """Offsets up to 2^63 - 1 (names Kafka accepts): the runs stop short of int64's end, and the
    last batch, taken one at a time, gives what batch by batch gives."""
    base = 2**63 - 10
    raw = build_batch([Record(base + i, 1, None, b"v", ()) for i in range(3)], base_offset=base)
    raw += build_batch([Record(2**63 - 1, 2, None, b"w", ())], base_offset=2**63 - 1)
    path = tmp_path / layout.log_file_name(base)
    path.write_bytes(raw)
    task = SegmentTask(str(tmp_path), str(tmp_path), "t", 0, str(path), base, len(raw), 0)
    for options in ({}, {"details": True, "recovery_point": 2**63 - 1}):
        runs = summarize_segment(DISK, task, **options)
        assert runs == summarize_segment(DISK, task, runs=False, **options)
        assert (runs.batches, runs.next_offset, runs.defects) == (2, 2**63, [])


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k != "LOGREPAIR_PURE_PYTHON"} | env
    return subprocess.run(
        [sys.executable, "-m", "logrepair", "audit", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=environ,
    )


def _tables(dest: str) -> dict[str, list[dict]]:
    """Every Parquet table under `dest`, but when it was written."""
    out = {}
    for folder, _, files in os.walk(dest):
        for name in sorted(files):
            rows = pq.read_table(os.path.join(folder, name)).to_pylist()
            for row in rows:
                row.pop("written_at", None)
                row.pop("stamped_at", None)
            out[name] = rows
    return out


def test_the_audit_says_the_same_with_the_accelerator_on_and_off(fleet: Fleet, tmp_path):
    """The fleet (replicas compared from their digests, consumer offsets, an unclean broker) with
    damage added: a flipped byte mid-segment and a torn tail."""
    root = str(tmp_path / "fleet")
    shutil.copytree(fleet.root, root)
    first = os.path.join(root, "b1", "orders-0", layout.log_file_name(0))
    with open(first, "r+b") as f:
        f.seek(os.path.getsize(first) // 2)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0x20]))
    with open(os.path.join(root, "b2", "payments-1", layout.log_file_name(0)), "ab") as f:
        f.write(b"\x00\x00\x00\x00\x00\x00\x00\x07\x00\x00\x10\x00torn")
    brokers = [os.path.join(root, b) for b in ("b1", "b2", "b3")]
    seen = []
    for env in ({}, {"LOGREPAIR_PURE_PYTHON": "1"}):
        audit = _cli(env, "--json", "--jobs", "1", *brokers)
        dest = str(tmp_path / f"summaries-{len(seen)}")
        summaries = _cli(env, "--summaries-out", dest, "--jobs", "1", brokers[0])
        assert summaries.returncode == 0, summaries.stderr
        seen.append((audit.returncode, audit.stdout, audit.stderr, _tables(dest)))
    (code, out, err, tables), pure = seen
    assert code == 1 and err == "" and json.loads(out)["partitions"]
    assert tables["segments.parquet"]
    assert (code, out, err, tables) == pure
