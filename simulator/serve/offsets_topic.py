"""Committed offsets kept in `__consumer_offsets` in Kafka's own record format.

Key: type 1 (`OffsetCommitKey`: group, topic, partition); value: version 3 (`OffsetCommitValue`:
offset, leader epoch, metadata, commit timestamp) — what a Kafka 2.1+ coordinator writes, so
`logrepair dump --offsets-decoder` and `logrepair audit` read them. The group's partition is
`abs(javaHashCode(group)) % offsets.topic.num.partitions`, as Kafka picks it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from logrepair.decoders.consumer_offsets import OffsetCommit, decode_offsets_record
from logrepair.decoders.schema import DecodeError
from logrepair.format.control import ControlType
from logrepair.storage.log import Log

from .reading import log_batches

OFFSETS_TOPIC = "__consumer_offsets"
_KEY_VERSION = 1
_VALUE_VERSION = 3


def java_string_hash(s: str) -> int:
    """Java's `String.hashCode` over UTF-16 code units, as a signed int32."""
    h = 0
    for unit in struct.unpack(f">{len(s.encode('utf-16-be')) // 2}H", s.encode("utf-16-be")):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_for(group: str, partitions: int) -> int:
    h = java_string_hash(group)
    return (abs(h) if h != -(1 << 31) else 0) % partitions


def _string(s: str) -> bytes:
    data = s.encode("utf-8")
    return struct.pack(">h", len(data)) + data


def commit_key(group: str, topic: str, partition: int) -> bytes:
    return (
        struct.pack(">h", _KEY_VERSION)
        + _string(group)
        + _string(topic)
        + struct.pack(">i", partition)
    )


def commit_value(offset: int, leader_epoch: int, metadata: str | None, timestamp: int) -> bytes:
    return (
        struct.pack(">hqi", _VALUE_VERSION, offset, leader_epoch)
        + _string(metadata or "")
        + struct.pack(">q", timestamp)
    )


@dataclass(frozen=True, slots=True)
class Committed:
    offset: int
    leader_epoch: int
    metadata: str


def load_commits(log: Log) -> dict[tuple[str, str, int], Committed]:
    """Replays one `__consumer_offsets` partition: last value wins, tombstones delete,
    transactional commits count once their COMMIT marker is read."""
    out: dict[tuple[str, str, int], Committed] = {}
    pending: dict[int, list[OffsetCommit]] = {}
    for item in log_batches(log):
        if item.is_control:
            commits = pending.pop(item.producer_id, [])
            if item.control_type() is ControlType.COMMIT:
                _apply(out, commits)
            continue
        commits = []
        for record in item.records():
            try:
                decoded = decode_offsets_record(record.key, record.value)
            except DecodeError:
                continue
            if isinstance(decoded, OffsetCommit):
                commits.append(decoded)
        if item.is_transactional:
            pending.setdefault(item.producer_id, []).extend(commits)
        else:
            _apply(out, commits)
    return out


def _apply(out: dict, commits: list[OffsetCommit]) -> None:
    for c in commits:
        key = (c.group, c.topic, c.partition)
        if c.value is None:
            out.pop(key, None)
        else:
            out[key] = Committed(c.value.offset, c.value.leader_epoch, c.value.metadata)
