"""The README is part of the contract: its tables and examples must match the code."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from logrepair.audit.kinds import kinds_markdown as audit_kinds_markdown
from logrepair.recovery.defects import kinds_markdown
from simulator.inject import INJECT_FAULTS

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_defect_tables_are_the_documented_lists():
    assert kinds_markdown().strip() in README
    assert audit_kinds_markdown().strip() in README


def test_the_two_set_up_commands_exist():
    assert "./dev.sh demo" in README and "./dev.sh test" in README
    dev = (ROOT / "dev.sh").read_text(encoding="utf-8")
    assert re.search(r"^\s+demo\)", dev, re.M) and re.search(r"^\s+test\)", dev, re.M)
    assert "./dev.sh test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_every_inject_fault_is_documented():
    section = README.split("**`logsim inject`**", 1)[1].split("**In your own tests:**", 1)[0]
    documented = set(re.findall(r"`([a-z_]+)`", section)) - {"in_place"}
    assert set(INJECT_FAULTS) <= documented


def test_python_examples_run(tmp_path, capsys):
    blocks = re.findall(r"```python\n(.*?)```", README, re.S)
    assert blocks
    for code in blocks:
        exec(
            compile(
                code.replace("/tmp/kafka-logs", str(tmp_path / "kafka-logs")), "README", "exec"
            ),
            {},
        )
    assert capsys.readouterr().out


def test_the_storage_api_example_writes_a_clean_log(tmp_path, capsys):
    (code,) = [b for b in re.findall(r"```python\n(.*?)```", README, re.S) if "LogDir.open" in b]
    log_dir = tmp_path / "kafka-logs"
    exec(compile(code.replace("/tmp/kafka-logs", str(log_dir)), "README", "exec"), {})
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for command in ("verify", "audit"):
        proc = subprocess.run(
            [sys.executable, "-m", "logrepair", command, str(log_dir)],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_notation_is_documented_as_the_code_prints_it():
    from logrepair.recovery import notation

    section = README.split("### Notation", 1)[1].split("\n## ", 1)[0]
    assert "`FILE @P+N`" in section and f"{notation.at(1074, 123)}`" in section
    assert f"`{notation.offsets(14, 17)}`" in section


def test_inline_python_c_snippets_run():
    """`python -c '...'` in the text (an inline span may wrap a line): each runs, as a reader pastes
    it, after code moved between modules."""
    snippets = [" ".join(s.split()) for s in re.findall(r"python -c '([^']+)'", README)]
    assert snippets
    for code in snippets:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert done.returncode == 0, (code, done.stderr)
