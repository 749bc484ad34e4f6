"""Deterministic workloads that drive the real `logrepair.storage.log.Log` through a Disk.

A workload is a broker's life in miniature: appends as the leader (plain, compressed, keyed,
transactional with commit and abort markers), size- and time-based rolls, flushes by
`flush.messages` and by an explicit flusher, the LogManager's periodic checkpoints of recovery
points, log start offsets and high watermarks, retention running between appends, and follower
truncations. Everything random comes from `WorkloadSpec.seed`, so the same spec on a fresh SimDisk
yields the same operation trace, which is what makes a crash point reproducible.
"""

from __future__ import annotations

import random
import re
from dataclasses import asdict, dataclass, field, fields

from logrepair.format.compression import CODEC_NAMES
from logrepair.recovery.indexes import rebuild as rebuild_indexes
from logrepair.storage import checkpoints, layout
from logrepair.storage.clock import ManualClock
from logrepair.storage.disk import Disk, join, parent_of
from logrepair.storage.log import Log, LogError, ProducerRecord
from logrepair.storage.log_config import LogConfig
from logrepair.storage.scheduler import Scheduler
from simulator.disk import SimDisk
from simulator.invariants import durable_live_batches, walk

START_MS = 1_700_000_000_000
CODECS = {name: int(codec) for codec, name in CODEC_NAMES.items()}


_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")


class SpecError(ValueError):
    """A workload parameter that is unknown or out of range."""


def _check_type(name: str, value, default) -> None:
    """TOML gives ints, floats, bools, strings and arrays; each key takes the kind its default has."""
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, int) or default is None:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif isinstance(default, float):
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    elif isinstance(default, str):
        ok = isinstance(value, str)
    else:  # a range or a list
        ok = isinstance(value, list | tuple) or (
            name in ("records", "record_bytes") and isinstance(value, int)
        )
    if not ok:
        raise SpecError(f"{name} must be {_KIND.get(type(default), 'a list')}, not {value!r}")


_KIND = {
    bool: "true or false",
    int: "an integer",
    float: "a number",
    str: "a string",
    type(None): "an integer",
}


@dataclass(frozen=True)
class WorkloadSpec:
    seed: int = 0
    log_dir: str = "/kafka-logs"
    topic: str = "sim"
    partitions: int = 1
    appends: int = 40
    records: tuple[int, int] = (1, 4)
    """Records per batch, inclusive range."""
    record_bytes: tuple[int, int] = (16, 120)
    keys: int = 0
    """Size of the key space; 0 appends records without keys."""
    codecs: tuple[str, ...] = ("none",)
    transactions: float = 0.0
    """Share of appends made inside a transaction (each ended by a COMMIT or ABORT marker)."""
    segment_bytes: int = 2048
    index_interval_bytes: int = 256
    preallocate: bool = False
    flush_messages: int | None = None
    flush_every: int = 8
    """The flusher: an explicit flush of every log after this many appends (0: never)."""
    checkpoint_every: int = 8
    """Recovery-point, log-start and high-watermark checkpoints after this many appends (0: never)."""
    retention_bytes: int = -1
    retention_every: int = 0
    truncate_every: int = 0
    """A follower truncation (to a few offsets below the log end) after this many appends."""
    leader_epoch_every: int = 0
    """A new leader epoch (a leader election) after this many appends (0: epoch 0 throughout)."""
    compact_at_end: bool = False
    """Finish with a LogCleaner-style replacement of partition 0's oldest segment (spec §6.3)."""
    step_ms: int = 1000
    clean_shutdown: bool = False

    def __post_init__(self) -> None:
        if self.partitions < 1 or self.appends < 0:
            raise SpecError("partitions must be >= 1 and appends >= 0")
        for name in ("records", "record_bytes"):
            lo, hi = getattr(self, name)
            if not 0 < lo <= hi:
                raise SpecError(f"{name} must be a range [low, high] with 0 < low <= high")
        unknown = [c for c in self.codecs if c not in CODECS]
        if unknown or not self.codecs:
            raise SpecError(
                f"unknown codec {unknown[0] if unknown else '(none)'}; one of {', '.join(CODECS)}"
            )
        if not 0.0 <= self.transactions <= 1.0:
            raise SpecError("transactions is a share between 0 and 1")
        if self.segment_bytes < 128:
            raise SpecError("segment_bytes must be at least 128")
        if self.max_batch_bytes() > self.segment_bytes:
            raise SpecError(
                f"a batch of {self.records[1]} records of {self.record_bytes[1]} bytes "
                f"(up to {self.max_batch_bytes()} bytes) does not fit segment_bytes {self.segment_bytes}"
            )
        if self.compact_at_end and self.clean_shutdown:
            raise SpecError("compact_at_end and clean_shutdown exclude each other")
        if not self.log_dir.startswith("/"):
            raise SpecError("log_dir must be an absolute path")
        if not _TOPIC.fullmatch(self.topic):
            raise SpecError(f"bad topic name {self.topic!r}: Kafka allows 1-249 of [a-zA-Z0-9._-]")

    @classmethod
    def from_dict(cls, data: dict) -> WorkloadSpec:
        """Builds a spec from a TOML table; unknown keys are an error, not silently ignored."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise SpecError(f"unknown workload key {unknown[0]!r}")
        values = dict(data)
        for f in fields(cls):
            if f.name in values:
                _check_type(f.name, values[f.name], getattr(cls, f.name, None))
        for key in ("records", "record_bytes"):
            if key in values:
                v = values[key]
                values[key] = (v, v) if isinstance(v, int) else tuple(v)
        if "codecs" in values:
            values["codecs"] = tuple(values["codecs"])
        try:
            return cls(**values)
        except TypeError as e:
            raise SpecError(str(e)) from None

    def max_batch_bytes(self) -> int:
        """A bound on one batch's size: the 61-byte header; per record its value, key (`k<n>`)
        and at most 9 bytes of attributes and varints; compression framing and expansion."""
        key = len(f"k{self.keys - 1}") if self.keys else 0
        body = self.records[1] * (self.record_bytes[1] + key + 9)
        if any(c != "none" for c in self.codecs):
            body += 64 + body // 100
        return 61 + body

    def to_dict(self) -> dict:
        return asdict(self)

    def config(self) -> LogConfig:
        return LogConfig(
            segment_bytes=self.segment_bytes,
            index_interval_bytes=self.index_interval_bytes,
            segment_index_bytes=max(64, self.segment_bytes // 8),
            preallocate=self.preallocate,
            retention_bytes=self.retention_bytes,
            flush_messages=self.flush_messages or 2**63 - 1,
            rng=random.Random(self.seed),
        )

    def partition_dirs(self) -> list[str]:
        return [join(self.log_dir, f"{self.topic}-{p}") for p in range(self.partitions)]


@dataclass
class History:
    """What the workload did: every acknowledged append, and how the run ended."""

    appended: list[tuple[int, int, int]] = field(default_factory=list)
    """(partition, first offset, last offset) of each acknowledged append."""
    truncations: list[tuple[int, int]] = field(default_factory=list)
    error: str | None = None
    """The I/O error that took the log dir offline, if one did (the run stops there)."""
    log_end_offsets: list[int] = field(default_factory=list)
    durable: list[tuple[int, dict[str, int]]] = field(default_factory=list)
    """With `record_durability`: after each fsync (trace op index), per partition dir, the offset
    below which every batch the log held was durable (its durable prefix)."""


def write_checkpoints(disk: Disk, log_dir: str, logs: list[Log]) -> None:
    """The LogManager's periodic checkpoints: recovery points, log start offsets, high watermarks.

    `log-start-offset-checkpoint` only lists logs whose start is past their first segment (§3.4)."""
    rps = {log.topic_partition: log.recovery_point for log in logs}
    hws = {log.topic_partition: log.high_watermark for log in logs}
    lsos = {
        log.topic_partition: log.log_start_offset
        for log in logs
        if log.log_start_offset > log.segments[0].base_offset
    }
    checkpoints.write_offsets(disk, join(log_dir, layout.RECOVERY_POINT_CHECKPOINT), rps)
    checkpoints.write_offsets(disk, join(log_dir, layout.LOG_START_OFFSET_CHECKPOINT), lsos)
    checkpoints.write_offsets(disk, join(log_dir, layout.REPLICATION_CHECKPOINT), hws)


def run_workload(spec: WorkloadSpec, disk: Disk, *, record_durability: bool = False) -> History:
    """Runs `spec` on `disk` (normally a fresh SimDisk). An I/O error ends the run as it ends a
    broker's use of a log dir: the error is recorded and nothing more is written.

    `record_durability` (SimDisk only) fills `History.durable` at every fsync; exploration does not
    need it (it reads durability off the disk at each crash point), a test of the Log's flush does."""
    rng = random.Random(spec.seed)
    clock = ManualClock(START_MS)
    scheduler = Scheduler(clock)
    config = spec.config()
    history = History()
    if record_durability:
        if not isinstance(disk, SimDisk):
            raise SpecError("record_durability needs a SimDisk")
        disk.listeners.append(lambda op: _record_durability(disk, spec.log_dir, op, history))
    logs: list[Log] = []
    lock = None
    try:
        disk.make_dirs(spec.log_dir)
        disk.fsync_dir(parent_of(spec.log_dir))
        lock = disk.lock(join(spec.log_dir, layout.LOCK_FILE))
        for d in spec.partition_dirs():
            logs.append(Log.open(disk, d, config, clock=clock, scheduler=scheduler))
        producers = [_Producer(1000 + p) for p in range(spec.partitions)]
        for n in range(1, spec.appends + 1):
            clock.advance(spec.step_ms)
            p = rng.randrange(spec.partitions)
            log = logs[p]
            epoch = n // spec.leader_epoch_every if spec.leader_epoch_every else 0
            _append(spec, rng, log, producers[p], p, history, epoch)
            scheduler.run_pending()
            if spec.flush_every and n % spec.flush_every == 0:
                for each in logs:
                    each.flush()
            if spec.retention_every and n % spec.retention_every == 0:
                for each in logs:
                    each.delete_old_segments()
            if spec.truncate_every and n % spec.truncate_every == 0:
                target = max(log.log_start_offset, log.log_end_offset - rng.randrange(1, 4))
                producers[p].abandon()
                if log.truncate_to(target):
                    history.truncations.append((p, target))
            if spec.checkpoint_every and n % spec.checkpoint_every == 0:
                write_checkpoints(disk, spec.log_dir, logs)
        if spec.compact_at_end:
            compact_oldest_segment(disk, logs[0], spec.index_interval_bytes)
        if spec.clean_shutdown:
            for log in logs:
                log.close()
            write_checkpoints(disk, spec.log_dir, logs)
            with disk.open(join(spec.log_dir, layout.CLEAN_SHUTDOWN_FILE), create=True) as f:
                f.fsync()
            disk.fsync_dir(spec.log_dir)
    except (OSError, LogError) as e:
        history.error = f"{type(e).__name__}: {e}"
    finally:
        history.log_end_offsets = [log.log_end_offset for log in logs]
        if lock is not None:
            lock.release()
    return history


def _record_durability(disk: SimDisk, log_dir: str, op, history: History) -> None:
    if op.kind not in ("fsync", "fsync_dir"):
        return
    ends = {}
    for part, batches in durable_live_batches(disk, log_dir).items():
        end, expected = 0, None
        for b in sorted(batches, key=lambda b: b.base):
            if expected is not None and b.base != expected:
                break
            end = expected = b.last + 1
        ends[part] = end
    history.durable.append((op.index, ends))


class _Producer:
    """One transactional producer per partition: an open transaction spans a few appends."""

    def __init__(self, producer_id: int) -> None:
        self.producer_id = producer_id
        self.epoch = 0
        self.sequence = 0
        self.open_for = 0  # appends left in the open transaction

    def abandon(self) -> None:
        """A truncation may remove the transaction's batches: start over with a new epoch."""
        if self.open_for:
            self.open_for = 0
        self.epoch += 1
        self.sequence = 0


def _append(
    spec: WorkloadSpec,
    rng: random.Random,
    log: Log,
    producer: _Producer,
    p: int,
    history: History,
    epoch: int,
) -> None:
    count = rng.randint(*spec.records)
    records = [
        ProducerRecord(
            None if not spec.keys else f"k{rng.randrange(spec.keys)}".encode(),
            rng.randbytes(rng.randint(*spec.record_bytes)),
        )
        for _ in range(count)
    ]
    codec = CODECS[rng.choice(spec.codecs)]
    txn = producer.open_for > 0 or (spec.transactions and rng.random() < spec.transactions)
    if txn:
        if producer.open_for == 0:
            producer.open_for = rng.randint(1, 3)
        info = log.append(
            records,
            codec=codec,
            producer_id=producer.producer_id,
            producer_epoch=producer.epoch,
            base_sequence=producer.sequence,
            is_transactional=True,
            leader_epoch=epoch,
        )
        producer.sequence += count
        producer.open_for -= 1
        history.appended.append((p, info.first_offset, info.last_offset))
        if producer.open_for == 0:
            marker = log.append_end_txn(
                producer.producer_id, producer.epoch, commit=rng.random() < 0.7, leader_epoch=epoch
            )
            history.appended.append((p, marker.first_offset, marker.last_offset))
        return
    info = log.append(records, codec=codec, leader_epoch=epoch)
    history.appended.append((p, info.first_offset, info.last_offset))


def compact_oldest_segment(disk: Disk, log: Log, index_interval_bytes: int) -> bool:
    """Replaces the oldest inactive segment with a compacted copy by Kafka's swap protocol
    (`LocalLog.replaceSegments`): write `.cleaned` files and fsync them, rename them `.swap`, rename
    the old segment's files `.deleted`, rename the `.swap` files into place, fsync the directory.

    Compaction is emulated by dropping every other plain batch (their keys superseded later);
    transactional and control batches stay. The Log is not told: this is the run's last step."""
    if len(log.segments) < 2:
        return False
    old = log.segments[0]
    batches, _ = walk(disk.read_file(old.log_path), old.log_path)
    kept = [b for i, b in enumerate(batches) if i % 2 == 0 or _is_transactional(b.data)]
    data = b"".join(b.data for b in kept)
    scratch = SimDisk()
    name = layout.log_file_name(old.base_offset)
    scratch.make_dirs("/scratch")
    with scratch.open(f"/scratch/{name}", create=True) as f:
        f.write_at(0, data)
    files = [(name, data)] + [
        (path.rpartition("/")[2], content)
        for path, content in rebuild_indexes(scratch, f"/scratch/{name}", index_interval_bytes)
    ]
    txn_index = old.txn_index_path
    if disk.exists(txn_index):  # every transactional batch is kept, so its aborted list holds
        files.append((txn_index.rpartition("/")[2], disk.read_file(txn_index)))
    for file_name, content in files:
        with disk.open(join(log.dir, file_name + layout.CLEANED_SUFFIX), create=True) as f:
            f.write_at(0, content)
            f.fsync()
    for file_name, _ in files:
        disk.rename(
            join(log.dir, file_name + layout.CLEANED_SUFFIX),
            join(log.dir, file_name + layout.SWAP_SUFFIX),
        )
    for suffix in (
        layout.LOG_SUFFIX,
        layout.INDEX_SUFFIX,
        layout.TIME_INDEX_SUFFIX,
        layout.TXN_INDEX_SUFFIX,
    ):
        path = join(log.dir, layout.segment_file_name(old.base_offset, suffix))
        if disk.exists(path):
            disk.rename(path, path + layout.DELETED_SUFFIX)
    for file_name, _ in files:
        disk.rename(join(log.dir, file_name + layout.SWAP_SUFFIX), join(log.dir, file_name))
    disk.fsync_dir(log.dir)
    return True


def _is_transactional(batch: bytes) -> bool:
    return bool(int.from_bytes(batch[21:23], "big") & 0x30)  # attributes: transactional, control
