"""The fuzz target of issue 11 with a fixed budget: mutated segments, indexes, snapshots and every
checkpoint of a real log dir, held to the tool's promises (see `logdir_fuzzer`).

The default run checks FUZZ_CASES cases (120, ~35 s) from fixed seeds, so CI sees the same cases every
time; HYPOTHESIS_PROFILE=thorough raises it to 2,000 and FUZZ_SEED moves the window. Longer runs:
`python -m tests.fuzz.run --cases 5000`.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from ..test_cli_recovery import cli
from .logdir_fuzzer import MODES, build_seed, check_case, mutate

THOROUGH = os.environ.get("HYPOTHESIS_PROFILE") == "thorough"
CASES = int(os.environ.get("FUZZ_CASES", 2000 if THOROUGH else 120))
FIRST_SEED = int(os.environ.get("FUZZ_SEED", 0))


@pytest.fixture(scope="module")
def seed_logs(tmp_path_factory) -> Path:
    return build_seed(tmp_path_factory.mktemp("fuzz-seed"))


def test_fuzzed_log_dirs_verify_and_repair_or_refuse(seed_logs, tmp_path) -> None:
    failures = []
    for seed in range(FIRST_SEED, FIRST_SEED + CASES):
        out = check_case(tmp_path / "case", seed_logs, seed)
        if out.problems:
            failures.append(
                f"seed {seed}: {'; '.join(out.mutations)}\n  " + "\n  ".join(out.problems)
            )
    assert not failures, f"{len(failures)} of {CASES} cases failed:\n" + "\n".join(failures)


@pytest.mark.parametrize("seed", [1218, 1677, 100369, 200400])
def test_the_cases_long_runs_found_stay_fixed(seed_logs, tmp_path, seed) -> None:
    """1218, 100369: base offset 2^63 - 1 split into 09223372036854775807.log by kafka mode;
    1677: salvage rewriting the leader-epoch checkpoint on every run; 200400: OverflowError in
    kafka mode's transaction-index replay."""
    out = check_case(tmp_path / "case", seed_logs, seed)
    assert not out.problems, "\n".join([*out.mutations, *out.problems])


def test_the_seed_dir_is_clean_and_has_every_file_kind(seed_logs) -> None:
    """The fuzzer starts from a healthy dir holding every kind of file it is meant to mutate."""
    names = {p.name for p in seed_logs.rglob("*")}
    suffixes = {p.suffix for p in seed_logs.rglob("*.*")}
    for name in (
        "recovery-point-offset-checkpoint",
        "replication-offset-checkpoint",
        "log-start-offset-checkpoint",
        "cleaner-offset-checkpoint",
        "leader-epoch-checkpoint",
        "partition.metadata",
        "meta.properties",
    ):
        assert name in names
    assert {".log", ".index", ".timeindex", ".txnindex", ".snapshot"} <= suffixes
    r = _cli("verify", "--json", str(seed_logs))
    assert r.returncode == 0, r.stdout + r.stderr


def _cli(*args: str) -> subprocess.CompletedProcess:
    return cli(*args, timeout=60)  # a hang is a finding, well before the suite's own limit


def _outcome(r: subprocess.CompletedProcess, allowed: set[int]) -> dict | None:
    """Exit status in ALLOWED with one JSON object, or 2 with one line and no traceback."""
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
    if r.returncode == 2:
        assert r.stdout == "" and r.stderr.count("\n") == 1, r.stderr
        return None
    assert r.returncode in allowed, (r.returncode, r.stderr)
    return json.loads(r.stdout)


@pytest.mark.parametrize("seed", [3, 11])
def test_fuzzed_log_dirs_through_the_real_cli(seed_logs, tmp_path, seed) -> None:
    """A few cases through the real CLI: verify and repair exit 0/1 with JSON or 2 with one line;
    undo of a repair restores every byte."""
    import random
    import shutil

    pristine = tmp_path / "mutated"
    shutil.copytree(seed_logs, pristine)
    mutate(pristine, random.Random(seed))
    _outcome(_cli("verify", "--json", str(pristine)), {0, 1})
    for mode in MODES:
        logs = tmp_path / mode / "logs"
        shutil.copytree(pristine, logs)
        before = {p.relative_to(logs): p.read_bytes() for p in logs.rglob("*") if p.is_file()}
        result = _outcome(_cli("repair", "--mode", mode, "--json", str(logs)), {0, 1})
        if result is None or not result["quarantine"]:
            continue
        _outcome(_cli("undo", "--json", result["quarantine"]), {0})
        after = {p.relative_to(logs): p.read_bytes() for p in logs.rglob("*") if p.is_file()}
        assert after == before, f"{mode}: undo did not restore every byte"
