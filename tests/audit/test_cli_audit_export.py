"""`logrepair audit` and `logrepair export` as an operator runs them, in a subprocess."""

from __future__ import annotations

import base64
import json
import re

import pyarrow.parquet as pq

from logrepair.audit.local import audit_paths
from logrepair.storage.layout import TopicPartition

from .conftest import run_cli
from .fleetgen import LogDirSpec, PartitionSpec, history, write_log_dir

T0 = TopicPartition("t", 0)


def test_audit_json_matches_the_library_and_exits_1_on_findings(fleet):
    proc = run_cli("audit", fleet.root, "--json")
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == ""
    out = json.loads(proc.stdout)
    # the CLI adds whether a live process holds each log dir's `.lock` (none here)
    assert [d.pop("locked_by_other_process") for d in out["log_dirs"]] == [False] * 3
    assert out == audit_paths([fleet.root]).to_json()
    assert out["clean"] is False
    p = out["partitions"][0]
    for key in (
        "path",
        "topic",
        "partition",
        "log_start_offset",
        "log_end_offset",
        "recovery_point",
        "high_watermark",
        "unflushed_bytes",
        "findings",
    ):
        assert key in p
    assert {"topic", "partition", "paths", "log_end_offsets", "diverged_at"} <= set(
        out["replicas"][0]
    )


def test_audit_table_and_html_report(fleet, tmp_path):
    report = tmp_path / "audit.html"
    proc = run_cli("audit", fleet.root, "--report", str(report), "--recovery-rate", "10MB")
    assert proc.returncode == 1, proc.stderr
    assert "recovery_point_beyond_end" in proc.stdout
    assert re.search(r"orders-1\s+b1,b2\s+40,40\s+40,40\s+24", proc.stdout)
    assert proc.stdout.rstrip().endswith(f"{len(fleet.expected)} findings")
    page = report.read_text()
    assert "http://" not in page and "https://" not in page  # self-contained
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    assert len(images) == 3
    assert all(base64.b64decode(i).startswith(b"\x89PNG") for i in images)


def test_clean_log_dir_exits_0(tmp_path):
    write_log_dir(str(tmp_path / "b1"), LogDirSpec(partitions={T0: PartitionSpec(history(3))}))
    proc = run_cli("audit", str(tmp_path / "b1"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.rstrip().endswith("clean")


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    for args in (
        ("audit", str(tmp_path / "nope")),
        ("audit", str(tmp_path), "--recovery-rate", "fast"),
        ("audit", str(tmp_path), "--out", str(tmp_path / "o")),
        ("export", str(tmp_path / "nope"), "--out", str(tmp_path / "o")),
    ):
        proc = run_cli(*args)
        assert proc.returncode == 2, args
        assert proc.stdout == ""
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def corrupt_second_batch(path) -> None:
    data = bytearray(path.read_bytes())
    first = int.from_bytes(data[8:12], "big") + 12
    data[first + 100] ^= 0xFF  # inside the records of batch 2: its CRC fails
    path.write_bytes(bytes(data))


def test_export_records_and_corrupt_flag(tmp_path):
    batches = history(6, records=5)
    write_log_dir(
        str(tmp_path / "b1"),
        LogDirSpec(
            partitions={
                T0: PartitionSpec(batches),
                TopicPartition("u", 3): PartitionSpec(batches[:1]),
            }
        ),
    )
    corrupt_second_batch(tmp_path / "b1" / "t-0" / "00000000000000000000.log")

    proc = run_cli("export", str(tmp_path / "b1"), "--out", str(tmp_path / "plain"), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {
        "out": str(tmp_path / "plain"),
        "files": 2,
        "records": 30,
        "skipped_batches": 0,
    }
    table = pq.read_table(tmp_path / "plain" / "t-0.parquet")
    assert table.column("offset").to_pylist() == [o for o in range(30) if not 5 <= o < 10]
    rows = table.to_pylist()
    assert rows[0]["key"] == b"k0" and rows[0]["headers"] == [{"key": "h", "value": b"v"}]
    assert rows[0]["timestamp"].timestamp() * 1000 == 1_700_000_000_000
    assert not any(r["corrupt"] for r in rows)

    proc = run_cli(
        "export", str(tmp_path / "b1"), "--out", str(tmp_path / "all"), "--include-corrupt"
    )
    assert proc.returncode == 0, proc.stderr
    rows = pq.read_table(tmp_path / "all" / "t-0.parquet").to_pylist()
    assert [r["offset"] for r in rows] == list(range(30))
    assert [r["offset"] for r in rows if r["corrupt"]] == list(range(5, 10))
    assert pq.read_table(tmp_path / "all").num_rows == 35


def test_legacy_message_sets_are_audited_and_exported(tmp_path):
    from logrepair.audit.export import export_local
    from logrepair.format.batch_layout import Record
    from logrepair.format.legacy import build_legacy_batch
    from logrepair.storage.osdisk import OsDisk

    v0 = build_legacy_batch(
        [Record(0, -1, b"a", b"x"), Record(1, -1, None, b"y")], magic=0, base_offset=0
    )
    v1 = build_legacy_batch(
        [Record(2, 1_700_000_000_000, b"b", None), Record(3, 1_700_000_000_005, b"c", b"z")],
        magic=1,
        base_offset=2,
        codec=1,  # gzip wrapper
    )
    spec = PartitionSpec([], recovery_point=4, high_watermark=4, leader_epochs=None)
    write_log_dir(str(tmp_path / "b1"), LogDirSpec(partitions={T0: spec}))
    (tmp_path / "b1" / "t-0" / "00000000000000000000.log").write_bytes(v0 + v1)
    report = audit_paths([str(tmp_path / "b1")])
    (p,) = report.partitions
    assert (p.log_end_offset, p.batches) == (4, 3)  # a compressed wrapper is one batch
    assert report.clean, report.all_findings()
    export_local(OsDisk(), str(tmp_path / "b1"), str(tmp_path / "out"))
    rows = pq.read_table(tmp_path / "out" / "t-0.parquet").to_pylist()
    assert [(r["offset"], r["key"], r["value"]) for r in rows] == [
        (0, b"a", b"x"),
        (1, None, b"y"),
        (2, b"b", None),
        (3, b"c", b"z"),
    ]
    assert [r["timestamp"] is None for r in rows] == [True, True, False, False]
