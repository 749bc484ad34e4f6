"""What a PATH given to a command is: a broker's log dir, a partition dir, or neither (refused).

Every command that takes a log dir or partition dir (verify, repair, rebuild-index, undo, and
`logsim inject`) decides it the same way, before anything is read or locked.
"""

from __future__ import annotations

from ..storage import layout
from ..storage.disk import Disk, join
from ..storage.logdir import is_log_dir as is_kafka_log_dir

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
    if is_kafka_log_dir(disk, path):
        return True
    inside = [join(path, n) for n in subdirs if is_kafka_log_dir(disk, join(path, n))]
    hint = (
        f"it holds the log dir {inside[0]}: give that"
        if inside
        else "give a log.dirs entry of the broker or one of its partition dirs"
    )
    raise NotALogDir(
        f"{path}: not a Kafka log dir (no partition dir with segments, no checkpoint file or "
        f"meta.properties) nor a partition dir (no segment files); {hint}"
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
