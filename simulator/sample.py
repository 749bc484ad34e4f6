"""A small damaged broker log dir for demos and tutorials, written by the real `Log`.

`build_damaged_logdir(path_or_disk, seed)` writes a log dir with two topics (one compressed and
transactional, one plain with keys), several partitions and segments, the root checkpoints a
broker keeps, and then damages it the way crashes do:

- a torn tail: the active segment of one partition ends inside its last batch (power loss mid-append);
- a garbage block: a 4 KiB block of zeros after the last batch of another (size persisted, data not);
- a corrupt offset index: an entry of an old segment's `.index` points past its log (torn index page);
- a bit flip in an old segment, below the recovery point, where a broker never looks (bit rot);
- a stale recovery-point checkpoint: a partition truncated after the checkpoint was written, so the
  checkpointed recovery point is past the log end.

It returns one `Damage` per change (file, position, length, what), so a demo can show that
`logrepair verify` finds exactly these and `logrepair repair --mode salvage` fixes them.
"""

from __future__ import annotations

import random

from logrepair.storage import layout
from logrepair.storage.clock import ManualClock
from logrepair.storage.disk import Disk, join, parent_of
from logrepair.storage.log import Log, ProducerRecord
from logrepair.storage.log_config import LogConfig
from logrepair.storage.osdisk import OsDisk
from logrepair.storage.scheduler import Scheduler
from simulator.faults import Damage
from simulator.invariants import walk
from simulator.workload import CODECS, START_MS, write_checkpoints

TOPICS = (("orders", 3, ("lz4", "zstd", "none"), True), ("clicks", 2, ("none",), False))


def build_damaged_logdir(
    path_or_disk: str | Disk, seed: int = 0, *, log_dir: str = "/kafka-logs"
) -> list[Damage]:
    """Writes the damaged sample at `path_or_disk` (a directory path on the real disk), or at
    `log_dir` on the given Disk; returns the damage made, in the order it was made."""
    if isinstance(path_or_disk, str):
        disk: Disk = OsDisk()
        log_dir = path_or_disk
    else:
        disk = path_or_disk
    rng = random.Random(f"sample:{seed}")
    clock = ManualClock(START_MS)
    scheduler = Scheduler(clock)
    config = LogConfig(segment_bytes=4096, index_interval_bytes=512, rng=random.Random(seed))
    disk.make_dirs(log_dir)
    disk.fsync_dir(parent_of(log_dir))
    logs: list[Log] = []
    for topic, partitions, codecs, txn in TOPICS:
        for p in range(partitions):
            log = Log.open(
                disk, join(log_dir, f"{topic}-{p}"), config, clock=clock, scheduler=scheduler
            )
            _fill(log, rng, codecs, txn, clock)
            logs.append(log)
    for log in logs:
        log.flush()
    write_checkpoints(disk, log_dir, logs)
    damage: list[Damage] = []
    orders = [log for log in logs if log.topic_partition.topic == "orders"]
    clicks = [log for log in logs if log.topic_partition.topic == "clicks"]
    # Stale recovery point: truncate after the checkpoint; the checkpoint keeps the old value.
    victim = clicks[1]
    old_end = victim.log_end_offset
    victim.truncate_to(old_end - 3)
    victim.flush()
    damage.append(
        Damage(
            "stale_recovery_point",
            join(log_dir, layout.RECOVERY_POINT_CHECKPOINT),
            0,
            disk.size(join(log_dir, layout.RECOVERY_POINT_CHECKPOINT)),
            f"{victim.topic_partition} checkpointed at {old_end}, log now ends at {victim.log_end_offset}",
        )
    )
    for log in logs:
        log.close()
    damage.append(_torn_tail(disk, orders[0], rng))
    damage.append(_garbage_block(disk, orders[1]))
    damage.append(_corrupt_index(disk, clicks[0], rng))
    damage.append(_bit_flip_old_segment(disk, orders[2], rng))
    return damage


def _fill(
    log: Log, rng: random.Random, codecs: tuple[str, ...], txn: bool, clock: ManualClock
) -> None:
    producer_id, sequence = 4000 + log.topic_partition.partition, 0
    for i in range(60):
        clock.advance(1000)
        records = [
            ProducerRecord(f"key-{rng.randrange(20)}".encode(), rng.randbytes(rng.randint(20, 160)))
            for _ in range(rng.randint(1, 5))
        ]
        codec = CODECS[rng.choice(codecs)]
        if txn and i % 3 == 0:
            log.append(
                records,
                codec=codec,
                producer_id=producer_id,
                producer_epoch=0,
                base_sequence=sequence,
                is_transactional=True,
            )
            sequence += len(records)
            log.append_end_txn(producer_id, 0, commit=rng.random() < 0.7)
        else:
            log.append(records, codec=codec)


def _segments(disk: Disk, log: Log) -> list[str]:
    names = [n for n in disk.list_dir(log.dir) if n.endswith(layout.LOG_SUFFIX)]
    return [join(log.dir, n) for n in sorted(names)]


def _batches(disk: Disk, path: str):
    return walk(disk.read_file(path), path)[0]


def _torn_tail(disk: Disk, log: Log, rng: random.Random) -> Damage:
    seg = _segments(disk, log)[-1]
    last = _batches(disk, seg)[-1]
    cut = last.position + rng.randrange(1, len(last.data))
    size = disk.size(seg)
    with disk.open(seg, write=True) as f:
        f.truncate(cut)
    detail = f"batch at offset {last.base} cut at byte {cut}: its last {size - cut} bytes lost"
    return Damage("torn_tail", seg, last.position, cut - last.position, detail)


def _garbage_block(disk: Disk, log: Log) -> Damage:
    seg = _segments(disk, log)[-1]
    with disk.open(seg, write=True) as f:
        position = f.append(bytes(4096))
    return Damage("garbage_tail", seg, position, 4096, "zeros after the last batch")


def _corrupt_index(disk: Disk, log: Log, rng: random.Random) -> Damage:
    for seg in _segments(disk, log)[:-1]:
        index = seg[: -len(layout.LOG_SUFFIX)] + layout.INDEX_SUFFIX
        if disk.exists(index) and disk.size(index) >= 8:
            slot = rng.randrange(disk.size(index) // 8) * 8
            with disk.open(index, write=True) as f:
                f.write_at(slot, (1).to_bytes(4, "big") + (0x7FFFFFF0).to_bytes(4, "big"))
            return Damage("offset_index_corrupt", index, slot, 8, "entry points past the log")
    raise AssertionError("the sample's old segments always have index entries")


def _bit_flip_old_segment(disk: Disk, log: Log, rng: random.Random) -> Damage:
    seg = _segments(disk, log)[0]
    batches = _batches(disk, seg)
    victim = batches[len(batches) // 2]
    at = victim.position + rng.randrange(21, len(victim.data))
    with disk.open(seg, write=True) as f:
        byte = f.read_at(at, 1)[0]
        f.write_at(at, bytes([byte ^ 0x10]))
    return Damage("crc_mismatch", seg, at, 1, f"bit flipped in the batch at offset {victim.base}")
