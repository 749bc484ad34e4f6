"""LogDir: partitions, root checkpoints, clean-shutdown marker, `.lock`; and PATH classification."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from logrepair.storage import layout
from logrepair.storage.checkpoints import read_offsets, write_offsets
from logrepair.storage.clock import ManualClock
from logrepair.storage.layout import TopicPartition
from logrepair.storage.log import Log, ProducerRecord
from logrepair.storage.log_config import LogConfig
from logrepair.storage.logdir import (
    LogDir,
    LogDirError,
    LogDirLockedError,
    PathKind,
    classify_path,
)

TP0 = TopicPartition("orders", 0)
TP1 = TopicPartition("orders", 1)


def recs(n: int, size: int = 40) -> list[ProducerRecord]:
    return [ProducerRecord(None, b"x" * size) for _ in range(n)]


def test_clean_shutdown_writes_checkpoints_and_marker_and_drops_lock(tmp_path, disk) -> None:
    root = str(tmp_path / "kafka-logs")
    ld = LogDir.open(disk, root, LogConfig(segment_bytes=300), clock=ManualClock(0), create=True)
    for _ in range(10):
        ld.create_log(TP0).append(recs(1))
    ld.create_log(TP1).append(recs(3))
    ld.logs[TP0].delete_old_segments()
    ld.logs[TP0].increment_log_start_offset(8)
    ld.close(broker_epoch=42)
    names = set(os.listdir(root))
    assert {".kafka_cleanshutdown", "orders-0", "orders-1"} <= names and ".lock" not in names
    assert read_offsets(disk, f"{root}/{layout.RECOVERY_POINT_CHECKPOINT}") == {TP0: 10, TP1: 3}
    assert read_offsets(disk, f"{root}/{layout.REPLICATION_CHECKPOINT}") == {TP0: 10, TP1: 3}
    # Only logs whose start is above their first segment's base are in the log-start checkpoint.
    assert read_offsets(disk, f"{root}/{layout.LOG_START_OFFSET_CHECKPOINT}") == {TP0: 8}
    assert open(f"{root}/.kafka_cleanshutdown").read() == '{"version":0,"brokerEpoch":42}'

    again = LogDir.open(disk, root, LogConfig(segment_bytes=300), clock=ManualClock(0))
    assert again.had_clean_shutdown and ".kafka_cleanshutdown" not in os.listdir(root)
    assert set(again.logs) == {TP0, TP1}
    lg = again.logs[TP0]
    assert (lg.log_start_offset, lg.log_end_offset, lg.recovery_point, lg.high_watermark) == (
        8,
        10,
        10,
        10,
    )
    again.close()


def test_unclean_start_uses_checkpointed_recovery_points(tmp_path, disk) -> None:
    root = tmp_path / "logs"
    lg = Log.open(disk, str(root / "orders-0"), clock=ManualClock(0))
    lg.append(recs(6))
    lg.close()
    write_offsets(disk, str(root / layout.RECOVERY_POINT_CHECKPOINT), {TP0: 2})
    write_offsets(disk, str(root / layout.REPLICATION_CHECKPOINT), {TP0: 4})
    ld = LogDir.open(disk, str(root), clock=ManualClock(0))
    assert not ld.had_clean_shutdown
    assert (ld.logs[TP0].recovery_point, ld.logs[TP0].high_watermark) == (2, 4)
    ld.close()


def test_malformed_checkpoint_reads_as_empty_as_the_broker_does(tmp_path, disk) -> None:
    root = tmp_path / "logs"
    Log.open(disk, str(root / "orders-0"), clock=ManualClock(0)).close()
    (root / layout.RECOVERY_POINT_CHECKPOINT).write_text("0\n1\nbroken\n")
    ld = LogDir.open(disk, str(root), clock=ManualClock(0))
    assert ld.logs[TP0].recovery_point == 0
    ld.close()


def test_other_dirs_are_listed_not_loaded_and_bad_names_refused(tmp_path, disk) -> None:
    root = tmp_path / "logs"
    (root / "orders-0.0123456789abcdef0123456789abcdef-delete").mkdir(parents=True)
    (root / "__cluster_metadata-0").mkdir()
    ld = LogDir.open(disk, str(root), clock=ManualClock(0))
    assert ld.logs == {} and len(ld.other_dirs) == 2
    ld.close()
    (root / "lost+found").mkdir()
    with pytest.raises(LogDirError, match="'lost\\+found' is not in the form of topic-partition"):
        LogDir.open(disk, str(root), clock=ManualClock(0))
    # The failed open released the lock.
    (root / "lost+found").rmdir()
    LogDir.open(disk, str(root), clock=ManualClock(0)).close()


def test_missing_dir_is_a_clear_error(tmp_path, disk) -> None:
    with pytest.raises(LogDirError, match="no such directory"):
        LogDir.open(disk, str(tmp_path / "nope"))


def test_periodic_tasks_run_over_every_partition(tmp_path, disk) -> None:
    clock = ManualClock(0)
    config = LogConfig(segment_bytes=300, retention_bytes=400, flush_ms=1000)
    ld = LogDir.open(disk, str(tmp_path), config, clock=clock)
    for tp in (TP0, TP1):
        for _ in range(10):
            ld.create_log(tp).append(recs(1))
    assert ld.cleanup_logs() > 0
    assert all(lg.size < 700 for lg in ld.logs.values())
    clock.advance(1000)
    assert ld.flush_dirty_logs() == 2
    assert ld.run_pending() > 0
    ld.close()


def test_a_lock_held_by_another_process_is_refused(tmp_path, disk) -> None:
    root = tmp_path / "logs"
    root.mkdir()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import fcntl, sys
                f = open({str(root / ".lock")!r}, "a+")
                fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                print("locked", flush=True)
                sys.stdin.read()
                """
            ),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(
            LogDirLockedError, match=r"Failed to acquire lock on file \.lock in .*Stop the broker"
        ):
            LogDir.open(disk, str(root))
    finally:
        holder.stdin.close()
        holder.wait(10)
    LogDir.open(disk, str(root)).close()


def test_classify_path(tmp_path, disk) -> None:
    logdir = tmp_path / "data-1"  # a name that would also parse as a topic-partition
    lg = Log.open(disk, str(logdir / "orders-0"), clock=ManualClock(0))
    lg.close()
    assert classify_path(disk, str(logdir)).kind is PathKind.LOG_DIR
    info = classify_path(disk, str(logdir / "orders-0"))
    assert info.kind is PathKind.PARTITION_DIR and info.topic_partition == TP0
    (tmp_path / "kafka-logs").mkdir()
    assert classify_path(disk, str(tmp_path / "kafka-logs")).kind is PathKind.LOG_DIR
    (tmp_path / "t-7").mkdir()
    assert classify_path(disk, str(tmp_path / "t-7")).topic_partition == TopicPartition("t", 7)
    copied = tmp_path / "copy"
    copied.mkdir()
    (copied / "00000000000000000000.log").write_bytes(b"")
    info = classify_path(disk, str(copied))
    assert info.kind is PathKind.PARTITION_DIR and info.topic_partition is None
    (copied / layout.RECOVERY_POINT_CHECKPOINT).write_text("0\n0\n")
    with pytest.raises(LogDirError, match="neither a clean log dir nor a partition dir"):
        classify_path(disk, str(copied))
    with pytest.raises(LogDirError, match="is not a directory"):
        classify_path(disk, str(copied / "00000000000000000000.log"))
    with pytest.raises(LogDirError, match="no such directory"):
        classify_path(disk, str(tmp_path / "missing"))
