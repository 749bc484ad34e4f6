"""Differential recovery on log dirs built byte by byte, for what the simulator's workloads never
write: legacy magic 0/1 messages, offsets that overflow a segment's relative range, a segment named
above its first batch, a log start past the log end, damage below the recovery point in a segment
Kafka recovers while loading. Same comparison as test_differential_recovery.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from logrepair.format.batch import Record
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
