"""Scan a broker's log dir or one partition dir: every byte accounted for, every defect named.

`scan_path(disk, path, settings)` decides what PATH is (a log dir holds partition dirs and the
root checkpoint files; a partition dir holds segments), then scans each partition: its segments
(segment_scan.py), leftovers of interrupted operations, orphaned and missing indexes, producer
snapshots, leader epochs, and the checkpoints of the log dir held against what the logs contain.
The result is what verify prints and what every repair mode plans from; it is read-only.
This module walks the log dir and holds the results; a partition dir's files are sorted in
partition_files.py, its segments scanned and held against each other in partition_segments.py.

A partition dir given on its own is scanned without its parent's checkpoints: nothing says the
parent is its log dir, and repair recovers such a partition whole (recovery point 0).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from ..json_out import Rendered
from ..storage import layout
from ..storage.disk import Disk, join
from ..storage.layout import FileKind, TopicPartition, printable
from .findings import Finding
from .partition_files import Snapshot, look, sort_files
from .partition_segments import (
    check_holes,
    check_orphan_indexes,
    scan_segments,
    scan_swap_segments,
)
from .path_kind import classify
from .segment_scan import SegmentScan
from .settings import Settings
from .state_checks import (
    Checkpoints,
    check_checkpoint_bounds,
    check_leader_epochs,
    check_snapshots,
    read_root_checkpoints,
)
from .symlinks import FollowedLink, shared_targets


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
    """Regular files of the dir (names), symlinks excluded (unless followed)."""
    left_alone: str | None = None
    """Why every mode must leave this partition as it is (a symlink or a FIFO, socket or device
    among its files), or None. The planner plans nothing for it; its findings stay reported."""
    links: list[FollowedLink] = field(default_factory=list)
    """The symbolic links among its files read as their targets (`--follow-symlinks`)."""
    snapshots: list[Snapshot] = field(default_factory=list)
    leader_epochs: list[tuple[int, int]] | None = None
    """leader-epoch-checkpoint entries as written (None: file missing or malformed)."""
    leader_epoch_malformed: str | None = None
    recovery_point: int | None = None
    log_start_checkpoint: int | None = None
    high_watermark: int | None = None
    cleaner_offset: int | None = None
    """The cleaner-offset-checkpoint entry: the log cleaner has compacted this partition."""
    settings: Settings | None = None
    disk: Disk | None = field(default=None, repr=False, compare=False)
    """The Disk it was read through: kafka mode replays producer state from it."""

    def file(self, name: str) -> str:
        """`name` in this partition dir, relative to PATH."""
        return join(self.rel, name) if self.rel else name

    def add_left_alone(self, why: str) -> None:
        """One more reason every mode must leave this partition as it is."""
        self.left_alone = why if self.left_alone is None else f"{self.left_alone}; {why}"

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
            "path": printable(self.path),
            "topic": printable(self.topic),
            "partition": self.partition,
            "log_start_offset": self.log_start_offset,
            "log_end_offset": self.log_end_offset,
            "segments": len(self.segments),
            "bytes": self.bytes,
            "left_alone": self.left_alone and printable(self.left_alone),
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
    deep: bool = False
    """Every record was decoded (`--deep-iteration`); else only batches were checked."""
    prepared: dict[str, object] = field(default_factory=dict, compare=False)
    """What `scan_path`'s step made of each partition scanned through a pool (by its dir, `rel`),
    beside its scan: its share of a plan, or its JSON entry (`rendered_partition`); empty for a
    serial scan."""
    links: list[FollowedLink] = field(default_factory=list)
    """The root files that are symbolic links read as their targets (`--follow-symlinks`)."""

    @property
    def followed_links(self) -> list[FollowedLink]:
        """Every link read as its target, in the partitions a repair may change and at the root."""
        out = list(self.links)
        for p in self.partitions:
            if p.left_alone is None:
                out.extend(p.links)
        return out

    @property
    def clean(self) -> bool:
        """No damage: notices (findings of a log Kafka loads as it is) may remain."""
        return not any(f.severity == "damage" for f in self.all_findings())

    def all_findings(self) -> list[Finding]:
        out = list(self.findings)
        for p in self.partitions:
            out.extend(p.all_findings)
        return out

    def _partition_json(self, p: PartitionScan) -> dict | Rendered:
        done = self.prepared.get(p.rel)
        return done if isinstance(done, Rendered) else p.to_json()

    def to_json(self) -> dict:
        return {
            "clean": self.clean,
            "deep": self.deep,
            "path": printable(self.root),
            "kind": "log_dir" if self.is_log_dir else "partition_dir",
            "clean_shutdown_marker": self.clean_shutdown_marker,
            "partitions": [self._partition_json(p) for p in self.partitions],
            "defects": [f.to_json() for f in self.findings],
        }


Progress = Callable[[int], None]
"""Called with the number of `.log` bytes scanned since the last call."""


def scan_path(
    disk: Disk,
    path: str,
    settings: Settings,
    progress: Progress | None = None,
    partitions: PartitionMapper | None = None,
    then: PartitionStep | None = None,
) -> LogDirScan:
    """Scans PATH: a partition dir on its own, or a log dir's root files → its partitions → its
    checkpoints held against what the partitions hold. `partitions` runs `scan_partition_dir` over
    the partition dirs, in their order (`logrepair.pool` spreads them over worker processes,
    which get their own copy of `disk`), each followed there by `then` (its share of a plan:
    `LogDirScan.prepared`); None scans them one after the other here, and `then` is not run."""
    path = path.rstrip("/") or "/"
    is_log_dir = classify(disk, path)
    result = LogDirScan(path, is_log_dir, deep=settings.deep_iteration)
    if not is_log_dir:
        name = path.rpartition("/")[2]
        result.partitions.append(_scan_partition(disk, path, "", name, settings, None, progress))
        _leave_shared_targets_alone(result)
        return result
    listing = disk.list_dir_types(path)
    result.clean_shutdown_marker = any(n == layout.CLEAN_SHUTDOWN_FILE for n, _ in listing)
    entries = {name: look(disk, join(path, name), name, settings, t) for name, t in listing}
    files = [name for name, (kind, _, _) in entries.items() if kind == "file"]
    result.links = [link for _, _, link in entries.values() if link is not None]
    result.checkpoints = read_root_checkpoints(disk, path, files, result.findings)
    dirs: list[tuple[str, layout.PartitionDirName]] = []
    for name, (kind, finding, _) in entries.items():
        if finding is not None:
            result.findings.append(finding)
        parsed = _check_log_dir_entry(disk, result, name, kind)
        if parsed is not None:
            dirs.append((name, parsed))
    if partitions is None:
        for name, parsed in dirs:
            p = _scan_partition(
                disk, join(path, name), name, name, settings, result.checkpoints, progress, parsed
            )
            result.partitions.append(p)
    else:
        context = (disk, path, settings, result.checkpoints, then)
        for p, done in partitions(scan_partition_dir, context, dirs):
            p.disk = disk
            if progress is not None:
                progress(p.bytes)
            result.partitions.append(p)
            if done is not None:
                result.prepared[p.rel] = done
    check_checkpoint_bounds(result)
    _leave_shared_targets_alone(result)
    return result


def _leave_shared_targets_alone(result: LogDirScan) -> None:
    """Two followed links to one file: a repair would change it for both names, so their
    partitions are left as they are."""
    why = shared_targets([*result.links, *(x for p in result.partitions for x in p.links)])
    for p in result.partitions:
        for link in p.links:
            if link.rel in why:
                p.add_left_alone(why[link.rel])
                result.prepared.pop(p.rel, None)  # made before it was left alone
    result.links = [link for link in result.links if link.rel not in why]


PartitionStep = Callable[[PartitionScan, Checkpoints, str], object]
"""Work on one partition right after its scan and where it was scanned, given the log dir's
checkpoints and path: a repair's plan of that partition (picklable: a module-level function or a
`functools.partial` of one)."""

PartitionContext = tuple[Disk, str, Settings, Checkpoints, PartitionStep | None]
"""What every partition dir of a log dir is scanned with: the Disk, the log dir, the settings,
its checkpoints, and the step that follows each scan."""


PartitionDir = tuple[str, layout.PartitionDirName]
"""A partition dir of the log dir: its name, parsed."""


class PartitionMapper(Protocol):
    """Runs `task(context, dir)` for each partition dir, yielding the results in order."""

    def __call__(
        self,
        task: Callable[[PartitionContext, PartitionDir], tuple[PartitionScan, object]],
        context: PartitionContext,
        items: list[PartitionDir],
    ) -> Iterator[tuple[PartitionScan, object]]: ...


def scan_partition_dir(
    context: PartitionContext, item: PartitionDir
) -> tuple[PartitionScan, object]:
    """The partition dir `item` of the log dir scanned on its own (in a worker process, or here),
    and what the context's step made of it. It comes back without its Disk (the caller's is put
    back); the rest is what the serial scan holds of it."""
    disk, root, settings, checkpoints, then = context
    name, parsed = item
    p = _scan_partition(disk, join(root, name), name, name, settings, checkpoints, None, parsed)
    done = None if then is None else then(p, checkpoints, root)
    p.disk = None
    return p, done


def rendered_partition(p: PartitionScan, checkpoints: Checkpoints, root: str) -> Rendered:
    """`scan_path`'s step for `verify --json`: the partition's entry rendered beside its scan."""
    return Rendered.of(p.to_json())


def _check_log_dir_entry(
    disk: Disk, result: LogDirScan, name: str, kind: str
) -> layout.PartitionDirName | None:
    """One entry of the log dir: a partition dir to scan (its parsed name); a root file Kafka
    keeps, or a finding (None). Symlinks and special files have their finding already and are
    never read."""
    p = join(result.root, name)
    if kind == "dir":
        if name == layout.REMOTE_LOG_INDEX_CACHE_DIR:
            return None
        try:
            parsed = layout.parse_partition_dir_name(name, p)
        except layout.LayoutError as e:
            result.findings.append(Finding("stray_directory", name, detail=str(e)))
            return None
        problem = layout.topic_name_problem(parsed.topic_partition.topic)
        if problem is not None:
            why = f"{problem}: no broker made this directory, and its name cannot be a checkpoint entry"
            result.findings.append(Finding("stray_directory", name, detail=why))
            return None
        return parsed
    if kind != "file":
        return None
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
    return None


def _scan_partition(
    disk: Disk,
    path: str,
    rel: str,
    name: str,
    settings: Settings,
    checkpoints: Checkpoints | None,
    progress: Progress | None,
    parsed: layout.PartitionDirName | None = None,
) -> PartitionScan:
    """A partition dir's steps, in the order Kafka's loader takes them: which files are there →
    the segments in offset order (and the offsets missing between them) → the swap files of an
    interrupted operation → indexes with no segment → producer snapshots and leader epochs held
    against the log end."""
    p = _partition(disk, path, rel, name, settings, checkpoints, parsed)
    files = sort_files(disk, p)
    scan_segments(disk, p, files, progress)
    check_holes(p)
    scan_swap_segments(disk, p, files)
    check_orphan_indexes(disk, p, files)
    check_snapshots(disk, p)
    check_leader_epochs(p)
    return p


def _partition(
    disk: Disk,
    path: str,
    rel: str,
    name: str,
    settings: Settings,
    checkpoints: Checkpoints | None,
    parsed: layout.PartitionDirName | None,
) -> PartitionScan:
    """The partition the dir's name says (`parsed`: already parsed), with its topic's settings
    and checkpoint entries."""
    try:
        parsed = parsed or layout.parse_partition_dir_name(name, path)
        topic, partition, dir_kind = (
            parsed.topic_partition.topic,
            parsed.topic_partition.partition,
            str(parsed.kind),
        )
    except layout.LayoutError:
        topic, partition, dir_kind = name, -1, "unknown"
    p = PartitionScan(path, rel, topic, partition, dir_kind, disk=disk)
    p.settings = settings.for_topic(topic)
    # (KRaft's metadata log is no LogManager log: the raft layer loads it from offset 0 and log
    # start 0 at every start, whatever the checkpoints say; `modes/kraft.py`)
    if checkpoints is not None and topic != layout.CLUSTER_METADATA_TOPIC:
        tp = p.tp
        p.recovery_point = (checkpoints.recovery_points or {}).get(tp)
        p.log_start_checkpoint = (checkpoints.log_start_offsets or {}).get(tp)
        p.high_watermark = (checkpoints.high_watermarks or {}).get(tp)
        p.cleaner_offset = (checkpoints.cleaner_offsets or {}).get(tp)
    return p
