"""The real broker, end to end: a log dir a Kafka 4 broker left when it was SIGKILLed mid-produce (with
an open transaction), damaged the way disks and crashes do (`simulator/inject.py`), repaired by the
real CLI in each mode, and started again. Kafka must load it without taking the dir offline, a real
consumer must get exactly the records the mode's plan said it keeps (read_uncommitted and
read_committed), and the group coordinator must hold the offsets the audit said.

kafka mode is held to Kafka itself: the repaired dir serves what the broker serves from the
unrepaired copy (a CRC-failed batch below the recovery point included: Kafka does not check there,
so a consumer stops at it in both). salvage serves every CRC-valid batch; point-in-time the prefix
before each partition's first defect.

The internal partitions are damaged too: the transaction coordinators' log (its last state record
torn, an index corrupt) and KRaft's metadata log (a bit flip, a corrupt index), which the raft
layer loads itself (`KafkaMetadataLog`: recovered from offset 0 at every start, then emptied up to
its latest snapshot when that is past the log end; docs/spec-notes.md). Each transactional id must
end in the state the coordinator reaches from the last state record the plan keeps, and verify must
find nothing on the dir the broker ran on but what the plan said it leaves.
"""

from __future__ import annotations

import base64
import json
import shutil
import time
from pathlib import Path

import pytest

from logrepair.decoders import decode_transaction_record
from simulator.inject import inject
from tests.recovery.builders import flip_byte

from .broker import Broker, BrokerError
from .broker_fixtures import logrepair, logrepair_json, real_broker_dirs  # noqa: F401
from .broker_workload import (
    COMPACTED,
    TXN,
    TXN_TIMEOUT_MS,
    USER_TOPICS,
    Consumed,
    committed_offsets,
    consume_all,
    transaction_states,
    wait_for_stable,
)

MODES = ("kafka", "point-in-time", "salvage")
# (partition, fault, seed): a torn and a garbage tail above the recovery point (unflushed writes of
# the burst the kill cut short), a bit flip in a batch below it, a corrupt offset index under a
# transactional partition, a torn last commit of the consumer groups.
DAMAGE = (
    ("events-0", "torn_tail", 1),
    ("events-1", "garbage_tail", 1),
    ("events-2", "bit_flip", 3),
    ("txn-0", "corrupt_index", 1),
    ("__consumer_offsets-1", "torn_tail", 2),
    ("__transaction_state-0", "torn_tail", 1),
    ("__transaction_state-0", "bit_flip", 1),
    ("__transaction_state-1", "corrupt_index", 1),
    ("__cluster_metadata-0", "torn_tail", 1),
    ("__cluster_metadata-0", "bit_flip", 1),
    ("__cluster_metadata-0", "corrupt_index", 1),
)
METADATA = "__cluster_metadata-0"
# What a coordinator loading a transactional id in a state makes of it: it completes a prepared
# commit or abort at once, and aborts an ongoing transaction when it times out (within the test
# only for the short timeout of the transaction the kill left open; a longer one may still be on).
COMPLETED = {
    "PrepareCommit": "CompleteCommit",
    "PrepareAbort": "CompleteAbort",
    "Ongoing": "CompleteAbort",
}
ABORTING = frozenset({"Ongoing", "PrepareAbort", "CompleteAbort"})
# Values of the transactions the history aborted (kafka-python n % 3 == 1, aiokafka odd n) and of the
# one the kill left open, which the restarted coordinator aborts.
ABORTED = {
    TXN: (b"kptx1-", b"kptx4-", b"aiotx1-", b"aiotx3-", b"open-"),
    COMPACTED: (b"ctx1-", b"ctx3-"),
}


@pytest.fixture(scope="module")
def damaged(real_broker_dirs, tmp_path_factory) -> Path:  # noqa: F811
    path = tmp_path_factory.mktemp("e2e") / "damaged"
    shutil.copytree(real_broker_dirs["killed"], path)
    for partition, fault, seed in DAMAGE:
        assert inject(str(path / partition), fault, seed, in_place=True)
    return path


def _copy(src: Path, tmp_path: Path, name: str) -> Path:
    dst = tmp_path / name
    shutil.copytree(src, dst)
    return dst


def _serve(
    log_dir: Path, ports, transactions: dict[str, frozenset[str]] | None = None
) -> tuple[Consumed, Consumed, dict]:
    """Starts Kafka on `log_dir`, consumes everything both ways, reads the groups' offsets, and
    waits for the coordinators to bring each transactional id to one of its `transactions`
    states."""
    with Broker(log_dir, ports=tuple(ports)) as broker:
        try:
            uncommitted = consume_all(broker.bootstrap, USER_TOPICS, "read_uncommitted")
            wait_for_stable(broker.bootstrap, (TXN,))
            committed = consume_all(broker.bootstrap, USER_TOPICS, "read_committed")
            groups = committed_offsets(broker.bootstrap)
            states = _wait_for_states(broker.bootstrap, transactions or {})
        finally:
            offline = broker.offline_lines()
            alive = broker.alive()
            log_tail = broker.stderr_tail()
    assert alive and not offline, f"Kafka took the log dir offline: {offline or log_tail}"
    assert transactions is None or _reached(states, transactions), (states, transactions)
    return uncommitted, committed, groups


def _reached(states: dict[str, str], expected: dict[str, frozenset[str]]) -> bool:
    return states.keys() == expected.keys() and all(states[t] in expected[t] for t in states)


def _wait_for_states(bootstrap: str, expected: dict, timeout: float = 30) -> dict[str, str]:
    deadline = time.monotonic() + timeout
    while True:
        states = transaction_states(bootstrap)
        if not expected or _reached(states, expected) or time.monotonic() > deadline:
            return states
        time.sleep(0.5)


def _expected_states(log_dir: Path) -> dict[str, frozenset[str]]:
    """{transactional id: the states its coordinator may have reached once it loaded the last
    state record the `__transaction_state` partitions of `log_dir` hold}."""
    out = {}
    for transactional_id, (state, timeout_ms) in _last_states(log_dir).items():
        long_ongoing = state == "Ongoing" and timeout_ms > TXN_TIMEOUT_MS
        out[transactional_id] = (
            ABORTING if long_ongoing else frozenset({COMPLETED.get(state, state)})
        )
    return out


def _last_states(log_dir: Path) -> dict[str, tuple[str, int]]:
    """{transactional id: (its state, its transaction timeout)} in the last state record the
    `__transaction_state` partitions of `log_dir` hold."""
    files = sorted(log_dir.glob("__transaction_state-*/*.log"))
    out = logrepair("dump", "--deep-iteration", "--json", *map(str, files)).stdout
    last: dict[str, tuple[str, int]] = {}
    for line in out.decode().splitlines():
        batch = json.loads(line)
        for r in batch.get("records", ()):
            txn = decode_transaction_record(_b64(r["key"]), _b64(r["value"]))
            value = txn.value
            last[txn.transactional_id] = (
                (value.state, value.transaction_timeout_ms) if value else ("expired", 0)
            )
    return last


def _damage_after(log_dir: Path) -> set[tuple[str, str]]:
    """(file, kind) of every finding of `logrepair verify` but notices."""
    report = json.loads(logrepair("verify", str(log_dir), "--json").stdout)
    findings = [f for p in report["partitions"] for f in p["defects"]] + report["defects"]
    return {(f["file"], f["kind"]) for f in findings if f["severity"] != "notice"}


@pytest.fixture(scope="module")
def unrepaired(damaged, real_broker_dirs, tmp_path_factory):  # noqa: F811
    """What Kafka itself serves from the damaged dir, recovered by its own start-up."""
    copy = _copy(damaged, tmp_path_factory.mktemp("unrepaired"), "logs")
    return _serve(copy, real_broker_dirs["facts"]["ports"])


def _valid_records(log_dir: Path) -> list[tuple]:
    """Every data record of a CRC-valid batch in the user topics, as logrepair reads it."""
    files = sorted(p for t in USER_TOPICS for p in log_dir.glob(f"{t}-*/*.log"))
    out = logrepair("dump", "--deep-iteration", "--json", *map(str, files)).stdout
    records = []
    for line in out.decode().splitlines():
        batch = json.loads(line)
        if "defect" in batch or not batch["crc_valid"] or batch["is_control"]:
            continue
        topic, _, partition = Path(batch["file"]).parent.name.rpartition("-")
        for r in batch["records"]:
            records.append((topic, int(partition), r["offset"], _b64(r["key"]), _b64(r["value"])))
    return sorted(records, key=lambda r: r[:3])


def _b64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def _removed(plan: dict) -> dict[str, list[tuple[int, int]]]:
    """{partition dir: [(first, last)]}: the offset ranges the plan's actions remove."""
    out: dict[str, list[tuple[int, int]]] = {}
    for action in plan["actions"]:
        if "removed_offsets" in action:
            first, last = action["removed_offsets"]
            out.setdefault(action["file"].split("/")[0], []).append((first, last))
    return out


def _aborted(record: tuple) -> bool:
    return (record[4] or b"").startswith(ABORTED.get(record[0], ()))


@pytest.mark.parametrize("mode", MODES)
def test_repaired_dir_serves_what_the_plan_keeps(
    mode,
    damaged,
    unrepaired,
    real_broker_dirs,  # noqa: F811
    tmp_path,
):
    log_dir = _copy(damaged, tmp_path, "logs")
    kept_before = _valid_records(log_dir)
    plan = logrepair_json("repair", str(log_dir), "--mode", mode)
    assert plan["applied"], plan
    audit = logrepair_json("audit", str(log_dir))

    # Each transactional id's last kept state record (a prepared commit, where the torn tail and
    # the bit flip land after one, which depends on the killed history) is what its coordinator
    # completes: `_serve` waits for every id to reach what `_expected_states` allows.
    assert _last_states(log_dir), "no transaction state record kept"
    transactions = _expected_states(log_dir)
    uncommitted, committed, groups = _serve(
        log_dir, real_broker_dirs["facts"]["ports"], transactions
    )
    # the raft layer's own start: the metadata log begins where the plan said (docs/spec-notes.md)
    said = [n for n in plan["notes"] if n.startswith(f"{METADATA}: its latest KRaft snapshot")]
    first = min(int(p.name[:20]) for p in (log_dir / METADATA).glob("*.log"))
    assert first == (int(said[0].split(" snapshot ")[1][:20]) if said else 0), said
    # what the broker ran on is healthy: nothing left but what the plan said it leaves
    left = {(f["file"], f["kind"]) for f in plan["left"] if f["severity"] != "notice"}
    assert _damage_after(log_dir) == left

    removed = _removed(plan)
    expected = [
        r
        for r in kept_before
        if not any(a <= r[2] <= b for a, b in removed.get(f"{r[0]}-{r[1]}", ()))
    ]
    if mode == "kafka":
        # Kafka's own start on the unrepaired copy serves the same, up to the same corrupt batch.
        assert uncommitted == unrepaired[0]
        assert committed == unrepaired[1]
        left = {f["file"].split("/")[0] for f in plan["left"] if f["kind"] == "crc_mismatch"}
        assert set(uncommitted.corrupt_at) == left
        expected = [
            r for r in expected if r[2] < uncommitted.corrupt_at.get(f"{r[0]}-{r[1]}", float("inf"))
        ]
    else:
        assert uncommitted.corrupt_at == {} and committed.corrupt_at == {}
    assert uncommitted.records == expected
    if mode == "salvage":
        assert uncommitted.records == kept_before  # every CRC-valid batch
    assert committed.records == [r for r in uncommitted.records if not _aborted(r)]
    assert any((r[4] or b"").startswith(b"kptx0-") for r in committed.records)  # committed: there

    said = {
        (c["group"], c["topic"], c["partition"]): c["offset"] for c in audit["consumer_offsets"]
    }
    assert groups == said


def test_a_metadata_log_past_every_snapshot_stops_the_broker_as_the_plan_says(
    real_broker_dirs,  # noqa: F811
    tmp_path,
):
    """The raft layer's `recoverSnapshots` against the real broker: salvage moves the batches
    after a flipped first metadata batch to `1.log`; with no KRaft snapshot at or past offset 1
    the broker does not start (IllegalStateException), which is what salvage's plan says."""
    log_dir = _copy(real_broker_dirs["killed"], tmp_path, "logs")
    meta = log_dir / METADATA
    for snapshot in meta.glob("*.checkpoint"):
        snapshot.unlink()  # a cluster too young to have one
    flip_byte(meta / "00000000000000000000.log", 40)
    plan = logrepair_json("repair", str(log_dir), "--mode", "salvage")
    (note,) = [n for n in plan["notes"] if n.startswith(METADATA)]
    assert "start at offset 1 with no KRaft snapshot" in note and "does not start" in note
    broker = Broker(log_dir, ports=tuple(real_broker_dirs["facts"]["ports"]))
    try:
        with pytest.raises(BrokerError):
            broker.start()
        assert "Inconsistent snapshot state" in broker.stderr_text()
    finally:
        broker.__exit__(None, None, None)
