"""Differential recovery on log dirs built byte by byte, for what the simulator's workloads never
write: legacy magic 0/1 messages, offsets that overflow a segment's relative range (as a broker
before KAFKA-6264 could leave), a segment named above its first batch, a log start past the log
end, damage below the recovery point in a segment Kafka recovers while loading, `.txnindex`
entries whose version Kafka's sanity check reads or not. Same comparison as
test_differential_recovery.py."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from struct import pack

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logrepair.format.batch_layout import Record
from logrepair.format.crc import crc32c
from logrepair.format.legacy import build_legacy_batch
from logrepair.recovery.settings import Settings
from logrepair.storage import layout
from tests.recovery.builders import T0, batch, batches, flip_byte, write_segment

from .differential import Outcome, differ

INTERVAL = 0  # every batch an index point: Kafka's index checks run at each
SETTINGS = Settings(index_interval_bytes=INTERVAL)
CONFIG = {"index.interval.bytes": INTERVAL}


def _checkpoints(log_dir: Path, recovery_point: int, log_start: int | None = None) -> None:
    (log_dir / layout.RECOVERY_POINT_CHECKPOINT).write_text(f"0\n1\nt 0 {recovery_point}\n")
    if log_start is not None:
        (log_dir / layout.LOG_START_OFFSET_CHECKPOINT).write_text(f"0\n1\nt 0 {log_start}\n")


def _legacy(offset: int, magic: int, codec: int = 0, n: int = 1) -> bytes:
    records = [Record(offset + i, T0 + offset + i, b"k%d" % i, bytes(60), ()) for i in range(n)]
    return build_legacy_batch(records, magic=magic, base_offset=offset, codec=codec)


def legacy_messages_torn(pdir: Path) -> int:
    data = _legacy(0, 0) + _legacy(1, 1) + _legacy(2, 1, codec=1, n=3) + _legacy(5, 0, codec=2, n=2)
    data += batch(7) + _legacy(8, 1, codec=3, n=2)
    write_segment(pdir, 0, data + batch(10)[:30], interval=INTERVAL)
    return 0


def legacy_bit_flip_mid_segment(pdir: Path) -> int:
    data = b"".join(_legacy(i * 2, 1, codec=1, n=2) for i in range(20))
    write_segment(pdir, 0, data, interval=INTERVAL)
    flip_byte(pdir / layout.log_file_name(0), len(data) // 2)
    write_segment(pdir, 40, batches(40, 5), interval=INTERVAL)
    return 0


def offset_overflow_split(pdir: Path) -> int:
    far = 2**31 + 10
    write_segment(pdir, 0, batches(0, 4) + batches(far, 3), indexes=False)
    return 0


FAR = 2**31 + 10  # past the relative range of a segment based at 0


def overflow_first_piece_named_by_its_batch(pdir: Path) -> int:
    """A compacted segment 0 whose first batch is 5: Kafka's split names the first piece 5, and
    the second begins where an offset leaves the range of that piece (not of segment 0)."""
    write_segment(pdir, 0, batches(5, 4) + batches(FAR, 3), indexes=False)
    return 0


def overflow_one_piece(pdir: Path) -> int:
    """An offset out of segment 0's range but within that of its first batch (5): one piece."""
    write_segment(pdir, 0, batches(5, 4) + batches(2**31 + 2, 3), indexes=False)
    return 0


def overflow_three_pieces(pdir: Path) -> int:
    data = batches(7, 2) + batches(2**31 + 3, 2) + batches(2**32 + 20, 2)
    write_segment(pdir, 0, data, indexes=False)
    return 0


def overflow_then_a_torn_batch(pdir: Path) -> int:
    """The split copies the whole file by size fields: a torn batch at the end does not frame,
    and the split throws (NoSuchElementException): startup aborts."""
    data = b"".join(batches(5, 4) + batches(FAR, 3)) + batch(FAR + 3)[:40]
    write_segment(pdir, 0, data, indexes=False)
    return 0


def overflow_then_zeros(pdir: Path) -> int:
    """Zeros after the last batch: a size field of 0 (CorruptRecordException) in the split."""
    write_segment(pdir, 0, b"".join(batches(5, 4) + batches(FAR, 3)) + bytes(100), indexes=False)
    return 0


def overflow_then_a_bit_flip(pdir: Path) -> int:
    """A body bit flip in the last batch frames: split, and the last piece's recovery cuts it."""
    write_segment(pdir, 0, batches(5, 4) + batches(FAR, 3), indexes=False)
    log = pdir / layout.log_file_name(0)
    flip_byte(log, log.stat().st_size - 20)
    return 0


def overflow_then_a_bit_flip_before_a_later_piece(pdir: Path) -> int:
    """The split makes three pieces; the second's recovery cuts at the flip and the third goes."""
    data = batches(5, 4) + batches(FAR, 3) + batches(2**32 + 100, 2)
    write_segment(pdir, 0, data, indexes=False)
    flip_byte(pdir / layout.log_file_name(0), sum(map(len, data[:5])) + 80)
    return 0


def overflow_then_a_piece_beginning_with_a_bit_flip(pdir: Path) -> int:
    """The flipped batch begins a piece of its own: its recovery empties it, and the empty
    segment stays (the log end jumps to its name)."""
    data = batches(5, 4) + batches(FAR, 2) + batches(2**32 + 100, 2)
    write_segment(pdir, 0, data, indexes=False)
    flip_byte(pdir / layout.log_file_name(0), sum(map(len, data[:6])) + 80)
    return 0


def overflow_split_while_loading(pdir: Path) -> int:
    """Split while loading (no `.index`), the recovery point below its first piece: the
    recovery pass reaches the original again, splits it again and deletes it."""
    write_segment(pdir, 0, batches(5, 4) + batches(FAR, 3), indexes=False)
    write_segment(pdir, FAR + 10, batches(FAR + 10, 3), interval=INTERVAL)
    return 3


def _txn_entry(version: bytes, first: int, last: int) -> bytes:
    return version + pack(">qqqq", 7, first, last, first)


def _txn_index(pdir: Path, base: int, entries: bytes) -> int:
    """Segments 0 and 10 with the `.txnindex` `entries` at `base`, the recovery point past both
    (so only the loader's sanity check reads the entries)."""
    write_segment(pdir, 0, batches(0, 10), interval=INTERVAL)
    write_segment(pdir, 10, batches(10, 10), interval=INTERVAL)
    (pdir / layout.txn_index_file_name(base)).write_bytes(entries)
    return 15


def txn_version_in_the_second_byte(pdir: Path) -> int:
    """seed 500 case 4122: `AbortedTxn.version()` reads the first byte alone; 00 1f is 0."""
    return _txn_index(pdir, 0, _txn_entry(b"\x00\x1f", 2, 4))


def txn_version_negative(pdir: Path) -> int:
    return _txn_index(pdir, 0, _txn_entry(b"\x85\x00", 2, 4))


def txn_version_fatal(pdir: Path) -> int:
    return _txn_index(pdir, 0, _txn_entry(b"\x01\x00", 2, 4))


def txn_version_fatal_after_an_entry_out_of_order(pdir: Path) -> int:
    """An entry the sanity check accepts (first past last), then version 5: Kafka throws."""
    return _txn_index(pdir, 0, _txn_entry(b"\0\0", 3, 2) + _txn_entry(b"\x05\0", 5, 6))


def txn_version_after_an_entry_below_the_base(pdir: Path) -> int:
    """CorruptIndexException at entry 0 ends the check before version 5 is read: recovered."""
    return _txn_index(pdir, 10, _txn_entry(b"\0\0", 3, 5) + _txn_entry(b"\x05\0", 12, 13))


def txn_version_with_the_index_missing(pdir: Path) -> int:
    """No `.index`: recovered while loading without the sanity check."""
    recovery_point = _txn_index(pdir, 0, _txn_entry(b"\x05\x00", 2, 4))
    (pdir / layout.index_file_name(0)).unlink()
    return recovery_point


def txn_version_in_a_partial_entry(pdir: Path) -> int:
    """The check reads whole entries only: 12 bytes of a next one with version 5 are not read."""
    return _txn_index(pdir, 0, _txn_entry(b"\0\0", 2, 4) + b"\x05\x00" + bytes(10))


def base_offsets_flipped_past_each_other(pdir: Path) -> int:
    """Both segments' batches say base offset 2^62 + their own (a bit of a field outside the CRC
    flipped): Kafka splits segment 0 past segment 1, retries, and splits segment 1 after it."""
    for base in (0, 1):
        write_segment(pdir, base, batches(base, 1), interval=INTERVAL)
        flip_byte(pdir / layout.log_file_name(base), 0)
    return 0


def misnamed_segment(pdir: Path) -> int:
    write_segment(pdir, 0, batches(0, 5), interval=INTERVAL)
    write_segment(pdir, 10, batches(7, 5), indexes=False)
    return 0


def log_start_past_log_end(pdir: Path) -> int:
    write_segment(pdir, 0, batches(0, 10), interval=INTERVAL)
    _checkpoints(pdir.parent, 0, log_start=25)
    return 0


def missing_index_below_recovery_point(pdir: Path) -> int:
    write_segment(pdir, 0, batches(0, 10), interval=INTERVAL)
    write_segment(pdir, 10, batches(10, 10), interval=INTERVAL)
    write_segment(pdir, 20, batches(20, 10), interval=INTERVAL)
    (pdir / layout.index_file_name(10)).unlink()
    log = pdir / layout.log_file_name(10)
    log.write_bytes(log.read_bytes()[:-50])  # torn: recovered at load, later segments kept
    return 25


def corrupt_batch_in_middle_segment(pdir: Path) -> int:
    for base in (0, 10, 20):
        write_segment(pdir, base, batches(base, 10, value_size=300), interval=INTERVAL)
    flip_byte(pdir / layout.log_file_name(10), 1500)
    return 5


def garbage_after_the_last_batch(pdir: Path) -> int:
    write_segment(pdir, 0, b"".join(batches(0, 12)) + bytes(300) + b"\x01" * 40, interval=INTERVAL)
    return 0


def swap_and_cleaned_leftovers(pdir: Path) -> int:
    write_segment(pdir, 0, batches(0, 5), interval=INTERVAL)
    (pdir / (layout.log_file_name(7) + ".cleaned")).write_bytes(b"")
    (pdir / (layout.log_file_name(9) + ".swap")).write_bytes(batch(9))
    return 0


def _with_crc(raw: bytearray) -> bytes:
    """A v2 batch whose CRC is recomputed after an edit inside the CRC's range."""
    raw[17:21] = crc32c(bytes(raw[21:])).to_bytes(4, "big")
    return bytes(raw)


def swap_of_a_compaction(pdir: Path) -> int:
    write_segment(pdir, 0, batches(0, 10), interval=INTERVAL)
    cleaned = b"".join(batch(i) for i in range(0, 10, 2))
    (pdir / (layout.log_file_name(0) + ".swap")).write_bytes(cleaned)
    write_segment(pdir, 10, batches(10, 3), interval=INTERVAL)
    return 0


def _swap(pdir: Path, name: str, content: bytes) -> None:
    (pdir / (name + layout.SWAP_SUFFIX)).write_bytes(content)


def index_swaps_renamed_in(pdir: Path) -> int:
    """Swaps of indexes, their segments' logs already renamed in (seed 500 case 1235): Kafka
    4.1.1 renames each over its index before loading; below the recovery point it keeps the
    swap's bytes, above it recovers the segment and rewrites them; one without a log is an
    orphan it deletes."""
    for base in (0, 10, 20, 30):
        write_segment(pdir, base, batches(base, 10), interval=INTERVAL)
    _swap(pdir, layout.index_file_name(10), b"")  # over an index of 10 entries
    timeindex = pdir / layout.time_index_file_name(10)
    _swap(pdir, timeindex.name, timeindex.read_bytes()[:12])
    timeindex.unlink()
    _swap(pdir, layout.time_index_file_name(0), bytes(24))  # zeros, never checked below it
    _swap(pdir, layout.index_file_name(30), b"\x07" * 16)  # garbage, rewritten by recovery
    _swap(pdir, layout.index_file_name(40), bytes(8))  # no segment 40
    return 25


def index_swaps_of_an_unfinished_split(pdir: Path) -> int:
    """Index swaps at or above the lowest `.cleaned` file are discarded, not renamed."""
    for base in (0, 10, 20):
        write_segment(pdir, base, batches(base, 10), interval=INTERVAL)
    (pdir / (layout.log_file_name(10) + ".cleaned")).write_bytes(b"")
    _swap(pdir, layout.time_index_file_name(0), bytes(12))
    _swap(pdir, layout.index_file_name(10), b"")
    _swap(pdir, layout.time_index_file_name(20), b"")
    return 30


def timestamps_going_back(pdir: Path) -> int:
    data = [batch(i, ts=T0 + (1000 if i % 3 == 0 else i)) for i in range(12)]
    write_segment(pdir, 0, data, interval=INTERVAL)
    return 0


def crc_valid_batch_whose_records_do_not_parse(pdir: Path) -> int:
    bad = bytearray(batch(5, n=3))
    bad[22] |= 0x01  # attributes: gzip, over bytes that are not gzip; the CRC made to hold
    data = [*batches(0, 5), _with_crc(bad), *batches(8, 4)]
    write_segment(pdir, 0, data, interval=INTERVAL)
    return 0


def _base_offset_going_back(pdir: Path) -> None:
    """Batch 6 of segment 0 says base offset 2 (a field outside the CRC); with interval 0 every
    batch is an index point, where Kafka's index append throws InvalidOffsetException."""
    write_segment(pdir, 0, batches(0, 10), interval=INTERVAL)
    write_segment(pdir, 10, batches(10, 3), interval=INTERVAL)
    log = pdir / layout.log_file_name(0)
    data = bytearray(log.read_bytes())
    at = 6 * len(batch(0))
    data[at : at + 8] = (2).to_bytes(8, "big")
    log.write_bytes(bytes(data))


def base_offset_going_back_in_recovery(pdir: Path) -> int:
    _base_offset_going_back(pdir)  # caught: the segment emptied, the later ones deleted
    return 0


def base_offset_going_back_while_loading(pdir: Path) -> int:
    _base_offset_going_back(pdir)
    (pdir / layout.index_file_name(0)).unlink()  # recovered while loading: nothing catches it
    return 20


BUILDERS: list[Callable[[Path], int]] = [
    legacy_messages_torn,
    legacy_bit_flip_mid_segment,
    offset_overflow_split,
    overflow_first_piece_named_by_its_batch,
    overflow_one_piece,
    overflow_three_pieces,
    overflow_then_a_torn_batch,
    overflow_then_zeros,
    overflow_then_a_bit_flip,
    overflow_then_a_bit_flip_before_a_later_piece,
    overflow_then_a_piece_beginning_with_a_bit_flip,
    overflow_split_while_loading,
    base_offsets_flipped_past_each_other,
    misnamed_segment,
    log_start_past_log_end,
    missing_index_below_recovery_point,
    corrupt_batch_in_middle_segment,
    garbage_after_the_last_batch,
    swap_and_cleaned_leftovers,
    swap_of_a_compaction,
    index_swaps_renamed_in,
    index_swaps_of_an_unfinished_split,
    timestamps_going_back,
    crc_valid_batch_whose_records_do_not_parse,
    base_offset_going_back_in_recovery,
    base_offset_going_back_while_loading,
    txn_version_in_the_second_byte,
    txn_version_negative,
    txn_version_fatal,
    txn_version_fatal_after_an_entry_out_of_order,
    txn_version_after_an_entry_below_the_base,
    txn_version_with_the_index_missing,
    txn_version_in_a_partial_entry,
]


@pytest.mark.parametrize("builder", BUILDERS, ids=[b.__name__ for b in BUILDERS])
def test_handmade_log_dir(builder, kafka_recover, work_dir):
    log_dir = work_dir / "a" / "kafka-logs"
    pdir = log_dir / "t-0"
    pdir.mkdir(parents=True)
    recovery_point = builder(pdir)
    if not (log_dir / layout.RECOVERY_POINT_CHECKPOINT).exists():
        _checkpoints(log_dir, recovery_point)
    outcome = differ(log_dir, work_dir, kafka_recover, SETTINGS, CONFIG, Outcome(None))
    assert outcome.divergences == [], "\n".join(
        [*outcome.divergences, str(outcome.kafka["t-0"].get("error"))]
    )


# What Kafka does on the cases above that exercise where it throws (the differential test only
# requires the plan to say so): its exception, or None where it loads.
KAFKA_ERRORS = {
    overflow_then_a_torn_batch: "java.util.NoSuchElementException",
    overflow_then_zeros: "org.apache.kafka.common.errors.CorruptRecordException",
    overflow_first_piece_named_by_its_batch: None,
    txn_version_in_the_second_byte: None,
    txn_version_negative: None,
    txn_version_fatal: "org.apache.kafka.common.KafkaException",
    txn_version_fatal_after_an_entry_out_of_order: "org.apache.kafka.common.KafkaException",
    txn_version_after_an_entry_below_the_base: None,
    txn_version_with_the_index_missing: None,
    txn_version_in_a_partial_entry: None,
}


@pytest.mark.parametrize("builder", list(KAFKA_ERRORS), ids=[b.__name__ for b in KAFKA_ERRORS])
def test_kafka_throws_exactly_there(builder, kafka_recover, work_dir):
    pdir = work_dir / "t-0"
    pdir.mkdir()
    answer = kafka_recover.recover(pdir, recovery_point=builder(pdir), config=CONFIG)
    error = answer["error"]
    assert (error and error["class"]) == KAFKA_ERRORS[builder], error
    if error is not None:
        assert error["offline"] is False  # not an IOException: the broker does not start


def test_departure_split_while_loading_keeps_no_original(kafka_recover, work_dir):
    """docs/spec-notes.md: a segment split while loading (no `.index`) is not yet in the log's
    list, so `replaceSegments` leaves the original file beside its pieces; with the recovery point
    at or past the first piece the recovery pass does not reach it again, and Kafka's log holds
    offsets 5.. twice. kafka mode removes the original, and its plan says what Kafka does."""
    log_dir = work_dir / "a" / "kafka-logs"
    pdir = log_dir / "t-0"
    overflow_split_while_loading(pdir)
    _checkpoints(log_dir, 5)
    outcome = differ(log_dir, work_dir, kafka_recover, SETTINGS, CONFIG, Outcome(None))
    kafka = [s["base_offset"] for s in outcome.kafka["t-0"]["segments"]]
    assert kafka == [0, 5, FAR, FAR + 10]
    ours = sorted(p.name for p in (work_dir / "b" / "kafka-logs" / "t-0").glob("*.log"))
    assert ours == [layout.log_file_name(b) for b in (5, FAR, FAR + 10)]
    assert outcome.divergences == [
        f"t-0: segments Kafka keeps {[layout.log_file_name(b) for b in kafka]}, logrepair {ours}"
    ]
    assert any("keeps the original file beside its pieces" in n for n in outcome.repair["notes"])


_GAPS = st.sampled_from([1, 7, 2**31 - 40, 2**31 - 2, 2**31, 2**31 + 3, 2**32 + 11])


@st.composite
def overflowing_segments(draw):
    """Segment 0 of a broker before KAFKA-6264: its first batch at or above 0, groups of batches
    whose offsets jump past (or just short of) the relative range, and maybe a torn tail, zeros
    or a bit flip; the recovery point 0, or (first batch 0) at a batch or past them all: the
    split then leaves pieces below it, which Kafka's retry does not recover; no `.index` (split
    while loading) or empty indexes (split by the recovery pass)."""
    offset = draw(st.just(0) | st.integers(1, 20))
    data = []
    for gap in [0, *draw(st.lists(_GAPS, min_size=1, max_size=3))]:
        offset += gap
        for _ in range(draw(st.integers(1, 3))):
            n = draw(st.integers(1, 3))
            data.append(batch(offset, n=n))
            offset += n
    # A recovery point above 0 only where the first piece keeps the segment's name (first batch
    # at 0): else Kafka keeps the original beside its pieces (a departure, tested above). At a
    # batch's offset, or past them all, damage lies in pieces below it as often as not.
    recovery_point = 0
    if data[0][:8] == bytes(8):
        offsets = [int.from_bytes(b[:8], "big") for b in data]
        recovery_point = draw(st.sampled_from([0, offset]) | st.sampled_from(offsets))
    damage = draw(st.sampled_from([None, "torn", "zeros", "flip"]))
    flip = draw(st.integers(0, len(data) - 1))
    return data, damage, flip, recovery_point, draw(st.booleans())


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=overflowing_segments())
def test_overflow_split_as_kafka_splits(case, kafka_recover, work_dir):
    data, damage, flip, recovery_point, loads = case
    work = work_dir / "case"
    shutil.rmtree(work, ignore_errors=True)
    log_dir = work / "a" / "kafka-logs"
    pdir = log_dir / "t-0"
    raw = b"".join(data) + {"torn": data[-1][:30], "zeros": bytes(64)}.get(damage or "", b"")
    write_segment(pdir, 0, raw, indexes=False)
    if loads:  # (empty) indexes: it loads as it is, and the recovery pass splits it
        (pdir / layout.index_file_name(0)).write_bytes(b"")
        (pdir / layout.time_index_file_name(0)).write_bytes(b"")
    if damage == "flip":
        flip_byte(pdir / layout.log_file_name(0), sum(map(len, data[:flip])) + 70)
    _checkpoints(log_dir, recovery_point)
    outcome = differ(log_dir, work, kafka_recover, SETTINGS, CONFIG, Outcome(None))
    assert outcome.divergences == [], "\n".join(outcome.divergences)


def test_split_below_the_recovery_point_keeps_its_damage(kafka_recover, work_dir):
    """Found by the thorough profile of the test above: segment 0 (no `.index`) split while
    loading into pieces 0, 2^31 and 2^32, the recovery point past them all. Kafka's retry
    recovers only from the piece holding the recovery point, so the bit flip in piece 2^31 stays
    (below the recovery point) and piece 2^32 is kept; kafka mode did the same, and reports the
    corrupt batch it leaves, at its new place, with the modes that fix it."""
    log_dir = work_dir / "a" / "kafka-logs"
    pdir = log_dir / "t-0"
    data = [batch(o) for o in (0, 2**31 - 1, 2**31, 2**32 - 1, 2**32)]
    write_segment(pdir, 0, data, indexes=False)
    flip_byte(pdir / layout.log_file_name(0), sum(map(len, data[:3])) + 70)
    _checkpoints(log_dir, 2**32 + 1)
    outcome = differ(log_dir, work_dir, kafka_recover, SETTINGS, CONFIG, Outcome(None))
    assert outcome.divergences == [], "\n".join(outcome.divergences)
    assert [s["base_offset"] for s in outcome.kafka["t-0"]["segments"]] == [0, 2**31, 2**32]
    left = [
        (f["kind"], f["file"], f["position"], f["fixed_by"], f["moved_from"])
        for f in outcome.repair["left"]
    ]
    at = sum(map(len, data[:3]))
    assert left == [
        (
            "crc_mismatch",
            f"t-0/{layout.log_file_name(2**31)}",
            len(data[2]),
            ["point-in-time", "salvage"],
            {"file": f"t-0/{layout.log_file_name(0)}", "position": at},
        )
    ]


@pytest.mark.parametrize(
    ("recovery_point", "kept"),
    [(0, [0, 2**31]), (2**31 + 1, [0, 2**31]), (2**32 + 1, [0, 2**31, 2**32])],
)
def test_split_in_the_recovery_pass_from_the_floor_of_the_recovery_point(
    recovery_point, kept, kafka_recover, work_dir
):
    """Segment 0 with (empty) indexes loads as it is; the recovery pass splits it and its retry
    recovers from the piece holding the recovery point: the flip in piece 2^31 is cut there, or
    kept below it."""
    log_dir = work_dir / "a" / "kafka-logs"
    pdir = log_dir / "t-0"
    data = [batch(o) for o in (0, 2**31 - 1, 2**31, 2**31 + 1, 2**31 + 2, 2**32)]
    write_segment(pdir, 0, data, indexes=False)
    (pdir / layout.index_file_name(0)).write_bytes(b"")
    (pdir / layout.time_index_file_name(0)).write_bytes(b"")
    flip_byte(pdir / layout.log_file_name(0), sum(map(len, data[:3])) + 70)
    _checkpoints(log_dir, recovery_point)
    outcome = differ(log_dir, work_dir, kafka_recover, SETTINGS, CONFIG, Outcome(None))
    assert outcome.divergences == [], "\n".join(outcome.divergences)
    assert [s["base_offset"] for s in outcome.kafka["t-0"]["segments"]] == kept


def test_split_in_recovery_cuts_the_piece_holding_the_recovery_point(kafka_recover, work_dir):
    """The same split with the recovery point in piece 2^31, whose recovery cuts at the flip:
    piece 0 (below) is kept, piece 2^32 deleted with every later segment."""
    log_dir = work_dir / "a" / "kafka-logs"
    pdir = log_dir / "t-0"
    data = [batch(o) for o in (0, 2**31 - 1, 2**31, 2**32 - 1, 2**32)]
    write_segment(pdir, 0, data, indexes=False)
    write_segment(pdir, 2**32 + 1, [batch(2**32 + 1)])
    flip_byte(pdir / layout.log_file_name(0), sum(map(len, data[:3])) + 70)
    _checkpoints(log_dir, 2**31 + 5)
    outcome = differ(log_dir, work_dir, kafka_recover, SETTINGS, CONFIG, Outcome(None))
    assert outcome.divergences == [], "\n".join(outcome.divergences)
    assert [s["base_offset"] for s in outcome.kafka["t-0"]["segments"]] == [0, 2**31]
