"""The parser set-up, settings, error handling and output shared by verify, repair, rebuild-index,
undo and demo, so that the CLI contract (exit 2 with one line for what the tool refuses, `--json`
alone on stdout) is kept in one place."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from .. import json_out, pool
from ..cli import InputError
from ..recovery.apply import JournalError
from ..recovery.interrupted import ABANDON, FINISH, REPLAN
from ..recovery.path_kind import NotALogDir, classify, total_log_bytes
from ..recovery.repair import RepairFailed, RepairRefused, RepairResult
from ..recovery.runs import lock_path
from ..recovery.scan import PartitionMapper
from ..recovery.settings import (
    DEFAULT_INDEX_INTERVAL_BYTES,
    DEFAULT_MESSAGE_MAX_BYTES,
    DEFAULT_SEGMENT_INDEX_BYTES,
    Settings,
    SettingsError,
)
from ..storage.disk import Disk, LockHeld
from ..storage.logdir import lock_note
from ..storage.osdisk import OsDisk

T = TypeVar("T")

REFUSALS = (NotALogDir, RepairRefused, JournalError, LockHeld, RepairFailed)
"""What a recovery command refuses to work on: not a log dir, a lock a live process holds, a
quarantine inside the log dir, a journal it cannot use; and the I/O errors that stop a run, whose
line says the state it left. One line and exit 2, never a trace."""


def add_command(
    subparsers,
    name: str,
    *,
    help: str,
    description: str,
    run: Callable[[argparse.Namespace], int],
    target: str = "path",
    target_help: str = "a broker's log dir or a partition dir",
    dry_run: str | None = None,
    quarantine: str | None = None,
    settings: bool = True,
    own_options: Callable[[argparse.ArgumentParser], None] | None = None,
    follow_links: bool = False,
) -> None:
    """A recovery subcommand: its one positional target, its `own_options`, the optional
    `--dry-run` and `--quarantine` (given their help), `--json`, the Kafka settings, and (a run
    that writes: `follow_links`) `--follow-symlinks` with `--follow-symlinks-into`."""
    p = subparsers.add_parser(name, help=help, description=description)
    p.add_argument(target, metavar=target.upper(), help=target_help)
    if own_options is not None:
        own_options(p)
    if dry_run is not None:
        p.add_argument("--dry-run", action="store_true", help=dry_run)
        add_interrupted_options(p)
    if quarantine is not None:
        p.add_argument("--quarantine", metavar="DIR", help=quarantine)
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    if settings:
        add_jobs_option(p)
        add_settings_options(p)
    if follow_links:
        add_follow_options(p)
    p.set_defaults(run=run)


def add_jobs_option(p: argparse.ArgumentParser, what: str = "partition dirs") -> None:
    p.add_argument(
        "--jobs",
        type=_positive,
        metavar="N",
        help=f"scan the {what} in N processes, this one and N - 1 workers (default: every core "
        f"this process may use, from {pool.AUTO_MIN_ITEMS} of them on); 1 scans them here, one "
        "after the other. The result and the output are the same",
    )


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of jobs (1 or more)")
    return value


def add_follow_options(p: argparse.ArgumentParser) -> None:
    """Treating a symbolic link's target as the file, in a run that changes files."""
    g = p.add_argument_group(
        "symbolic links (without these, a partition holding one is left as it is)"
    )
    g.add_argument(
        "--follow-symlinks",
        action="store_true",
        help="treat the target of a symlink to a regular file inside the log dir as the file: "
        "each link is resolved at plan time and recorded with its target's identity; the "
        "repair changes the target (cut in place, or rewritten beside it and renamed over it), "
        "never the link, and refuses if the target changed since the plan",
    )
    g.add_argument(
        "--follow-symlinks-into",
        action="append",
        default=[],
        metavar="DIR",
        help="also follow links whose targets lie under DIR, outside the log dir (implies "
        "--follow-symlinks; repeatable). The run locks the log dir only: nothing else may "
        "write there meanwhile",
    )


def add_interrupted_options(p: argparse.ArgumentParser) -> None:
    """What a journaled run does first with an interrupted run on the same log dir (by default:
    finishes it, after checking the log dir is as that run left it)."""
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--abandon-interrupted",
        dest="interrupted",
        action="store_const",
        const=ABANDON,
        default=FINISH,
        help="roll back what an interrupted run applied (as `logrepair undo` would), then plan "
        "afresh",
    )
    g.add_argument(
        "--replan",
        dest="interrupted",
        action="store_const",
        const=REPLAN,
        help="leave what an interrupted run applied as it is (its quarantine keeps every byte "
        "it removed) and plan afresh from the log dir as it is now, keeping newer data (after a "
        "broker ran on a half-repaired dir)",
    )


@contextmanager
def refusals_are_bad_input() -> Iterator[None]:
    """Turns what the tool refuses (REFUSALS) into exit 2 with one line."""
    try:
        yield
    except REFUSALS as e:
        raise InputError(f"logrepair: {e}") from None


@contextmanager
def scan_progress(disk: Disk, path: str, label: str) -> Iterator[ProgressBar]:
    """A progress bar over the `.log` bytes under PATH, cleared however the scan ends; the size
    walk only when there is a terminal to draw on."""
    total = total_log_bytes(disk, path, classify(disk, path)) if sys.stderr.isatty() else 0
    bar = ProgressBar(total, label)
    try:
        yield bar
    finally:
        bar.close()


def on_path(
    args: argparse.Namespace,
    label: str,
    work: Callable[[Disk, str, Settings, ProgressBar, PartitionMapper | None], T],
) -> T:
    """Runs `work` on the command's PATH with the settings of its options, a progress bar over
    the logs scanned, the partition dirs spread over `--jobs` workers, and what the tool refuses
    reported as bad input."""
    disk = OsDisk()
    settings = settings_from(args, disk)
    path = absolute(args.path)
    with refusals_are_bad_input(), scan_progress(disk, path, label) as bar:
        return work(disk, path, settings, bar, pool.mapper(args.jobs))


def journaled_run(args: argparse.Namespace, run: Callable[..., RepairResult]) -> RepairResult:
    """A journaled run on PATH (repair, rebuild-index): `run(disk, path, settings, dry_run=,
    quarantine_root=, progress=)` with the options those commands share."""
    return on_path(
        args,
        "scan",
        lambda disk, path, settings, bar, partitions: run(
            disk,
            path,
            settings,
            dry_run=args.dry_run,
            quarantine_root=quarantine_root(args),
            progress=bar,
            interrupted=args.interrupted,
            partitions=partitions,
            render_json=args.json,
        ),
    )


def lock_status(disk: Disk, path: str, is_log_dir: bool) -> tuple[bool, str | None]:
    """For the read-only commands: whether another process (a running broker) holds the `.lock`
    of the log dir holding PATH, and the line that says so (JSON: `locked_by_other_process`)."""
    return lock_note(disk, lock_path(disk, path, is_log_dir))


def emit(
    args: argparse.Namespace, data: dict | Callable[[], dict], text: str | Callable[[], str]
) -> None:
    """`--json`: the object alone on stdout; else the human text (a callable, of either, is made
    only when printed: nothing is computed for output that is not printed)."""
    if args.json:
        print(json_out.dumps(data() if callable(data) else data))
    else:
        print(text() if callable(text) else text)


def quarantine_root(args: argparse.Namespace) -> str | None:
    return absolute(args.quarantine) if args.quarantine else None


def add_settings_options(p: argparse.ArgumentParser) -> None:
    s = p.add_argument_group("what the scan reads")
    s.add_argument(
        "--deep-iteration",
        action="store_true",
        help="decode every record of every batch (kafka-dump-log's name; decompression capped "
        "as the dump caps it): a batch whose records do not decode or parse, which stops a "
        "consumer with CorruptRecordException, becomes a finding (slower; without it the "
        "report says records were not decoded)",
    )
    g = p.add_argument_group("Kafka settings that shape the result (Kafka's defaults)")
    g.add_argument(
        "--config",
        metavar="SERVER_PROPERTIES",
        help="read log.index.interval.bytes, log.index.size.max.bytes, message.max.bytes and "
        "log.cleanup.policy from the broker's server.properties",
    )
    g.add_argument(
        "--index-interval-bytes",
        type=int,
        metavar="N",
        help=f"index.interval.bytes (default {DEFAULT_INDEX_INTERVAL_BYTES})",
    )
    g.add_argument(
        "--segment-index-bytes",
        type=int,
        metavar="N",
        help=f"segment.index.bytes (default {DEFAULT_SEGMENT_INDEX_BYTES})",
    )
    g.add_argument(
        "--message-max-bytes",
        type=int,
        metavar="N",
        help=f"message.max.bytes (default {DEFAULT_MESSAGE_MAX_BYTES})",
    )
    g.add_argument(
        "--topic-config",
        action="append",
        default=[],
        metavar="TOPIC:KEY=VALUE",
        help="a per-topic override (index.interval.bytes, segment.index.bytes, "
        "max.message.bytes, cleanup.policy); repeatable",
    )


def settings_from(args: argparse.Namespace, disk: Disk) -> Settings:
    """Defaults, then server.properties, then explicit options, then per-topic overrides."""
    into = getattr(args, "follow_symlinks_into", None)  # (repair and rebuild-index)
    for d in into or ():
        if not disk.is_dir(d):
            raise InputError(f"logrepair: --follow-symlinks-into {d}: no such directory")
    settings = Settings(
        deep_iteration=args.deep_iteration,
        follow_symlinks=getattr(args, "follow_symlinks", False) or bool(into),
        symlink_roots=None if into is None else tuple(absolute(d) for d in into),
    )
    try:
        if args.config:
            if not disk.exists(args.config) or disk.is_dir(args.config):
                raise InputError(f"logrepair: {args.config}: no such file")
            text = disk.read_file(args.config).decode("utf-8", errors="replace")
            settings = settings.with_broker_properties(text, args.config)
        for attr, key in (
            ("index_interval_bytes", "log.index.interval.bytes"),
            ("segment_index_bytes", "log.index.size.max.bytes"),
            ("message_max_bytes", "message.max.bytes"),
        ):
            value = getattr(args, attr)
            if value is not None:
                settings = settings.with_broker_properties(f"{key}={value}", f"--{attr}")
        for spec in args.topic_config:
            settings = settings.with_topic_override(spec)
    except SettingsError as e:
        raise InputError(f"logrepair: {e}") from None
    return settings


def absolute(path: str) -> str:
    return os.path.abspath(path)


class ProgressBar:
    """A byte-count progress bar on stderr, drawn only when stderr is a terminal."""

    def __init__(self, total: int, label: str) -> None:
        self.total = max(total, 1)
        self.done = 0
        self.label = label
        self.enabled = sys.stderr.isatty() and total > 64 * 1024 * 1024

    def __call__(self, n: int) -> None:
        if not self.enabled:
            return
        self.done += n
        width = 30
        filled = min(width, width * self.done // self.total)
        pct = min(100, 100 * self.done // self.total)
        sys.stderr.write(f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {pct:3d}%")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\r" + " " * (len(self.label) + 40) + "\r")
            sys.stderr.flush()
