"""`logrepair dump` prints what Kafka's own kafka-dump-log (DumpLogSegments of the pinned release)
prints, line for line, on every file a real broker wrote (`.log`, `.index`, `.timeindex`,
`.txnindex`, `.snapshot`, KRaft `.checkpoint`), cleanly shut down or SIGKILLed, under each of its
options. Kafka runs in one JVM for every case (the harness's `dump --jobs`).

The one deliberate difference (docs/spec-notes.md, "Decoders and dump"): where Kafka dies with a stack
trace (here: `--index-sanity-check` on the preallocated time index of a killed broker's active
segment), logrepair prints everything Kafka printed before it died, Kafka's own message on stderr,
and goes on with the remaining files.
"""

from __future__ import annotations

import difflib
import json
import re
import subprocess

import pytest

from . import harness
from .broker_fixtures import logrepair, real_broker_dirs, segment_files  # noqa: F401

OPTIONS: dict[str, tuple[str, ...]] = {
    "shallow": (),
    "deep-iteration": ("--deep-iteration",),
    "print-data-log": ("--print-data-log",),
    "skip-record-metadata": ("--deep-iteration", "--skip-record-metadata"),
    "print-data-skip-metadata": ("--print-data-log", "--skip-record-metadata"),
    "index-sanity-check": ("--index-sanity-check",),
    "verify-index-only": ("--verify-index-only",),
    "offsets-decoder": ("--offsets-decoder",),
    "offsets-decoder-skip-metadata": ("--offsets-decoder", "--skip-record-metadata"),
    "transaction-log-decoder": ("--transaction-log-decoder",),
    "transaction-log-decoder-skip-metadata": (
        "--transaction-log-decoder",
        "--skip-record-metadata",
    ),
}
# A decoder is meant for its own topic's segments (as operators use it).
DECODED_TOPIC = {"offsets": "__consumer_offsets-", "transaction": "__transaction_state-"}
CASES = [(state, name) for state in ("clean", "killed") for name in OPTIONS]


def _job(dirs, state: str, name: str) -> list[str]:
    files = segment_files(dirs[state])
    for prefix, topic in DECODED_TOPIC.items():
        if name.startswith(prefix):
            files = [f for f in files if f.parent.name.startswith(topic) and f.suffix == ".log"]
    assert files
    return ["--files", ",".join(map(str, files)), *OPTIONS[name]]


@pytest.fixture(scope="session")
def kafka_dumps(real_broker_dirs) -> dict:  # noqa: F811
    """Kafka's output for every case, from one JVM."""
    jobs = {case: _job(real_broker_dirs, *case) for case in CASES}
    proc = subprocess.run(
        harness.command("dump", "--jobs"),
        input="".join(json.dumps(job) + "\n" for job in jobs.values()),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    answers = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(answers) == len(jobs)
    return {case: (job, answer) for (case, job), answer in zip(jobs.items(), answers, strict=True)}


@pytest.mark.parametrize(("state", "option"), CASES)
def test_dump_prints_what_kafka_dump_log_prints(kafka_dumps, state, option):
    job, kafka = kafka_dumps[(state, option)]
    ours = logrepair("dump", *job)
    kafka_out = kafka["stdout"].encode()
    kafka_err = kafka["stderr"].encode()
    assert kafka_out.count(b"Dumping ") >= 1
    if kafka["exception"] is None:
        assert ours.stdout == kafka_out, _diff(kafka_out, ours.stdout)
        assert ours.stderr == kafka_err, _diff(kafka_err, ours.stderr)
        return
    # Kafka died here (the deliberate difference): all it printed, then its message, and on.
    message = kafka["exception"].split(": ", 1)[1]
    assert ours.stdout.startswith(kafka_out), _diff(kafka_out, ours.stdout[: len(kafka_out)])
    assert message.encode() in ours.stderr
    assert ours.stdout.count(b"Dumping ") == len(job[1].split(","))  # every file, not only those


def test_the_cases_cover_every_kind_of_file_and_the_deliberate_difference(kafka_dumps):
    """The parity above is not vacuous: every file kind was dumped, and Kafka died where said."""
    suffixes = {
        path.rsplit(".", 1)[1]
        for job, _ in kafka_dumps.values()
        for path in job[1].split(",")
        if "/" in path
    }
    assert suffixes >= {"log", "index", "timeindex", "txnindex", "snapshot", "checkpoint"}
    dumped = {path for job, _ in kafka_dumps.values() for path in job[1].split(",")}
    assert any(re.search(r"/\d{20}-\d{10}\.checkpoint$", p) for p in dumped)  # a KRaft snapshot
    died = {case for case, (_, kafka) in kafka_dumps.items() if kafka["exception"]}
    assert died == {("killed", "index-sanity-check")}, died


def _diff(kafka: bytes, ours: bytes, limit: int = 40) -> str:
    lines = difflib.unified_diff(
        kafka.decode(errors="replace").split("\n"),
        ours.decode(errors="replace").split("\n"),
        "kafka-dump-log",
        "logrepair dump",
        n=0,
        lineterm="",
    )
    return "\n".join(list(lines)[:limit])
