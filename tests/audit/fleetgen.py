"""Builds Kafka log dirs and fleets for the audit tests: real batches, real checkpoint files.

A partition's history is a list of v2 batches; each replica writes some prefix of it (a lagging
replica writes less), possibly with one batch replaced (a diverged replica), split into segments
named by their base offsets. Root checkpoints default to what a clean shutdown leaves (recovery
point = high watermark = log end) and each test overrides what it breaks.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field

from logrepair.format.batch_builder import build_batch, build_end_txn_marker
from logrepair.format.batch_layout import Record
from logrepair.format.control import ControlType, EndTransactionMarker
from logrepair.storage import layout
from logrepair.storage.checkpoints import write_offsets
from logrepair.storage.layout import TopicPartition
from logrepair.storage.leader_epoch import EpochEntry, write_leader_epochs
from logrepair.storage.meta_properties import MetaProperties, write_meta_properties
from logrepair.storage.osdisk import OsDisk

DISK = OsDisk()
CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"
BASE_TS = 1_700_000_000_000


@dataclass
class Batch:
    base: int
    last: int
    epoch: int
    data: bytes


def history(
    n_batches: int,
    *,
    records: int = 4,
    value_size: int = 64,
    epochs: dict[int, int] | None = None,
    seed: int = 0,
    start: int = 0,
) -> list[Batch]:
    """`n_batches` batches of `records` records from offset `start`; `epochs` maps a batch index
    to the leader epoch that starts there (default: epoch 0 throughout)."""
    epochs = epochs or {0: 0}
    out = []
    offset = start
    epoch = 0
    for i in range(n_batches):
        epoch = epochs.get(i, epoch)
        recs = [
            Record(
                offset + k,
                BASE_TS + offset + k,
                f"k{(offset + k) % 7}".encode(),
                bytes([(seed + offset + k) % 251]) * value_size,
                (("h", b"v"),) if k == 0 else (),
            )
            for k in range(records)
        ]
        data = build_batch(recs, base_offset=offset, partition_leader_epoch=epoch)
        out.append(Batch(offset, offset + records - 1, epoch, data))
        offset += records
    return out


def diverge(batches: list[Batch], index: int) -> list[Batch]:
    """The same history with batch `index` (and everything after it) written by another leader."""
    tail = history(
        len(batches) - index,
        records=batches[index].last - batches[index].base + 1,
        seed=99,
        start=batches[index].base,
        epochs={0: batches[index].epoch + 1},
    )
    return batches[:index] + tail


def epochs_of(batches: list[Batch]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for b in batches:
        if not out or b.epoch > out[-1][0]:
            out.append((b.epoch, b.base))
    return out


def commit_record(group: str, topic: str, partition: int, offset: int | None) -> tuple:
    """An OffsetCommit key (v1) and value (v3), or a tombstone when `offset` is None."""

    def s(text: str) -> bytes:
        raw = text.encode()
        return struct.pack(">h", len(raw)) + raw

    key = struct.pack(">h", 1) + s(group) + s(topic) + struct.pack(">i", partition)
    if offset is None:
        return key, None
    value = struct.pack(">hqi", 3, offset, -1) + s("") + struct.pack(">q", BASE_TS)
    return key, value


def commit_batches(commits: list[tuple[str, str, int, int | None]], start: int = 0) -> list[Batch]:
    """`__consumer_offsets` batches, one commit per batch."""
    out = []
    for i, (group, topic, partition, offset) in enumerate(commits):
        key, value = commit_record(group, topic, partition, offset)
        data = build_batch([Record(start + i, BASE_TS + i, key, value)], base_offset=start + i)
        out.append(Batch(start + i, start + i, 0, data))
    return out


def offsets_log(events: list[tuple]) -> list[Batch]:
    """`__consumer_offsets` batches from events, one batch each, from offset 0:
    ("commit", group, topic, partition, offset or None) not transactional,
    ("txn", producer_id, group, topic, partition, offset) in a transaction,
    ("end", producer_id, committed) a COMMIT or ABORT marker."""
    out = []
    for at, event in enumerate(events):
        if event[0] == "commit":
            key, value = commit_record(*event[1:])
            data = build_batch([Record(at, BASE_TS + at, key, value)], base_offset=at)
        elif event[0] == "txn":
            key, value = commit_record(*event[2:])
            data = build_batch(
                [Record(at, BASE_TS + at, key, value)],
                base_offset=at,
                producer_id=event[1],
                producer_epoch=0,
                base_sequence=0,
                is_transactional=True,
            )
        else:
            kind = ControlType.COMMIT if event[2] else ControlType.ABORT
            data = build_end_txn_marker(
                EndTransactionMarker(kind, 0),
                base_offset=at,
                producer_id=event[1],
                producer_epoch=0,
                timestamp=BASE_TS + at,
            )
        out.append(Batch(at, at, 0, data))
    return out


@dataclass
class PartitionSpec:
    batches: list[Batch]
    segment_batches: int = 4
    recovery_point: int | None | str = "end"
    high_watermark: int | None | str = "end"
    log_start: int | None = None
    leader_epochs: list[tuple[int, int]] | None | str = "data"
    dir_name: str | None = None
    tail: bytes = b""
    """Bytes appended to the last segment after its batches (a torn write, garbage)."""


@dataclass
class LogDirSpec:
    node_id: int | None = 1
    cluster_id: str | None = CLUSTER
    directory_id: str | None = None
    clean_shutdown: bool = True
    partitions: dict[TopicPartition, PartitionSpec] = field(default_factory=dict)
    extra_checkpoint_entries: dict[str, dict[TopicPartition, int]] = field(default_factory=dict)


def log_end(spec: PartitionSpec) -> int:
    return spec.batches[-1].last + 1 if spec.batches else 0


def write_log_dir(path: str, spec: LogDirSpec) -> str:
    os.makedirs(path, exist_ok=True)
    if spec.node_id is not None:
        write_meta_properties(
            DISK,
            os.path.join(path, layout.META_PROPERTIES_FILE),
            MetaProperties(1, spec.cluster_id, spec.node_id, spec.directory_id),
        )
    rps: dict[TopicPartition, int] = {}
    hws: dict[TopicPartition, int] = {}
    lsos: dict[TopicPartition, int] = {}
    for tp, p in spec.partitions.items():
        write_partition(os.path.join(path, p.dir_name or str(tp)), p)
        end = log_end(p)
        if p.recovery_point is not None:
            rps[tp] = end if p.recovery_point == "end" else p.recovery_point
        if p.high_watermark is not None:
            hws[tp] = end if p.high_watermark == "end" else p.high_watermark
        if p.log_start is not None:
            lsos[tp] = p.log_start
    files = {
        layout.RECOVERY_POINT_CHECKPOINT: rps,
        layout.REPLICATION_CHECKPOINT: hws,
        layout.LOG_START_OFFSET_CHECKPOINT: lsos,
    }
    for name, extra in spec.extra_checkpoint_entries.items():
        files.setdefault(name, {}).update(extra)
    for name, entries in files.items():
        write_offsets(DISK, os.path.join(path, name), entries)
    if spec.clean_shutdown:
        with open(os.path.join(path, layout.CLEAN_SHUTDOWN_FILE), "w") as f:
            f.write('{"version":0,"brokerEpoch":7}')
    return path


def write_partition(path: str, p: PartitionSpec) -> None:
    os.makedirs(path, exist_ok=True)
    groups = [
        p.batches[i : i + p.segment_batches] for i in range(0, len(p.batches), p.segment_batches)
    ] or [[]]
    for n, group in enumerate(groups):
        base = group[0].base if group else (p.log_start or 0)
        data = b"".join(b.data for b in group)
        if n == len(groups) - 1:
            data += p.tail
        with open(os.path.join(path, layout.log_file_name(base)), "wb") as f:
            f.write(data)
    if p.leader_epochs is not None:
        entries = epochs_of(p.batches) if p.leader_epochs == "data" else p.leader_epochs
        write_leader_epochs(
            DISK,
            os.path.join(path, layout.LEADER_EPOCH_CHECKPOINT),
            [EpochEntry(e, o) for e, o in entries],
        )
