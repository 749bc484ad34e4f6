"""The scan: every byte of a log accounted for, and every check of spec rec Appendix A made."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logrepair.recovery.defects import KINDS, kinds_markdown
from logrepair.recovery.index_checks import zero_tail
from logrepair.recovery.scan import scan_path
from logrepair.recovery.settings import Settings
from logrepair.storage import layout
from logrepair.storage.producer_snapshot import ProducerSnapshotEntry, encode_snapshot

from .builders import (
    BATCH_SIZE,
    DISK,
    batch,
    batches,
    log_with_records,
    write_offsets,
    write_segment,
)
from .checks import repair_checked


def findings(path):
    return scan_path(DISK, str(path), Settings()).all_findings()


def kinds(path) -> list[str]:
    return sorted(f.kind for f in findings(path))


def test_every_kind_is_documented_with_its_fixing_modes():
    table = kinds_markdown()
    for name, k in KINDS.items():
        assert f"| `{name}` |" in table
        assert k.meaning
        assert set(k.fixed_by) <= {"kafka", "point-in-time", "salvage"}
    for required in (
        "torn_tail garbage_tail crc_mismatch bad_magic bad_length offset_regression "
        "offset_index_corrupt time_index_corrupt index_missing index_orphan segment_name_mismatch "
        "swap_leftover cleaned_leftover deleted_leftover checkpoint_malformed "
        "recovery_point_beyond_end high_watermark_beyond_end log_start_beyond_high_watermark "
        "leader_epoch_beyond_end"
    ).split():
        assert required in KINDS


@settings(max_examples=60, deadline=None)
@given(
    count=st.integers(1, 12),
    mutations=st.lists(
        st.tuples(
            st.sampled_from(["flip", "cut", "insert", "zero"]),
            st.integers(0, 10**6),
            st.binary(min_size=1, max_size=40),
        ),
        max_size=3,
    ),
)
def test_every_byte_is_a_valid_batch_or_inside_a_finding(tmp_path_factory, count, mutations):
    pdir = tmp_path_factory.mktemp("scan") / "t-0"
    raw = bytearray(b"".join(batches(0, count)))
    for op, where, data in mutations:
        at = where % (len(raw) + 1)
        if op == "flip" and raw:
            raw[at % len(raw)] ^= 0x10
        elif op == "cut":
            del raw[at:]
        elif op == "insert":
            raw[at:at] = data
        else:
            raw[at : at + len(data)] = bytes(len(data))
    write_segment(pdir, 0, bytes(raw), indexes=False)
    scan = scan_path(DISK, str(pdir), Settings())
    (seg,) = scan.partitions[0].segments
    covered = sorted(
        [(r.start, r.end) for r in seg.runs]
        + [(f.position, f.position + f.length) for f in seg.findings if f.length]
    )
    position = 0
    for start, end in covered:
        assert start == position, (covered, len(raw))
        position = end
    assert position == len(raw)
    for f in scan.partitions[0].all_findings:
        assert f.kind in KINDS, f


def test_appendix_a_segments_below_the_recovery_point_are_read(log_dir):
    pdir = log_dir / "t-0"
    write_segment(pdir, 0, batches(0, 5))
    write_segment(pdir, 5, batches(5, 5))
    raw = bytearray((pdir / layout.log_file_name(0)).read_bytes())
    raw[BATCH_SIZE + 70] ^= 1
    (pdir / layout.log_file_name(0)).write_bytes(bytes(raw))
    write_offsets(log_dir, layout.RECOVERY_POINT_CHECKPOINT, {("t", 0): 10})
    assert kinds(log_dir) == ["crc_mismatch"]


def test_appendix_a_overlaps_and_first_offset_below_the_name(log_dir):
    pdir = log_dir / "t-0"
    write_segment(pdir, 0, batches(0, 5))
    write_segment(pdir, 5, batches(3, 5))  # offsets 3, 4 overlap the previous segment
    write_segment(pdir, 20, batches(15, 3), indexes=False)  # named above its first batch
    assert kinds(log_dir) == [
        "index_missing",
        "index_missing",
        "offset_overlap",
        "offset_overlap",
        "segment_name_mismatch",
    ]
    repair_checked(log_dir, "salvage")
    names = sorted(p.name for p in pdir.iterdir() if p.name.endswith(".log"))
    assert names == [layout.log_file_name(o) for o in (0, 5, 15)]


def test_appendix_a_batch_offsets_checked_between_index_points(log_dir):
    pdir = log_dir / "t-0"
    write_segment(pdir, 0, [batch(0), batch(2), batch(1), batch(3)])
    (f,) = findings(log_dir)
    assert (f.kind, f.position, f.offset) == ("offset_regression", 2 * BATCH_SIZE, 1)


def test_appendix_a_leader_epochs_in_batches_are_checked(log_dir):
    pdir = log_dir / "t-0"
    write_segment(pdir, 0, [batch(0, epoch=3), batch(1, epoch=2)])
    assert kinds(log_dir) == ["batch_epoch_regression"]
    (pdir / layout.LEADER_EPOCH_CHECKPOINT).write_text("0\n2\n3 0\n2 1\n")
    assert kinds(log_dir) == ["batch_epoch_regression", "leader_epoch_not_monotonic"]


def test_batch_epoch_regressions_are_measured_over_the_partition_one_finding_a_stretch(log_dir):
    """Against the highest epoch of every earlier batch of the partition, so that a repair keeping
    a subsequence of the batches (salvage's splits) can only lose such findings."""
    pdir = log_dir / "t-0"
    write_segment(pdir, 0, [batch(0, epoch=3), batch(1, epoch=5)])
    epochs = [4, 4, 5, 1, 6, 2, 2]
    write_segment(pdir, 2, [batch(2 + n, epoch=e) for n, e in enumerate(epochs)])
    found = [
        (f.kind, f.file, f.position, f.length, f.offset, f.last_offset) for f in findings(log_dir)
    ]
    name = f"t-0/{layout.log_file_name(2)}"
    assert found == [
        ("batch_epoch_regression", name, 0, 2 * BATCH_SIZE, 2, 3),
        ("batch_epoch_regression", name, 3 * BATCH_SIZE, BATCH_SIZE, 5, 5),
        ("batch_epoch_regression", name, 5 * BATCH_SIZE, 2 * BATCH_SIZE, 7, 8),
    ]
    assert findings(log_dir)[0].detail == (
        "2 batches at offsets 2..3: below the leader epoch 5 of an earlier batch (the first: "
        "epoch 4; Kafka never checks this)"
    )
    repair_checked(log_dir, "salvage")  # nothing to repair: reported only


def test_appendix_a_producer_snapshots_are_held_against_their_offset(log_dir):
    pdir = log_dir / "t-0"
    write_segment(pdir, 0, batches(0, 5))
    entry = ProducerSnapshotEntry(7, 0, 4, 9, 0, 1, -1, -1)
    (pdir / layout.snapshot_file_name(5)).write_bytes(encode_snapshot([entry]))
    (f,) = findings(log_dir)
    assert f.kind == "producer_snapshot_corrupt" and "last offset 9" in f.detail


def test_appendix_a_txn_index_entries_past_the_log(log_dir):
    pdir = log_dir / "t-0"
    write_segment(pdir, 0, batches(0, 5))
    entry = (0).to_bytes(2, "big") + b"".join(v.to_bytes(8, "big") for v in (1, 2, 40, 3))
    (pdir / layout.txn_index_file_name(0)).write_bytes(entry)
    (f,) = findings(log_dir)
    assert f.kind == "txn_index_corrupt" and "past the log end" in f.detail
    repair_checked(log_dir, "kafka")
    assert (pdir / layout.txn_index_file_name(0)).read_bytes() == b""


@pytest.mark.parametrize(
    "version, fatal",
    [(b"\x00\x1f", False), (b"\x85\x00", False), (b"\x01\x00", True), (b"\x7f\xff", True)],
)
def test_txn_index_version_is_its_first_byte_as_kafka_reads_it(log_dir, version, fatal):
    """`AbortedTxn.version()` reads one signed byte: above 0 Kafka's load throws; anything else
    not 0000 is a defect Kafka loads (tests/kafka: `txn_version_*` against Kafka 4.1.1)."""
    pdir = log_dir / "t-0"
    write_segment(pdir, 0, batches(0, 5))
    entry = version + b"".join(v.to_bytes(8, "big") for v in (1, 2, 3, 2))
    (pdir / layout.txn_index_file_name(0)).write_bytes(entry)
    (f,) = findings(log_dir)
    assert f.kind == "txn_index_corrupt"
    kafka_version = int.from_bytes(version[:1], "big", signed=True)
    if fatal:
        assert f.detail == f"entry 0 has version {kafka_version}; Kafka reads only version 0"
    else:
        assert f.detail == (
            f"entry 0 has version bytes {version.hex()} where Kafka writes 0000 (it reads the "
            f"first byte alone, as version {kafka_version}, and loads it)"
        )


def test_appendix_a_checkpoints_are_held_against_the_data(log_dir):
    log_with_records(log_dir / "t-0", 10)
    write_offsets(log_dir, layout.LOG_START_OFFSET_CHECKPOINT, {("t", 0): 8})
    write_offsets(log_dir, layout.REPLICATION_CHECKPOINT, {("t", 0): 5})
    assert kinds(log_dir) == ["log_start_beyond_high_watermark"]
    repair_checked(log_dir, "kafka")
    assert (log_dir / layout.REPLICATION_CHECKPOINT).read_text() == "0\n1\nt 0 8\n"


def test_appendix_a_non_canonical_names_and_stray_files(log_dir):
    pdir = log_dir / "t-0"
    write_segment(pdir, 0, batches(0, 3))
    (pdir / "5.log").write_bytes(batch(5))
    (pdir / "notes.txt").write_text("operator's")
    (log_dir / "lost+found").mkdir()
    os.symlink("/etc", log_dir / "t-9")
    found = {(f.kind, f.file) for f in findings(log_dir)}
    assert found == {
        ("stray_file", "t-0/5.log"),
        ("stray_file", "t-0/notes.txt"),
        ("stray_directory", "lost+found"),
        ("symlink", "t-9"),
    }
    result = repair_checked(log_dir, "salvage")
    assert {f["kind"] for f in result.plan.left} == {"stray_file", "stray_directory", "symlink"}
    assert (pdir / "notes.txt").read_text() == "operator's"


def test_swap_and_cleaned_leftovers(log_dir):
    pdir = log_dir / "t-0"
    write_segment(pdir, 0, batches(0, 5))
    (pdir / (layout.log_file_name(7) + ".cleaned")).write_bytes(b"")
    (pdir / (layout.log_file_name(9) + ".swap")).write_bytes(batch(9))
    assert kinds(log_dir) == ["cleaned_leftover", "swap_leftover"]
    repair_checked(log_dir, "kafka")
    assert sorted(p.name for p in pdir.iterdir()) == [
        layout.index_file_name(0),
        layout.log_file_name(0),
        layout.time_index_file_name(0),
        layout.LEADER_EPOCH_CHECKPOINT,  # what Kafka's recovery of segment 0 creates
    ]


def test_bad_magic_and_bad_length(log_dir):
    pdir = log_dir / "t-0"
    bad_magic = bytearray(batch(3))
    bad_magic[16] = 9
    bad_length = bytearray(batch(4))
    bad_length[8:12] = (5).to_bytes(4, "big")
    write_segment(pdir, 0, [*batches(0, 3), bytes(bad_magic), batch(4)], indexes=False)
    write_segment(pdir, 10, [bytes(bad_length), *batches(11, 2)], indexes=False)
    data = {(f.kind, f.file[-8:], f.position) for f in findings(log_dir) if f.position is not None}
    assert data == {("bad_magic", "0000.log", 3 * BATCH_SIZE), ("bad_length", "0010.log", 0)}
    repair_checked(log_dir, "salvage")
    assert kinds(log_dir) == []


def test_batches_larger_than_message_max_bytes_are_reported_not_removed(log_dir):
    pdir = log_dir / "t-0"
    write_segment(pdir, 0, [batch(0), batch(1, value_size=3000), batch(2)])
    scan = scan_path(DISK, str(log_dir), Settings(message_max_bytes=2000))
    assert [(f.kind, f.offset) for f in scan.all_findings()] == [("batch_too_large", 1)]
    assert kinds(log_dir) == []  # default message.max.bytes (1 MiB + 12)


def test_huge_checkpoint_and_index_files_are_reported_unread(log_dir):
    pdir = log_dir / "t-0"
    write_segment(pdir, 0, batches(0, 3))
    for f in (log_dir / layout.REPLICATION_CHECKPOINT, pdir / layout.index_file_name(0)):
        with open(f, "wb") as out:
            out.truncate(65 * 1024 * 1024)  # sparse: costs no disk
    found = {f.kind: f.detail for f in findings(log_dir)}
    assert "is not a checkpoint file Kafka wrote" in found["checkpoint_malformed"]
    assert "too large" in found["offset_index_corrupt"]


def test_malformed_partition_metadata_is_reported(log_dir):
    pdir = log_dir / "t-0"
    write_segment(pdir, 0, batches(0, 3))
    (pdir / layout.PARTITION_METADATA_FILE).write_text("version: 0\ntopic_id: not-a-uuid")
    (f,) = findings(log_dir)
    assert f.kind == "partition_metadata_malformed"
    (pdir / layout.PARTITION_METADATA_FILE).write_text(
        "version: 0\ntopic_id: sEHM5X0PT-2gCx0FiPKqwg"
    )
    assert findings(log_dir) == []


@pytest.fixture
def small_batch_cap(monkeypatch):
    """The scan's default batch-size cap lowered to 1 KiB, so a test need not write 64 MiB."""
    from logrepair.storage import scan as storage_scan

    monkeypatch.setattr(storage_scan, "DEFAULT_MAX_BATCH_SIZE", 1024)
    monkeypatch.setitem(storage_scan.LogScan.__init__.__kwdefaults__, "max_batch_size", 1024)


def test_a_valid_batch_above_the_scan_cap_is_kept_up_to_message_max_bytes(log_dir, small_batch_cap):
    pdir = log_dir / "t-0"
    big = batch(0, value_size=3000)
    write_segment(pdir, 0, [big, batch(1)])
    raised = Settings(message_max_bytes=4096)
    assert scan_path(DISK, str(log_dir), raised).all_findings() == []
    assert repair_checked(log_dir, "kafka", raised).plan.actions == []
    # below the batch and the cap, the cap holds: a claim that large is not read
    lowered = scan_path(DISK, str(log_dir), Settings(message_max_bytes=1000))
    assert [f.kind for f in lowered.all_findings()] == ["bad_length"]


def test_a_damaged_region_longer_than_a_scan_window_is_one_finding(log_dir):
    pdir = log_dir / "t-0"
    log = write_segment(pdir, 0, batches(0, 3))
    with open(log, "r+b") as f:
        f.truncate(3 * BATCH_SIZE + (9 << 20))  # zeros past the 8 MiB window (sparse)
    found = findings(log_dir)
    assert [(f.kind, f.position, f.length) for f in found] == [
        ("garbage_tail", 3 * BATCH_SIZE, 9 << 20)
    ]


@given(
    entry=st.sampled_from([8, 12]),
    head=st.binary(max_size=64),
    zeros=st.integers(0, 64),
    ragged=st.binary(max_size=11),
)
def test_zero_tail_counts_the_trailing_all_zero_slots(entry, head, zeros, ragged):
    raw = head + bytes(zeros) + ragged
    n = len(raw) // entry
    slots = [raw[i * entry : (i + 1) * entry] for i in range(n)]
    expected = 0
    while expected < n and slots[n - expected - 1] == bytes(entry):
        expected += 1
    assert zero_tail(raw, n, entry) == expected
