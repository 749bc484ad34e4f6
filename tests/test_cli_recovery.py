"""verify, repair, undo, rebuild-index and demo through the real CLI, in a subprocess."""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from logrepair.recovery.invariants import tree_digest
from logrepair.storage import layout
from logrepair.storage.osdisk import OsDisk

from .contracts import REPAIR_KEYS, REPAIR_PARTITION_KEYS
from .recovery.builders import (
    batches,
    flip_byte,
    log_with_records,
    segment_files,
    write_offsets,
    write_segment,
)

REPO = Path(__file__).resolve().parents[1]
DISK = OsDisk()


def cli(*args: str, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("LOGREPAIR_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "logrepair", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd or REPO,
        timeout=timeout,
    )


def one_line_error(proc: subprocess.CompletedProcess) -> None:
    assert proc.returncode == 2, proc
    assert proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.fixture
def damaged(tmp_path) -> Path:
    d = tmp_path / "kafka-logs"
    pdir = d / "orders-0"
    write_segment(pdir, 0, batches(0, 10))
    write_segment(pdir, 10, batches(10, 10))
    flip_byte(segment_files(pdir)[0], 700)
    with open(segment_files(pdir)[1], "ab") as f:
        f.write(bytes(64))
    write_offsets(d, layout.RECOVERY_POINT_CHECKPOINT, {("orders", 0): 10})
    return d


def test_verify_clean_dir_exits_0_with_the_json_contract(tmp_path):
    d = tmp_path / "kafka-logs"
    log_with_records(d / "t-0", 30)
    write_offsets(d, layout.RECOVERY_POINT_CHECKPOINT, {("t", 0): 30})
    proc = cli("verify", str(d), "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["clean"] is True and out["defects"] == []
    (p,) = out["partitions"]
    assert set(p) >= {
        "path", "topic", "partition", "log_start_offset", "log_end_offset", "segments", "bytes",
        "defects",
    }  # fmt: skip
    assert (p["topic"], p["partition"], p["log_end_offset"]) == ("t", 0, 30)


def test_verify_damaged_dir_exits_1_and_names_every_defect(damaged):
    proc = cli("verify", str(damaged), "--json")
    assert proc.returncode == 1
    out = json.loads(proc.stdout)
    defects = out["partitions"][0]["defects"]
    assert {d["kind"] for d in defects} == {"crc_mismatch", "garbage_tail"}
    for d in defects:
        assert set(d) == {
            "kind",
            "severity",
            "file",
            "position",
            "length",
            "offset",
            "last_offset",
            "detail",
        }
        assert d["severity"] == "damage"
    human = cli("verify", str(damaged))
    assert human.returncode == 1
    assert "crc_mismatch" in human.stdout
    # each mode that fixes it, with what its repair would cost here (the corrupt batch is below
    # the recovery point, where kafka mode leaves it)
    assert (
        "fixed by: point-in-time (removes offsets 3..19), salvage (removes offset 3)"
        in human.stdout
    )


def test_a_notice_is_reported_but_verify_and_audit_stay_clean(tmp_path):
    # What a broker leaves after a compaction until file.delete.delay.ms passes.
    log_dir = tmp_path / "logs"
    write_segment(log_dir / "t-0", 0, batches(0, 3))
    (log_dir / "t-0" / "00000000000000000000.log.deleted").write_bytes(b"old segment")
    proc = cli("verify", str(log_dir), "--json")
    out = json.loads(proc.stdout)
    assert proc.returncode == 0 and out["clean"] is True
    (d,) = out["partitions"][0]["defects"]
    assert (d["kind"], d["severity"]) == ("deleted_leftover", "notice")
    human = cli("verify", str(log_dir))
    assert human.returncode == 0 and "0 damage, 1 notice(s):" in human.stdout
    audit = json.loads(cli("audit", str(log_dir), "--json").stdout)
    found = {f["kind"]: f["severity"] for p in audit["partitions"] for f in p["findings"]}
    assert found["deleted_leftover"] == "notice"
    (log_dir / "t-0" / "00000000000000000000.log.deleted").unlink()
    assert json.loads(cli("audit", str(log_dir), "--json").stdout)["clean"] == audit["clean"]


def test_a_segment_name_with_a_negative_base_offset_is_a_notice_every_command_reads(tmp_path):
    """Long.parseLong takes `-5.log`; Kafka 4.1.1 then opens an empty segment
    `-00000000000000000005.log` beside it (checked with the harness) and never reads its bytes."""
    log_dir = tmp_path / "logs"
    pdir = log_dir / "t-0"
    write_segment(pdir, 0, batches(0, 3))
    (pdir / "-5.log").write_bytes(segment_files(pdir)[0].read_bytes())
    (pdir / "-5.index").write_bytes(bytes(8))
    before = tree_digest(OsDisk(), str(log_dir))
    out = json.loads(cli("verify", str(log_dir), "--json").stdout)
    found = {d["file"]: d for d in out["partitions"][0]["defects"]}
    assert found["t-0/-5.log"]["kind"] == "stray_file"
    assert "-00000000000000000005.log" in found["t-0/-5.log"]["detail"]
    for args in (
        ["audit", str(log_dir)],
        ["rebuild-index", str(log_dir), "--dry-run"],
        ["dump", str(pdir / "-5.log")],
    ):
        proc = cli(*args)
        assert proc.returncode in (0, 1) and proc.stderr == "", proc.stderr
    q = tmp_path / "q"
    proc = cli("repair", str(log_dir), "--mode", "kafka", "--quarantine", str(q))
    assert proc.returncode == 0, proc.stderr
    assert (pdir / "-5.log").exists()  # never Kafka's: left as it is
    assert cli("undo", str(q), "--latest").returncode == 0
    assert tree_digest(OsDisk(), str(log_dir)) == before


@pytest.mark.parametrize(
    "args",
    [
        ["verify", "/no/such/dir"],
        ["verify", __file__],
        ["repair", "/no/such/dir", "--mode", "kafka"],
        ["repair", ".", "--mode", "nonsense"],
        ["undo", "/no/such/quarantine"],
        ["rebuild-index", "/no/such/dir"],
        ["verify", ".", "--topic-config", "no-colon"],
        ["verify", ".", "--index-interval-bytes", "-3"],
        ["verify", ".", "--config", "/no/such/server.properties"],
        ["repair", ".", "--mode", "kafka", "--follow-symlinks-into", "/no/such/dir"],
        ["rebuild-index", ".", "--follow-symlinks-into", __file__],
    ],
)
def test_bad_input_is_one_line_and_exit_2(args):
    one_line_error(cli(*args))


def test_an_empty_directory_is_not_a_log_dir(tmp_path):
    one_line_error(cli("verify", str(tmp_path)))


def test_dry_run_changes_nothing(damaged):
    before = tree_digest(DISK, str(damaged.parent))
    proc = cli("repair", str(damaged), "--mode", "salvage", "--dry-run", "--json")
    assert proc.returncode == 1
    out = json.loads(proc.stdout)
    assert out["applied"] is False and out["quarantine"] is None and out["actions"]
    assert tree_digest(DISK, str(damaged.parent)) == before


def test_the_defects_a_mode_leaves_say_what_each_other_mode_would_cost(damaged):
    # kafka mode cuts a torn tail (offsets 20..21) and leaves the corrupt batch at offset 3, below the
    # recovery point; the hint for it is what each other mode would remove beyond that repair
    with open(segment_files(damaged / "orders-0")[1], "r+b") as f:
        f.truncate(f.seek(0, 2) - 64)
        f.write(batches(20, 1)[0] + batches(21, 1)[0][:40])
    write_offsets(damaged, layout.REPLICATION_CHECKPOINT, {("orders", 0): 22})
    hint = (
        "crc_mismatch                   orders-0/00000000000000000000.log  (fixed by: "
        "point-in-time (removes offsets 3..19; acknowledged offsets lost 3..19), "
        "salvage (removes offset 3; acknowledged offsets lost 3))"
    )
    dry = cli("repair", str(damaged), "--mode", "kafka", "--dry-run")
    assert dry.returncode == 1 and f"  {hint}\n" in dry.stdout, dry.stdout
    applied = cli("repair", str(damaged), "--mode", "kafka")
    assert applied.returncode == 1 and f"  {hint}\n" in applied.stdout, applied.stdout
    # what it said is what each mode's dry run now removes
    for mode, removed in (("point-in-time", [[3, 19]]), ("salvage", [[3, 3]])):
        then = json.loads(cli("repair", str(damaged), "--mode", mode, "--dry-run", "--json").stdout)
        (loss,) = then["partitions"]
        assert loss["removed_offsets"] == removed and loss["acknowledged_lost"] == removed, loss


def test_repair_json_contract_then_undo_restores_every_byte(damaged):
    before = tree_digest(DISK, str(damaged))
    proc = cli("repair", str(damaged), "--mode", "salvage", "--json")
    assert proc.returncode == 1, proc.stderr  # log bytes were removed
    out = json.loads(proc.stdout)
    assert set(out) >= REPAIR_KEYS
    assert out["mode"] == "salvage" and out["applied"] is True
    assert all("action" in a for a in out["actions"])
    assert out["removed_offsets"] == [[3, 3]]
    (orders,) = out["partitions"]
    assert set(orders) >= REPAIR_PARTITION_KEYS
    assert (orders["topic"], orders["partition"]) == ("orders", 0)
    assert orders["removed_offsets"] == orders["gaps"] == [[3, 3]]
    assert orders["acknowledged_lost"] == []  # no high watermark checkpointed
    assert orders["high_watermark"] == [None, None]
    assert orders["recovery_point"] == [10, 20]  # flushed to the new log end
    quarantine = Path(out["quarantine"])
    assert quarantine.parent == damaged.parent / "kafka-logs.logrepair-quarantine"
    assert cli("verify", str(damaged)).returncode == 0
    again = json.loads(cli("repair", str(damaged), "--mode", "salvage", "--json").stdout)
    assert again["actions"] == [] and again["applied"] is False
    undone = cli("undo", str(quarantine))
    assert undone.returncode == 0, undone.stderr
    assert tree_digest(DISK, str(damaged)) == before
    assert cli("undo", str(quarantine)).stdout.strip().endswith("already undone")


def test_undo_refuses_a_log_dir_changed_since_the_repair(damaged):
    out = json.loads(cli("repair", str(damaged), "--mode", "salvage", "--json").stdout)
    with open(segment_files(damaged / "orders-0")[-1], "ab") as f:
        f.write(batches(20, 1)[0])  # as a broker started after the repair would append
    after = tree_digest(DISK, str(damaged))
    proc = cli("undo", out["quarantine"], "--json")
    one_line_error(proc)
    assert "since the repair; refusing to undo" in proc.stderr
    assert tree_digest(DISK, str(damaged)) == after


def test_repair_refuses_a_log_dir_whose_lock_a_live_process_holds(damaged):
    lock = damaged / ".lock"
    lock.write_bytes(b"")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl,sys,time; f=open(sys.argv[1],'r+'); fcntl.lockf(f, fcntl.LOCK_EX); "
            "print('locked', flush=True); time.sleep(60)",
            str(lock),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        before = tree_digest(DISK, str(damaged.parent))
        proc = cli("repair", str(damaged), "--mode", "kafka")
        one_line_error(proc)
        assert "lock" in proc.stderr
        assert tree_digest(DISK, str(damaged.parent)) == before
    finally:
        holder.kill()
        holder.wait()
    # kafka mode only cuts the zero padding (the corrupt batch is below the recovery point)
    assert cli("repair", str(damaged), "--mode", "kafka").returncode == 0


def test_quarantine_inside_the_log_dir_is_refused(damaged):
    before = tree_digest(DISK, str(damaged))
    one_line_error(
        cli("repair", str(damaged), "--mode", "kafka", "--quarantine", str(damaged / "q"))
    )
    assert tree_digest(DISK, str(damaged)) == before


def test_a_symlink_in_the_log_dir_is_reported_and_never_followed(damaged, tmp_path):
    outside = tmp_path / "elsewhere"
    write_segment(outside, 0, [b"\x00" * 100], indexes=False)
    os.symlink(outside / "00000000000000000000.log", damaged / "orders-0" / "link.log")
    before = (outside / "00000000000000000000.log").read_bytes()
    out = json.loads(cli("verify", str(damaged), "--json").stdout)
    kinds = {d["kind"] for d in out["partitions"][0]["defects"]}
    assert "symlink" in kinds
    assert "link.log" in out["partitions"][0]["left_alone"]
    segment = (damaged / "orders-0" / "00000000000000000000.log").read_bytes()
    proc = cli("repair", str(damaged), "--mode", "salvage")
    assert proc.returncode != 2 and "orders-0: left as it is" in proc.stdout
    assert (outside / "00000000000000000000.log").read_bytes() == before
    assert (damaged / "orders-0" / "link.log").is_symlink()
    # the partition holding the link is left as it is: its damage is reported, not repaired
    assert (damaged / "orders-0" / "00000000000000000000.log").read_bytes() == segment


def test_settings_from_server_properties_and_topic_overrides(tmp_path):
    d = tmp_path / "kafka-logs"
    pdir = d / "orders-0"
    write_segment(pdir, 0, batches(0, 40), indexes=False)
    props = tmp_path / "server.properties"
    props.write_text(
        textwrap.dedent(
            """\
            # broker settings
            log.index.interval.bytes = 1000
            message.max.bytes=2000000
            """
        )
    )
    assert cli("repair", str(d), "--mode", "kafka", "--config", str(props)).returncode == 0
    entries_1000 = (pdir / layout.index_file_name(0)).stat().st_size // 8
    (pdir / layout.index_file_name(0)).unlink()
    proc = cli("repair", str(d), "--mode", "kafka", "--config", str(props),
               "--topic-config", "orders:index.interval.bytes=300")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    entries_300 = (pdir / layout.index_file_name(0)).stat().st_size // 8
    assert entries_1000 == 6 and entries_300 == 19


def test_rebuild_index_writes_what_kafka_recovery_writes(tmp_path):
    d = tmp_path / "kafka-logs"
    pdir = d / "t-0"
    log_with_records(pdir, 80, segment_bytes=4000, index_interval_bytes=300)
    for idx in segment_files(pdir, layout.INDEX_SUFFIX):
        idx.write_bytes(b"  ")  # testCorruptIndexRebuild's corruption
    log_with_records(d / "u-0", 5, index_interval_bytes=300)  # nothing to rebuild there
    dry = cli("rebuild-index", str(d), "--index-interval-bytes", "300", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    # one summary line, per partition, in offsets (README "Notation")
    assert dry.stdout.splitlines()[-1] == (
        f"summary: rebuild-index of {d} planned (dry run, nothing changed yet): t-0 offset and "
        "time indexes of offsets 0..79 (4 segments) rewritten; no record changed"
    )
    proc = cli("rebuild-index", str(d), "--index-interval-bytes", "300", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["applied"] and {a["action"] for a in out["actions"]} == {"rebuild_indexes"}
    assert cli("verify", str(d), "--index-interval-bytes", "300").returncode == 0
    again = json.loads(
        cli("rebuild-index", str(d), "--index-interval-bytes", "300", "--json").stdout
    )
    assert again["actions"] == []
    done = cli("rebuild-index", str(d), "--index-interval-bytes", "300").stdout.splitlines()[-1]
    assert done == (
        f"summary: rebuild-index of {d}: every index agrees with its log, nothing changed"
    )


def test_demo_runs_the_main_job_and_ends_clean(tmp_path):
    proc = cli("demo", "--dir", str(tmp_path / "demo"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for step in (
        "1. a sample broker log dir",
        "logrepair verify",
        "--dry-run",
        "clean: no defects",
    ):
        assert step in proc.stdout
    assert (tmp_path / "demo" / "kafka-logs").is_dir()
    # the closing undo hint points at a quarantine that is still there
    undo_line = proc.stdout.strip().splitlines()[-1]
    quarantine = undo_line.split("`logrepair undo ", 1)[1].split("`", 1)[0]
    assert Path(quarantine).is_dir() and str(tmp_path / "demo") in quarantine


def test_the_demo_in_a_temporary_directory_gives_no_undo_command(tmp_path):
    proc = cli("demo", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    closing = "\n".join(proc.stdout.strip().splitlines()[-2:])
    assert "logrepair undo /" not in closing and "--dir DIR" in closing


def test_a_run_in_the_callers_process_gives_the_collector_back_as_it_found_it(damaged, tmp_path):
    """The CLI collects young objects less often while it runs (cli.YOUNG_COLLECTION_THRESHOLD)
    and keeps what its imports made out of full collections; a caller that runs it in its own
    process gets the collector back as it was, after a run and after a refused one (exit 2)."""
    from logrepair.cli import main

    gc.set_threshold(500, 7, 9)  # (not the default: a caller's own)
    frozen = gc.get_freeze_count()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            assert (
                main(["repair", "--mode", "kafka", "--dry-run", "--jobs", "1", str(damaged)]) != 2
            )
            assert gc.get_threshold() == (500, 7, 9)
            assert main(["verify", str(tmp_path / "no-such-dir")]) == 2
        assert gc.get_threshold() == (500, 7, 9)
        assert gc.get_freeze_count() == frozen
    finally:
        gc.set_threshold(700, 10, 10)


@pytest.mark.parametrize("module", ["logrepair", "logrepair.cli"])
def test_bad_input_is_one_line_whichever_module_runs_the_cli(tmp_path, module) -> None:
    """`python -m logrepair.cli` runs cli.py as a second module (`__main__`): the commands' InputError
    is still bad input (exit 2, one line), not an internal error."""
    missing = str(tmp_path / "missing")
    done = subprocess.run(
        [sys.executable, "-m", module, "verify", missing],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"logrepair: {missing}: no such directory"]
