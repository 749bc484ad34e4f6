"""`logrepair dump`: kafka-dump-log's output for segment files, plus what it cannot show.

Each file is dispatched by the text after its last '.' (spec fmt §10.2). Output lines are
kafka-dump-log's (spec fmt §10.3-10.7); damaged regions of a `.log` are named and skipped instead of
ending the dump with a stack trace; `--json` gives the JSON Lines of the dump contract.
"""

from __future__ import annotations

import re

from ..storage.disk import SPECIAL_TYPES, Disk
from ..storage.layout import offset_from_file_name
from .indexes import dump_offset_index, dump_snapshot, dump_time_index, dump_txn_index
from .log import dump_log
from .report import DumpOptions, DumpReport

__all__ = ["DumpOptions", "DumpReport", "UnusableFile", "check_file", "dump_file"]

_KRAFT_SNAPSHOT = re.compile(r"(\d{20})-(\d{10})\.checkpoint")
_BOOTSTRAP_SNAPSHOT = "bootstrap.checkpoint"
_OFFSET_SUFFIXES = (".log", ".index", ".timeindex", ".txnindex", ".snapshot")


class UnusableFile(ValueError):
    """A path the dump cannot read at all (missing, a directory, not a regular file, a name
    without an offset)."""


def _suffix(path: str) -> str:
    name = _name(path)
    dot = name.rfind(".")
    return "" if dot < 0 else name[dot:]


def _name(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def check_file(disk: Disk, path: str) -> None:
    """Raises UnusableFile for a path no dumper can read; unknown suffixes pass (they are skipped)."""
    if disk.is_dir(path):
        raise UnusableFile(f"{path} is a directory: dump takes segment files")
    if not disk.exists(path):
        raise UnusableFile(f"{path}: no such file")
    # the type before any open: reading a FIFO blocks until a writer comes, a device never ends
    kind = disk.file_type(path, follow=True)
    if kind in SPECIAL_TYPES:
        raise UnusableFile(f"{path} is not a regular file but {SPECIAL_TYPES[kind]}; never opened")
    if kind == "missing":
        raise UnusableFile(f"{path}: a symbolic link to nothing")
    suffix = _suffix(path)
    name = _name(path)
    if suffix in _OFFSET_SUFFIXES:
        try:
            offset_from_file_name(name)
        except ValueError:
            raise UnusableFile(
                f"{path}: the file name must start with the segment's base offset "
                f"(as in 00000000000000000000{suffix})"
            ) from None
    elif suffix == ".checkpoint" and name != _BOOTSTRAP_SNAPSHOT:
        if not _KRAFT_SNAPSHOT.fullmatch(name):
            raise UnusableFile(
                f"{path}: a KRaft snapshot is named <20-digit end offset>-<10-digit epoch>.checkpoint"
            )


def dump_file(disk: Disk, path: str, opts: DumpOptions, report: DumpReport) -> None:
    """Dumps one file checked by `check_file`."""
    if not opts.json:
        report.line(f"Dumping {path}")
    suffix = _suffix(path)
    name = _name(path)
    if suffix == ".log":
        preamble = f"Log starting offset: {offset_from_file_name(name)}"
        dump_log(disk, path, preamble, opts, report)
    elif suffix == ".checkpoint":
        if name == _BOOTSTRAP_SNAPSHOT:
            preamble = "KRaft bootstrap snapshot"
        else:
            match = _KRAFT_SNAPSHOT.fullmatch(name)
            assert match is not None  # check_file refused other names
            preamble = f"Snapshot end offset: {int(match[1])}, epoch: {int(match[2])}"
        dump_log(disk, path, preamble, opts, report)
    elif suffix == ".index":
        dump_offset_index(disk, path, offset_from_file_name(name), opts, report)
    elif suffix == ".timeindex":
        dump_time_index(disk, path, offset_from_file_name(name), opts, report)
    elif suffix == ".txnindex":
        dump_txn_index(disk, path, offset_from_file_name(name), opts, report)
    elif suffix == ".snapshot":
        dump_snapshot(disk, path, opts, report)
    else:
        report.error(f"Ignoring unknown file {path}")
