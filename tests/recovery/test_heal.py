"""`repair --mode heal`: damaged ranges filled from other brokers' copies, byte for byte.

The copies are written by the project's own storage `Log` (simulator/replicas.py): the leader
appends, followers append the same batches through the follower path, each broker with its own
segment size, so segment boundaries differ between copies."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from logrepair.recovery.heal_invariants import committed_equal, from_replicas, nothing_diverged
from logrepair.recovery.healing import heal
from logrepair.recovery.invariants import accounted, inventory, tree_digest, well_formed
from logrepair.recovery.settings import Settings
from logrepair.recovery.undo import undo
from logrepair.storage import checkpoints, layout
from simulator.replicas import TOPIC, ReplicaSpec, run_replicated

from .builders import DISK

PARTITION = f"{TOPIC}-0"


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cluster")
    run_replicated(ReplicaSpec(appends=45, root=str(root), seed=3), DISK)
    return root


@pytest.fixture(scope="module")
def diverged_template(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("unclean")
    run_replicated(
        ReplicaSpec(appends=40, root=str(root), seed=5, unclean_at=25, leader_every=0), DISK
    )
    return root


@pytest.fixture
def cluster(template, tmp_path) -> Path:
    shutil.copytree(template, tmp_path / "c")
    return tmp_path / "c"


def broker(root: Path, n: int) -> Path:
    return root / f"broker{n}"


def segments(root: Path, n: int) -> list[Path]:
    d = broker(root, n) / PARTITION
    return sorted(p for p in d.iterdir() if p.name.endswith(".log"))


def high_watermark(root: Path, n: int) -> int:
    offsets = checkpoints.read_offsets(DISK, str(broker(root, n) / layout.REPLICATION_CHECKPOINT))
    return offsets[layout.TopicPartition(TOPIC, 0)]


def flip(path: Path, position: int) -> None:
    data = bytearray(path.read_bytes())
    data[position] ^= 0x40
    path.write_bytes(bytes(data))


def heal_checked(root: Path, n: int, replicas: list[int], **kw):
    """Heal broker n from `replicas`, then check: well-formed and idempotent, every batch from a
    copy, accounted, undo restores every byte, and the heal is deterministic."""
    path = str(broker(root, n))
    others = [str(broker(root, r)) for r in replicas]
    before_tree = tree_digest(DISK, path)
    replica_trees = [tree_digest(DISK, r) for r in others]
    before = inventory(DISK, path)
    result = heal(DISK, path, Settings(), others, **kw)
    after = inventory(DISK, path)
    plan = result.result.plan
    problems = well_formed(DISK, path, "salvage", Settings(), plan.left, result.result.scan)
    problems += from_replicas(before, after, [inventory(DISK, r) for r in others])
    problems += accounted(DISK, result.result.plan, result.result.quarantine)
    again = heal(DISK, path, Settings(), others, dry_run=True, **kw)
    problems += [f"not idempotent: {a.describe()}" for a in again.result.plan.actions]
    assert not problems, "\n".join(problems)
    assert [tree_digest(DISK, r) for r in others] == replica_trees, "a replica was written"
    if result.result.quarantine is not None:
        healed = tree_digest(DISK, path)
        undo(DISK, result.result.quarantine)
        assert tree_digest(DISK, path) == before_tree, "undo did not restore every byte"
        heal(DISK, path, Settings(), others, **kw)
        assert tree_digest(DISK, path) == healed, "heal is not deterministic"
    return result, after


def test_a_corrupt_batch_a_lost_segment_and_a_torn_tail_are_healed_with_no_loss(cluster):
    segs = segments(cluster, 1)
    flip(segs[1], segs[1].stat().st_size // 2)
    segs[3].unlink()
    os.truncate(segs[-1], segs[-1].stat().st_size // 3)
    committed = high_watermark(cluster, 1)
    result, after = heal_checked(cluster, 1, [0, 2])
    assert not result.lost
    assert all(r.complete for r in result.source.ranges)
    assert len(result.source.ranges) >= 2
    assert not committed_equal(after, inventory(DISK, str(broker(cluster, 0))), committed)


def test_the_same_range_damaged_everywhere_falls_back_to_salvage_and_says_so(cluster):
    # the first segment holds the same offsets on every broker: damage them all there
    for n in (0, 1, 2):
        first = segments(cluster, n)[0]
        flip(first, 100)
    result, _ = heal_checked(cluster, 1, [0, 2])
    assert result.lost
    rng = result.source.ranges[0]
    assert not rng.complete and rng.lost is not None
    assert set(rng.not_used) == {str(broker(cluster, 0)), str(broker(cluster, 2))}
    assert all("diverged" in why or "damaged" in why for why in rng.not_used.values())


def test_a_replica_whose_history_diverged_is_not_used(diverged_template, tmp_path):
    root = tmp_path / "c"
    shutil.copytree(diverged_template, root)
    # broker0 kept the old leader's tail after the unclean election; damage a batch there in
    # the diverged stretch: the other brokers hold other batches at those offsets
    segs = segments(root, 0)
    flip(segs[-1], segs[-1].stat().st_size - 20)
    before_others = [inventory(DISK, str(broker(root, n))) for n in (1, 2)]
    result, after = heal_checked(root, 0, [1, 2], beyond_high_watermark=True)
    for rng in result.source.ranges:
        assert not rng.filled, rng.describe()
    diverged_only = inventory(DISK, str(broker(root, 0)))
    assert not nothing_diverged(
        before_others[0], inventory(DISK, str(broker(root, 1))), diverged_only, before_others[1:]
    )
    assert after


def test_heal_on_a_follower_never_imports_the_diverged_brokers_batches(diverged_template, tmp_path):
    root = tmp_path / "c"
    shutil.copytree(diverged_template, root)
    diverged = inventory(DISK, str(broker(root, 0)))
    others = inventory(DISK, str(broker(root, 2)))
    segs = segments(root, 1)
    os.truncate(segs[-1], segs[-1].stat().st_size // 2)
    before = inventory(DISK, str(broker(root, 1)))
    _, after = heal_checked(root, 1, [0, 2], beyond_high_watermark=True)
    assert not nothing_diverged(before, after, diverged, [others])


def test_past_the_high_watermark_only_with_the_option(cluster, tmp_path):
    segs = segments(cluster, 1)
    os.truncate(segs[-1], segs[-1].stat().st_size // 2)
    for n in (0, 1, 2):
        (broker(cluster, n) / layout.REPLICATION_CHECKPOINT).write_text("0\n0\n")
    second = tmp_path / "second"
    shutil.copytree(cluster, second)
    result, _ = heal_checked(cluster, 1, [0, 2])
    assert not any(r.filled for r in result.source.ranges)
    assert result.lost is False  # nothing committed: the torn tail was never acknowledged
    assert "high watermark" in " ".join(
        why for r in result.source.ranges for why in r.not_used.values()
    )
    result, after = heal_checked(second, 1, [0, 2], beyond_high_watermark=True)
    assert any(r.filled for r in result.source.ranges)
    assert not committed_equal(after, inventory(DISK, str(broker(second, 0))), 2**62)


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "logrepair", *args], capture_output=True, text=True, timeout=120
    )


def test_cli_dry_run_names_the_replica_file_and_position_then_heals(cluster):
    segs = segments(cluster, 2)
    flip(segs[2], 70)
    path, r0, r1 = (str(broker(cluster, n)) for n in (2, 0, 1))
    dry = run_cli("repair", path, "--mode", "heal", "--replica", r0, "--replica", r1, "--dry-run")
    assert dry.returncode == 0, dry.stderr  # nothing would be lost
    assert f"from {r0}" in dry.stdout or f"from {r1}" in dry.stdout
    assert ".log @" in dry.stdout
    done = run_cli("repair", path, "--mode", "heal", "--replica", r0, "--replica", r1, "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["mode"] == "heal" and out["applied"]
    ranges = out["heal"]["ranges"]
    assert ranges and all(r["healed"] for r in ranges)
    piece = ranges[0]["from"][0]["pieces"][0]
    assert piece[0].startswith(r0) or piece[0].startswith(r1)
    verify = run_cli("verify", path)
    assert verify.returncode == 0, verify.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["--mode", "heal"], "needs at least one --replica"),
        (["--mode", "salvage", "--replica", "/x"], "only for --mode heal"),
        (["--mode", "heal", "--replica", "/nonexistent/broker"], "no such directory"),
    ],
)
def test_cli_heal_options_are_checked(cluster, args, message):
    out = run_cli("repair", str(broker(cluster, 0)), *args)
    assert out.returncode == 2
    assert message in out.stderr and "Traceback" not in out.stderr


def test_cli_refuses_a_replica_that_is_the_repaired_dir(cluster):
    path = str(broker(cluster, 0))
    out = run_cli("repair", path, "--mode", "heal", "--replica", path)
    assert out.returncode == 2 and "overlaps" in out.stderr


DAMAGE = st.lists(
    st.tuples(
        st.sampled_from(["flip", "zero", "truncate", "delete", "empty"]),
        st.integers(0, 20),
        st.floats(0, 1),
    ),
    min_size=1,
    max_size=3,
)


@settings(
    # each example builds and heals a copy of a three-broker cluster: few by default, many under
    # HYPOTHESIS_PROFILE=thorough
    max_examples=400 if os.environ.get("HYPOTHESIS_PROFILE") == "thorough" else 5,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)
@given(target=st.integers(0, 2), damage=DAMAGE)
def test_property_random_damage_of_one_copy_heals_with_no_loss(template, tmp_path, target, damage):
    root = tmp_path / f"p{abs(hash((target, tuple(damage))))}"
    shutil.copytree(template, root)
    try:
        segs = segments(root, target)
        for kind, which, where in damage:
            seg = segs[which % len(segs)]
            if kind == "delete" and seg == segs[0]:
                # a log without its first segment is a log whose retention ran: not a defect
                seg = segs[1]
            if not seg.exists():
                continue
            size = seg.stat().st_size
            at = int(where * max(size - 1, 0))
            if kind == "flip" and size:
                flip(seg, at)
            elif kind == "zero" and size:
                data = bytearray(seg.read_bytes())
                data[at : at + 64] = bytes(len(data[at : at + 64]))
                seg.write_bytes(bytes(data))
            elif kind == "truncate":
                os.truncate(seg, at)
            elif kind == "delete":
                seg.unlink()
            elif kind == "empty":
                os.truncate(seg, 0)
        committed = high_watermark(root, target)
        others = [n for n in range(3) if n != target]
        result, after = heal_checked(root, target, others)
        healthiest = inventory(DISK, str(broker(root, others[0])))
        assert not committed_equal(after, healthiest, committed), [
            line for r in result.source.ranges for line in r.describe()
        ]
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_several_partitions_are_healed_each_from_its_own_copies(tmp_path):
    root = tmp_path / "multi"
    run_replicated(ReplicaSpec(appends=40, partitions=2, root=str(root), seed=8), DISK)
    for p in (0, 1):
        pdir = broker(root, 0) / f"{TOPIC}-{p}"
        logs = sorted(x for x in pdir.iterdir() if x.name.endswith(".log"))
        flip(logs[0], logs[0].stat().st_size // 2)
    result, after = heal_checked(root, 0, [1, 2])
    assert {(r.topic, r.partition) for r in result.source.ranges} == {(TOPIC, 0), (TOPIC, 1)}
    assert all(r.complete for r in result.source.ranges) and not result.lost
    healthy = inventory(DISK, str(broker(root, 1)))
    assert not committed_equal(after, healthy, high_watermark(root, 0))


def test_a_compacted_topic_heals_from_a_copy_whose_batches_agree(cluster):
    from logrepair.format.batch import RecordBatch

    # a compacted topic: broker0's cleaner dropped every other batch of its first segment
    for n in range(3):
        (broker(cluster, n) / layout.CLEANER_CHECKPOINT).write_text(f"0\n1\n{PARTITION} 0\n")
    first = segments(cluster, 0)[0]
    raw, kept, pos, i = first.read_bytes(), [], 0, 0
    while pos < len(raw):
        b = RecordBatch.parse(raw, pos)
        if i % 2 == 0 or b.is_transactional:
            kept.append(raw[pos : pos + b.size])
        pos += b.size
        i += 1
    first.write_bytes(b"".join(kept))
    for suffix in (".index", ".timeindex"):
        first.with_suffix(suffix).unlink()
    segs = segments(cluster, 1)
    flip(segs[0], segs[0].stat().st_size // 2)
    result, _ = heal_checked(cluster, 1, [0, 2])  # (every healed batch is a copy's)
    (rng,) = [r for r in result.source.ranges if r.filled]
    assert rng.complete and not result.lost


def test_a_leader_epoch_flipped_outside_the_crc_is_healed_from_a_replica(cluster):
    from logrepair.format.batch import RecordBatch

    seg = segments(cluster, 1)[2]
    raw = seg.read_bytes()
    second = RecordBatch.parse(raw, 0).size  # the segment's second batch
    flip(seg, second + 13)  # a bit of its partition leader epoch (bytes 12..15, not in the CRC)
    committed = high_watermark(cluster, 1)
    result, after = heal_checked(cluster, 1, [0, 2])
    assert [r.complete for r in result.source.ranges] == [True]
    assert not committed_equal(after, inventory(DISK, str(broker(cluster, 0))), committed)
