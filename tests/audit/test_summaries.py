"""`audit --summaries-out`: what a broker's summary holds, its incremental rescans, its errors.

The fleet audit over summaries is held equal to the direct audit in test_summaries_spark.py; here
the summary is checked against the scan itself, without Spark.
"""

from __future__ import annotations

import json
import os
import re
import time

import pyarrow as pa
import pyarrow.parquet as pq

from logrepair.audit.discovery import discover
from logrepair.audit.segments import summarize_segment
from logrepair.audit.summary_tables import FORMAT_VERSION, segment_rows, segment_summaries
from logrepair.audit.summary_writer import write_summaries
from logrepair.storage.layout import TopicPartition
from logrepair.storage.osdisk import OsDisk

from .conftest import run_cli
from .fleetgen import LogDirSpec, PartitionSpec, history, offsets_log, write_log_dir

T0 = TopicPartition("t", 0)
OFFSETS = TopicPartition("__consumer_offsets", 3)
EVENTS = [
    ("commit", "g", "t", 0, 5),
    ("txn", 7, "eos", "t", 0, 6),  # committed two segments later
    ("commit", "g", "t", 0, None),
    ("end", 7, True),
    ("txn", 9, "open", "t", 0, 3),  # still open at the end
]


def broker(tmp_path, **options) -> str:
    spec = LogDirSpec(
        partitions={
            T0: PartitionSpec(history(9, epochs={0: 0, 5: 2}), segment_batches=3, **options),
            OFFSETS: PartitionSpec(offsets_log(EVENTS), segment_batches=2),
        }
    )
    return age(write_log_dir(str(tmp_path / "b1"), spec))


def age(log_dir: str) -> str:
    """Sets every file's mtime an hour back: a stamp of a file modified just before it was taken
    is not trusted (timestamps are coarse), and these files were all written a moment ago."""
    for folder, _, files in os.walk(log_dir):
        for name in files:
            os.utime(os.path.join(folder, name), ns=(0, time.time_ns() - 3600 * 10**9))
    return log_dir


def table(dest: str, name: str) -> pa.Table:
    (path,) = [
        os.path.join(folder, name + ".parquet")
        for folder, _, files in os.walk(dest)
        if name + ".parquet" in files
    ]
    return pq.read_table(path)


def test_the_summary_holds_what_the_scan_found(tmp_path):
    log_dir = broker(tmp_path, tail=b"\0" * 30)
    (written,) = write_summaries([log_dir], str(tmp_path / "dest"))
    assert written.broker == "node-1" and written.previous == "none"
    assert written.path.endswith("/cluster=MkU3OEVBNTcwNTJENDM2Qg/broker=node-1")
    assert (written.segments, written.scanned) == (3 + 3, 6)
    assert written.summary_bytes == sum(
        os.path.getsize(os.path.join(written.path, f)) for f in os.listdir(written.path)
    )
    (manifest,) = table(written.path, "broker").to_pylist()
    assert manifest["format_version"] == FORMAT_VERSION and manifest["segments_scanned"] == 6

    segments = table(written.path, "segments")
    plans = discover(OsDisk(), [log_dir])
    for p in plans[0].partitions:
        rows = segments.filter(pa.compute.equal(segments["partition_dir"], p.path))
        got = segment_summaries(segment_rows(rows), lambda path: path)
        want = [summarize_segment(OsDisk(), t) for t in p.segments]
        assert [(s.task, s.batches, s.valid_end, s.first_offset, s.next_offset) for s in got] == [
            (s.task, s.batches, s.valid_end, s.first_offset, s.next_offset) for s in want
        ]
        assert [(s.defects, s.digests, s.epochs) for s in got] == [
            (s.defects, s.digests, s.epochs) for s in want
        ]
        assert [(s.commits, s.open_transactions, s.transaction_ends) for s in got] == [
            (s.commits, s.open_transactions, s.transaction_ends) for s in want
        ]
    assert any(d["kind"] == "garbage_tail" for d in sum(segments["defects"].to_pylist(), []))
    sizes = sum(segments["batch_size"].to_pylist(), [])
    assert sum(sizes) == sum(segments["valid_end"].to_pylist())  # batches are contiguous
    epochs = segments.filter(pa.compute.equal(segments["topic"], "t"))["batch_leader_epoch"]
    assert set(sum(epochs.to_pylist(), [])) == {0, 2}

    (d,) = table(written.path, "log_dirs").to_pylist()
    assert (d["path"], d["node_id"], d["clean_shutdown"]) == (log_dir, 1, True)
    assert {(c["file"], c["topic"], c["offset"]) for c in d["checkpoints"]} >= {
        ("recovery-point-offset-checkpoint", "t", 36),
        ("replication-offset-checkpoint", "__consumer_offsets", 5),
    }
    parts = table(written.path, "partitions").to_pylist()
    assert [(p["topic"], p["recovery_point"], p["leader_epochs"]) for p in parts] == [
        ("__consumer_offsets", 5, [{"epoch": 0, "start_offset": 0}]),
        ("t", 36, [{"epoch": 0, "start_offset": 0}, {"epoch": 2, "start_offset": 20}]),
    ]


def segments_scanned(tmp_path, log_dir: str, **options) -> tuple[int, str]:
    (written,) = write_summaries([log_dir], str(tmp_path / "dest"), **options)
    return written.scanned, written.previous


def test_a_second_run_rescans_only_changed_segments(tmp_path):
    log_dir = broker(tmp_path)
    first = table(*[write_summaries([log_dir], str(tmp_path / "dest"))[0].path, "segments"])
    assert segments_scanned(tmp_path, log_dir) == (0, "used")
    second = table(*[str(tmp_path / "dest"), "segments"])
    key = ["file"]
    assert second.sort_by(key[0]).equals(first.sort_by(key[0]))

    # a sealed segment rewritten in place, same size, its mtime set back: the ctime tells
    sealed = os.path.join(log_dir, "t-0", "00000000000000000012.log")
    st = os.stat(sealed)
    with open(sealed, "r+b") as f:
        f.seek(100)
        f.write(b"\xff\xfe")
    os.utime(sealed, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(sealed).st_size == st.st_size and os.stat(sealed).st_mtime_ns == st.st_mtime_ns
    assert segments_scanned(tmp_path, log_dir) == (1, "used")
    row = table(str(tmp_path / "dest"), "segments").to_pylist()
    (changed,) = [r for r in row if r["file"] == sealed]
    assert [d["kind"] for d in changed["defects"]] == ["crc_mismatch"]

    # a segment replaced by a rename (as compaction does), same size and mtime: a new inode
    other = os.path.join(log_dir, "t-0", "00000000000000000000.log")
    st = os.stat(other)
    with open(other, "rb") as f:
        data = f.read()
    with open(other + ".swap", "wb") as f:
        f.write(data)
    os.utime(other + ".swap", ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(other + ".swap", other)
    assert segments_scanned(tmp_path, log_dir) == (1, "used")

    # a new segment and a deleted one; then everything with --full-rescan
    os.remove(os.path.join(log_dir, "__consumer_offsets-3", "00000000000000000000.log"))
    assert segments_scanned(tmp_path, log_dir) == (0, "used")
    assert len(table(str(tmp_path / "dest"), "segments")) == 5
    assert segments_scanned(tmp_path, log_dir, full_rescan=True) == (5, "not used: --full-rescan")


def test_a_segment_modified_just_before_its_stamp_is_scanned_again(tmp_path):
    log_dir = broker(tmp_path)
    recent = os.path.join(log_dir, "t-0", "00000000000000000000.log")
    os.utime(recent)  # now: a write in the same clock tick as the stamp would not show
    assert segments_scanned(tmp_path, log_dir) == (6, "none")
    assert segments_scanned(tmp_path, log_dir) == (1, "used")


def test_a_summary_of_another_version_is_not_reused(tmp_path):
    log_dir = broker(tmp_path)
    (written,) = write_summaries([log_dir], str(tmp_path / "dest"))
    path = os.path.join(written.path, "broker.parquet")
    manifest = pq.read_table(path)
    pq.write_table(manifest.set_column(0, "format_version", pa.array([99], pa.int32())), path)
    assert segments_scanned(tmp_path, log_dir) == (
        6,
        "not used: written as format 99 of logrepair 0.1.0",
    )


def test_the_fleet_audit_refuses_another_format_version_in_one_line(tmp_path):
    """Before Spark starts: the manifests are read on the driver."""
    log_dir = broker(tmp_path)
    (written,) = write_summaries([log_dir], str(tmp_path / "dest"))
    path = os.path.join(written.path, "broker.parquet")
    good = pq.read_table(path)
    for version, age_ in ((99, "a newer"), (0, "an older")):
        pq.write_table(good.set_column(0, "format_version", pa.array([version], pa.int32())), path)
        proc = run_cli("audit", "--spark", "local[1]", "--from-summaries", str(tmp_path / "dest"))
        assert proc.returncode == 2
        assert proc.stderr == (
            f"logrepair audit: {tmp_path / 'dest'}: the summary of broker node-1 of cluster "
            f"MkU3OEVBNTcwNTJENDM2Qg is in format version {version}, {age_} one than this "
            f"logrepair reads ({FORMAT_VERSION}): write it again with this logrepair's "
            "`audit --summaries-out`\n"
        )
    pq.write_table(good, path)
    write_summaries([log_dir], str(tmp_path / "again"))
    proc = run_cli(
        "audit", "--spark", "--from-summaries", str(tmp_path / "dest"), str(tmp_path / "again")
    )
    assert proc.returncode == 2 and "broker node-1 of cluster" in proc.stderr
    assert "is in both" in proc.stderr and len(proc.stderr.splitlines()) == 1


def test_file_uri_destination_and_broker_label(tmp_path):
    log_dir = broker(tmp_path)
    (written,) = write_summaries([log_dir], f"file://{tmp_path}/dest", broker="kafka-7.example")
    where = f"{tmp_path}/dest/cluster=MkU3OEVBNTcwNTJENDM2Qg/broker=kafka-7.example"
    assert written.path == f"file://{where}"
    assert os.path.exists(os.path.join(where, "segments.parquet"))
    assert not [n for n in os.listdir(where) if n.startswith(".")]  # no temporary left


def test_cli_summaries_out(tmp_path):
    log_dir = broker(tmp_path)
    proc = run_cli("audit", log_dir, "--summaries-out", str(tmp_path / "dest"), "--json")
    assert proc.returncode == 0, proc.stderr
    (out,) = json.loads(proc.stdout)["summaries"]
    assert (out["broker"], out["segments_scanned"], out["previous"]) == ("node-1", 6, "none")
    assert out["summary_bytes"] > 0 and out["log_bytes"] == out["scanned_bytes"]
    proc = run_cli("audit", log_dir, "--summaries-out", str(tmp_path / "dest"))
    assert proc.returncode == 0, proc.stderr
    assert "6 segments (0 scanned, 6 unchanged since the last summary)" in proc.stdout


def test_cli_refuses_mixed_modes_in_one_line(tmp_path):
    log_dir = broker(tmp_path)
    (tmp_path / "a-file").write_text("")
    for args, expected in [
        ([log_dir, "--summaries-out", str(tmp_path / "a-file")], "cannot write there"),
        (["--from-summaries", "x"], "--from-summaries needs --spark"),
        ([log_dir, "--spark", "--from-summaries", "x"], "not PATHs"),
        (["--spark", "--from-summaries", log_dir], "no summaries there"),
        ([log_dir, "--summaries-out", "d", "--report", "r.html"], "--report belongs to"),
        ([log_dir, "--full-rescan"], "need --summaries-out"),
        ([log_dir, "--summaries-out", "s3://"], "s3://"),
    ]:
        proc = run_cli("audit", *args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1 and expected in proc.stderr, proc.stderr


def test_the_readme_lists_every_summary_table_and_column():
    from pathlib import Path

    from logrepair.audit.summary_tables import SCHEMAS, TABLES

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("**On each broker: `--summaries-out DEST`.**", 1)[1]
    section = section.split("**Incremental.**", 1)[0]
    for name in TABLES:
        row = next(line for line in section.splitlines() if line.startswith(f"| `{name}` |"))
        documented = set(re.findall(r"`([a-z_]+)`", row))
        assert set(SCHEMAS[name].names) <= documented, name
