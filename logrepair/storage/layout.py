"""File and directory names exactly as Kafka forms and parses them (spec fmt §5).

Builders give the names Kafka writes; classifiers say what a name found on disk is, in Kafka's
terms, and whether Kafka could load a directory holding it. Unknown names are reported, never
deleted: what Kafka does not own may be the operator's.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple

from . import java_text

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
# The files of one segment: its `.log` and its three indexes.
SEGMENT_FILE_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
SNAPSHOT_SUFFIX = ".snapshot"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
TMP_SUFFIX = ".tmp"

DELETE_DIR_SUFFIX = "-delete"
FUTURE_DIR_SUFFIX = "-future"
STRAY_DIR_SUFFIX = "-stray"

LOCK_FILE = ".lock"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
META_PROPERTIES_FILE = "meta.properties"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_CHECKPOINT = "replication-offset-checkpoint"
CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"
OFFSET_CHECKPOINTS = (
    RECOVERY_POINT_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    REPLICATION_CHECKPOINT,
    CLEANER_CHECKPOINT,
)
REMOTE_LOG_INDEX_CACHE_DIR = "remote-log-index-cache"

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA_FILE = "partition.metadata"

CLUSTER_METADATA_TOPIC = "__cluster_metadata"
KRAFT_SNAPSHOT_SUFFIX = ".checkpoint"
KRAFT_PART_SUFFIX = ".part"
QUORUM_STATE_FILE = "quorum-state"
BOOTSTRAP_CHECKPOINT_FILE = "bootstrap.checkpoint"

MAX_DIR_NAME_LENGTH = 255


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class LayoutError(ValueError):
    """A name Kafka cannot parse where it must (a partition directory, a segment offset)."""


def filename_prefix_from_offset(offset: int) -> str:
    """The 20-digit, zero-padded base offset Kafka puts before every segment file's suffix (a
    negative one, parsed from a name such as `-5.log`, as Kafka's NumberFormat writes it)."""
    return f"{offset:020d}" if offset >= 0 else f"-{-offset:020d}"


def offset_from_file_name(name: str) -> int:
    """`Long.parseLong` of the text before the first '.' (so `5.log` is offset 5, as in Kafka)."""
    prefix = name.split(".", 1)[0]
    try:
        return java_text.parse_int(prefix, bits=64)
    except ValueError:
        raise LayoutError(f"'{name}': '{prefix}' is not a base offset") from None


def segment_file_name(offset: int, suffix: str, leftover: str = "") -> str:
    """E.g. (0, '.log') → `00000000000000000000.log`; leftover '.swap' → `….log.swap`."""
    return filename_prefix_from_offset(offset) + suffix + leftover


def log_file_name(offset: int) -> str:
    return segment_file_name(offset, LOG_SUFFIX)


def index_file_name(offset: int) -> str:
    return segment_file_name(offset, INDEX_SUFFIX)


def time_index_file_name(offset: int) -> str:
    return segment_file_name(offset, TIME_INDEX_SUFFIX)


def txn_index_file_name(offset: int) -> str:
    return segment_file_name(offset, TXN_INDEX_SUFFIX)


def snapshot_file_name(offset: int) -> str:
    return segment_file_name(offset, SNAPSHOT_SUFFIX)


def kraft_snapshot_file_name(offset: int, epoch: int) -> str:
    """`<20-digit offset>-<10-digit epoch>.checkpoint` in `__cluster_metadata-0`."""
    return f"{offset:020d}-{epoch:010d}{KRAFT_SNAPSHOT_SUFFIX}"


class FileKind(StrEnum):
    LOG = "log"
    INDEX = "index"
    TIME_INDEX = "timeindex"
    TXN_INDEX = "txnindex"
    SNAPSHOT = "snapshot"
    LEADER_EPOCH_CHECKPOINT = "leader_epoch_checkpoint"
    PARTITION_METADATA = "partition_metadata"
    KRAFT_SNAPSHOT = "kraft_snapshot"
    QUORUM_STATE = "quorum_state"
    BOOTSTRAP_CHECKPOINT = "bootstrap_checkpoint"
    LOCK = "lock"
    CLEAN_SHUTDOWN = "clean_shutdown"
    META_PROPERTIES = "meta_properties"
    OFFSET_CHECKPOINT = "offset_checkpoint"
    UNKNOWN = "unknown"


_SEGMENT_KINDS = {
    LOG_SUFFIX: FileKind.LOG,
    INDEX_SUFFIX: FileKind.INDEX,
    TIME_INDEX_SUFFIX: FileKind.TIME_INDEX,
    TXN_INDEX_SUFFIX: FileKind.TXN_INDEX,
    SNAPSHOT_SUFFIX: FileKind.SNAPSHOT,
}
_SEGMENT_SUFFIXES = {kind: suffix for suffix, kind in _SEGMENT_KINDS.items()}
_LEFTOVERS = (DELETED_SUFFIX, CLEANED_SUFFIX, SWAP_SUFFIX)
_KRAFT_SNAPSHOT = re.compile(r"(\d{20})-(\d{10})\.checkpoint")
# The names Kafka writes for a segment's files (and their leftovers), classified without the
# general parse: most of the names in a log dir of thousands of partitions are these.
_CANONICAL_SEGMENT_FILE = re.compile(
    r"([0-9]{20})(\.log|\.index|\.timeindex|\.txnindex|\.snapshot)(\.deleted|\.cleaned|\.swap)?"
)


@dataclass(frozen=True, slots=True)
class FileName:
    """What a file name means to Kafka.

    `offset` is the base (or snapshot) offset for segment-family names; `leftover` is `.deleted`,
    `.cleaned`, `.swap` (or `.part` for a KRaft snapshot) when the name carries one; `tmp` marks a
    `<name>.tmp` left by an interrupted checkpoint write. `blocks_kafka_load` says Kafka would fail
    to load the directory because of this name (an unparsable offset where it parses one)."""

    name: str
    kind: FileKind
    offset: int | None = None
    leftover: str | None = None
    tmp: bool = False
    epoch: int | None = None
    blocks_kafka_load: bool = False
    detail: str = ""

    @property
    def canonical(self) -> bool:
        """False for names Kafka accepts but never writes, such as `5.log` for base offset 5."""
        suffix = _SEGMENT_SUFFIXES.get(self.kind)
        if self.offset is None or suffix is None:
            return True
        if self.offset < 0:  # Long.parseLong("-5"): a name Kafka parses but can never write
            return False
        return self.name == segment_file_name(self.offset, suffix, self.leftover or "")


@functools.lru_cache(maxsize=1 << 16)
def classify_partition_file(name: str) -> FileName:
    """Classifies a regular file found in a partition directory (spec fmt §5.1, rec §6.2).

    Remembered: the scan, the planner and its modes each ask about the same names, and most
    names recur in every partition dir of a log dir (`00000000000000000000.log`)."""
    m = _CANONICAL_SEGMENT_FILE.fullmatch(name)
    if m is not None and int(m[1]) < 2**63:  # (Long.parseLong takes no more)
        return FileName(name, _SEGMENT_KINDS[m[2]], offset=int(m[1]), leftover=m[3])
    if name.endswith(TMP_SUFFIX):
        inner = name[: -len(TMP_SUFFIX)]
        if inner in (LEADER_EPOCH_CHECKPOINT, PARTITION_METADATA_FILE, QUORUM_STATE_FILE):
            base = classify_partition_file(inner)
            return FileName(name, base.kind, tmp=True)
    if name == LEADER_EPOCH_CHECKPOINT:
        return FileName(name, FileKind.LEADER_EPOCH_CHECKPOINT)
    if name == PARTITION_METADATA_FILE:
        return FileName(name, FileKind.PARTITION_METADATA)
    if name == QUORUM_STATE_FILE:
        return FileName(name, FileKind.QUORUM_STATE)
    if name == BOOTSTRAP_CHECKPOINT_FILE:
        return FileName(name, FileKind.BOOTSTRAP_CHECKPOINT)
    kraft = _classify_kraft_snapshot(name) if ".checkpoint" in name else None
    if kraft is not None:
        return kraft

    leftover = next((s for s in _LEFTOVERS if name.endswith(s)), None)
    inner = name[: -len(leftover)] if leftover else name
    suffix = next((s for s in _SEGMENT_KINDS if inner.endswith(s)), None)
    if suffix is None:
        if leftover == DELETED_SUFFIX:
            return FileName(
                name, FileKind.UNKNOWN, leftover=leftover, detail="Kafka deletes it at load"
            )
        if leftover is not None:
            # offsetFromFile runs on every .cleaned/.swap name before its type is looked at.
            try:
                offset_from_file_name(name)
            except LayoutError as e:
                return FileName(
                    name,
                    FileKind.UNKNOWN,
                    leftover=leftover,
                    blocks_kafka_load=True,
                    detail=f"{e}; Kafka fails to load the partition",
                )
        return FileName(name, FileKind.UNKNOWN, leftover=leftover)
    kind = _SEGMENT_KINDS[suffix]
    try:
        offset = offset_from_file_name(name)
    except LayoutError as e:
        # A `.deleted` name is removed without being parsed; everything else is parsed at load.
        fatal = leftover != DELETED_SUFFIX
        detail = f"{e}; Kafka fails to load the partition" if fatal else str(e)
        return FileName(name, kind, leftover=leftover, blocks_kafka_load=fatal, detail=detail)
    if offset < 0:
        kafkas = segment_file_name(offset, suffix)
        detail = f"a negative base offset ({offset}); " + (
            "a segment Kafka never writes"
            if name == kafkas
            else f"Kafka never reads it (it opens an empty segment {kafkas} beside it)"
        )
        return FileName(name, kind, offset=offset, leftover=leftover, detail=detail)
    return FileName(name, kind, offset=offset, leftover=leftover)


def _classify_kraft_snapshot(name: str) -> FileName | None:
    for leftover in ("", KRAFT_PART_SUFFIX, DELETED_SUFFIX):
        if leftover and not name.endswith(leftover):
            continue
        m = _KRAFT_SNAPSHOT.fullmatch(name[: len(name) - len(leftover)])
        if m:
            return FileName(
                name,
                FileKind.KRAFT_SNAPSHOT,
                offset=int(m.group(1)),
                epoch=int(m.group(2)),
                leftover=leftover or None,
            )
    return None


def classify_log_dir_file(name: str) -> FileName:
    """Classifies a regular file at a log directory's root (spec fmt §5.3).

    Kafka ignores regular files there, so none of them blocks loading. `bootstrap.checkpoint` is
    written by `kafka-storage format` at the root of the metadata log dir (Kafka 4.1 does so)."""
    tmp = name.endswith(TMP_SUFFIX)
    base = name[: -len(TMP_SUFFIX)] if tmp else name
    kind = {
        LOCK_FILE: FileKind.LOCK,
        CLEAN_SHUTDOWN_FILE: FileKind.CLEAN_SHUTDOWN,
        META_PROPERTIES_FILE: FileKind.META_PROPERTIES,
        BOOTSTRAP_CHECKPOINT_FILE: FileKind.BOOTSTRAP_CHECKPOINT,
        **dict.fromkeys(OFFSET_CHECKPOINTS, FileKind.OFFSET_CHECKPOINT),
    }.get(base)
    if kind is None or (tmp and kind in (FileKind.LOCK, FileKind.CLEAN_SHUTDOWN)):
        return FileName(name, FileKind.UNKNOWN)
    return FileName(name, kind, tmp=tmp)


class DirKind(StrEnum):
    LIVE = "live"
    DELETE = "delete"
    FUTURE = "future"
    STRAY = "stray"


@dataclass(frozen=True, slots=True)
class PartitionDirName:
    name: str
    topic_partition: TopicPartition
    kind: DirKind
    unique_id: str | None = None

    @property
    def is_cluster_metadata(self) -> bool:
        """KRaft's metadata log: LogManager skips it; the raft layer loads it."""
        return self.topic_partition.topic == CLUSTER_METADATA_TOPIC


# Kafka's `^(\S+)-(\S+)\.(\S+)-delete` (and -future, -stray); Java's \S excludes ASCII whitespace only.
_NON_SPACE = r"[^ \t\n\x0b\f\r]+"
_DIR_PATTERNS = {
    kind: re.compile(rf"({_NON_SPACE})-({_NON_SPACE})\.({_NON_SPACE})-{kind.value}")
    for kind in (DirKind.DELETE, DirKind.FUTURE, DirKind.STRAY)
}
_DIR_SUFFIXES = {
    DirKind.DELETE: DELETE_DIR_SUFFIX,
    DirKind.FUTURE: FUTURE_DIR_SUFFIX,
    DirKind.STRAY: STRAY_DIR_SUFFIX,
}


def parse_partition_dir_name(name: str, path: str | None = None) -> PartitionDirName:
    """`LocalLog.parseTopicPartitionName`: the name of a log dir's sub-directory → topic-partition.

    Raises LayoutError with Kafka's message, which aborts a broker's startup: LogManager parses every
    sub-directory except `remote-log-index-cache`."""

    def error() -> LayoutError:
        return LayoutError(
            f"Found directory {path or name}, '{name}' is not in the form of topic-partition or "
            "topic-partition.uniqueId-delete (if marked for deletion).\n"
            "Kafka's log directories (and children) should only contain Kafka topic data."
        )

    if not name or "-" not in name:
        raise error()
    kind = next((k for k, s in _DIR_SUFFIXES.items() if name.endswith(s)), DirKind.LIVE)
    unique_id = None
    stem = name
    if kind is not DirKind.LIVE:
        if not _DIR_PATTERNS[kind].fullmatch(name):
            raise error()
        dot = name.rindex(".")
        stem = name[:dot]
        unique_id = name[dot + 1 : -len(_DIR_SUFFIXES[kind])]
    topic, _, partition_text = stem.rpartition("-")
    if not topic or not partition_text:
        raise error()
    try:
        partition = java_text.parse_int(partition_text)
    except ValueError:
        raise error() from None
    return PartitionDirName(name, TopicPartition(topic, partition), kind, unique_id)


_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def topic_name_problem(topic: str) -> str | None:
    """Why `topic` is not a name Kafka lets a topic have (`Topic.validate`: at most 249 of
    `[a-zA-Z0-9._-]`, not `.` or `..`), or None. Kafka's startup parser does not check this, but
    no broker creates such a directory."""
    if topic in (".", ".."):
        return f"topic name {topic!r} is not allowed"
    if not _LEGAL_TOPIC.fullmatch(topic):
        return (
            f"topic name '{printable(topic)}' is not a legal Kafka topic name (at most 249 "
            "characters of ASCII letters, digits, '.', '_' and '-')"
        )
    return None


def is_legal(tp: TopicPartition) -> bool:
    """A topic-partition Kafka could have created: a legal topic name and a partition >= 0.

    A partition dir named otherwise (a space or a newline in it, copied in by hand) is a stray:
    written into a checkpoint it would make the file unreadable for every partition."""
    return topic_name_problem(tp.topic) is None and tp.partition >= 0


def log_dir_name(tp: TopicPartition) -> str:
    return f"{tp.topic}-{tp.partition}"


def future_dir_name(tp: TopicPartition, unique_id: str) -> str:
    """`<topic>-<partition>.<uuid>-future` (never truncated)."""
    return f"{log_dir_name(tp)}.{unique_id}{FUTURE_DIR_SUFFIX}"


def delete_dir_name(tp: TopicPartition, unique_id: str) -> str:
    """`<topic>-<partition>.<uuid>-delete`, the topic truncated so the name fits 255 chars."""
    return _truncated_dir_name(tp, unique_id, DELETE_DIR_SUFFIX)


def stray_dir_name(tp: TopicPartition, unique_id: str) -> str:
    return _truncated_dir_name(tp, unique_id, STRAY_DIR_SUFFIX)


def _truncated_dir_name(tp: TopicPartition, unique_id: str, dir_suffix: str) -> str:
    suffix = f"-{tp.partition}.{unique_id}{dir_suffix}"
    return tp.topic[: max(0, MAX_DIR_NAME_LENGTH - len(suffix))] + suffix


def printable(name: str) -> str:
    """`name` as a report shows it: bytes that are not UTF-8 (which `os.listdir` hands over as
    surrogate escapes) become `\\xNN`, so printing or JSON-encoding it never fails."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        pass
    try:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate no file name decodes to
        return name.encode("utf-8", "backslashreplace").decode("utf-8")
