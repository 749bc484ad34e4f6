"""The clean-shutdown marker `.kafka_cleanshutdown` at a log dir's root (spec fmt §8.6, rec §6.1).

Only its existence matters to recovery: a broker that finds it skips recovering the dir's logs and
deletes it at once. Its JSON content (`version`, `brokerEpoch`) is read only by KRaft registration.
"""

from __future__ import annotations

import json

from .checkpoints import CheckpointError, read_small_file
from .disk import Disk, join
from .layout import CLEAN_SHUTDOWN_FILE

CLEAN_SHUTDOWN_VERSION = 0


def marker_path(log_dir: str) -> str:
    return join(log_dir, CLEAN_SHUTDOWN_FILE)


def had_clean_shutdown(disk: Disk, log_dir: str) -> bool:
    return disk.exists(marker_path(log_dir))


def read_broker_epoch(disk: Disk, log_dir: str) -> int:
    """The marker's `brokerEpoch`; CheckpointError if the content is not what Kafka writes."""
    path = marker_path(log_dir)
    try:
        content = json.loads(read_small_file(disk, path).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(path, f"Clean shutdown file {path} is not JSON: {e}") from None
    epoch = content.get("brokerEpoch") if isinstance(content, dict) else None
    if not isinstance(epoch, int) or isinstance(epoch, bool) or not -(2**63) <= epoch < 2**63:
        raise CheckpointError(path, f"Clean shutdown file {path} has no long brokerEpoch")
    return epoch


def write_marker(disk: Disk, log_dir: str, broker_epoch: int) -> None:
    """As `CleanShutdownFileHandler.write`: written in place and fsynced, directory not fsynced."""
    data = json.dumps(
        {"version": CLEAN_SHUTDOWN_VERSION, "brokerEpoch": broker_epoch}, separators=(",", ":")
    ).encode()
    with disk.open(marker_path(log_dir), create=True) as f:
        f.truncate(0)
        f.write_at(0, data)
        f.fsync()


def remove_marker(disk: Disk, log_dir: str) -> None:
    """What a broker does on finding the marker at startup, made durable."""
    disk.unlink(marker_path(log_dir))
    disk.fsync_dir(log_dir)
