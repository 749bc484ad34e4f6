"""Where a run's lock and journals live, whatever path names the log dir.

Every path is resolved first (symbolic links, `..`), and a partition dir inside a broker's log dir
belongs to that log dir: a run on `/data/kafka/t-0` and one on `/data/kafka` (or on
`/mnt/link-to-data/kafka`) take the same `.lock` and look for unfinished runs in the same
quarantine root, `<log dir>.logrepair-quarantine`, so they can never interleave nor miss each
other's journal. A partition dir in no log dir is locked by `<partition dir>.logrepair-lock`
beside it (a `.lock` inside would be a stray file in the partition).
"""

from __future__ import annotations

from ..storage import layout
from ..storage.disk import Disk, join, parent_of
from ..storage.logdir import DirLock
from .journal import PENDING_MARKER
from .path_kind import ROOT_MARKERS

QUARANTINE_SUFFIX = ".logrepair-quarantine"
STANDALONE_LOCK_SUFFIX = ".logrepair-lock"


class RepairRefused(ValueError):
    """The repair cannot start safely (a lock is held, the quarantine is inside the log dir, an
    interrupted run cannot be finished as it stands)."""


def log_dir_of(disk: Disk, path: str, is_log_dir: bool) -> str | None:
    """The broker log dir holding PATH (resolved), when there is one."""
    if is_log_dir:
        return path
    parent = parent_of(path)
    names = disk.list_dir(parent) if disk.is_dir(parent) else []
    return parent if any(n in ROOT_MARKERS for n in names) else None


def default_quarantine_root(disk: Disk, path: str, is_log_dir: bool) -> str:
    owner = log_dir_of(disk, path, is_log_dir) or path
    return owner.rstrip("/") + QUARANTINE_SUFFIX


def quarantine_roots(disk: Disk, path: str, is_log_dir: bool, given: str | None) -> list[str]:
    """Where unfinished runs on PATH may be: the default root, and the one given if another."""
    default = default_quarantine_root(disk, path, is_log_dir)
    return [default] + ([given] if given and given != default else [])


def lock_path(disk: Disk, path: str, is_log_dir: bool) -> str:
    """Kafka's `.lock` of the log dir holding PATH, or the lock beside a partition dir in none."""
    owner = log_dir_of(disk, path, is_log_dir)
    if owner is None:
        return path.rstrip("/") + STANDALONE_LOCK_SUFFIX
    return join(owner, layout.LOCK_FILE)


def lock_run(disk: Disk, path: str, is_log_dir: bool) -> DirLock:
    """The lock of PATH (`lock_path`; created if absent, as a broker does, and removed again if
    this run created it), held for the whole run: a running broker or another run makes this
    raise `LockHeld`."""
    return DirLock(disk, lock_path(disk, path, is_log_dir))


def pending_marker(disk: Disk, path: str, is_log_dir: bool) -> str:
    """Where the runs changing the log dir holding PATH are named (journal.PENDING_MARKER)."""
    owner = log_dir_of(disk, path, is_log_dir)
    if owner is None:
        return path.rstrip("/") + PENDING_MARKER
    return join(owner, PENDING_MARKER)


def inside(child: str, parent: str) -> bool:
    child, parent = child.rstrip("/"), parent.rstrip("/")
    return child == parent or child.startswith(parent + "/")
