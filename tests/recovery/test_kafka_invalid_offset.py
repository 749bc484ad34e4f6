"""kafka mode where offsets go back inside a batch Kafka keeps (CRC valid, records not): Kafka's
recovery indexes that batch like any other, its index append throws InvalidOffsetException, and
the segment is emptied (spec rec §6.6 step 2, §6.6.1 step d). The plan has to see that: apply
must never meet an index it cannot build."""

from __future__ import annotations

import pytest

from logrepair.format.crc import crc32c
from logrepair.recovery.repair import repair
from logrepair.recovery.settings import Settings
from logrepair.storage import layout

from .builders import BATCH_SIZE, DISK, batch, segment_files, write_segment


def _flagged(offset: int, ts: int) -> bytes:
    """`batch(offset)` claiming two records while it holds one: `record_count_mismatch`, but its
    CRC is recomputed, so Kafka's `ensureValid` passes and recovery keeps it."""
    raw = bytearray(batch(offset, ts=ts))
    raw[57:61] = (2).to_bytes(4, "big")
    raw[17:21] = crc32c(bytes(raw[21:])).to_bytes(4, "big")
    return bytes(raw)


T = 1_700_000_000_000
CASES = {
    # interval 0: every batch after the first is an index point; the offset-index append of
    # the flagged batch's offset 1 after entry 2 throws
    "at_an_index_point": (0, [batch(0), batch(1), batch(2), _flagged(1, T + 3), batch(5)]),
    # index points at every second batch: the flagged batch between them carries the largest
    # timestamp at offset 1, and the time-index append at the next point (after entry 2) throws
    "between_index_points": (
        BATCH_SIZE,
        [batch(0), batch(1), batch(2), _flagged(1, T + 5000), batch(5)],
    ),
}


@pytest.mark.parametrize("index", ["valid", "corrupt", "missing"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_kafka_mode_empties_the_segment_as_kafka_does(log_dir, case, index):
    interval, data = CASES[case]
    pdir = log_dir / "t-0"
    write_segment(pdir, 0, data[:3], interval=interval)  # the indexes of the batches in order
    (pdir / layout.log_file_name(0)).write_bytes(b"".join(data))
    write_segment(pdir, 6, [batch(6)], interval=interval)
    offset_index = pdir / layout.index_file_name(0)
    if index == "corrupt":
        offset_index.write_bytes(offset_index.read_bytes() + b"xyz")
    elif index == "missing":
        offset_index.unlink()
    settings = Settings(index_interval_bytes=interval)
    result = repair(DISK, str(log_dir), "kafka", settings)  # apply never meets a surprise
    assert result.applied
    assert repair(DISK, str(log_dir), "kafka", settings).plan.actions == []
    if index == "missing":
        return  # recovered while loading (spec rec §6.4), outside §6.6's handler: see the notes
    assert (pdir / layout.log_file_name(0)).stat().st_size == 0
    assert [p.name for p in segment_files(pdir)] == [layout.log_file_name(0)]
    assert offset_index.read_bytes() == b""
