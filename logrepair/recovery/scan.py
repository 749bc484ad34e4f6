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

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from ..storage import layout
from ..storage.disk import SPECIAL_TYPES, Disk, join
from ..storage.layout import FileKind, TopicPartition, printable
from ..storage.producer_snapshot import ProducerSnapshotEntry
from .findings import Finding
from .path_kind import classify
from .segment_scan import SegmentScan, scan_segment
from .settings import Settings
from .state_checks import (
    Checkpoints,
    check_checkpoint_bounds,
    check_leader_epochs,
    check_partition_metadata,
    check_snapshots,
    load_leader_epochs,
    read_root_checkpoints,
)
from .symlinks import FollowedLink, follow, shared_targets


@dataclass(slots=True)
class Snapshot:
    offset: int
    file: str
    corrupt: str | None
    entries: tuple[ProducerSnapshotEntry, ...] | None = None
    """The producers it holds, when it decodes: kafka mode's producer-state replay starts from
    them instead of reading the file again."""


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
    """What `scan_path`'s step made of each partition scanned in a worker (by its dir, `rel`):
    its share of a plan, made beside its scan; empty for a serial scan."""
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

    def to_json(self) -> dict:
        return {
            "clean": self.clean,
            "deep": self.deep,
            "path": printable(self.root),
            "kind": "log_dir" if self.is_log_dir else "partition_dir",
            "clean_shutdown_marker": self.clean_shutdown_marker,
            "partitions": [p.to_json() for p in self.partitions],
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
    entries = {name: _look(disk, join(path, name), name, settings, t) for name, t in listing}
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
                _add_left_alone(p, why[link.rel])
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


def _look(
    disk: Disk, path: str, shown: str, settings: Settings, kind: str
) -> tuple[str, Finding | None, FollowedLink | None]:
    """What the entry at `path` of type `kind` (`Disk.file_type`) is, found without opening it (a
    FIFO would block a read), and the finding it needs: 'file', 'dir', 'missing', 'symlink' (not
    followed) or 'special'. A symlink to a regular file is 'file' under `--follow-symlinks`,
    with the link resolved (symlinks.py), unless it cannot be followed (then: why)."""
    if kind == "symlink":
        target = printable(disk.read_link(path))
        if not settings.follow_symlinks:
            why = f"a symbolic link to {target}; never followed"
            return "symlink", Finding("symlink", shown, detail=why), None
        link, why_not = follow(disk, path, shown, settings)
        if link is None:
            why = f"a symbolic link to {target}; not followed: {why_not}"
            return "symlink", Finding("symlink", shown, detail=why), None
        why = (
            f"a symbolic link to {target}; followed (--follow-symlinks): read as the file "
            f"{printable(link.target)}"
        )
        return "file", Finding("symlink", shown, detail=why), link
    if kind in SPECIAL_TYPES:
        why = f"{SPECIAL_TYPES[kind]}; never opened (Kafka would hang or fail on it)"
        return "special", Finding("special_file", shown, detail=why), None
    return kind, None, None


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
    files = _sort_files(disk, p)
    _scan_segments(disk, p, files, progress)
    _check_holes(p)
    _scan_swap_segments(disk, p, files)
    _check_orphan_indexes(disk, p, files)
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


@dataclass(slots=True)
class _PartitionFiles:
    """A partition dir's segment files by base offset (names in the dir)."""

    logs: dict[int, str] = field(default_factory=dict)
    swap_logs: dict[int, str] = field(default_factory=dict)
    indexes: dict[tuple[int, FileKind], str] = field(default_factory=dict)
    swap_indexes: dict[tuple[int, FileKind], str] = field(default_factory=dict)
    min_cleaned: int | None = None
    """The lowest base offset of a `.cleaned` file: swaps from it on are discarded at load."""
    unread: set[str] = field(default_factory=set)
    """Names that are symlinks or special files: not read, and not missing either."""

    def index_paths(self, path: str, base: int) -> tuple[str | None, str | None, str | None]:
        """The offset, time and transaction index Kafka loads for the segment at `base` (None:
        absent): a `.swap` of one is renamed over it first (LogLoader's third pass, 4.1.1),
        unless a `.cleaned` file at or below it makes the swap part of an unfinished split."""
        swaps_kept = self.min_cleaned is None or base < self.min_cleaned
        out = []
        for k in (FileKind.INDEX, FileKind.TIME_INDEX, FileKind.TXN_INDEX):
            name = self.swap_indexes.get((base, k)) if swaps_kept else None
            name = name or self.indexes.get((base, k))
            out.append(None if name is None else join(path, name))
        return tuple(out)


_INDEX_FILE_KINDS = (FileKind.INDEX, FileKind.TIME_INDEX, FileKind.TXN_INDEX)

_LEFTOVER_KINDS = {
    layout.DELETED_SUFFIX: "deleted_leftover",
    layout.CLEANED_SUFFIX: "cleaned_leftover",
    layout.SWAP_SUFFIX: "swap_leftover",
}


def _sort_files(disk: Disk, p: PartitionScan) -> _PartitionFiles:
    """Every entry of the dir: segments and indexes to scan, snapshots to check, the state files
    read, and a finding for each entry Kafka would not load as it is."""
    files = _PartitionFiles()
    for fname, file_type in disk.list_dir_types(p.path):
        if file_type != "file":  # (a regular file needs no look: the listing said what it is)
            fpath = join(p.path, fname)
            kind, finding, link = _look(disk, fpath, p.file(fname), p.settings, file_type)
            if finding is not None:
                p.findings.append(finding)
            if link is not None:
                p.links.append(link)
            if kind in ("symlink", "special"):
                _leave_alone(p, finding)
                files.unread.add(fname)
                continue
            if kind == "dir":
                p.findings.append(
                    Finding("stray_file", p.file(fname), detail="a directory; Kafka ignores it")
                )
                continue
            if kind != "file":
                continue  # gone since the listing
        p.files.append(fname)
        fn = layout.classify_partition_file(fname)
        if fn.blocks_kafka_load or (fn.offset is not None and not fn.canonical and not fn.leftover):
            detail = fn.detail or "a non-canonical segment name; Kafka ignores it"
            p.findings.append(Finding("stray_file", p.file(fname), detail=detail))
        elif fn.leftover in _LEFTOVER_KINDS:
            if fn.kind is FileKind.KRAFT_SNAPSHOT:
                continue  # the raft layer's own snapshot files
            p.findings.append(
                Finding(
                    _LEFTOVER_KINDS[fn.leftover],
                    p.file(fname),
                    length=disk.size(join(p.path, fname)),
                    offset=fn.offset,
                )
            )
            if fn.leftover == layout.SWAP_SUFFIX and fn.kind is FileKind.LOG:
                files.swap_logs[fn.offset] = fname
            elif (
                fn.leftover == layout.SWAP_SUFFIX and fn.kind in _INDEX_FILE_KINDS and fn.canonical
            ):
                files.swap_indexes[(fn.offset, fn.kind)] = fname
            elif fn.leftover == layout.CLEANED_SUFFIX:
                offset = layout.offset_from_file_name(fname)  # parsed: blocks_kafka_load else
                if files.min_cleaned is None or offset < files.min_cleaned:
                    files.min_cleaned = offset
        elif fn.tmp:
            p.findings.append(
                Finding(
                    "tmp_leftover",
                    p.file(fname),
                    length=disk.size(join(p.path, fname)),
                    detail="left by an interrupted write",
                )
            )
        elif fn.kind is FileKind.LOG:
            files.logs[fn.offset] = fname
        elif fn.kind in _INDEX_FILE_KINDS:
            files.indexes[(fn.offset, fn.kind)] = fname
        elif fn.kind is FileKind.SNAPSHOT:
            p.snapshots.append(Snapshot(fn.offset, fname, None))
        elif fn.kind is FileKind.LEADER_EPOCH_CHECKPOINT:
            load_leader_epochs(disk, join(p.path, fname), p)
        elif fn.kind is FileKind.PARTITION_METADATA:
            check_partition_metadata(disk, join(p.path, fname), p, fname)
        elif fn.kind is FileKind.UNKNOWN:
            p.findings.append(
                Finding("stray_file", p.file(fname), detail="not a file Kafka keeps here")
            )
    return files


def _leave_alone(p: PartitionScan, finding: Finding) -> None:
    """A symlink or special file among the partition's files: what Kafka reads there is not what
    a repair would change, so every mode leaves the partition as it is."""
    what, _, why_not = finding.detail.partition("; not followed: ")
    why = f"{printable(finding.file)} is {what.partition(';')[0]}"
    if why_not:
        why += f", not followed: {why_not}"
    elif finding.kind == "symlink":
        why += " (--follow-symlinks reads a link to a regular file as that file)"
    _add_left_alone(p, why)


def _add_left_alone(p: PartitionScan, why: str) -> None:
    p.left_alone = why if p.left_alone is None else f"{p.left_alone}; {why}"


def _scan_segments(
    disk: Disk, p: PartitionScan, files: _PartitionFiles, progress: Progress | None
) -> None:
    """The segments in offset order, each scanned knowing where the previous one ended (its last
    offset, its highest leader epoch) and where the next one begins."""
    previous_last: int | None = None
    max_epoch = -1
    bases = sorted(files.logs)
    for n, base in enumerate(bases):
        fname = files.logs[base]
        idx = files.index_paths(p.path, base)
        seg = scan_segment(
            disk,
            join(p.path, fname),
            p.file(fname),
            base,
            previous_last_offset=previous_last,
            index_interval_bytes=p.settings.index_interval_bytes,
            index_paths=idx,
            message_max_bytes=p.settings.message_max_bytes,
            max_batch_size=p.settings.max_batch_size,
            next_base=bases[n + 1] if n + 1 < len(bases) else None,
            previous_max_epoch=max_epoch,
            deep=p.settings.deep_iteration,
        )
        max_epoch = seg.max_epoch
        if progress is not None:
            progress(seg.size)
        for k, suffix in ((0, layout.INDEX_SUFFIX), (1, layout.TIME_INDEX_SUFFIX)):
            if idx[k] is not None:
                continue
            name = layout.segment_file_name(base, suffix)
            if name not in files.unread:
                p.findings.append(
                    Finding(
                        "index_missing",
                        p.file(name),
                        detail=f"{fname} has no {suffix[1:]} file",
                    )
                )
        p.segments.append(seg)
        if seg.last_offset is not None:
            previous_last = seg.last_offset


COMPACTED_TOPICS = ("__consumer_offsets", "__transaction_state")
"""Kafka's internal topics, always `cleanup.policy=compact`."""


def compacted(p: PartitionScan) -> bool:
    """Whether offset gaps between the partition's segments can be the log cleaner's: its topic's
    `cleanup.policy` when given, else evidence that the cleaner has run on it (an entry in
    cleaner-offset-checkpoint) or an internal topic (always compacted)."""
    policy = p.settings.compacted if p.settings is not None else None
    if policy is not None:
        return policy
    return p.cleaner_offset is not None or p.topic in COMPACTED_TOPICS


def _check_holes(p: PartitionScan) -> None:
    """`offset_hole`: a segment in the middle of the partition that holds no batch, though it
    held some (bytes in its file, or indexes naming offsets), while the next segment starts above
    it. Kafka rolls a segment only to append to it and deletes an empty active segment it rolls,
    so outside compaction such a segment means its offsets were lost. The hole runs from where
    the data before it ends to the next segment's base (at or past the log start). Its indexes'
    complaints are the same loss said worse, and are dropped."""
    if compacted(p) or p.left_alone is not None:
        return  # (a segment left unread may be the data between)
    data_end: int | None = None
    for seg, nxt in zip(p.segments, p.segments[1:], strict=False):
        if seg.runs:
            data_end = seg.next_offset
            continue
        if seg.size == 0 and seg.indexed_last_offset is None:
            continue  # nothing says it ever held a batch
        first = seg.base_offset if data_end is None else min(data_end, seg.base_offset)
        first = max(first, p.log_start_checkpoint or 0)
        last = nxt.base_offset - 1
        if first > last:
            continue
        held = (
            f"its indexes name offsets up to {seg.indexed_last_offset}"
            if seg.indexed_last_offset is not None
            else f"its {seg.size} bytes hold no valid batch"
        )
        seg.index_findings = [f for f in seg.index_findings if f.kind not in _INDEX_KINDS]
        seg.findings.insert(
            0,
            Finding(
                "offset_hole",
                seg.name,
                0,
                seg.size,
                first,
                f"offsets {first}..{last} are missing: segment {seg.base_offset} holds no batch "
                f"({held}) and the next segment starts at {nxt.base_offset}",
                last_offset=last,
            ),
        )
        data_end = nxt.base_offset


_INDEX_KINDS = ("offset_index_corrupt", "time_index_corrupt")


def _scan_swap_segments(disk: Disk, p: PartitionScan, files: _PartitionFiles) -> None:
    """The `.log.swap` files of an interrupted compaction or split, each on its own."""
    for base in sorted(files.swap_logs):
        p.swap_segments.append(
            scan_segment(
                disk,
                join(p.path, files.swap_logs[base]),
                p.file(files.swap_logs[base]),
                base,
                previous_last_offset=None,
                index_interval_bytes=p.settings.index_interval_bytes,
                index_paths=(None, None, None),
                max_batch_size=p.settings.max_batch_size,
            )
        )


def _check_orphan_indexes(disk: Disk, p: PartitionScan, files: _PartitionFiles) -> None:
    for (base, _kind), fname in sorted(files.indexes.items()):
        if base not in files.logs and layout.log_file_name(base) not in files.unread:
            p.findings.append(
                Finding(
                    "index_orphan",
                    p.file(fname),
                    length=disk.size(join(p.path, fname)),
                    detail=f"no {layout.log_file_name(base)}",
                )
            )
