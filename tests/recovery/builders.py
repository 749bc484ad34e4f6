"""Partition dirs for the recovery tests: written by the real `Log`, or raw segment by segment
where a test needs bytes the broker would never write."""

from __future__ import annotations

import os
from pathlib import Path

from logrepair.format.batch import RecordBatch
from logrepair.format.batch_builder import build_batch
from logrepair.format.batch_layout import Record
from logrepair.format.errors import FormatError
from logrepair.storage import checkpoints, layout
from logrepair.storage.clock import ManualClock
from logrepair.storage.index_builder import build_indexes
from logrepair.storage.layout import TopicPartition
from logrepair.storage.log import Log, ProducerRecord
from logrepair.storage.log_config import LogConfig
from logrepair.storage.osdisk import OsDisk
from logrepair.storage.scheduler import Scheduler

DISK = OsDisk()
T0 = 1_700_000_000_000


def batch(
    offset: int, *, n: int = 1, value_size: int = 100, ts: int | None = None, epoch: int = 0
) -> bytes:
    """One v2 batch of `n` records at `offset`."""
    t = T0 + offset if ts is None else ts
    return build_batch(
        [
            Record(offset + i, t + i, b"k%06d" % (offset + i), bytes(value_size), ())
            for i in range(n)
        ],
        base_offset=offset,
        partition_leader_epoch=epoch,
    )


BATCH_SIZE = len(batch(0))
"""Every `batch()` with default arguments has this size (keys are fixed-width)."""


def batches(first: int, count: int, **kw) -> list[bytes]:
    return [batch(first + i, **kw) for i in range(count)]


def write_segment(
    pdir: Path, base: int, data: list[bytes] | bytes, *, indexes: bool = True, interval: int = 4096
) -> Path:
    """A raw segment; with `indexes`, the offset and time index Kafka's recovery would write."""
    pdir.mkdir(parents=True, exist_ok=True)
    raw = data if isinstance(data, bytes) else b"".join(data)
    log = pdir / layout.log_file_name(base)
    log.write_bytes(raw)
    if indexes:
        parsed = []
        pos = 0
        while pos + 61 <= len(raw):
            try:
                b = RecordBatch.parse(raw, pos)
            except FormatError:
                break
            if not b.crc_valid:
                break
            parsed.append(b)
            pos += b.size
        off, tim = build_indexes(parsed, base, interval)
        (pdir / layout.index_file_name(base)).write_bytes(off)
        (pdir / layout.time_index_file_name(base)).write_bytes(tim)
    return log


def write_offsets(log_dir: Path, name: str, offsets: dict[tuple[str, int], int]) -> None:
    checkpoints.write_offsets(
        DISK, str(log_dir / name), {TopicPartition(t, p): o for (t, p), o in offsets.items()}
    )


def log_with_records(
    pdir: Path,
    count: int,
    *,
    segment_bytes: int = 1024,
    index_interval_bytes: int = 4096,
    value_size: int = 100,
    close: bool = True,
    epochs: list[int] | None = None,
) -> Log:
    """`count` single-record appends through the real Log (one batch each)."""
    clock = ManualClock(T0)
    config = LogConfig(segment_bytes=segment_bytes, index_interval_bytes=index_interval_bytes)
    log = Log.open(DISK, str(pdir), config, clock=clock, scheduler=Scheduler(clock))
    for i in range(count):
        clock.advance(10)
        epoch = epochs[i] if epochs else 0
        log.append([ProducerRecord(b"key%d" % i, bytes(value_size))], leader_epoch=epoch)
    log.flush()
    if close:
        log.close()
    return log


def segment_files(pdir: Path, suffix: str = layout.LOG_SUFFIX) -> list[Path]:
    return sorted(p for p in pdir.iterdir() if p.name.endswith(suffix))


def flip_byte(path: Path, position: int) -> None:
    with open(path, "r+b") as f:
        f.seek(position)
        b = f.read(1)
        f.seek(position)
        f.write(bytes([b[0] ^ 0x40]))


def append_bytes(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


def truncate(path: Path, size: int) -> None:
    os.truncate(path, size)
