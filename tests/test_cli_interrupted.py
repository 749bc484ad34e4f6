"""Runs of the real CLI killed half way (a real SIGKILL), other processes on the same log dir (a
broker written with the project's own storage, a second repair, a lock holder), and every path that
names the same log dir: no interleaving, no stale replay, nothing lost."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from logrepair.format.batch import RecordBatch
from logrepair.recovery.invariants import tree_digest
from logrepair.recovery.journal import ABANDONED, APPLYING, UNDONE, Journal, runs_under
from logrepair.storage import layout
from logrepair.storage.layout import TopicPartition
from logrepair.storage.log import ProducerRecord
from logrepair.storage.log_config import LogConfig
from logrepair.storage.logdir import LogDir
from logrepair.storage.osdisk import OsDisk

from .test_cli_recovery import REPO, cli, one_line_error

DISK = OsDisk()
T0 = TopicPartition("t", 0)

STOPPED_AFTER_ACTIONS = textwrap.dedent(
    """
    import os, signal, sys
    from logrepair.cli import main
    from logrepair.recovery import apply

    applied = 0
    real = apply._apply

    def _apply(journal, entry, rebuild):
        # the action runs and is durable; then, before the journal counts it, the process dies
        # (KILL) or says so and waits for its stdin to close (PAUSE)
        global applied
        real(journal, entry, rebuild)
        applied += 1
        if applied == int(os.environ.get("KILL_AFTER_ACTIONS", -1)):
            os.kill(os.getpid(), signal.SIGKILL)
        if applied == int(os.environ.get("PAUSE_AFTER_ACTIONS", -1)):
            print("paused", flush=True)
            sys.stdin.read()

    apply._apply = _apply
    sys.exit(main(sys.argv[1:]))
    """
)


def _stopped_repair(path: Path, how: str, after: int) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO), **{f"{how}_AFTER_ACTIONS": str(after)})
    cmd = [sys.executable, "-c", STOPPED_AFTER_ACTIONS, "repair", str(path), "--mode", "kafka"]
    return subprocess.Popen(
        cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
        text=True,
    )  # fmt: skip


def killed_repair(path: Path, after: int) -> None:
    """`logrepair repair PATH --mode kafka` SIGKILLed once `after` actions are applied."""
    proc = _stopped_repair(path, "KILL", after)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL, err


class PausedRepair:
    """`logrepair repair PATH --mode kafka` holding its lock, paused after `after` actions."""

    def __init__(self, path: Path, after: int) -> None:
        self.proc = _stopped_repair(path, "PAUSE", after)
        assert self.proc.stdout.readline().strip() == "paused", self.proc.stderr.read()

    def finish(self) -> int:
        self.proc.communicate(timeout=120)
        return self.proc.returncode

    def kill(self) -> None:
        self.proc.kill()
        self.proc.communicate(timeout=120)


def broker_log_dir(d: Path) -> Path:
    """Two partitions written by the project's `Log` as a broker writes them, then a crash: no
    clean-shutdown marker, and a torn write at the end of t-0's active segment."""
    with LogDir.open(DISK, str(d), LogConfig(segment_bytes=2000), create=True) as ld:
        for tp in (T0, TopicPartition("u", 0)):
            log = ld.create_log(tp)
            for i in range(30):
                log.append([ProducerRecord(b"k%d" % i, bytes(100))], leader_epoch=0)
            log.update_high_watermark(log.log_end_offset)
    (d / layout.CLEAN_SHUTDOWN_FILE).unlink()
    active = sorted((d / "t-0").glob("*.log"))[-1]
    with open(active, "ab") as f:
        f.write(random.Random(300).randbytes(300))  # junk: not a batch
    return d


def broker_appends(d: Path, count: int) -> int:
    """A broker started on D: recovers it (as Kafka does), appends `count` records to t-0 and
    shuts down cleanly; returns t-0's log end."""
    with LogDir.open(DISK, str(d), LogConfig(segment_bytes=2000)) as ld:
        log = ld.logs[T0]
        for i in range(count):
            log.append([ProducerRecord(b"new%d" % i, bytes(50))], leader_epoch=0)
        log.update_high_watermark(log.log_end_offset)
        return log.log_end_offset


def records_of(d: Path) -> list[bytes]:
    """The keys of t-0's records, read back through the project's `Log`."""
    with LogDir.open(DISK, str(d), LogConfig(segment_bytes=2000)) as ld:
        log = ld.logs[T0]
        keys, offset = [], log.log_start_offset
        while offset < log.log_end_offset:
            data = log.read(offset, 1 << 20).data
            position = 0
            while position < len(data):
                batch = RecordBatch.parse(data, position)
                keys += [r.key for r in batch.records()]
                offset, position = batch.last_offset + 1, position + batch.size
        return keys


def the_run(d: Path) -> Journal:
    [run] = runs_under(DISK, str(d) + ".logrepair-quarantine")
    return run


@pytest.fixture
def log_dir(tmp_path) -> Path:
    return broker_log_dir(tmp_path / "kafka-logs")


def test_a_stale_journal_is_never_replayed_over_a_brokers_newer_batches(log_dir):
    killed_repair(log_dir, 1)  # the torn tail cut; its indexes not yet rewritten
    interrupted = the_run(log_dir)
    assert interrupted.state == APPLYING and interrupted.data["applied"] == 0
    end = broker_appends(log_dir, 5)
    keys = records_of(log_dir)
    assert keys[-5:] == [b"new%d" % i for i in range(5)] and end == 35
    before = tree_digest(DISK, str(log_dir))

    for option in ((), ("--abandon-interrupted",)):
        proc = cli("repair", str(log_dir), "--mode", "kafka", *option)
        one_line_error(proc)
        assert "t-0/00000000000000000022.log went from" in proc.stderr, proc.stderr
        assert "since the repair was interrupted" in proc.stderr and "--replan" in proc.stderr
        assert tree_digest(DISK, str(log_dir)) == before

    proc = cli("repair", str(log_dir), "--mode", "kafka", "--dry-run")
    assert "note: the interrupted repair in" in proc.stdout and "cannot be finished" in proc.stdout
    assert tree_digest(DISK, str(log_dir)) == before
    proc = cli("repair", str(log_dir), "--mode", "kafka", "--replan", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["interrupted_runs"] == [
        {
            "quarantine": interrupted.qdir,
            "done": "abandoned",
            "summary": interrupted.data["summary"],
        }
    ]
    assert records_of(log_dir) == keys  # nothing the broker wrote is lost
    assert Journal.load(DISK, interrupted.qdir).state == ABANDONED
    # the torn tail the interrupted run cut is still in its quarantine
    assert (Path(interrupted.qdir) / "blobs" / "00000.tail").stat().st_size == 300
    one_line_error(cli("undo", interrupted.qdir))


def test_an_unchanged_interrupted_run_is_finished_with_its_loss_reported(log_dir, tmp_path):
    """Finishing a run that removes records counts as removing them: exit 1, offsets said."""
    active = sorted((log_dir / "t-0").glob("*.log"))[-1]
    with open(
        active, "r+b"
    ) as f:  # a corrupt batch in the middle: kafka mode cuts the records after
        f.seek(500)
        byte = f.read(1)
        f.seek(500)
        f.write(bytes([byte[0] ^ 0x40]))
    (log_dir / layout.RECOVERY_POINT_CHECKPOINT).write_text("0\n2\nt 0 0\nu 0 30\n")
    reference = tmp_path / "reference"
    shutil.copytree(log_dir, reference)
    expected = cli("repair", str(reference), "--mode", "kafka", "--json")
    removed = json.loads(expected.stdout)["removed_offsets"]
    assert expected.returncode == 1 and removed
    killed_repair(log_dir, 2)
    proc = cli("repair", str(log_dir), "--mode", "kafka")
    assert proc.returncode == 1, proc.stderr
    assert "completed the interrupted repair in" in proc.stdout
    assert f"offsets {removed[0][0]}..{removed[0][1]}" in proc.stdout, proc.stdout
    assert tree_digest(DISK, str(log_dir)) == tree_digest(DISK, str(reference))


def test_an_interrupted_run_is_rolled_back_by_undo_or_abandoned_by_the_next_run(log_dir, tmp_path):
    original = tree_digest(DISK, str(log_dir))
    reference = tmp_path / "reference"
    shutil.copytree(log_dir, reference)
    salvaged = cli("repair", str(reference), "--mode", "salvage")
    killed_repair(log_dir, 2)
    interrupted = the_run(log_dir)
    proc = cli("undo", str(log_dir) + ".logrepair-quarantine")  # the root: its one run
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    # (its index rewrite had left the same bytes: nothing to say about it)
    assert lines[:-1] == ["restored t-0/00000000000000000022.log"]
    assert lines[-1].startswith("undone: 1 restored; ")
    assert "applied part of the interrupted repair" in lines[-1]
    assert tree_digest(DISK, str(log_dir)) == original
    assert Journal.load(DISK, interrupted.qdir).state == UNDONE

    killed_repair(log_dir, 3)
    proc = cli("repair", str(log_dir), "--mode", "salvage", "--abandon-interrupted")
    assert proc.returncode == salvaged.returncode, proc.stderr
    assert "rolled back what the interrupted repair in" in proc.stdout
    # the kafka run rolled back, then salvage's own plan: as if the kafka run never happened
    assert tree_digest(DISK, str(log_dir)) == tree_digest(DISK, str(reference))


def test_two_runs_never_interleave_whatever_path_names_the_log_dir(log_dir, tmp_path):
    """A run on the partition dir holds the log dir's `.lock` (created, as a broker does, where
    none was): runs on the log dir, through a symbolic link or `..`, are refused; once it dies, a
    run on another path to the same log dir finds its journal and finishes it."""
    assert not (log_dir / ".lock").exists()
    alias = tmp_path / "alias"
    alias.symlink_to(log_dir)
    reference = tmp_path / "reference"
    shutil.copytree(log_dir, reference)
    cli("repair", str(reference / "t-0"), "--mode", "kafka")
    first = PausedRepair(log_dir / "t-0", 1)
    try:
        before = tree_digest(DISK, str(log_dir))
        for path in (log_dir, alias, alias / "t-0", log_dir / "u-0" / ".." / "t-0"):
            proc = cli("repair", str(path), "--mode", "kafka")
            one_line_error(proc)
            assert "Failed to acquire lock on file .lock" in proc.stderr
        assert tree_digest(DISK, str(log_dir)) == before
    finally:
        first.kill()
    proc = cli("repair", str(alias), "--mode", "kafka")
    assert "completed the interrupted repair in" in proc.stdout, proc.stderr
    assert not (log_dir / ".lock").exists()  # the dead run created it: the one finishing removes it
    assert tree_digest(DISK, str(log_dir)) == tree_digest(DISK, str(reference))


def test_a_second_repair_waits_for_nothing_and_changes_nothing(log_dir, tmp_path):
    """Two concurrent repairs of a dir without `.lock`: the second is refused in one line; the
    first finishes, and its undo restores every byte."""
    original = tree_digest(DISK, str(log_dir))
    first = PausedRepair(log_dir, 2)
    try:
        one_line_error(cli("repair", str(log_dir), "--mode", "salvage"))
    finally:
        assert first.finish() == 0  # only junk after the last batch: no records lost
    assert cli("repair", str(log_dir), "--mode", "kafka").returncode == 0  # nothing left to do
    assert cli("undo", str(log_dir) + ".logrepair-quarantine").returncode == 0
    assert tree_digest(DISK, str(log_dir)) == original


def test_verify_and_audit_say_when_another_process_holds_the_lock(log_dir):
    first = PausedRepair(log_dir, 1)
    try:
        for command in ("verify", "audit"):
            proc = cli(command, str(log_dir))
            assert f"/.lock is held by process {first.proc.pid}" in proc.stdout, proc.stderr
            assert "this result may be stale" in proc.stdout
        out = json.loads(cli("verify", str(log_dir / "t-0"), "--json").stdout)
        assert out["locked_by_other_process"] is True
        out = json.loads(cli("audit", str(log_dir), "--json").stdout)
        assert [d["locked_by_other_process"] for d in out["log_dirs"]] == [True]
    finally:
        first.kill()
    out = json.loads(cli("verify", str(log_dir), "--json").stdout)
    assert out["locked_by_other_process"] is False


@pytest.fixture
def small_tmpfs(tmp_path):
    """A real 1 MiB tmpfs (root only; skipped where mounting is not allowed)."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)]).returncode:
        pytest.skip("cannot mount a tmpfs here")
    yield mnt
    subprocess.run(["umount", str(mnt)], check=True)


def test_a_full_quarantine_filesystem_says_the_log_dir_is_untouched(log_dir, small_tmpfs):
    active = sorted((log_dir / "t-0").glob("*.log"))[-1]
    with open(active, "ab") as f:
        f.write(os.urandom(2 << 20))  # a tail larger than the quarantine's filesystem
    before = tree_digest(DISK, str(log_dir))
    proc = cli("repair", str(log_dir), "--mode", "kafka", "--quarantine", str(small_tmpfs / "q"))
    one_line_error(proc)
    assert "No space left on device" in proc.stderr
    assert "while saving what the plan removes: the log dir is untouched" in proc.stderr
    assert f"the quarantine under {small_tmpfs / 'q'} needs up to 2,097," in proc.stderr
    assert tree_digest(DISK, str(log_dir)) == before
    assert list((small_tmpfs / "q").iterdir()) == []


def test_undo_of_a_quarantine_root_undoes_its_one_run_or_asks_for_latest(log_dir, tmp_path):
    original = tree_digest(DISK, str(log_dir))
    root = tmp_path / "q"
    assert cli("repair", str(log_dir), "--mode", "kafka", "--quarantine", str(root)).returncode == 0
    with open(sorted((log_dir / "u-0").glob("*.log"))[-1], "ab") as f:
        f.write(random.Random(100).randbytes(100))  # more damage: a second run
    first = tree_digest(DISK, str(log_dir))
    assert cli("repair", str(log_dir), "--mode", "kafka", "--quarantine", str(root)).returncode == 0
    [older, newer] = runs_under(DISK, str(root))
    proc = cli("undo", str(root))
    one_line_error(proc)
    assert f"holds 2 runs to undo: {older.run_id} (done); {newer.run_id} (done)" in proc.stderr
    assert "--latest" in proc.stderr
    out = json.loads(cli("undo", str(root), "--latest", "--json").stdout)
    assert out["quarantine"] == newer.qdir
    assert out["files"][0] == {"file": "u-0/00000000000000000022.log", "done": "restored"}
    assert tree_digest(DISK, str(log_dir)) == first
    proc = cli("undo", str(root))  # one left
    assert proc.returncode == 0 and proc.stdout.splitlines()[-1].startswith("undone: ")
    assert {n: d for n, d in tree_digest(DISK, str(log_dir)).items() if "u-0/" not in n} == {
        n: d for n, d in original.items() if "u-0/" not in n
    }
    one_line_error(cli("undo", str(root)))  # nothing left to undo


def test_a_run_through_a_bind_mount_finds_the_interrupted_run_of_the_other_path(log_dir, tmp_path):
    """A bind mount is a second name no path resolution joins: the lock (on the file) and the
    pending-runs marker in the log dir are what the two runs share."""
    bound = tmp_path / "bound"
    bound.mkdir()
    if subprocess.run(["mount", "--bind", str(log_dir), str(bound)]).returncode:
        pytest.skip("cannot bind-mount here")
    try:
        reference = tmp_path / "reference"
        shutil.copytree(log_dir, reference)
        cli("repair", str(reference), "--mode", "kafka")
        first = PausedRepair(log_dir, 1)
        try:
            proc = cli("repair", str(bound), "--mode", "kafka")
            one_line_error(proc)
            assert "Failed to acquire lock" in proc.stderr
        finally:
            first.kill()
        assert (log_dir / ".logrepair-pending").read_text().strip() == the_run(log_dir).qdir
        proc = cli("repair", str(bound), "--mode", "kafka")
        assert "completed the interrupted repair in" in proc.stdout, proc.stderr
        assert not (log_dir / ".logrepair-pending").exists()
        assert tree_digest(DISK, str(log_dir)) == tree_digest(DISK, str(reference))
    finally:
        subprocess.run(["umount", str(bound)], check=True)
