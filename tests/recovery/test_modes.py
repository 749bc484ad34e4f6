"""The three repair modes on the damage crashes leave, each result checked against the invariants."""

from __future__ import annotations

import pytest

from logrepair.format.crc import crc32c
from logrepair.recovery.repair import repair
from logrepair.recovery.scan import scan_path
from logrepair.recovery.settings import Settings
from logrepair.storage import layout

from .builders import (
    BATCH_SIZE,
    DISK,
    append_bytes,
    batch,
    batches,
    flip_byte,
    log_with_records,
    segment_files,
    truncate,
    write_offsets,
    write_segment,
)
from .checks import repair_checked

MODES = ("kafka", "point-in-time", "salvage")


def kinds(path) -> list[str]:
    return sorted(f.kind for f in scan_path(DISK, str(path), Settings()).all_findings())


@pytest.mark.parametrize("mode", MODES)
def test_a_healthy_log_written_by_the_broker_needs_nothing(log_dir, mode):
    log_with_records(log_dir / "t-0", 60)
    write_offsets(log_dir, layout.RECOVERY_POINT_CHECKPOINT, {("t", 0): 7})  # unflushed: normal
    assert kinds(log_dir) == []
    result = repair(DISK, str(log_dir), mode, Settings())
    assert result.plan.actions == []
    assert result.quarantine is None


@pytest.mark.parametrize("mode", MODES)
def test_torn_tail_of_the_active_segment_is_cut_at_the_last_whole_batch(log_dir, mode):
    pdir = log_dir / "t-0"
    log_with_records(pdir, 40)
    active = segment_files(pdir)[-1]
    truncate(active, active.stat().st_size - 30)
    assert "torn_tail" in kinds(log_dir)
    result = repair_checked(log_dir, mode)
    assert result.plan.removed_bytes > 0
    assert kinds(log_dir) == []
    scan = scan_path(DISK, str(log_dir), Settings())
    assert scan.partitions[0].log_end_offset == 39


@pytest.mark.parametrize("mode", MODES)
def test_garbage_block_after_the_last_batch_is_removed(log_dir, mode):
    pdir = log_dir / "t-0"
    log_with_records(pdir, 20)
    append_bytes(segment_files(pdir)[-1], bytes(4096))
    assert "garbage_tail" in kinds(log_dir)
    result = repair_checked(log_dir, mode)
    assert result.plan.removed_bytes == 4096
    assert result.plan.removed_offsets == []


def _three_segments_with_a_flip(log_dir, *, segment: int, rp_segment: int):
    pdir = log_dir / "t-0"
    for n in range(3):
        write_segment(pdir, n * 10, batches(n * 10, 10))
    log = segment_files(pdir)[segment]
    flip_byte(log, BATCH_SIZE * 5 + 100)  # inside the 6th batch
    write_offsets(log_dir, layout.RECOVERY_POINT_CHECKPOINT, {("t", 0): rp_segment * 10})
    return pdir


def test_kafka_mode_leaves_corruption_below_the_recovery_point_and_says_who_fixes_it(log_dir):
    pdir = _three_segments_with_a_flip(log_dir, segment=0, rp_segment=2)
    result = repair(DISK, str(log_dir), "kafka", Settings())
    assert result.plan.actions == []
    left = {f["kind"]: f["fixed_by"] for f in result.plan.left}
    assert left == {"crc_mismatch": ["point-in-time", "salvage"]}
    assert len(segment_files(pdir)) == 3


def test_kafka_mode_truncates_at_the_first_invalid_batch_and_deletes_later_segments(log_dir):
    pdir = _three_segments_with_a_flip(log_dir, segment=1, rp_segment=1)
    result = repair_checked(log_dir, "kafka")
    assert [p.name for p in segment_files(pdir)] == [
        layout.log_file_name(0),
        layout.log_file_name(10),
    ]
    assert result.plan.removed_offsets == [(15, 29)]
    assert scan_path(DISK, str(log_dir), Settings()).partitions[0].log_end_offset == 15


@pytest.mark.parametrize("mode", MODES)
def test_a_repair_flushes_what_it_changes_and_checkpoints_the_log_end(log_dir, mode):
    """Kafka's loader leaves the recovery point at min(checkpoint, log end); a repair fsyncs the
    partition it changed from the segment holding the old recovery point on, so it moves the
    recovery point to the log end as Kafka's flush would. An unchanged partition keeps its own."""
    _three_segments_with_a_flip(log_dir, segment=2, rp_segment=1)
    write_segment(log_dir / "u-0", 0, batches(0, 10))
    write_offsets(log_dir, layout.RECOVERY_POINT_CHECKPOINT, {("t", 0): 10, ("u", 0): 4})
    result = repair_checked(log_dir, mode)
    flushed = [a.file for a in result.plan.actions if a.action == "flush"]
    bases = (10, 20, 26) if mode == "salvage" else (10, 20)  # salvage keeps 26..29 apart
    assert flushed == [f"t-0/{layout.log_file_name(o)}" for o in bases]
    assert result.plan.actions[-1].file == layout.RECOVERY_POINT_CHECKPOINT
    end = {"kafka": 25, "point-in-time": 25, "salvage": 30}[mode]
    assert (log_dir / layout.RECOVERY_POINT_CHECKPOINT).read_text() == f"0\n2\nt 0 {end}\nu 0 4\n"


def test_kafka_mode_is_idempotent_after_an_overflow_split_moves_a_segment(log_dir):
    """A corrupt base offset (outside the CRC) makes Kafka split the segment holding the recovery
    point to a new name past it; with the recovery point left at 2, the next run would recover
    the segment below it (and its inserted byte) and delete the split one."""
    pdir = log_dir / "t-0"
    for base in range(3):
        write_segment(pdir, base, [batch(base)])
    log1 = pdir / layout.log_file_name(1)
    log1.write_bytes(b"\0" + log1.read_bytes())
    flip_byte(pdir / layout.log_file_name(2), 2)  # base offset 2 + 2**46
    write_offsets(log_dir, layout.RECOVERY_POINT_CHECKPOINT, {("t", 0): 2})
    result = repair_checked(log_dir, "kafka")
    assert any(a.action == "split" for a in result.plan.actions)
    moved = 2 + 2**46
    assert [p.name for p in segment_files(pdir)][-1] == layout.log_file_name(moved)
    rp = f"0\n1\nt 0 {moved + 1}\n"
    assert (log_dir / layout.RECOVERY_POINT_CHECKPOINT).read_text() == rp


def test_kafka_mode_splits_segments_whose_base_offsets_all_jump_past_the_next(log_dir):
    """Each segment's batch says base offset 2^62 + its own (a field outside the CRC): Kafka splits
    segment 0 to 2^62, past segment 1, retries, and splits segment 1 to 2^62 + 1 (spec rec §6.7;
    tests/kafka confirms). Refusing the first split because segment 1's old name is below it made
    the second run plan it."""
    pdir = log_dir / "t-0"
    for base in range(2):
        write_segment(pdir, base, [batch(base)])
        flip_byte(pdir / layout.log_file_name(base), 0)
    write_offsets(log_dir, layout.RECOVERY_POINT_CHECKPOINT, {("t", 0): 0})
    result = repair_checked(log_dir, "kafka")
    assert not result.plan.notes
    names = [p.name for p in segment_files(pdir)]
    assert names == [layout.log_file_name(2**62), layout.log_file_name(2**62 + 1)]


def _crc_valid_count_mismatch(offset: int) -> bytes:
    """A batch whose record count disagrees with its offsets but whose CRC holds: Kafka's recovery
    keeps it (only size and CRC are checked) and goes on to its index steps."""
    raw = bytearray(batch(offset))
    raw[57:61] = (2).to_bytes(4, "big")
    raw[17:21] = crc32c(bytes(raw[21:])).to_bytes(4, "big")
    return bytes(raw)


@pytest.mark.parametrize("goes_back", [True, False])
def test_kafka_mode_takes_a_crc_valid_flagged_batch_through_the_index_steps(log_dir, goes_back):
    """Spec rec §6.6.1 b-d run for every batch that passes `ensureValid`: at an index point an
    offset going back throws InvalidOffsetException, which empties the segment and deletes the
    later ones (§6.6); an offset going forward gets its index entry like any batch."""
    pdir = log_dir / "t-0"
    flagged = _crc_valid_count_mismatch(1 if goes_back else 3)
    log = write_segment(pdir, 0, batches(0, 3), interval=0)  # the indexes of the first three
    log.write_bytes(b"".join([*batches(0, 3), flagged, batch(5)]))
    write_segment(pdir, 6, [batch(6)], interval=0)
    index = pdir / layout.index_file_name(0)
    index.write_bytes(index.read_bytes() + b"junk")  # corrupt: recovered from the recovery point
    result = repair_checked(log_dir, "kafka", Settings(index_interval_bytes=0))
    if goes_back:
        assert [p.stat().st_size for p in segment_files(pdir)] == [0]
        assert result.plan.removed_offsets == [(0, 6)]
    else:
        assert [p.stat().st_size for p in segment_files(pdir)] == [5 * BATCH_SIZE, BATCH_SIZE]
        assert index.stat().st_size == 4 * 8  # at every batch after the first, the flagged too


def test_kafka_mode_leaves_an_overflow_split_whose_piece_kafka_cannot_recover(log_dir):
    """Kafka splits an overflowed segment and recovers each piece again with index points of its
    own (spec rec §6.7): offsets going back at one of them throw InvalidOffsetException there.
    The plan sees it (apply never rebuilds an index that would throw) and leaves the segment."""
    pdir = log_dir / "t-0"
    high = 2**40
    write_segment(
        pdir, 0, [batch(0), batch(high), batch(high + 10), batch(high + 5)], indexes=False
    )
    result = repair(DISK, str(log_dir), "kafka", Settings(index_interval_bytes=0))
    assert not any(a.action in ("split", "rebuild_indexes") for a in result.plan.actions)
    assert any(f"piece at offset {high}" in n for n in result.plan.notes)
    assert {f["kind"] for f in result.plan.left} >= {"offset_overflow", "offset_regression"}


def test_point_in_time_cuts_below_the_recovery_point(log_dir):
    pdir = _three_segments_with_a_flip(log_dir, segment=0, rp_segment=2)
    result = repair_checked(log_dir, "point-in-time")
    assert [p.name for p in segment_files(pdir)] == [layout.log_file_name(0)]
    assert result.plan.removed_offsets == [(5, 29)]
    # the recovery point checkpoint is brought back within the log
    assert (log_dir / layout.RECOVERY_POINT_CHECKPOINT).read_text() == "0\n1\nt 0 5\n"


def test_salvage_removes_only_the_damaged_batch_and_reports_the_gap(log_dir):
    pdir = _three_segments_with_a_flip(log_dir, segment=0, rp_segment=2)
    result = repair_checked(log_dir, "salvage")
    assert result.plan.gaps == [(5, 5)]
    assert result.plan.removed_bytes == BATCH_SIZE
    names = [p.name for p in segment_files(pdir)]
    assert names == [layout.log_file_name(o) for o in (0, 6, 10, 20)]


def test_salvage_keeps_later_segments_that_kafka_would_delete(log_dir):
    _three_segments_with_a_flip(log_dir, segment=1, rp_segment=0)
    result = repair_checked(log_dir, "salvage")
    assert result.plan.removed_offsets == [(15, 15)]
    assert scan_path(DISK, str(log_dir), Settings()).partitions[0].log_end_offset == 30


@pytest.mark.parametrize("mode", MODES)
def test_offset_regression_is_left_by_kafka_and_removed_by_the_strict_modes(log_dir, mode):
    pdir = log_dir / "t-0"
    # a replayed batch (offsets 3..3 again) in the middle: CRC valid, offsets go back
    write_segment(pdir, 0, [*batches(0, 6), batch(3), *batches(6, 4)])
    assert "offset_regression" in kinds(log_dir)
    if mode == "kafka":
        result = repair(DISK, str(log_dir), mode, Settings())
        assert [f["kind"] for f in result.plan.left] == ["offset_regression"]
        return
    result = repair_checked(log_dir, mode)
    end = scan_path(DISK, str(log_dir), Settings()).partitions[0].log_end_offset
    assert end == (6 if mode == "point-in-time" else 10)


@pytest.mark.parametrize("mode", MODES)
def test_checkpoints_beyond_the_log_end_are_brought_back(log_dir, mode):
    log_with_records(log_dir / "t-0", 10)
    write_offsets(log_dir, layout.RECOVERY_POINT_CHECKPOINT, {("t", 0): 50})
    write_offsets(log_dir, layout.REPLICATION_CHECKPOINT, {("t", 0): 60})
    assert kinds(log_dir) == ["high_watermark_beyond_end", "recovery_point_beyond_end"]
    repair_checked(log_dir, mode)
    assert (log_dir / layout.RECOVERY_POINT_CHECKPOINT).read_text() == "0\n1\nt 0 10\n"
    assert (log_dir / layout.REPLICATION_CHECKPOINT).read_text() == "0\n1\nt 0 10\n"


@pytest.mark.parametrize("mode", MODES)
def test_malformed_checkpoint_is_rewritten_as_kafka_reads_it(log_dir, mode):
    log_with_records(log_dir / "t-0", 5)
    (log_dir / layout.RECOVERY_POINT_CHECKPOINT).write_text("0\n2\nt 0 5\n")
    assert kinds(log_dir) == ["checkpoint_malformed"]
    result = repair_checked(log_dir, mode)
    assert (log_dir / layout.RECOVERY_POINT_CHECKPOINT).read_text() == "0\n0\n"
    # the note gives the finding's own explanation of what Kafka does, then what this mode does
    (note,) = [n for n in result.plan.notes if n.startswith(layout.RECOVERY_POINT_CHECKPOINT)]
    assert "Kafka resets every recovery point to 0" in note
    assert note.endswith(
        ("every partition is recovered from 0 and " if mode == "kafka" else "")
        + "the file is rewritten empty"
    )


@pytest.mark.parametrize("mode", MODES)
def test_leader_epochs_past_the_end_are_dropped(log_dir, mode):
    pdir = log_dir / "t-0"
    log_with_records(pdir, 10, epochs=[0] * 5 + [3] * 5)
    (pdir / layout.LEADER_EPOCH_CHECKPOINT).write_text("0\n3\n0 0\n3 5\n7 40\n")
    assert kinds(log_dir) == ["leader_epoch_beyond_end"]
    repair_checked(log_dir, mode)
    assert (pdir / layout.LEADER_EPOCH_CHECKPOINT).read_text() == "0\n2\n0 0\n3 5\n"


def test_leader_epoch_at_the_log_end_is_no_defect(log_dir):
    log_with_records(log_dir / "t-0", 10)
    (log_dir / "t-0" / layout.LEADER_EPOCH_CHECKPOINT).write_text("0\n2\n0 0\n1 10\n")
    assert kinds(log_dir) == []


def test_the_active_segments_preallocated_indexes_after_a_crash_are_no_defect(log_dir):
    # Not closed: the active segment's indexes stay preallocated (zero-filled slots, no last time
    # index entry), as SIGKILL leaves a real broker's; Kafka's recovery of that segment rebuilds them.
    log_with_records(log_dir / "t-0", 30, close=False)
    indexes = sorted((log_dir / "t-0").glob("*.index"))
    assert len(indexes) > 1 and indexes[-1].read_bytes().count(0) > 1000
    assert kinds(log_dir) == []
    # A rolled segment's index is trimmed at the roll: zero-filled slots there are a finding.
    indexes[0].write_bytes(indexes[0].read_bytes() + bytes(80))
    assert kinds(log_dir) == ["offset_index_corrupt"]


@pytest.mark.parametrize("mode", MODES)
def test_leftovers_of_interrupted_operations(log_dir, mode):
    pdir = log_dir / "t-0"
    write_segment(pdir, 0, batches(0, 5))
    (pdir / (layout.log_file_name(0) + ".deleted")).write_bytes(b"x" * 10)
    (pdir / (layout.index_file_name(7) + ".cleaned")).write_bytes(b"")
    (pdir / layout.index_file_name(40)).write_bytes(bytes(16))
    (pdir / (layout.LEADER_EPOCH_CHECKPOINT + ".tmp")).write_text("0\n")
    assert kinds(log_dir) == [
        "cleaned_leftover",
        "deleted_leftover",
        "index_orphan",
        "tmp_leftover",
    ]
    repair_checked(log_dir, mode)
    assert sorted(p.name for p in pdir.iterdir()) == [
        layout.index_file_name(0),
        layout.log_file_name(0),
        layout.time_index_file_name(0),
        layout.LEADER_EPOCH_CHECKPOINT,
    ]
    # the repair moves the recovery point past segment 0, so Kafka's next load would not assign
    # its epoch: the repair writes the checkpoint Kafka's recovery of it creates
    assert (pdir / layout.LEADER_EPOCH_CHECKPOINT).read_text() == "0\n1\n0 0\n"


@pytest.mark.parametrize("mode", MODES)
def test_corrupt_producer_snapshot_is_quarantined(log_dir, mode):
    pdir = log_dir / "t-0"
    log_with_records(pdir, 30, segment_bytes=1024)
    snaps = segment_files(pdir, layout.SNAPSHOT_SUFFIX)
    assert snaps
    flip_byte(snaps[-1], 7)
    assert kinds(log_dir) == ["producer_snapshot_corrupt"]
    repair_checked(log_dir, mode)
    assert not snaps[-1].exists()


def test_corrupt_index_below_the_recovery_point_is_left_by_kafka_and_rebuilt_by_salvage(log_dir):
    pdir = log_dir / "t-0"
    write_segment(pdir, 0, batches(0, 40), interval=1000)
    write_segment(pdir, 40, batches(40, 5))
    index = pdir / layout.index_file_name(0)
    data = bytearray(index.read_bytes())
    data[4:8] = (10**6).to_bytes(4, "big")  # first entry points far past the log
    index.write_bytes(bytes(data))
    write_offsets(log_dir, layout.RECOVERY_POINT_CHECKPOINT, {("t", 0): 45})
    assert kinds(log_dir) == ["offset_index_corrupt"]
    kafka = repair(DISK, str(log_dir), "kafka", Settings())
    assert [f["kind"] for f in kafka.plan.left] == ["offset_index_corrupt"]
    repair_checked(log_dir, "salvage")


def test_log_start_beyond_the_end_deletes_every_segment_in_kafka_mode(log_dir):
    pdir = log_dir / "t-0"
    write_segment(pdir, 0, batches(0, 5))
    write_offsets(log_dir, layout.LOG_START_OFFSET_CHECKPOINT, {("t", 0): 500})
    assert kinds(log_dir) == ["log_start_beyond_end"]
    repair_checked(log_dir, "kafka")
    assert [p.name for p in segment_files(pdir)] == [layout.log_file_name(500)]
    assert (pdir / layout.log_file_name(500)).stat().st_size == 0


@pytest.mark.parametrize("mode", MODES)
def test_a_partition_dir_on_its_own_is_repaired_whole(tmp_path, mode):
    pdir = tmp_path / "t-3"
    write_segment(pdir, 0, batches(0, 10))
    write_segment(pdir, 10, [*batches(10, 3), b"\x00" * 30])
    repair_checked(pdir, mode)
    quarantine_root = tmp_path / "t-3.logrepair-quarantine"
    assert quarantine_root.is_dir()


def test_salvage_moves_aborted_transactions_with_their_markers(log_dir):
    """An aborted transaction whose ABORT marker lands in a split-off segment is indexed there,
    and nowhere past the end of the segment it left (the simulator's zero_block case)."""
    from logrepair.format.batch_builder import build_batch, build_end_txn_marker
    from logrepair.format.batch_layout import Record
    from logrepair.format.control import ControlType, EndTransactionMarker

    pdir = log_dir / "t-0"
    txn = build_batch(
        [Record(0, 5, b"k", b"v", ())],
        base_offset=0,
        producer_id=9,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
    )
    abort = build_end_txn_marker(
        EndTransactionMarker(ControlType.ABORT, 0),
        base_offset=3,
        producer_id=9,
        producer_epoch=0,
        timestamp=6,
    )
    write_segment(pdir, 0, [txn, batch(1), batch(2), abort, batch(4)])
    entry = (0).to_bytes(2, "big") + b"".join(v.to_bytes(8, "big") for v in (9, 0, 3, 4))
    (pdir / layout.txn_index_file_name(0)).write_bytes(entry)
    assert kinds(log_dir) == []
    flip_byte(pdir / layout.log_file_name(0), len(txn) + BATCH_SIZE + 90)  # batch 2
    repair_checked(log_dir, "salvage")
    assert (pdir / layout.txn_index_file_name(0)).read_bytes() == b""
    assert (pdir / layout.txn_index_file_name(3)).read_bytes() == entry


@pytest.mark.parametrize("newer", [0, 3], ids=["empty-newer-segment", "newer-batches"])
@pytest.mark.parametrize("mode", ["point-in-time", "salvage"])
def test_an_overlap_keeps_the_newer_segment_and_cuts_the_stale_tail(log_dir, mode, newer):
    """A segment named 5 was created when the log ended at 5: offsets 5.. in the segment before it
    are a follower truncation whose fsync was lost, not data to keep over the newer segment."""
    pdir = log_dir / "t-0"
    write_segment(pdir, 0, batches(0, 8))
    write_segment(pdir, 5, batches(5, newer, value_size=50))
    found = scan_path(DISK, str(log_dir), Settings()).all_findings()
    assert [(f.kind, f.file, f.position) for f in found] == [
        ("offset_overlap", f"t-0/{layout.log_file_name(0)}", 5 * BATCH_SIZE)
    ]
    repair_checked(log_dir, mode)
    assert (pdir / layout.log_file_name(0)).stat().st_size == 5 * BATCH_SIZE
    newer_bytes = b"".join(batches(5, newer, value_size=50))
    assert (pdir / layout.log_file_name(5)).read_bytes() == newer_bytes


def test_kafka_mode_leaves_an_overlap_as_kafka_does(log_dir):
    pdir = log_dir / "t-0"
    write_segment(pdir, 0, batches(0, 8))
    write_segment(pdir, 5, [])
    result = repair_checked(log_dir, "kafka")
    assert [f["kind"] for f in result.plan.left] == ["offset_overlap"]
    assert (pdir / layout.log_file_name(0)).stat().st_size == 8 * BATCH_SIZE
