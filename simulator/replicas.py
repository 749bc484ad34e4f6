"""Replicas: the same partitions written on several simulated brokers, as Kafka replicates them.

The leader appends (offsets, leader epoch, codec, transactions); each follower fetches what it
lacks from the leader with `Log.read` and appends those exact bytes through the follower path
(`Log.append_batches`), with its own segment size (so segment boundaries differ between brokers)
and its own flush timing. The leader moves to the next broker every `leader_every` appends (a new
leader epoch); the high watermark is the lowest log end of the brokers, checkpointed by each
broker on its own clock. All brokers live on one Disk, so one crash image is a correlated power
loss across all of them, and `unclean_at` models an unclean leader election: a lagging broker
becomes leader, and the others truncate to its log end and follow it, except one that is
left unreconciled (`diverged_broker`), holding a history the new leader does not share.

`measure` runs heal on every broker of every crash state from the other brokers' copies and
compares what it loses with kafka mode and salvage (see `logsim replicas`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from logrepair.format.compression import Codec
from logrepair.storage import layout
from logrepair.storage.clock import ManualClock
from logrepair.storage.disk import Disk, join, parent_of
from logrepair.storage.log import Log, ProducerRecord
from logrepair.storage.log_config import LogConfig
from logrepair.storage.scheduler import Scheduler
from simulator.workload import write_checkpoints

START_MS = 1_700_000_000_000
TOPIC = "orders"


@dataclass(frozen=True)
class ReplicaSpec:
    brokers: int = 3
    partitions: int = 1
    appends: int = 40
    segment_bytes: tuple[int, ...] = (1100, 1600, 2300)
    """Each broker's segment.bytes (cycled): boundaries differ between copies."""
    flush_every: tuple[int, ...] = (3, 5, 7)
    """Each broker flushes every N appends (0: never)."""
    checkpoint_every: tuple[int, ...] = (4, 6, 9)
    leader_every: int = 15
    max_records: int = 4
    value_size: int = 40
    codecs: tuple[int, ...] = (Codec.NONE, Codec.GZIP, Codec.LZ4, Codec.ZSTD, Codec.SNAPPY)
    transactions: bool = True
    unclean_at: int | None = None
    """After this many appends, an unclean leader election (see the module's docstring)."""
    diverged_broker: int = 0
    out_of_sync_at: int | None = None
    """After this many appends `out_of_sync_broker` stops fetching and leaves the in-sync set."""
    out_of_sync_broker: int = 2
    seed: int = 0
    root: str = "/cluster"

    def log_dir(self, broker: int) -> str:
        return join(self.root, f"broker{broker}")


@dataclass
class ReplicaHistory:
    acknowledged: dict[int, int] = field(default_factory=dict)
    """Partition → the high watermark reached (offsets below it were acknowledged)."""
    leaders: list[tuple[int, int, int]] = field(default_factory=list)
    """(epoch, leader broker, start offset) of each leadership."""
    diverged_from: int | None = None
    """Offset from which `diverged_broker` holds batches no other broker has (unclean election)."""


def run_replicated(spec: ReplicaSpec, disk: Disk) -> ReplicaHistory:
    """Writes the replicated workload; brokers are left running (no clean shutdown)."""
    rng = random.Random(spec.seed)
    clock = ManualClock(START_MS)
    scheduler = Scheduler(clock)
    history = ReplicaHistory()
    logs: list[list[Log]] = []
    locks = []
    for b in range(spec.brokers):
        d = spec.log_dir(b)
        disk.make_dirs(d)
        disk.fsync_dir(parent_of(d))
        locks.append(disk.lock(join(d, layout.LOCK_FILE)))
        seg_bytes = spec.segment_bytes[b % len(spec.segment_bytes)]
        config = LogConfig(
            segment_bytes=seg_bytes, index_interval_bytes=512, segment_index_bytes=4096
        )
        logs.append(
            [
                Log.open(disk, join(d, f"{TOPIC}-{p}"), config, clock=clock, scheduler=scheduler)
                for p in range(spec.partitions)
            ]
        )
    in_sync = list(range(spec.brokers))
    leader, epoch = 0, 0
    history.leaders.append((epoch, leader, 0))
    pid = 5000
    sequences: dict[int, int] = {}
    try:
        for n in range(1, spec.appends + 1):
            clock.advance(10)
            if spec.leader_every and n % spec.leader_every == 0:
                # a clean election: the new leader is in sync (caught up) with the old one
                for b in in_sync:
                    for p in range(spec.partitions):
                        _fetch(logs[leader][p], logs[b][p])
                leader = in_sync[(in_sync.index(leader) + 1) % len(in_sync)]
                epoch += 1
                history.leaders.append((epoch, leader, logs[leader][0].log_end_offset))
            if spec.unclean_at is not None and n == spec.unclean_at:
                leader, epoch = _unclean_election(spec, logs, rng, epoch, history)
                pid += 100  # the producers' state went with the truncated tails: new producers
                in_sync = [b for b in range(spec.brokers) if b != spec.diverged_broker]
            if spec.out_of_sync_at is not None and n == spec.out_of_sync_at:
                in_sync = [b for b in in_sync if b != spec.out_of_sync_broker]
            p = rng.randrange(spec.partitions)
            _leader_append(spec, rng, logs[leader][p], epoch, pid + p, sequences)
            followers = [b for b in in_sync if b != leader]
            # a follower sometimes lags a round: the high watermark waits for it
            for b in followers:
                if rng.random() < 0.8:
                    _fetch(logs[leader][p], logs[b][p])
            hw = min(logs[b][p].log_end_offset for b in in_sync)
            for b in in_sync:
                logs[b][p].update_high_watermark(hw)
            history.acknowledged[p] = hw
            for b in range(spec.brokers):
                every = spec.flush_every[b % len(spec.flush_every)]
                if every and n % every == 0:
                    for log in logs[b]:
                        log.flush()
                ck = spec.checkpoint_every[b % len(spec.checkpoint_every)]
                if ck and n % ck == 0:
                    write_checkpoints(disk, spec.log_dir(b), logs[b])
    finally:
        for lock in locks:
            lock.release()
    return history


def _leader_append(
    spec: ReplicaSpec, rng: random.Random, log: Log, epoch: int, pid: int, sequences: dict
) -> None:
    count = rng.randint(1, spec.max_records)
    records = [
        ProducerRecord(b"k%d" % rng.randrange(50), rng.randbytes(spec.value_size))
        for _ in range(count)
    ]
    codec = rng.choice(spec.codecs)
    if spec.transactions and rng.random() < 0.2:
        log.append(
            records,
            leader_epoch=epoch,
            codec=codec,
            producer_id=pid,
            producer_epoch=0,
            base_sequence=sequences.get(pid, 0),
            is_transactional=True,
        )
        sequences[pid] = sequences.get(pid, 0) + count
        log.append_end_txn(pid, 0, commit=rng.random() < 0.6, leader_epoch=epoch)
    else:
        log.append(records, leader_epoch=epoch, codec=codec)


def _fetch(leader: Log, follower: Log) -> None:
    """The follower copies every batch it lacks, byte for byte."""
    while follower.log_end_offset < leader.log_end_offset:
        got = leader.read(follower.log_end_offset, 1 << 20)
        if not got.data:
            return
        follower.append_batches(got.data)


def _unclean_election(
    spec: ReplicaSpec, logs, rng: random.Random, epoch: int, history: ReplicaHistory
) -> tuple[int, int]:
    """The most lagging broker other than `diverged_broker` becomes leader with a new epoch; the
    rest truncate to its log end and follow, `diverged_broker` keeps its own tail."""
    others = [b for b in range(spec.brokers) if b != spec.diverged_broker]
    new_leader = min(others, key=lambda b: logs[b][0].log_end_offset)
    epoch += 1
    for p in range(spec.partitions):
        end = logs[new_leader][p].log_end_offset
        for b in others:
            if b != new_leader:
                logs[b][p].truncate_to(end)
        if logs[spec.diverged_broker][p].log_end_offset <= end:
            # make the diverged broker hold a tail of its own: one more batch in the old epoch
            logs[spec.diverged_broker][p].append(
                [ProducerRecord(b"zombie", rng.randbytes(spec.value_size))], leader_epoch=epoch - 1
            )
        history.diverged_from = end
    history.leaders.append((epoch, new_leader, logs[new_leader][0].log_end_offset))
    return new_leader, epoch
