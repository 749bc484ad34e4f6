"""An unclean start without producer snapshots replays the log (Kafka's `rebuildProducerState`),
and a killed broker's `abandon` leaves the files as a process death does."""

from __future__ import annotations

from logrepair.storage.layout import TopicPartition
from logrepair.storage.log import Log, ProducerRecord
from logrepair.storage.logdir import LogDir
from simulator.disk import SimDisk


def _write(disk: SimDisk) -> None:
    log = Log.open(disk, "/d/t-0")
    log.append([ProducerRecord(b"k", b"v")], producer_id=7, producer_epoch=2, base_sequence=0)
    log.append([ProducerRecord(None, b"txn")], producer_id=8, producer_epoch=0, base_sequence=0,
               is_transactional=True)  # fmt: skip
    log.abandon()  # killed: no snapshot, nothing flushed or trimmed


def test_unclean_start_without_snapshot_replays_producer_state() -> None:
    disk = SimDisk()
    _write(disk)
    log = Log.open(disk, "/d/t-0", recovery_point=0)
    entries = {e.producer_id: e for e in log.producer_state.entries}
    assert entries[7].epoch == 2 and entries[7].last_sequence == 0
    assert entries[8].current_txn_first_offset == 1  # the open transaction is known again
    log.close()


def test_clean_start_without_snapshot_trusts_the_empty_state() -> None:
    disk = SimDisk()
    _write(disk)
    log = Log.open(disk, "/d/t-0")  # recovery_point None: a clean shutdown
    assert log.producer_state.entries == ()
    log.close()


def test_abandon_releases_the_lock_and_leaves_no_clean_shutdown_marker() -> None:
    disk = SimDisk()
    d = LogDir.open(disk, "/logs", create=True)
    d.create_log(TopicPartition("t", 0))
    d.abandon()
    assert disk.exists("/logs/.lock") and not disk.exists("/logs/.kafka_cleanshutdown")
    again = LogDir.open(disk, "/logs")  # the lock died with the "process"
    assert not again.had_clean_shutdown
    again.close()
