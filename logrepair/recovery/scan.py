"""Scan a broker's log dir or one partition dir: every byte accounted for, every defect named.

`scan_path(disk, path, settings)` decides what PATH is (a log dir holds partition dirs and the
root checkpoint files; a partition dir holds segments), then scans each partition: its segments
(segment_scan.py), leftovers of interrupted operations, orphaned and missing indexes, producer
snapshots, leader epochs, and the checkpoints of the log dir held against what the logs contain.
The result is what verify prints and what every repair mode plans from; it is read-only.

A partition dir given on its own is scanned without its parent's checkpoints: nothing says the
parent is its log dir, and repair recovers such a partition whole (recovery point 0).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..storage import layout
from ..storage.checkpoints import CheckpointError, read_offsets
from ..storage.disk import Disk, join
from ..storage.layout import FileKind, TopicPartition
from ..storage.leader_epoch import read_leader_epochs
from ..storage.partition_metadata import read_partition_metadata
from ..storage.producer_snapshot import CorruptSnapshotError, read_snapshot
from .defects import is_notice
from .findings import Finding
from .segment_scan import SegmentScan, scan_segment
from .settings import Settings

ROOT_MARKERS = (
    layout.RECOVERY_POINT_CHECKPOINT,
    layout.LOG_START_OFFSET_CHECKPOINT,
    layout.REPLICATION_CHECKPOINT,
    layout.CLEANER_CHECKPOINT,
    layout.META_PROPERTIES_FILE,
    layout.CLEAN_SHUTDOWN_FILE,
    layout.LOCK_FILE,
)


class NotALogDir(ValueError):
    """PATH is neither a broker's log dir nor a partition dir (unusable input, exit 2)."""


@dataclass(slots=True)
class Checkpoints:
    """The log dir's offset checkpoints; a missing map means the file is missing or malformed."""

    recovery_points: dict[TopicPartition, int] | None = None
    log_start_offsets: dict[TopicPartition, int] | None = None
    high_watermarks: dict[TopicPartition, int] | None = None
    cleaner_offsets: dict[TopicPartition, int] | None = None
    malformed: dict[str, str] = field(default_factory=dict)
    """File name → Kafka's error, for each checkpoint that does not parse."""


@dataclass(slots=True)
class Snapshot:
    offset: int
    file: str
    corrupt: str | None


@dataclass(slots=True)
class PartitionScan:
    path: str
    rel: str
    """The partition dir relative to PATH ('' when PATH is the partition dir)."""
    topic: str
    partition: int
    dir_kind: str
    segments: list[SegmentScan] = field(default_factory=list)
    swap_segments: list[SegmentScan] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    """Regular files of the dir (names), symlinks excluded."""
    snapshots: list[Snapshot] = field(default_factory=list)
    leader_epochs: list[tuple[int, int]] | None = None
    """leader-epoch-checkpoint entries as written (None: file missing or malformed)."""
    leader_epoch_malformed: str | None = None
    recovery_point: int | None = None
    log_start_checkpoint: int | None = None
    high_watermark: int | None = None
    settings: Settings | None = None
    disk: Disk | None = field(default=None, repr=False, compare=False)
    """The Disk it was read through: kafka mode replays producer state from it."""

    def file(self, name: str) -> str:
        """`name` in this partition dir, relative to PATH."""
        return join(self.rel, name) if self.rel else name

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    @property
    def log_end_offset(self) -> int:
        """The last segment's next offset (its base when empty), as Kafka's `readNextOffset`."""
        if not self.segments:
            return self.log_start_checkpoint or 0
        return self.segments[-1].next_offset

    @property
    def log_start_offset(self) -> int:
        first = self.segments[0].base_offset if self.segments else 0
        return max(self.log_start_checkpoint or 0, first)

    @property
    def bytes(self) -> int:
        return sum(s.size for s in self.segments)

    @property
    def all_findings(self) -> list[Finding]:
        out = list(self.findings)
        for seg in self.segments:
            out.extend(seg.findings)
            out.extend(seg.index_findings)
        return out

    def to_json(self) -> dict:
        return {
            "path": self.path,
            "topic": self.topic,
            "partition": self.partition,
            "log_start_offset": self.log_start_offset,
            "log_end_offset": self.log_end_offset,
            "segments": len(self.segments),
            "bytes": self.bytes,
            "defects": [f.to_json() for f in self.all_findings],
        }


@dataclass(slots=True)
class LogDirScan:
    root: str
    is_log_dir: bool
    partitions: list[PartitionScan] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    clean_shutdown_marker: bool = False
    checkpoints: Checkpoints = field(default_factory=Checkpoints)

    @property
    def clean(self) -> bool:
        """No damage (notices do not count)."""
        return all(is_notice(f.kind) for f in self.all_findings())

    def all_findings(self) -> list[Finding]:
        out = list(self.findings)
        for p in self.partitions:
            out.extend(p.all_findings)
        return out

    def to_json(self) -> dict:
        return {
            "clean": self.clean,
            "path": self.root,
            "kind": "log_dir" if self.is_log_dir else "partition_dir",
            "clean_shutdown_marker": self.clean_shutdown_marker,
            "partitions": [p.to_json() for p in self.partitions],
            "defects": [f.to_json() for f in self.findings],
        }


Progress = Callable[[int], None]
"""Called with the number of `.log` bytes scanned since the last call."""


def classify(disk: Disk, path: str) -> bool:
    """True for a broker's log dir, False for a partition dir; NotALogDir for anything else."""
    if not disk.exists(path):
        raise NotALogDir(f"{path}: no such directory")
    if not disk.is_dir(path):
        raise NotALogDir(f"{path}: not a directory")
    names = disk.list_dir(path)
    name = path.rstrip("/").rpartition("/")[2]
    if any(n.endswith(layout.LOG_SUFFIX) or n.endswith(layout.LOG_SUFFIX + ".swap") for n in names):
        return False
    if any(n in ROOT_MARKERS for n in names):
        return True
    try:
        layout.parse_partition_dir_name(name)
        is_partition_name = True
    except layout.LayoutError:
        is_partition_name = False
    subdirs = [
        n for n in names if disk.is_dir(join(path, n)) and not disk.is_symlink(join(path, n))
    ]
    if is_partition_name and not subdirs:
        return False
    if subdirs:
        return True
    raise NotALogDir(
        f"{path}: neither a Kafka log dir (no checkpoint files or partition dirs) nor a "
        "partition dir (no segments)"
    )


def total_log_bytes(disk: Disk, path: str, is_log_dir: bool) -> int:
    """Bytes of `.log` files under PATH, for a progress bar."""
    dirs = [path]
    if is_log_dir:
        dirs = [join(path, n) for n in disk.list_dir(path) if _is_real_dir(disk, join(path, n))]
    total = 0
    for d in dirs:
        for n in disk.list_dir(d):
            if n.endswith(layout.LOG_SUFFIX) and not disk.is_symlink(join(d, n)):
                total += disk.size(join(d, n))
    return total


def _is_real_dir(disk: Disk, path: str) -> bool:
    return disk.is_dir(path) and not disk.is_symlink(path)


def scan_path(
    disk: Disk, path: str, settings: Settings, progress: Progress | None = None
) -> LogDirScan:
    path = path.rstrip("/") or "/"
    is_log_dir = classify(disk, path)
    result = LogDirScan(path, is_log_dir)
    if not is_log_dir:
        name = path.rpartition("/")[2]
        result.partitions.append(_scan_partition(disk, path, "", name, settings, None, progress))
        return result
    names = disk.list_dir(path)
    result.clean_shutdown_marker = layout.CLEAN_SHUTDOWN_FILE in names
    result.checkpoints = _read_root_checkpoints(disk, path, names, result.findings)
    for name in names:
        p = join(path, name)
        if disk.is_symlink(p):
            result.findings.append(
                Finding("symlink", name, detail="a symbolic link in the log dir; never followed")
            )
            continue
        if disk.is_dir(p):
            if name == layout.REMOTE_LOG_INDEX_CACHE_DIR:
                continue
            try:
                layout.parse_partition_dir_name(name, p)
            except layout.LayoutError as e:
                result.findings.append(Finding("stray_directory", name, detail=str(e)))
                continue
            result.partitions.append(
                _scan_partition(disk, p, name, name, settings, result.checkpoints, progress)
            )
            continue
        fn = layout.classify_log_dir_file(name)
        if fn.kind is FileKind.UNKNOWN:
            result.findings.append(
                Finding("stray_file", name, detail="not a file Kafka keeps in a log dir")
            )
        elif fn.tmp:
            result.findings.append(
                Finding(
                    "tmp_leftover",
                    name,
                    length=disk.size(p),
                    detail="left by an interrupted checkpoint write",
                )
            )
    _check_checkpoint_bounds(result)
    return result


def _read_root_checkpoints(
    disk: Disk, root: str, names: list[str], findings: list[Finding]
) -> Checkpoints:
    out = Checkpoints()
    for name, attr in (
        (layout.RECOVERY_POINT_CHECKPOINT, "recovery_points"),
        (layout.LOG_START_OFFSET_CHECKPOINT, "log_start_offsets"),
        (layout.REPLICATION_CHECKPOINT, "high_watermarks"),
        (layout.CLEANER_CHECKPOINT, "cleaner_offsets"),
    ):
        if name not in names:
            continue
        try:
            _check_size(disk, join(root, name))
            setattr(out, attr, read_offsets(disk, join(root, name)))
        except CheckpointError as e:
            consequence = {
                "recovery_points": "Kafka resets every recovery point to 0",
                "log_start_offsets": "Kafka resets every log start to its first segment's base",
                "high_watermarks": "Kafka takes the log dir offline",
                "cleaner_offsets": "the log cleaner treats it as empty",
            }[attr]
            if e.structural and attr != "high_watermarks":
                consequence += " and takes the log dir offline"
            out.malformed[name] = str(e)
            findings.append(
                Finding("checkpoint_malformed", name, detail=f"{e.message}; {consequence}")
            )
    return out


def _check_checkpoint_bounds(result: LogDirScan) -> None:
    ck = result.checkpoints
    for p in result.partitions:
        tp = p.tp
        leo = p.log_end_offset
        lso = p.log_start_offset
        rp = (ck.recovery_points or {}).get(tp)
        hw = (ck.high_watermarks or {}).get(tp)
        if rp is not None and rp > leo:
            result.findings.append(
                Finding(
                    "recovery_point_beyond_end",
                    layout.RECOVERY_POINT_CHECKPOINT,
                    offset=rp,
                    detail=f"{tp}: recovery point {rp} is past the log end {leo}",
                    partition=p.rel,
                )
            )
        if hw is not None and hw > leo:
            result.findings.append(
                Finding(
                    "high_watermark_beyond_end",
                    layout.REPLICATION_CHECKPOINT,
                    offset=hw,
                    detail=f"{tp}: high watermark {hw} is past the log end {leo}",
                    partition=p.rel,
                )
            )
        if p.log_start_checkpoint is not None and p.log_start_checkpoint > leo:
            result.findings.append(
                Finding(
                    "log_start_beyond_end",
                    layout.LOG_START_OFFSET_CHECKPOINT,
                    offset=p.log_start_checkpoint,
                    detail=f"{tp}: log start {p.log_start_checkpoint} is past the log end {leo}; "
                    "Kafka deletes every segment",
                    partition=p.rel,
                )
            )
        elif hw is not None and lso > hw and hw <= leo:
            result.findings.append(
                Finding(
                    "log_start_beyond_high_watermark",
                    layout.REPLICATION_CHECKPOINT,
                    offset=lso,
                    detail=f"{tp}: log start {lso} is past the high watermark {hw}",
                    partition=p.rel,
                )
            )


def _scan_partition(
    disk: Disk,
    path: str,
    rel: str,
    name: str,
    settings: Settings,
    checkpoints: Checkpoints | None,
    progress: Progress | None,
) -> PartitionScan:
    try:
        parsed = layout.parse_partition_dir_name(name, path)
        topic, partition, dir_kind = (
            parsed.topic_partition.topic,
            parsed.topic_partition.partition,
            str(parsed.kind),
        )
    except layout.LayoutError:
        topic, partition, dir_kind = name, -1, "unknown"
    p = PartitionScan(path, rel, topic, partition, dir_kind, disk=disk)
    p.settings = settings.for_topic(topic)
    if checkpoints is not None:
        tp = p.tp
        p.recovery_point = (checkpoints.recovery_points or {}).get(tp)
        p.log_start_checkpoint = (checkpoints.log_start_offsets or {}).get(tp)
        p.high_watermark = (checkpoints.high_watermarks or {}).get(tp)

    logs: dict[int, str] = {}
    swap_logs: dict[int, str] = {}
    indexes: dict[tuple[int, FileKind], str] = {}
    for fname in disk.list_dir(path):
        fpath = join(path, fname)
        if disk.is_symlink(fpath):
            p.findings.append(
                Finding("symlink", p.file(fname), detail="a symbolic link; never followed")
            )
            continue
        if disk.is_dir(fpath):
            p.findings.append(
                Finding("stray_file", p.file(fname), detail="a directory; Kafka ignores it")
            )
            continue
        p.files.append(fname)
        fn = layout.classify_partition_file(fname)
        if fn.blocks_kafka_load or (fn.offset is not None and not fn.canonical and not fn.leftover):
            detail = fn.detail or "a non-canonical segment name; Kafka ignores it"
            p.findings.append(Finding("stray_file", p.file(fname), detail=detail))
            continue
        if fn.leftover in (layout.DELETED_SUFFIX, layout.CLEANED_SUFFIX, layout.SWAP_SUFFIX):
            kind = {
                layout.DELETED_SUFFIX: "deleted_leftover",
                layout.CLEANED_SUFFIX: "cleaned_leftover",
                layout.SWAP_SUFFIX: "swap_leftover",
            }[fn.leftover]
            if fn.kind is FileKind.KRAFT_SNAPSHOT:
                continue  # the raft layer's own snapshot files
            p.findings.append(
                Finding(kind, p.file(fname), length=disk.size(fpath), offset=fn.offset)
            )
            if fn.leftover == layout.SWAP_SUFFIX and fn.kind is FileKind.LOG:
                swap_logs[fn.offset] = fname
            continue
        if fn.tmp:
            p.findings.append(
                Finding(
                    "tmp_leftover",
                    p.file(fname),
                    length=disk.size(fpath),
                    detail="left by an interrupted write",
                )
            )
            continue
        if fn.kind is FileKind.LOG:
            logs[fn.offset] = fname
        elif fn.kind in (FileKind.INDEX, FileKind.TIME_INDEX, FileKind.TXN_INDEX):
            indexes[(fn.offset, fn.kind)] = fname
        elif fn.kind is FileKind.SNAPSHOT:
            p.snapshots.append(Snapshot(fn.offset, fname, None))
        elif fn.kind is FileKind.LEADER_EPOCH_CHECKPOINT:
            _read_leader_epochs(disk, fpath, p)
        elif fn.kind is FileKind.PARTITION_METADATA:
            try:
                _check_size(disk, fpath)
                read_partition_metadata(disk, fpath)
            except CheckpointError as e:
                p.findings.append(
                    Finding(
                        "partition_metadata_malformed",
                        p.file(fname),
                        detail=f"{e.message}; Kafka takes the log dir offline",
                    )
                )
        elif fn.kind is FileKind.UNKNOWN:
            p.findings.append(
                Finding("stray_file", p.file(fname), detail="not a file Kafka keeps here")
            )

    previous_last: int | None = None
    max_epoch = -1
    bases = sorted(logs)
    for n, base in enumerate(bases):
        fname = logs[base]
        idx = tuple(
            join(path, indexes[(base, k)]) if (base, k) in indexes else None
            for k in (FileKind.INDEX, FileKind.TIME_INDEX, FileKind.TXN_INDEX)
        )
        seg = scan_segment(
            disk,
            join(path, fname),
            p.file(fname),
            base,
            previous_last_offset=previous_last,
            index_interval_bytes=p.settings.index_interval_bytes,
            index_paths=idx,
            message_max_bytes=p.settings.message_max_bytes,
            max_batch_size=p.settings.max_batch_size,
            next_base=bases[n + 1] if n + 1 < len(bases) else None,
            previous_max_epoch=max_epoch,
        )
        max_epoch = seg.max_epoch
        if progress is not None:
            progress(seg.size)
        for k, suffix in ((0, layout.INDEX_SUFFIX), (1, layout.TIME_INDEX_SUFFIX)):
            if idx[k] is None:
                p.findings.append(
                    Finding(
                        "index_missing",
                        p.file(layout.segment_file_name(base, suffix)),
                        detail=f"{fname} has no {suffix[1:]} file",
                    )
                )
        p.segments.append(seg)
        if seg.last_offset is not None:
            previous_last = seg.last_offset
    for base in sorted(swap_logs):
        p.swap_segments.append(
            scan_segment(
                disk,
                join(path, swap_logs[base]),
                p.file(swap_logs[base]),
                base,
                previous_last_offset=None,
                index_interval_bytes=p.settings.index_interval_bytes,
                index_paths=(None, None, None),
                max_batch_size=p.settings.max_batch_size,
            )
        )
    for (base, _kind), fname in sorted(indexes.items()):
        if base not in logs:
            p.findings.append(
                Finding(
                    "index_orphan",
                    p.file(fname),
                    length=disk.size(join(path, fname)),
                    detail=f"no {layout.log_file_name(base)}",
                )
            )
    _check_snapshots(disk, p)
    _check_leader_epochs(p)
    return p


def _check_snapshots(disk: Disk, p: PartitionScan) -> None:
    """Corrupt snapshots, and snapshots past the log end (they describe data that is gone).

    Snapshots Kafka merely tidies at load (not at a segment base, at or below the log start) are
    normal on a healthy log and are not reported."""
    leo = p.log_end_offset
    for snap in p.snapshots:
        try:
            entries = read_snapshot(disk, join(p.path, snap.file))
            late = [e for e in entries if e.last_offset >= snap.offset]
            if late:
                raise CorruptSnapshotError(
                    f"producer {late[0].producer_id} has last offset {late[0].last_offset}, at or "
                    f"past the snapshot's own offset {snap.offset}"
                )
        except CorruptSnapshotError as e:
            snap.corrupt = str(e)
            p.findings.append(
                Finding(
                    "producer_snapshot_corrupt",
                    p.file(snap.file),
                    offset=snap.offset,
                    detail=str(e),
                )
            )
            continue
        if snap.offset > leo:
            p.findings.append(
                Finding(
                    "producer_snapshot_stray",
                    p.file(snap.file),
                    offset=snap.offset,
                    detail=f"snapshot {snap.offset} is past the log end {leo}; Kafka deletes it",
                )
            )


MAX_CHECKPOINT_BYTES = 64 * 1024 * 1024
"""Checkpoint files are read whole; one larger than this is reported unread, not loaded."""


def _check_size(disk: Disk, path: str) -> None:
    size = disk.size(path)
    if size > MAX_CHECKPOINT_BYTES:
        raise CheckpointError(path, f"{size} bytes is not a checkpoint file Kafka wrote")


def _read_leader_epochs(disk: Disk, path: str, p: PartitionScan) -> None:
    try:
        _check_size(disk, path)
        p.leader_epochs = [(e.epoch, e.start_offset) for e in read_leader_epochs(disk, path)]
    except CheckpointError as e:
        p.leader_epoch_malformed = e.message
        p.findings.append(
            Finding(
                "checkpoint_malformed",
                p.file(layout.LEADER_EPOCH_CHECKPOINT),
                detail=f"{e.message}; Kafka takes the log dir offline",
            )
        )


def _check_leader_epochs(p: PartitionScan) -> None:
    if not p.leader_epochs:
        return
    file = p.file(layout.LEADER_EPOCH_CHECKPOINT)
    leo = p.log_end_offset
    prev: tuple[int, int] | None = None
    for epoch, start in p.leader_epochs:
        if epoch < 0 or start < 0 or (prev is not None and (epoch <= prev[0] or start < prev[1])):
            p.findings.append(
                Finding(
                    "leader_epoch_not_monotonic",
                    file,
                    offset=start,
                    detail=f"entry (epoch {epoch}, start {start}) after {prev}",
                )
            )
            break
        prev = (epoch, start)
    # An entry at the log end is what a leader election with nothing written since leaves.
    beyond = [(e, s) for e, s in p.leader_epochs if s > leo]
    if beyond:
        p.findings.append(
            Finding(
                "leader_epoch_beyond_end",
                file,
                offset=beyond[0][1],
                detail=f"epochs {[e for e, _ in beyond]} start past the log end {leo}",
            )
        )
