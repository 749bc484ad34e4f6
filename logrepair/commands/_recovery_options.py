"""Options and helpers shared by verify, repair, rebuild-index and demo."""

from __future__ import annotations

import argparse
import os
import sys

from ..cli import InputError
from ..recovery.settings import (
    DEFAULT_INDEX_INTERVAL_BYTES,
    DEFAULT_MESSAGE_MAX_BYTES,
    DEFAULT_SEGMENT_INDEX_BYTES,
    Settings,
    SettingsError,
)
from ..storage.disk import Disk


def add_settings_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("Kafka settings that shape the result (Kafka's defaults)")
    g.add_argument(
        "--config",
        metavar="SERVER_PROPERTIES",
        help="read log.index.interval.bytes, log.index.size.max.bytes and message.max.bytes "
        "from the broker's server.properties",
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
        "max.message.bytes); repeatable",
    )


def settings_from(args: argparse.Namespace, disk: Disk) -> Settings:
    """Defaults, then server.properties, then explicit options, then per-topic overrides."""
    settings = Settings()
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
