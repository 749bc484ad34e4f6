"""`--jobs N`: the partition dirs scanned (and planned) in worker processes give what the serial run
gives — the same JSON, the same human output, the same exit status, the same repaired files — on
random damaged log dirs (the simulator's damaged sample, mutated by the log-dir fuzzer's mutations);
a repair SIGKILLed mid-apply under `--jobs 2` is completed by the next run; a worker that dies is one
line and exit 2; Ctrl-C stops the workers; `--jobs 0` is bad usage."""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logrepair.cli import main
from logrepair.recovery.invariants import tree_digest
from logrepair.storage.osdisk import OsDisk
from simulator.sample import build_damaged_logdir

from .fuzz.logdir_fuzzer import mutate
from .test_cli_interrupted import STOPPED_AFTER_ACTIONS, broker_log_dir
from .test_cli_recovery import REPO, cli, one_line_error

DISK = OsDisk()
THOROUGH = os.environ.get("HYPOTHESIS_PROFILE") == "thorough"


def run(*args: str) -> tuple[int, str, str]:
    """The CLI in this process: exit status, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def serial_and_pooled(*args: str) -> tuple[tuple, tuple]:
    return run(*args, "--jobs", "1"), run(*args, "--jobs", "2")


def damaged_log_dir(root: Path, sample: int, mutation: int | None) -> Path:
    """The simulator's damaged sample (five partitions, several kinds of damage), then, for a
    `mutation` seed, one to three of the fuzzer's mutations of its files."""
    d = root / "kafka-logs"
    build_damaged_logdir(str(d), seed=sample)
    (d / ".lock").unlink(missing_ok=True)
    if mutation is not None:
        mutate(d, random.Random(mutation))
    return d


def applied(d: Path, pristine: Path, mode: str, jobs: str) -> tuple[int, dict, str, str]:
    """`repair D --mode MODE --json --jobs JOBS` applied to a fresh copy of PRISTINE at D: its
    exit status, JSON (the quarantine's dated name left out), the stderr and the files it left."""
    shutil.rmtree(d, ignore_errors=True)
    shutil.rmtree(f"{d}.logrepair-quarantine", ignore_errors=True)
    shutil.copytree(pristine, d, symlinks=True)
    code, out, err = run("repair", str(d), "--mode", mode, "--json", "--jobs", jobs)
    data = json.loads(out) if out else {}
    data.pop("quarantine", None)
    return code, data, err, tree_digest(DISK, str(d))


@settings(max_examples=200 if THOROUGH else 4)
@given(
    sample=st.integers(0, 10_000),
    mutation=st.none() | st.integers(0, 2**32),
    mode=st.sampled_from(["kafka", "point-in-time", "salvage"]),
)
def test_jobs_give_what_the_serial_run_gives_on_random_damaged_log_dirs(
    tmp_path_factory, sample, mutation, mode
) -> None:
    root = tmp_path_factory.mktemp("jobs")
    d = damaged_log_dir(root, sample, mutation)
    path = str(d)
    for args in (
        ("verify", path),
        ("verify", path, "--json"),
        ("repair", path, "--mode", mode, "--dry-run"),
        ("repair", path, "--mode", "kafka", "--dry-run", "--json"),
        ("repair", path, "--mode", "point-in-time", "--dry-run", "--json"),
        ("repair", path, "--mode", "salvage", "--dry-run", "--json"),
        ("rebuild-index", path, "--dry-run"),
        ("rebuild-index", path, "--dry-run", "--json"),
        ("audit", path, "--json"),
        ("audit", path),
    ):
        serial, pooled = serial_and_pooled(*args)
        assert pooled == serial, args
    pristine = root / "pristine"
    shutil.copytree(d, pristine, symlinks=True)
    assert applied(d, pristine, mode, "2") == applied(d, pristine, mode, "1")


def test_the_real_cli_gives_the_same_bytes_with_and_without_jobs(tmp_path) -> None:
    d = damaged_log_dir(tmp_path, 7, 7)
    replica = damaged_log_dir(tmp_path / "replica", 8, None)
    heal = ("repair", str(d), "--mode", "heal", "--replica", str(replica), "--dry-run", "--json")
    serial, pooled = serial_and_pooled(*heal)  # heal: scanned in the workers, planned here
    assert pooled == serial and json.loads(serial[1])["heal"]["ranges"], serial
    for args in (("verify", "--json"), ("repair", "--mode", "salvage", "--dry-run")):
        serial = cli(*args, str(d), "--jobs", "1")
        pooled = cli(*args, str(d), "--jobs", "2")
        assert serial.returncode in (0, 1), serial.stderr
        assert (pooled.returncode, pooled.stdout, pooled.stderr) == (
            serial.returncode,
            serial.stdout,
            serial.stderr,
        ), args


def test_a_future_dir_beside_its_live_dir_gives_the_serial_losses(tmp_path) -> None:
    """Two dirs of one topic-partition (live and future): each partition's loss is made beside its
    scan from the partition alone, and the root checkpoints are held to the last of the two, as
    the serial plan holds them; the losses that disagree are made again in the one process."""
    d = damaged_log_dir(tmp_path, 3, None)
    live = d / "orders-1"
    future = d / f"orders-1.{'0' * 32}-future"
    shutil.copytree(live, future)
    for segment in sorted(future.glob("*.log"))[1:]:
        segment.unlink()  # the future dir's log ends earlier
    for mode in ("kafka", "salvage"):
        serial, pooled = serial_and_pooled("repair", str(d), "--mode", mode, "--dry-run", "--json")
        assert pooled == serial
        assert [p["topic"] for p in json.loads(serial[1])["partitions"]].count("orders") > 1


def test_jobs_below_one_is_a_usage_line(tmp_path) -> None:
    d = damaged_log_dir(tmp_path, 1, None)
    before = tree_digest(DISK, str(d))
    for command in (("verify",), ("repair", "--mode", "kafka"), ("rebuild-index",), ("audit",)):
        for jobs in ("0", "-1", "two"):
            code, out, err = run(*command, str(d), f"--jobs={jobs}")
            assert (code, out) == (2, ""), (command, jobs)
            assert len(err.strip().splitlines()) == 1, err
            assert f"argument --jobs: '{jobs}' is not a number of jobs (1 or more)" in err, err
    code, _, err = run("audit", "--spark", "local[2]", str(d), "--jobs", "2")
    assert code == 2 and "on Spark the master sets the parallelism" in err, err
    proc = cli("repair", str(d), "--mode", "salvage", "--jobs", "0")
    one_line_error(proc)
    assert tree_digest(DISK, str(d)) == before


def test_a_repair_killed_mid_apply_under_jobs_is_completed_by_the_next_run(tmp_path) -> None:
    """The workers only scan and plan: the journal and the apply are the parent's, so a SIGKILL
    half way leaves the same journaled run a serial repair leaves, and the next run finishes it."""
    d = broker_log_dir(tmp_path / "kafka-logs")
    reference = tmp_path / "reference"
    shutil.copytree(d, reference)
    expected = cli("repair", str(reference), "--mode", "kafka", "--jobs", "2", "--json")
    assert len(json.loads(expected.stdout)["actions"]) > 2, expected.stdout
    env = dict(os.environ, PYTHONPATH=str(REPO), KILL_AFTER_ACTIONS="2")
    cmd = [sys.executable, "-c", STOPPED_AFTER_ACTIONS, "repair", str(d), "--mode", "kafka"]
    killed = subprocess.run([*cmd, "--jobs", "2"], capture_output=True, text=True, env=env)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    proc = cli("repair", str(d), "--mode", "kafka", "--jobs", "2")
    assert proc.returncode == expected.returncode, proc.stderr
    assert "completed the interrupted repair in" in proc.stdout, proc.stdout
    assert tree_digest(DISK, str(d)) == tree_digest(DISK, str(reference))
    again = cli("repair", str(d), "--mode", "kafka", "--jobs", "2")
    assert again.returncode == 0 and "nothing to repair" in again.stdout, again.stdout


# Run as a script, so the pool's workers import it as `__mp_main__` (as they import the main
# module of any program): there, and only there, the scan of a partition misbehaves (the first one
# a worker takes: which partitions the workers take and which the parent scans itself varies).
SABOTAGED_WORKER = textwrap.dedent(
    """
    import os, signal, sys, time
    import logrepair.recovery.scan as scan

    real = scan._scan_partition

    def sabotaged(disk, path, rel, name, *rest):
        if os.environ["DO"] == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        open(os.environ["READY"], "w").close()
        time.sleep(60)

    if __name__ == "__mp_main__":
        scan._scan_partition = sabotaged
    if __name__ == "__main__":
        from logrepair.cli import main
        sys.exit(main(sys.argv[1:]))
    """
)


def sabotaged(tmp_path: Path, do: str, *args: str) -> subprocess.Popen:
    script = tmp_path / "sabotaged_cli.py"
    script.write_text(SABOTAGED_WORKER)
    env = dict(os.environ, PYTHONPATH=str(REPO), DO=do)
    env["READY"] = str(tmp_path / "ready")
    env.pop("LOGREPAIR_DEBUG", None)
    return subprocess.Popen(
        [sys.executable, str(script), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=env, start_new_session=True,
    )  # fmt: skip


@pytest.mark.parametrize("command", [("verify",), ("repair", "--mode", "salvage")])
def test_a_worker_that_dies_is_one_line_and_exit_2(tmp_path, command) -> None:
    d = damaged_log_dir(tmp_path, 3, None)
    before = tree_digest(DISK, str(d))
    proc = sabotaged(tmp_path, "kill", *command, str(d), "--jobs", "2")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2 and out == "", (out, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert "worker process" in err and "--jobs 1" in err, err
    assert tree_digest(DISK, str(d)) == before  # the repair stopped before it changed anything


def test_ctrl_c_stops_the_workers(tmp_path) -> None:
    d = damaged_log_dir(tmp_path, 4, None)
    proc = sabotaged(tmp_path, "sleep", "verify", str(d), "--jobs", "2")
    deadline = time.monotonic() + 60
    while not (tmp_path / "ready").exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    started = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole group
    out, err = proc.communicate(timeout=30)
    assert time.monotonic() - started < 20  # the sleeping worker was not waited for
    assert proc.returncode == 2 and err.strip() == "logrepair: interrupted", err


def test_summaries_out_with_jobs_writes_the_serial_runs_tables(tmp_path) -> None:
    """`audit --summaries-out --jobs`: partition dirs listed and segments scanned in the workers,
    the rows written here in the serial run's order."""
    pq = pytest.importorskip("pyarrow.parquet")
    from logrepair import pool
    from logrepair.audit.summary_writer import write_summaries

    d = damaged_log_dir(tmp_path, 5, 5)
    write_summaries([str(d)], str(tmp_path / "serial"), broker="b")
    write_summaries([str(d)], str(tmp_path / "pooled"), broker="b", segments=pool.Pool(2))
    for table in ("segments", "partitions", "log_dirs"):
        [serial] = (tmp_path / "serial").rglob(f"{table}.parquet")
        [pooled] = (tmp_path / "pooled").rglob(f"{table}.parquet")
        assert pq.read_table(pooled).equals(pq.read_table(serial)), table
    assert pq.read_table(serial).num_rows > 0


def test_the_forkserver_starts_before_the_imports_only_when_the_command_will_pool(tmp_path) -> None:
    """`cli._will_pool`: the guess, from the arguments alone, that starts the workers' forkserver
    before the command imports its modules; and only the named command's modules are imported."""
    from logrepair import cli, pool

    many = tmp_path / "many"
    many.mkdir()
    for n in range(pool.AUTO_MIN_ITEMS):
        (many / f"t-{n}").mkdir()
    few = damaged_log_dir(tmp_path, 3, None)
    cores = pool.available_cores()
    assert cli._will_pool(["verify", str(few), "--jobs", "2"])
    assert cli._will_pool(["repair", "--jobs=3", "--mode", "kafka", str(few)])
    assert not cli._will_pool(["verify", str(many), "--jobs", "1"])
    assert not cli._will_pool(["verify", str(few)])  # the default pools large log dirs only
    assert cli._will_pool(["rebuild-index", str(many)]) == (cores > 1)
    assert not cli._will_pool(["audit", "--spark", "local[2]", str(many)])
    assert not cli._will_pool(["dump", str(many), "--jobs", "2"])
    code = (
        "import sys; from logrepair.cli import build_parser; build_parser(['verify']); "
        "print(sorted(m for m in sys.modules if m.startswith('logrepair.commands.')))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(REPO))
    )  # fmt: skip
    assert proc.stdout.split() == [
        "['logrepair.commands._recovery_options',",
        "'logrepair.commands.verify']",
    ], proc
