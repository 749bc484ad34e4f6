"""The single-machine audit: each check on a log dir built to fail it, and the fleet fixture."""

from __future__ import annotations

import json
import os

import pytest

from logrepair.audit.discovery import DiscoveryError
from logrepair.audit.local import audit_paths
from logrepair.cli import main
from logrepair.storage import layout
from logrepair.storage.layout import TopicPartition

from .conftest import findings_by_place
from .fleetgen import (
    LogDirSpec,
    PartitionSpec,
    commit_batches,
    diverge,
    history,
    offsets_log,
    write_log_dir,
)

T0 = TopicPartition("t", 0)


def one(tmp_path, spec: PartitionSpec, **dir_options) -> tuple:
    write_log_dir(str(tmp_path / "b1"), LogDirSpec(partitions={T0: spec}, **dir_options))
    report = audit_paths([str(tmp_path / "b1")])
    return report, report.partitions[0]


def kinds(partition) -> set[str]:
    return {f.kind for f in partition.findings}


def test_clean_shutdown_log_dir_is_clean(tmp_path):
    report, p = one(tmp_path, PartitionSpec(history(10, epochs={0: 0, 4: 3})))
    assert report.clean, report.all_findings()
    assert (p.log_start_offset, p.log_end_offset, p.recovery_point, p.high_watermark) == (
        0,
        40,
        40,
        40,
    )
    assert (p.segments, p.batches, p.unflushed_bytes) == (3, 10, 0)
    assert report.log_dirs[0].clean_shutdown and report.log_dirs[0].recovery_seconds == 0.0


def test_recovery_point_past_end_means_flushed_data_lost(tmp_path):
    report, p = one(tmp_path, PartitionSpec(history(6), recovery_point=30))
    assert kinds(p) == {"recovery_point_beyond_end"}
    assert "[24, 30)" in p.findings[0].detail
    assert not report.clean


def test_high_watermark_past_end_means_acknowledged_data_lost(tmp_path):
    _, p = one(tmp_path, PartitionSpec(history(6), high_watermark=25))
    assert kinds(p) == {"high_watermark_beyond_end"}


def test_missing_entries_in_checkpoints(tmp_path):
    _, p = one(tmp_path, PartitionSpec(history(3), recovery_point=None, high_watermark=None))
    assert kinds(p) == {"recovery_point_missing", "high_watermark_missing"}
    assert p.recovery_bytes == p.bytes  # an unclean start recovers it all


def test_first_segment_above_high_watermark(tmp_path):
    batches = history(8)[4:]  # segments below offset 16 are gone
    _, p = one(tmp_path, PartitionSpec(batches, high_watermark=10))
    assert p.log_start_offset == 16
    assert kinds(p) == {"log_start_beyond_high_watermark"}


def test_log_start_checkpoint_past_end(tmp_path):
    _, p = one(tmp_path, PartitionSpec(history(2), log_start=50, high_watermark=8))
    assert "log_start_beyond_end" in kinds(p)


def test_unflushed_and_recovery_bytes_after_unclean_shutdown(tmp_path):
    batches = history(12)  # 3 segments of 4 batches; offsets 0..47
    size = len(batches[0].data)
    report, p = one(tmp_path, PartitionSpec(batches, recovery_point=22), clean_shutdown=False)
    # offset 22 lies in batch 5 (offsets 20..23), the second batch of the second segment
    assert p.unflushed_bytes == size * 7
    assert p.recovery_bytes == size * 8  # the segment holding the recovery point and the next
    d = report.log_dirs[0]
    assert d.recovery_bytes == p.recovery_bytes
    assert d.recovery_seconds == p.recovery_bytes / report.recovery_rate
    assert report.clean  # lagging recovery points are normal, not a finding


def test_clean_marker_with_unflushed_data(tmp_path):
    _, p = one(tmp_path, PartitionSpec(history(6), recovery_point=4))
    assert kinds(p) == {"clean_shutdown_with_unflushed_data"}


def test_leader_epoch_starting_at_the_log_end_is_normal(tmp_path):
    # A leader elected after the last write starts its epoch at the log end (a real broker writes
    # `0 0` for every empty partition); only entries past the end are findings.
    _, p = one(tmp_path, PartitionSpec(history(2), leader_epochs=[(0, 0), (1, 8)]))
    assert kinds(p) == set()
    _, p = one(tmp_path, PartitionSpec(history(2), leader_epochs=[(0, 0), (1, 9)]))
    assert kinds(p) == {"leader_epoch_beyond_end"}


def test_leader_epochs_held_against_batches(tmp_path):
    batches = history(8, epochs={0: 0, 3: 2, 6: 5})
    _, p = one(tmp_path, PartitionSpec(batches, leader_epochs=[(0, 0), (2, 12), (7, 90)]))
    details = sorted(f.detail for f in p.findings)
    assert kinds(p) == {"leader_epoch_mismatch", "leader_epoch_beyond_end"}
    assert any("epoch 5 first appears at offset 24" in d for d in details)
    _, p = one(tmp_path, PartitionSpec(batches, leader_epochs=[(0, 0), (2, 13), (5, 24)]))
    assert [f.detail for f in p.findings] == [
        "epoch 2 first appears at offset 12 but leader-epoch-checkpoint starts it at 13"
    ]


def test_leader_epoch_file_missing_and_malformed(tmp_path):
    _, p = one(tmp_path, PartitionSpec(history(2, epochs={0: 4}), leader_epochs=None))
    assert kinds(p) == {"leader_epoch_mismatch"}
    with open(tmp_path / "b1" / "t-0" / layout.LEADER_EPOCH_CHECKPOINT, "w") as f:
        f.write("0\n2\n4 0\n")
    report = audit_paths([str(tmp_path / "b1")])
    assert kinds(report.partitions[0]) == {"checkpoint_malformed"}


def test_torn_tail_is_reported_with_the_scan_kind(tmp_path):
    batches = history(4)  # the tail: the start of the batch that would follow the third
    _, p = one(tmp_path, PartitionSpec(batches[:3], tail=batches[3].data[:30]))
    assert kinds(p) == {"torn_tail"}
    assert p.log_end_offset == 12
    assert "00000000000000000000.log at byte" in p.findings[0].detail


def test_malformed_root_checkpoint_is_a_log_dir_finding(tmp_path):
    write_log_dir(str(tmp_path / "b1"), LogDirSpec(partitions={T0: PartitionSpec(history(2))}))
    (tmp_path / "b1" / layout.RECOVERY_POINT_CHECKPOINT).write_text("0\n3\nt 0 8\n")
    report = audit_paths([str(tmp_path / "b1")])
    assert [f.kind for f in report.log_dirs[0].findings] == ["checkpoint_malformed"]
    # Kafka resets every recovery point to 0 when the file does not parse
    assert kinds(report.partitions[0]) == {"recovery_point_missing"}


def test_delete_and_future_dirs_are_listed_not_checked(tmp_path):
    uid = "0123456789abcdef0123456789abcdef"
    spec = LogDirSpec(
        partitions={
            T0: PartitionSpec(history(2)),
            TopicPartition("t", 1): PartitionSpec(
                history(2), dir_name=f"t-1.{uid}-delete", recovery_point=None
            ),
            TopicPartition("u", 0): PartitionSpec(
                history(2), dir_name=f"u-0.{uid}-future", high_watermark=None
            ),
        }
    )
    write_log_dir(str(tmp_path / "b1"), spec)
    report = audit_paths([str(tmp_path / "b1")])
    assert report.clean, report.all_findings()
    assert sorted(p.state for p in report.partitions) == ["delete", "future", "live"]


def test_same_partition_in_two_log_dirs_of_a_broker(tmp_path):
    for name in ("data-a", "data-b"):
        write_log_dir(
            str(tmp_path / "fleet" / "broker1" / name),
            LogDirSpec(partitions={T0: PartitionSpec(history(2))}),
        )
    report = audit_paths([str(tmp_path / "fleet")])
    assert {d.broker for d in report.log_dirs} == {"broker1"}
    assert [f.kind for f in report.findings] == ["duplicate_partition_dir"]


def test_meta_properties_across_brokers(tmp_path):
    same_dir = "b8yWkTUBRU6hYCWMqMqJpA"
    write_log_dir(str(tmp_path / "f" / "b1"), LogDirSpec(node_id=1, directory_id=same_dir))
    write_log_dir(str(tmp_path / "f" / "b2"), LogDirSpec(node_id=1, directory_id=same_dir))
    write_log_dir(str(tmp_path / "f" / "b3"), LogDirSpec(node_id=3, cluster_id="other"))
    report = audit_paths([str(tmp_path / "f")])
    details = [f.detail for f in report.findings]
    assert [f.kind for f in report.findings] == ["meta_properties_inconsistent"] * 3
    assert any(f"directory id {same_dir} is in" in d for d in details)
    assert any("several cluster ids" in d for d in details)
    assert any("node id 1 is used by brokers b1, b2" in d for d in details)


def test_consumer_offsets_last_value_wins_and_tombstones_delete(tmp_path):
    commits = commit_batches(
        [
            ("g", "t", 0, 3),
            ("g", "t", 0, 7),  # last value wins
            ("old", "t", 0, 100),
            ("old", "t", 0, None),  # tombstone
            ("ahead", "t", 0, 9),
            ("behind", "t", 0, 1),
            ("lost", "gone", 0, 1),
        ]
    )
    spec = LogDirSpec(
        partitions={
            T0: PartitionSpec(history(2, start=4)),  # offsets 4..11
            TopicPartition("__consumer_offsets", 0): PartitionSpec(commits, segment_batches=3),
        }
    )
    write_log_dir(str(tmp_path / "b1"), spec)
    report = audit_paths([str(tmp_path / "b1")])
    status = {(c.group, c.topic): (c.offset, c.status) for c in report.consumer_offsets}
    assert status == {
        ("g", "t"): (7, "ok"),
        ("ahead", "t"): (9, "ok"),
        ("behind", "t"): (1, "below_start"),
        ("lost", "gone"): (1, "unknown_partition"),
    }
    assert [f.kind for f in report.findings] == ["consumer_offset_below_start"]


def test_transactional_commits_count_only_once_committed(tmp_path):
    events = [
        ("commit", "plain", "t", 0, 5),
        ("txn", 7, "eos", "t", 0, 6),  # its COMMIT marker is two segments later
        ("txn", 8, "aborted", "t", 0, 9),
        ("end", 8, False),
        ("txn", 7, "eos", "t", 0, 7),
        ("commit", "plain", "t", 0, 8),
        ("end", 7, True),
        ("txn", 9, "open", "t", 0, 3),  # no marker yet: not a commit
    ]
    spec = LogDirSpec(
        partitions={
            T0: PartitionSpec(history(3)),
            TopicPartition("__consumer_offsets", 4): PartitionSpec(
                offsets_log(events), segment_batches=3
            ),
        }
    )
    write_log_dir(str(tmp_path / "b1"), spec)
    report = audit_paths([str(tmp_path / "b1")])
    assert [(c.group, c.offset) for c in report.consumer_offsets] == [("eos", 7), ("plain", 8)]
    assert report.clean, report.all_findings()


def test_replicas_compared_batch_by_batch(tmp_path):
    batches = history(9)
    for name, b in (("b1", batches), ("b2", diverge(batches, 5)), ("b3", batches[:4])):
        write_log_dir(
            str(tmp_path / "f" / name),
            LogDirSpec(node_id=int(name[1]), partitions={T0: PartitionSpec(b)}),
        )
    report = audit_paths([str(tmp_path / "f")])
    (r,) = report.replicas
    assert r.brokers == ["b1", "b2", "b3"]
    assert r.log_end_offsets == [36, 36, 16]
    assert r.diverged_at == 20
    assert [os.path.basename(os.path.dirname(p)) for p in r.diverged_paths] == ["b2"]
    assert {f.kind for f in r.findings} == {
        "replica_diverged",
        "replica_behind_high_watermark",
        "replica_healable",  # b3's missing tail, which b1 holds (b2 diverged)
    }
    (healable,) = [f for f in r.findings if f.kind == "replica_healable"]
    assert "b3" in healable.detail.split(" healable from ")[0]
    assert "b1" in healable.detail.split(" healable from ")[1]


def test_compacted_prefix_is_not_divergence(tmp_path):
    batches = history(6)
    cleaned = diverge(batches, 0)[:3] + batches[3:]  # each broker cleaned its own head
    for name, b in (("b1", batches), ("b2", cleaned)):
        write_log_dir(
            str(tmp_path / "f" / name),
            LogDirSpec(
                node_id=int(name[1]),
                partitions={
                    T0: PartitionSpec(b, leader_epochs=[(0, 0), (1, 0)][: 1 + (b is cleaned)])
                },
                extra_checkpoint_entries={layout.CLEANER_CHECKPOINT: {T0: 12}},
            ),
        )
    report = audit_paths([str(tmp_path / "f")])
    assert report.replicas[0].diverged_at is None


def test_fleet_fixture_has_exactly_the_planted_findings(fleet):
    report = audit_paths([fleet.root])
    assert findings_by_place(report, fleet.root) == fleet.expected
    assert {d.broker for d in report.log_dirs} == {"b1", "b2", "b3"}
    b3 = next(d for d in report.log_dirs if d.broker == "b3")
    assert not b3.clean_shutdown and b3.recovery_bytes > 0 and b3.recovery_seconds > 0
    assert [(c.group, c.offset) for c in report.consumer_offsets if c.topic == "orders"] == [
        ("g1", 24)
    ]


def test_path_that_is_no_log_dir(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(DiscoveryError, match="neither a log dir"):
        audit_paths([str(tmp_path / "empty")])
    with pytest.raises(DiscoveryError, match="not a directory"):
        audit_paths([str(tmp_path / "missing")])


def test_partition_dir_is_audited_with_its_log_dir_checkpoints(tmp_path):
    spec = LogDirSpec(
        partitions={
            T0: PartitionSpec(history(3), high_watermark=20),
            TopicPartition("t", 1): PartitionSpec(history(1)),
        }
    )
    write_log_dir(str(tmp_path / "b1"), spec)
    report = audit_paths([str(tmp_path / "b1" / "t-0")])
    (p,) = report.partitions
    assert kinds(p) == {"high_watermark_beyond_end"}


def test_batches_the_segment_name_cannot_hold(tmp_path):
    write_log_dir(str(tmp_path / "b1"), LogDirSpec(partitions={T0: PartitionSpec(history(2))}))
    seg = tmp_path / "b1" / "t-0"
    (seg / "00000000000000000000.log").rename(seg / "00000000000000000004.log")
    report = audit_paths([str(tmp_path / "b1")])
    (p,) = report.partitions
    assert [f.kind for f in p.findings][:1] == ["segment_name_mismatch"]
    assert p.batches == 1  # offsets 4..7 fit the name; 0..3 do not


def test_jobs_audit_the_fleet_as_one_process_does(fleet, capsys):
    """Replicas compared across brokers (digests kept only for them), consumer offsets, every
    finding: the same JSON and exit status with the partitions audited in two workers."""
    outputs = []
    for jobs in ("1", "2"):
        code = main(["audit", fleet.root, "--json", "--jobs", jobs])
        outputs.append((code, capsys.readouterr().out))
    assert outputs[1] == outputs[0]
    assert outputs[0][0] == 1 and json.loads(outputs[0][1])["replicas"]
