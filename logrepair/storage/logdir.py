"""A broker's log dir (Kafka's `LogManager`, for one directory): its partitions, the root
checkpoints, the clean-shutdown marker and the `.lock`.

Also `classify_path`, which every command uses to tell a broker's log dir from a single partition
dir, by what the directory holds first and by its name only when it holds nothing telling.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from . import clean_shutdown, layout
from .checkpoints import CheckpointError, read_offsets, write_offsets
from .clock import Clock, SystemClock
from .disk import Disk, DiskLock, LockHeld, join
from .layout import TopicPartition
from .log import Log, LogError
from .log_config import LogConfig
from .scheduler import Scheduler

log = logging.getLogger(__name__)


class LogDirError(LogError):
    """A log dir that cannot be opened: missing, not a directory, or a name Kafka cannot load."""


class LogDirLockedError(LogDirError):
    """Another process (a running broker, another logrepair) holds the dir's `.lock`."""


class PathKind(StrEnum):
    LOG_DIR = "log_dir"
    PARTITION_DIR = "partition_dir"


@dataclass(frozen=True, slots=True)
class PathInfo:
    """What a PATH given on the command line is."""

    kind: PathKind
    path: str
    topic_partition: TopicPartition | None = None
    """For a partition dir: parsed from its name (None if the name is not Kafka's)."""


_SEGMENT_FAMILY = frozenset(
    {
        layout.FileKind.LOG,
        layout.FileKind.INDEX,
        layout.FileKind.TIME_INDEX,
        layout.FileKind.TXN_INDEX,
        layout.FileKind.SNAPSHOT,
        layout.FileKind.LEADER_EPOCH_CHECKPOINT,
        layout.FileKind.PARTITION_METADATA,
    }
)
_ROOT_FILES = frozenset(
    {
        layout.FileKind.LOCK,
        layout.FileKind.CLEAN_SHUTDOWN,
        layout.FileKind.META_PROPERTIES,
        layout.FileKind.OFFSET_CHECKPOINT,
    }
)


def is_partition_dir(disk: Disk, path: str) -> bool:
    """A real directory named topic-partition that holds a `.log` or a leader-epoch-checkpoint."""
    name = path.rstrip("/").rpartition("/")[2]
    try:
        layout.parse_partition_dir_name(name)
    except layout.LayoutError:
        return False
    if disk.is_symlink(path) or not disk.is_dir(path):
        return False
    return any(
        layout.classify_partition_file(n).kind
        in (layout.FileKind.LOG, layout.FileKind.LEADER_EPOCH_CHECKPOINT)
        for n in disk.list_dir(path)
    )


def is_log_dir(disk: Disk, path: str) -> bool:
    """A directory holding a file only a Kafka log dir's root holds, or a partition dir. What
    every command (audit, export, verify, repair, rebuild-index) takes for a broker's log dir, so
    that a folder that is not one (the parent of a log dir, a folder of notes) is refused."""
    names = disk.list_dir(path)
    for n in names:
        fn = layout.classify_log_dir_file(n)
        if fn.kind in _ROOT_FILES and not fn.tmp:
            return True
    return any(is_partition_dir(disk, join(path, n)) for n in names)


def classify_path(disk: Disk, path: str) -> PathInfo:
    """A broker's log dir (partition dirs and root checkpoint files) or one partition dir
    (segment files). Raises LogDirError with one clear line when it is neither."""
    if not disk.exists(path):
        raise LogDirError(f"{path}: no such directory")
    if not disk.is_dir(path):
        raise LogDirError(f"{path} is not a directory (expected a log dir or a partition dir)")
    name = path.rstrip("/").rpartition("/")[2]
    try:
        own_tp = layout.parse_partition_dir_name(name, path).topic_partition
    except layout.LayoutError:
        own_tp = None
    partition_files = root_files = partition_dirs = 0
    for child in disk.list_dir(path):
        child_path = join(path, child)
        if disk.is_dir(child_path):
            try:
                layout.parse_partition_dir_name(child, child_path)
                partition_dirs += 1
            except layout.LayoutError:
                pass
            continue
        if layout.classify_log_dir_file(child).kind in _ROOT_FILES:
            root_files += 1
        elif layout.classify_partition_file(child).kind in _SEGMENT_FAMILY:
            partition_files += 1
    if partition_files and not (root_files or partition_dirs):
        return PathInfo(PathKind.PARTITION_DIR, path, own_tp)
    if root_files or partition_dirs:
        if partition_files:
            raise LogDirError(
                f"{path} holds both segment files and log-dir files (checkpoints or partition "
                "dirs); it is neither a clean log dir nor a partition dir"
            )
        return PathInfo(PathKind.LOG_DIR, path)
    if own_tp is not None:
        return PathInfo(PathKind.PARTITION_DIR, path, own_tp)
    return PathInfo(PathKind.LOG_DIR, path)


class DirLock:
    """A lock file held as Kafka holds `.lock` (`FileLock.tryLock`), created if absent and then
    removed again on release, so that a run leaves no file it did not find."""

    def __init__(self, disk: Disk, path: str) -> None:
        created = not disk.exists(path)
        self._lock: DiskLock | None = disk.lock(path)
        self._disk = disk
        self._path = path
        self.created = created
        """This holder made the file (or took over from one that did and died), so it removes it."""

    def release(self) -> None:
        if self._lock is None:
            return
        lock, self._lock = self._lock, None
        try:
            if self.created and self._disk.exists(self._path):
                # unlinked while held: a process that opened it meanwhile finds its lock on a
                # name that is gone and refuses it (OsDisk.lock), never two holders
                self._disk.unlink(self._path)
        finally:
            lock.release()


def lock_note(disk: Disk, lock_file: str) -> tuple[bool, str | None]:
    """For verify and audit: (whether another process — a running broker, another logrepair —
    holds `lock_file`, the one line to print when one does). Takes no lock."""
    holder = disk.lock_owner(lock_file)
    if holder is None:
        return False, None
    return True, (
        f"{lock_file} is held by process {holder} (a running broker?): the log dir may be "
        "changing while it is read, so this result may be stale"
    )


class LogDir:
    """The partitions of one log dir, loaded as a broker loads them, and its root files."""

    def __init__(
        self,
        disk: Disk,
        path: str,
        lock: DiskLock,
        config_for: Callable[[TopicPartition], LogConfig],
        clock: Clock,
        scheduler: Scheduler,
        had_clean_shutdown: bool,
    ) -> None:
        """Use `LogDir.open`."""
        self.disk = disk
        self.path = path
        self.config_for = config_for
        self.clock = clock
        self.scheduler = scheduler
        self.had_clean_shutdown = had_clean_shutdown
        self.logs: dict[TopicPartition, Log] = {}
        self.other_dirs: list[str] = []
        """Sub-directories not loaded: `-delete`, `-future`, `-stray` and `__cluster_metadata`."""
        self._lock: DiskLock | None = lock

    @classmethod
    def open(
        cls,
        disk: Disk,
        path: str,
        config: LogConfig | Callable[[TopicPartition], LogConfig] | None = None,
        *,
        clock: Clock | None = None,
        scheduler: Scheduler | None = None,
        create: bool = False,
    ) -> LogDir:
        """Locks the dir and loads its partitions (Kafka's `loadLogs`); the clean-shutdown marker,
        if present, is removed at once, so a crash from here on makes the next open unclean.

        `config` is one LogConfig for all partitions or a function of the topic-partition."""
        if not disk.exists(path):
            if not create:
                raise LogDirError(f"{path}: no such directory")
            disk.make_dirs(path)
        elif not disk.is_dir(path):
            raise LogDirError(f"{path} is not a directory")
        try:
            lock = disk.lock(join(path, layout.LOCK_FILE))
        except LockHeld as e:
            raise LogDirLockedError(f"{e} Stop the broker (or the other tool) first.") from None
        clock = clock or SystemClock()
        if config is None:
            config = LogConfig()
        config_for = config if callable(config) else (lambda tp, c=config: c)
        try:
            had_clean = clean_shutdown.had_clean_shutdown(disk, path)
            if had_clean:
                clean_shutdown.remove_marker(disk, path)
            self = cls(
                disk, path, lock, config_for, clock, scheduler or Scheduler(clock), had_clean
            )
            self._load()
        except BaseException:
            lock.release()
            raise
        return self

    def _read_checkpoint(self, name: str) -> dict[TopicPartition, int]:
        """A root offset checkpoint; missing or malformed reads as empty, as the broker does."""
        path = join(self.path, name)
        if not self.disk.exists(path):
            return {}
        try:
            return read_offsets(self.disk, path)
        except CheckpointError as e:
            log.warning("Error occurred while reading %s, treating it as empty: %s", path, e)
            return {}

    def _load(self) -> None:
        recovery_points = self._read_checkpoint(layout.RECOVERY_POINT_CHECKPOINT)
        log_starts = self._read_checkpoint(layout.LOG_START_OFFSET_CHECKPOINT)
        high_watermarks = self._read_checkpoint(layout.REPLICATION_CHECKPOINT)
        for name in self.disk.list_dir(self.path):
            child = join(self.path, name)
            if not self.disk.is_dir(child) or name == layout.REMOTE_LOG_INDEX_CACHE_DIR:
                continue
            try:
                parsed = layout.parse_partition_dir_name(name, child)
            except layout.LayoutError as e:
                self._close_logs()
                raise LogDirError(str(e)) from None
            if (
                parsed.kind is not layout.DirKind.LIVE
                or parsed.is_cluster_metadata
                or not layout.is_legal(parsed.topic_partition)
            ):
                self.other_dirs.append(child)  # never a checkpoint entry
                continue
            tp = parsed.topic_partition
            try:
                self.logs[tp] = Log.open(
                    self.disk,
                    child,
                    self.config_for(tp),
                    clock=self.clock,
                    scheduler=self.scheduler,
                    log_start_offset=log_starts.get(tp, 0),
                    recovery_point=None if self.had_clean_shutdown else recovery_points.get(tp, 0),
                    high_watermark=high_watermarks.get(tp),
                )
            except BaseException:
                self._close_logs()
                raise

    # --- partitions ------------------------------------------------------------------------------

    def create_log(self, tp: TopicPartition, config: LogConfig | None = None) -> Log:
        """Creates (or opens) the partition dir `<topic>-<partition>`."""
        self._check_open()
        existing = self.logs.get(tp)
        if existing is not None:
            return existing
        created = Log.open(
            self.disk,
            join(self.path, layout.log_dir_name(tp)),
            config or self.config_for(tp),
            clock=self.clock,
            scheduler=self.scheduler,
        )
        self.logs[tp] = created
        return created

    # --- periodic work (Kafka's LogManager tasks) ------------------------------------------------

    def cleanup_logs(self) -> int:
        """`kafka-log-retention`: a retention pass over every non-compacted log."""
        return sum(lg.delete_old_segments() for lg in self.logs.values() if not lg.config.compact)

    def flush_dirty_logs(self, now: int | None = None) -> int:
        """`kafka-log-flusher`: flushes the logs whose `flush.ms` has passed."""
        return sum(lg.flush_if_due(now) for lg in self.logs.values())

    def run_pending(self, now: int | None = None) -> int:
        return self.scheduler.run_pending(now)

    def checkpoint(self) -> None:
        """Writes the three root checkpoints atomically (recovery points, log start offsets for
        logs whose start is above their first segment, high watermarks)."""
        self._check_open()
        logs = self.logs.items()
        write_offsets(
            self.disk,
            join(self.path, layout.RECOVERY_POINT_CHECKPOINT),
            {tp: lg.recovery_point for tp, lg in logs},
        )
        write_offsets(
            self.disk,
            join(self.path, layout.LOG_START_OFFSET_CHECKPOINT),
            {
                tp: lg.log_start_offset
                for tp, lg in logs
                if lg.log_start_offset > lg.segments[0].base_offset
            },
        )
        write_offsets(
            self.disk,
            join(self.path, layout.REPLICATION_CHECKPOINT),
            {tp: lg.high_watermark for tp, lg in logs},
        )

    # --- shutdown --------------------------------------------------------------------------------

    def close(self, broker_epoch: int = 0) -> None:
        """A broker's clean shutdown of this dir: every log flushed and closed, then the
        checkpoints, then `.kafka_cleanshutdown` — only if every log closed cleanly — then the
        `.lock` released and deleted."""
        if self._lock is None:
            return
        try:
            clean = True
            for tp, lg in self.logs.items():
                try:
                    lg.close()
                except (LogError, OSError) as e:
                    log.error("Error while closing %s: %s", tp, e)
                    clean = False
                clean = clean and not lg.offline
            if clean:
                self.checkpoint()
                clean_shutdown.write_marker(self.disk, self.path, broker_epoch)
        finally:
            self._release_lock()

    def abandon(self) -> None:
        """What a killed broker leaves: files closed with nothing flushed or checkpointed, no
        clean-shutdown marker, the `.lock` released but left in place (a lock dies with its
        process). The simulator's power cuts use it before they build the crash image."""
        if self._lock is None:
            return
        for lg in self.logs.values():
            lg.abandon()
        lock, self._lock = self._lock, None
        lock.release()

    def _close_logs(self) -> None:
        """After a failed load: closes what was loaded; the caller releases the lock."""
        for lg in self.logs.values():
            lg.close()

    def _release_lock(self) -> None:
        if self._lock is None:
            return
        lock, self._lock = self._lock, None
        lock.release()
        path = join(self.path, layout.LOCK_FILE)
        if self.disk.exists(path):
            self.disk.unlink(path)

    def _check_open(self) -> None:
        if self._lock is None:
            raise LogDirError(f"log dir {self.path} is closed")

    def __enter__(self) -> LogDir:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
