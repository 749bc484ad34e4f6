"""Finding the log dirs under the audit's PATHs and reading what they say about themselves.

Runs on the driver: it lists directories and reads the small root files (checkpoints,
meta.properties, the clean-shutdown marker, each partition's leader-epoch-checkpoint), and leaves
every `.log` to the scan, as `SegmentTask`s. A PATH is a broker's log dir, a single partition dir
(audited with its log dir's checkpoints), or a folder holding one sub-folder per broker, each a log
dir or a folder of a broker's log dirs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from itertools import islice

from ..pool import Mapper, serial
from ..storage import layout
from ..storage.checkpoints import MAX_CHECKPOINT_BYTES, CheckpointError, read_offsets
from ..storage.disk import SPECIAL_TYPES, Disk, join
from ..storage.layout import DirKind, FileKind, LayoutError, TopicPartition
from ..storage.leader_epoch import read_leader_epochs
from ..storage.logdir import is_log_dir, is_partition_dir
from ..storage.meta_properties import read_meta_properties
from .model import Finding, LogDirPlan, MetaProperties, PartitionPlan, SegmentTask

CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"
_LEFTOVER_KINDS = {
    layout.SWAP_SUFFIX: "swap_leftover",
    layout.CLEANED_SUFFIX: "cleaned_leftover",
    layout.DELETED_SUFFIX: "deleted_leftover",
}
_MAX_LISTED = 10


class DiscoveryError(ValueError):
    """A PATH that is neither a log dir, a partition dir, nor a folder of log dirs."""


def discover(disk: Disk, paths: list[str], partitions: Mapper | None = None) -> list[LogDirPlan]:
    """The log dirs under `paths`, each once, with broker labels (see the module docstring);
    `partitions` lists their partition dirs (`logrepair.pool`: in worker processes)."""
    found = discover_log_dirs(disk, paths)
    listed = iter(
        list((partitions or serial)(plan_partition, disk, [d for _, ds in found for d in ds]))
    )
    for plan, dirs in found:
        plan.partitions = list(islice(listed, len(dirs)))
    return [plan for plan, _ in found]


@dataclass(frozen=True, slots=True)
class PartitionDir:
    """A partition dir of a log dir, found in its listing and not yet listed itself, with its
    entries in the log dir's checkpoints."""

    log_dir: str
    path: str
    parsed: layout.PartitionDirName
    recovery_point: int | None
    log_start_checkpoint: int | None
    high_watermark: int | None
    cleaner_offset: int | None


def discover_log_dirs(disk: Disk, paths: list[str]) -> list[tuple[LogDirPlan, list[PartitionDir]]]:
    """`discover`, but each log dir's partition dirs are left to list (`plan_partition`), so
    that the listing can run where their scan does (`audit --jobs`): the plans come back without
    `partitions`."""
    found: dict[str, tuple[str, set[str] | None]] = {}  # log dir → (broker, partition dirs)
    direct: list[str] = []
    for raw in paths:
        path = os.path.abspath(raw)
        if not disk.is_dir(path):
            raise DiscoveryError(f"{raw}: not a directory")
        if is_partition_dir(disk, path):
            parent = os.path.dirname(path)
            _, only = found.setdefault(parent, ("", set()))
            if only is not None:
                only.add(os.path.basename(path))
            direct.append(parent)
        elif is_log_dir(disk, path):
            found[path] = ("", None)
            direct.append(path)
        else:
            brokers = _brokers_under(disk, path)
            if not brokers:
                raise DiscoveryError(
                    f"{raw}: neither a log dir, a partition dir, nor a folder of log dirs"
                )
            for log_dir, broker in brokers:
                found[log_dir] = (broker, None)
    plans = [
        plan_log_dir(disk, log_dir, broker, only=only)
        for log_dir, (broker, only) in sorted(found.items())
    ]
    _label_direct([plan for plan, _ in plans], set(direct))
    return plans


def _brokers_under(disk: Disk, folder: str) -> list[tuple[str, str]]:
    out = []
    for name in disk.list_dir(folder):
        child = join(folder, name)
        if disk.is_symlink(child) or not disk.is_dir(child):
            continue
        if is_log_dir(disk, child):
            out.append((child, name))
            continue
        for sub in disk.list_dir(child):
            grandchild = join(child, sub)
            if (
                not disk.is_symlink(grandchild)
                and disk.is_dir(grandchild)
                and is_log_dir(disk, grandchild)
            ):
                out.append((grandchild, name))
    return out


def _label_direct(plans: list[LogDirPlan], direct: set[str]) -> None:
    """A log dir named on the command line is its broker's by node id, else by its own name."""
    for p in plans:
        if p.path in direct:
            if p.meta is not None and p.meta.node_id is not None:
                p.broker = f"node-{p.meta.node_id}"
            else:
                p.broker = p.path


def plan_log_dir(
    disk: Disk, path: str, broker: str, *, only: set[str] | None = None
) -> tuple[LogDirPlan, list[PartitionDir]]:
    """The log dir's plan and its partition dirs to plan (`only`: those; the checkpoints are
    still read for all)."""
    plan = LogDirPlan(
        path=path,
        broker=broker,
        clean_shutdown=disk.exists(join(path, layout.CLEAN_SHUTDOWN_FILE)),
    )
    plan.meta = _read_meta(disk, join(path, layout.META_PROPERTIES_FILE), plan.findings)
    checkpoints = {
        name: _read_checkpoint(disk, join(path, name), plan.findings)
        for name in layout.OFFSET_CHECKPOINTS
    }
    plan.checkpoints = checkpoints
    present: set[TopicPartition] = set()
    dirs: list[PartitionDir] = []
    for name, kind in disk.list_dir_types(path):  # one typed listing: no stat per partition
        child = join(path, name)
        if name == layout.REMOTE_LOG_INDEX_CACHE_DIR:
            continue
        if kind == "symlink" and disk.is_dir(child):
            plan.findings.append(Finding("symlink", f"{name} is a symbolic link (not followed)"))
            continue
        if kind != "dir":
            continue
        try:
            parsed = layout.parse_partition_dir_name(name, child)
        except LayoutError as e:
            plan.findings.append(Finding("stray_directory", str(e).split("\n", 1)[0]))
            continue
        if parsed.is_cluster_metadata:
            continue
        present.add(parsed.topic_partition)
        if only is not None and name not in only:
            continue
        tp = parsed.topic_partition
        dirs.append(
            PartitionDir(
                path,
                child,
                parsed,
                checkpoints[layout.RECOVERY_POINT_CHECKPOINT].get(tp),
                checkpoints[layout.LOG_START_OFFSET_CHECKPOINT].get(tp),
                checkpoints[layout.REPLICATION_CHECKPOINT].get(tp),
                checkpoints[layout.CLEANER_CHECKPOINT].get(tp),
            )
        )
    if only is None:
        _orphan_entries(plan, checkpoints, present)
    return plan, dirs


def plan_partition(disk: Disk, d: PartitionDir) -> PartitionPlan:
    """A partition dir listed: its segments to scan, its leader epochs, its findings."""
    path, parsed, tp = d.path, d.parsed, d.parsed.topic_partition
    p = PartitionPlan(
        log_dir=d.log_dir,
        path=path,
        topic=tp.topic,
        partition=tp.partition,
        state=str(parsed.kind),
        recovery_point=d.recovery_point,
        log_start_checkpoint=d.log_start_checkpoint,
        high_watermark=d.high_watermark,
        cleaner_offset=d.cleaner_offset,
    )
    logs: list[tuple[int, str]] = []
    for name, kind in disk.list_dir_types(path):
        if kind in SPECIAL_TYPES:
            why = f"{name} in {path} is {SPECIAL_TYPES[kind]}; never opened"
            p.findings.append(Finding("special_file", why))
            continue
        if kind == "symlink":
            p.findings.append(
                Finding("symlink", f"{name} in {path} is a symbolic link (not followed)")
            )
            continue
        f = layout.classify_partition_file(name)
        if f.leftover in _LEFTOVER_KINDS and parsed.kind is not DirKind.DELETE:
            p.findings.append(Finding(_LEFTOVER_KINDS[f.leftover], f"{name} left in {path}"))
        elif f.kind is FileKind.LOG and f.offset is not None and f.leftover is None:
            logs.append((f.offset, name))
        elif f.kind is FileKind.LEADER_EPOCH_CHECKPOINT and not f.tmp:
            try:
                entries = read_leader_epochs(disk, join(path, name), limit=MAX_CHECKPOINT_BYTES)
                p.leader_epochs = [tuple(e) for e in entries]
            except CheckpointError as e:
                p.leader_epochs_malformed = True
                p.findings.append(Finding("checkpoint_malformed", str(e)))
    for index, (base, name) in enumerate(sorted(logs)):
        file = join(path, name)
        p.segments.append(
            SegmentTask(
                log_dir=d.log_dir,
                partition_dir=path,
                topic=tp.topic,
                partition=tp.partition,
                file=file,
                base_offset=base,
                size=disk.size(file),
                index=index,
                consumer_offsets=tp.topic == CONSUMER_OFFSETS_TOPIC,
            )
        )
    return p


def _read_checkpoint(disk: Disk, path: str, findings: list[Finding]) -> dict[TopicPartition, int]:
    """A missing file is an empty map, as for Kafka; a malformed one is a finding and, as for
    Kafka's loader, an empty map."""
    try:
        return read_offsets(disk, path)
    except FileNotFoundError:
        return {}
    except CheckpointError as e:
        findings.append(Finding("checkpoint_malformed", str(e)))
        return {}


def _orphan_entries(
    plan: LogDirPlan,
    checkpoints: dict[str, dict[TopicPartition, int]],
    present: set[TopicPartition],
) -> None:
    for name, entries in checkpoints.items():
        orphans = sorted(tp for tp in entries if tp not in present)
        if orphans:
            listed = ", ".join(str(tp) for tp in orphans[:_MAX_LISTED])
            more = f" and {len(orphans) - _MAX_LISTED} more" if len(orphans) > _MAX_LISTED else ""
            plan.findings.append(
                Finding(
                    "checkpoint_orphan_entry",
                    f"{name} has entries for {listed}{more}, which have no directory here",
                )
            )


def _read_meta(disk: Disk, path: str, findings: list[Finding]) -> MetaProperties | None:
    try:
        meta = read_meta_properties(disk, path)
    except FileNotFoundError:
        return None
    except CheckpointError as e:
        findings.append(Finding("meta_properties_malformed", str(e)))
        return None
    return MetaProperties(meta.version, meta.cluster_id, meta.node_id, meta.directory_id)
