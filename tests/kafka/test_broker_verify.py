"""What a real Kafka 4 broker writes, cleanly shut down or SIGKILLed mid-produce, is healthy: verify
reports no damage and the audit agrees with the broker's own account (its offsets, its checkpoints,
its consumer groups). A false positive here is a finding every operator would see on every broker.
"""

from __future__ import annotations

import json

import pytest

from .broker_fixtures import logrepair, logrepair_json, real_broker_dirs  # noqa: F401

INTERNAL = ("__cluster_metadata", "__consumer_offsets", "__transaction_state")


@pytest.mark.parametrize("state", ["clean", "killed"])
def test_verify_finds_no_damage_in_what_the_broker_wrote(real_broker_dirs, state):  # noqa: F811
    result = logrepair("verify", str(real_broker_dirs[state]), "--json")
    report = json.loads(result.stdout)
    findings = [f for p in report["partitions"] for f in p["defects"]] + report["defects"]
    damage = [f for f in findings if f["severity"] != "notice"]
    assert damage == [] and result.returncode == 0 and report["clean"], damage
    # the only notices: the segments the cleaner replaced, awaiting their delayed deletion
    assert {f["kind"] for f in findings} <= {"deleted_leftover"}
    topics = {p["topic"] for p in report["partitions"]}
    # the partitions the no-false-positive claim covers
    assert {*INTERNAL, "events", "txn", "compacted"} <= topics


@pytest.mark.parametrize("state", ["clean", "killed"])
def test_audit_agrees_with_the_brokers_checkpoints(real_broker_dirs, state):  # noqa: F811
    log_dir = real_broker_dirs[state]
    report = logrepair_json("audit", str(log_dir))
    assert report["clean"], [p["findings"] for p in report["partitions"] if p["findings"]]
    notices = {f["kind"] for p in report["partitions"] for f in p["findings"]}
    assert notices <= {"deleted_leftover"}
    checkpoints = {
        name: _checkpoint(log_dir / name)
        for name in (
            "recovery-point-offset-checkpoint",
            "replication-offset-checkpoint",
            "log-start-offset-checkpoint",
        )
    }
    for p in report["partitions"]:
        tp = f"{p['topic']}-{p['partition']}"
        if p["topic"] == "__cluster_metadata":
            continue  # the raft layer keeps its own state, not in these checkpoints
        assert p["recovery_point"] == checkpoints["recovery-point-offset-checkpoint"][tp], tp
        assert p["high_watermark"] == checkpoints["replication-offset-checkpoint"][tp], tp
        assert p["log_start_offset"] == checkpoints["log-start-offset-checkpoint"].get(tp, 0), tp


def test_audit_agrees_with_what_the_live_broker_said(real_broker_dirs):  # noqa: F811
    """Just before its clean shutdown the broker gave every partition's end offset and every
    group's committed offsets; the audit of the dir it left says the same."""
    facts = real_broker_dirs["facts"]
    report = logrepair_json("audit", str(real_broker_dirs["clean"]))
    ends = {f"{p['topic']}-{p['partition']}": p for p in report["partitions"]}
    for tp, end in facts["end_offsets"].items():
        assert (ends[tp]["log_end_offset"], ends[tp]["high_watermark"]) == (end, end), tp
        assert ends[tp]["recovery_point"] == end, tp  # a clean shutdown flushes everything
    committed = {(c["group"], c["topic"], c["partition"]): c for c in report["consumer_offsets"]}
    assert {k: c["offset"] for k, c in committed.items()} == {
        (g, t, p): o for g, t, p, o in facts["committed"]
    }
    assert all(c["status"] == "ok" for c in committed.values())


def _checkpoint(path) -> dict[str, int]:
    lines = path.read_text().splitlines()
    out = {}
    for line in lines[2:]:
        topic, partition, offset = line.split(" ")
        out[f"{topic}-{partition}"] = int(offset)
    return out
