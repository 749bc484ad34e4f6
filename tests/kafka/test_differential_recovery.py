"""`logrepair repair --mode kafka` against Apache Kafka's own recovery (the pinned release's
`UnifiedLog`/`LogLoader`, through tests/kafka/harness.py), on the same damaged bytes.

Each case is a simulator workload crashed at one of its operations and optionally hurt by a
`logsim inject` fault (tests/kafka/differential.py). Kafka recovers one copy, logrepair repairs
the other, and the two must agree: `.log`, `.index`, `.timeindex` and `.txnindex` bytes (an index
may differ only by Kafka's preallocated zeros), the segments kept, the leader epochs, the log end
offset; where Kafka cannot load a partition logrepair's plan must say so, and only there.
The long run: `HYPOTHESIS_PROFILE=thorough pytest tests/kafka` or `python -m tests.kafka.differential`.
"""

from __future__ import annotations

import shutil

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from logrepair.storage import layout
from simulator.faults import CRASH_FAULTS
from simulator.inject import INJECT_FAULTS
from simulator.testing import workload_specs
from tests.recovery.builders import log_with_records

from . import harness
from .differential import Case, compare, random_case, run_case

cases = st.builds(
    Case,
    # the space `differential.random_spec` samples, drawn so that hypothesis can shrink it
    workload_specs(max_appends=40, index_intervals=True, compaction=True),
    st.integers(0, 400),
    st.sampled_from(list(CRASH_FAULTS)),
    st.integers(0, 7),
    st.one_of(st.none(), st.sampled_from(list(INJECT_FAULTS))),
    st.integers(0, 999),
)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=cases)
def test_kafka_mode_ends_where_kafka_recovery_ends(case, kafka_recover, work_dir):
    work = work_dir / "case"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    outcome = run_case(case, work, kafka_recover)
    if outcome is None:
        return
    note(case.label())
    assert outcome.divergences == [], "\n".join(outcome.divergences)


# Cases of the seeded long run (`python -m tests.kafka.differential --seed S --case N`) on which
# logrepair and Kafka once disagreed, each fixed in kafka mode since; `random_case` is frozen so
# that these stay the same bytes.
PINNED = {
    "recovered segment gets Kafka's index bytes though the old ones agree with the log": (2, 35),
    "an epoch bump keeps the open transaction's first offset": (2, 172),
    "txnindex replayed from Kafka's latest snapshot": (3, 193),
    "txnindex entry of version 15: Kafka's startup aborts, the plan says so": (2, 135),
    "malformed leader-epoch-checkpoint: Kafka's startup aborts, the plan says so": (2, 16),
    "the producer-state replay reads a zeroed header: startup aborts, the plan says so": (6, 9),
    "the earliest open transaction starts in a zeroed segment: startup aborts": (7, 483),
    "a batch whose magic byte alone rotted: Kafka keeps it (its CRC holds)": (10, 265),
    "reorder over a sector a truncation cut off": (3, 229),
    "a rotted magic byte in the only batch of a segment (a 'garbage tail'): Kafka keeps it": (
        300,
        2335,
    ),
    "a segment recovered while loading is recovered again, with the chain's producer state": (
        300,
        2344,
    ),
    "indexes agreeing with the log in a segment with other findings: Kafka's bytes": (400, 2487),
    "an ABORT marker whose magic byte rotted is replayed (Kafka keeps it)": (400, 3491),
    "txnindex entry version bytes 00 1f: Kafka reads the first byte alone (0) and loads it": (
        500,
        4122,
    ),
    "a time index's .swap beside its renamed-in segment: Kafka 4.1.1 renames it in": (500, 1235),
    "index swaps renamed in: no recovery at load, a zeroed block below the recovery point kept": (
        500,
        1631,
    ),
    "the replay reads a segment below from the index entry of its start offset, past a zeroed "
    "block": (1200, 4322),
}


@pytest.mark.parametrize("seed, n", list(PINNED.values()), ids=list(PINNED))
def test_pinned_divergences_stay_fixed(seed, n, kafka_recover, work_dir):
    outcome = run_case(random_case(seed, n), work_dir, kafka_recover)
    assert outcome is not None
    assert outcome.divergences == [], "\n".join(outcome.divergences)


def test_kafka_fails_exactly_where_pinned(kafka_recover, work_dir):
    """The pinned failures are Kafka's, not the harness's: the exception is the one expected."""
    outcome = run_case(random_case(2, 135), work_dir, kafka_recover)
    assert outcome is not None and outcome.kafka_failed
    error = outcome.kafka["sim-0"]["error"]
    assert error["class"] == "org.apache.kafka.common.KafkaException"
    assert "Unexpected aborted transaction version" in error["message"]
    assert error["offline"] is False  # not an IOException: LogManager lets it stop the broker


@pytest.mark.parametrize("seed, n", [(2, 172), (2, 35), (10, 265)])
def test_the_real_cli_repairs_as_kafka_recovers(seed, n, kafka_recover, work_dir):
    outcome = run_case(random_case(seed, n), work_dir, kafka_recover, cli=True)
    assert outcome is not None
    assert outcome.divergences == [], "\n".join(outcome.divergences)


def test_the_comparison_sees_a_changed_byte(kafka_recover, work_dir):
    """The differential check can fail: one byte changed in logrepair's copy is a divergence."""
    outcome = run_case(random_case(2, 35), work_dir, kafka_recover)
    assert outcome is not None and outcome.divergences == []
    log = work_dir / "b" / "kafka-logs" / "sim-0" / layout.log_file_name(0)
    data = bytearray(log.read_bytes())
    data[100] ^= 0x01
    log.write_bytes(bytes(data))
    outcome.divergences.clear()
    compare(work_dir / "a" / "kafka-logs", work_dir / "b" / "kafka-logs", outcome)
    assert any(".log differs" in d for d in outcome.divergences)


def test_recover_subcommand_reports_a_healthy_log(kafka_harness, tmp_path):
    """The harness's `recover` as a command (one JVM): a log the project's `Log` wrote, loaded
    from recovery point 0 after an unclean shutdown, comes back whole."""
    pdir = tmp_path / "t-0"
    log_with_records(pdir, 40)
    answer = harness.run_json("recover", str(pdir), "--recovery-point", "0", "--log-start", "0")
    assert answer["error"] is None
    assert answer["log_end_offset"] == 40
    assert answer["recovery_point"] == 0  # never advanced by recovery (rec §3.3)
    bases = [s["base_offset"] for s in answer["segments"]]
    on_disk = sorted(int(p.name.split(".")[0]) for p in pdir.glob("*.log"))
    assert bases == on_disk and answer["deleted"] == []
    # the active segment's indexes keep Kafka's preallocation (closed without trimming)
    active = pdir / layout.index_file_name(bases[-1])
    assert active.stat().st_size == 10 * 1024 * 1024


def _torn_log_dir(root, recovery_point: int):
    """A log dir of one partition (40 one-record batches over 8 segments) whose last segment
    ends in half a batch, with the recovery point checkpointed at `recovery_point`."""
    log_dir = root / "kafka-logs"
    pdir = log_dir / "t-0"
    log_with_records(pdir, 40)
    (log_dir / layout.RECOVERY_POINT_CHECKPOINT).write_text(f"0\n1\nt 0 {recovery_point}\n")
    last = sorted(pdir.glob("*.log"))[-1]
    with open(last, "ab") as f:
        f.write(last.read_bytes()[:40])  # the head of a batch whose body never reached the disk
    return log_dir, pdir


def _copies(root, log_dir):
    theirs, ours = root / "a", root / "b"
    shutil.copytree(log_dir, theirs / "kafka-logs")
    shutil.copytree(log_dir, ours / "kafka-logs")
    return theirs / "kafka-logs", ours / "kafka-logs"


def test_departure_recovery_point_checkpointed_at_the_log_end(kafka_recover, tmp_path):
    """docs/spec-notes.md: Kafka's loader leaves the recovery point at min(checkpoint, log end)
    (only a later flush advances it); a repair flushes and checkpoints the new log end."""
    from logrepair.recovery.repair import repair
    from logrepair.recovery.settings import Settings
    from logrepair.storage.osdisk import OsDisk

    log_dir, _ = _torn_log_dir(tmp_path / "src", 12)
    theirs, ours = _copies(tmp_path, log_dir)
    answer = kafka_recover.recover(theirs / "t-0", from_log_dir=True)
    repair(OsDisk(), str(ours), "kafka", Settings(), quarantine_root=str(tmp_path / "q"))
    assert answer["error"] is None and answer["log_end_offset"] == 40
    assert answer["recovery_point"] == 12
    assert (ours / layout.RECOVERY_POINT_CHECKPOINT).read_text() == "0\n1\nt 0 40\n"
    for log in (theirs / "t-0").glob("*.log"):  # the same bytes all the same
        assert log.read_bytes() == (ours / "t-0" / log.name).read_bytes()


def test_departure_clean_shutdown_marker_not_trusted(kafka_recover, tmp_path):
    """docs/spec-notes.md: with the clean-shutdown marker Kafka skips recovery and keeps a torn
    tail in the active segment; kafka mode always recovers as after an unclean shutdown."""
    from logrepair.recovery.repair import repair
    from logrepair.recovery.settings import Settings
    from logrepair.storage.osdisk import OsDisk

    log_dir, pdir = _torn_log_dir(tmp_path / "src", 40)
    (log_dir / layout.CLEAN_SHUTDOWN_FILE).write_text('{"version":0,"brokerEpoch":1}')
    theirs, ours = _copies(tmp_path, log_dir)
    answer = kafka_recover.recover(theirs / "t-0", from_log_dir=True)
    repair(OsDisk(), str(ours), "kafka", Settings(), quarantine_root=str(tmp_path / "q"))
    assert answer["used_clean_shutdown"] is True and answer["error"] is None
    assert answer["log_end_offset"] == 40
    last = sorted(pdir.glob("*.log"))[-1].name
    kept, cut = (theirs / "t-0" / last).read_bytes(), (ours / "t-0" / last).read_bytes()
    assert len(kept) == len(cut) + 40 and kept.startswith(cut)


def test_departure_leader_epochs_as_kafkas_next_load_writes_them(kafka_recover, work_dir):
    """docs/spec-notes.md: the checkpoint's entry (0, 38) lies past the new log end 29 and hid
    the recovered batches' epoch 0 (not above the cache's last); Kafka's load drops it and keeps
    no entry, its next load adds (0, 20) from the batches. kafka mode writes (0, 20) at once, so
    that a second repair (or Kafka's next start) changes nothing (`--seed 800`, case 2146)."""
    outcome = run_case(random_case(800, 2146), work_dir, kafka_recover)
    assert outcome is not None and outcome.divergences == [], "\n".join(outcome.divergences)
    assert outcome.epochs_next_load == ["sim-0"]
    kafka_once = work_dir / "a" / "kafka-logs" / "sim-0" / layout.LEADER_EPOCH_CHECKPOINT
    kafka_twice = work_dir / "kafka-again" / "kafka-logs" / "sim-0" / layout.LEADER_EPOCH_CHECKPOINT
    ours = work_dir / "b" / "kafka-logs" / "sim-0" / layout.LEADER_EPOCH_CHECKPOINT
    assert kafka_once.read_text() == "0\n0\n"
    assert kafka_twice.read_text() == ours.read_text() == "0\n1\n0 20\n"
