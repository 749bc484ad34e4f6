"""`logsim serve` and `logsim verdict`: the broker's command line and the verdict over its record."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from contextlib import ExitStack

from logrepair.storage.log_config import LONG_MAX, LogConfig
from simulator.argtypes import PORT
from simulator.faults import CRASH_FAULTS
from simulator.repair import MODES

from .broker import Broker, BrokerOptions
from .ledger import Ledger, read_record
from .server import Server
from .storage import SIM_LOG_DIR, BrokerStorage, StorageOptions

# topic config name → LogConfig field and parser
_TOPIC_KEYS = {
    "message.timestamp.type": ("message_timestamp_type", str),
    "flush.messages": ("flush_messages", int),
    "flush.ms": ("flush_ms", int),
    "max.message.bytes": ("max_message_bytes", int),
    "segment.bytes": ("segment_bytes", int),
    "retention.bytes": ("retention_bytes", int),
}


LOOPBACK = "127.0.0.1"


class ServeUsageError(ValueError):
    """Bad options: one line, exit 2."""


def add_parsers(sub, usage_error: type[Exception]) -> None:
    """Registers `serve` and `verdict` on logsim's subparsers."""
    s = sub.add_parser("serve", help="a crashable Kafka broker on 127.0.0.1 for client chaos tests")
    s.add_argument("--port", type=PORT, default=9092, help="Kafka port (0: any free one)")
    s.add_argument("--admin-port", type=PORT, default=0, help="admin HTTP port (0: any free one)")
    s.add_argument("--disk", choices=("sim", "os"), default="sim")
    s.add_argument("--log-dir", help=f"log dir (default {SIM_LOG_DIR} on the simulated disk)")
    s.add_argument("--flush-messages", type=int, help="flush.messages (default: never)")
    s.add_argument("--flush-ms", type=int, help="flush.ms (default: never)")
    s.add_argument("--checkpoint-interval-ms", type=int, default=60_000,
                   help="log.flush.offset.checkpoint.interval.ms")  # fmt: skip
    s.add_argument("--segment-bytes", type=int, help="segment.bytes")
    s.add_argument(
        "--partitions", type=int, default=1, help="num.partitions of auto-created topics"
    )
    s.add_argument("--offsets-partitions", type=int, default=1,
                   help="offsets.topic.num.partitions")  # fmt: skip
    s.add_argument("--topic-config", action="append", default=[], metavar="TOPIC:KEY=VALUE")
    s.add_argument("--repair-mode", choices=MODES, default="kafka", help="repair run at reboot")
    s.add_argument("--fault", choices=list(CRASH_FAULTS), default="lose_unsynced",
                   help="the crash fault of SIGUSR1 and of /cut without fault=")  # fmt: skip
    s.add_argument("--seed", type=int, default=0, help="seeds the crash-state choices")
    s.add_argument("--record", metavar="FILE", help="write the run's record (JSON Lines) here")
    s.add_argument("--save", metavar="DIR", help="at exit, write the simulated log dir here")
    s.add_argument("--json", action="store_true", help="print the verdict as JSON at exit")
    s.add_argument("-v", "--verbose", action="store_true", help="log broker events on stderr")
    s.set_defaults(func=lambda args: _serve(args, usage_error))

    v = sub.add_parser("verdict", help="the verdict over a `logsim serve --record` file")
    v.add_argument("record", metavar="RECORD")
    v.add_argument("--json", action="store_true")
    v.set_defaults(func=lambda args: _verdict(args, usage_error))


def build(args: argparse.Namespace) -> tuple[BrokerStorage, Broker, Server, ExitStack]:
    """The storage, broker and server `logsim serve ARGS` runs (tests build them in-process)."""
    changes: dict = {}
    if args.flush_messages is not None:
        changes["flush_messages"] = args.flush_messages
    if args.flush_ms is not None:
        changes["flush_ms"] = args.flush_ms
    if args.segment_bytes is not None:
        changes["segment_bytes"] = args.segment_bytes
    config = LogConfig(**changes)
    topic_configs: dict[str, dict] = {}
    for item in args.topic_config:
        topic, sep, kv = item.partition(":")
        key, eq, value = kv.partition("=")
        if not (sep and eq and topic) or key not in _TOPIC_KEYS:
            raise ServeUsageError(
                f"--topic-config {item!r}: expected TOPIC:KEY=VALUE with KEY one of "
                f"{', '.join(_TOPIC_KEYS)}"
            )
        field, parse = _TOPIC_KEYS[key]
        try:
            topic_configs.setdefault(topic, {})[field] = parse(value)
        except ValueError:
            raise ServeUsageError(f"--topic-config {item!r}: {value!r} is not a number") from None
    if args.disk == "os" and not args.log_dir:
        raise ServeUsageError("--disk os needs --log-dir DIR")
    stack = ExitStack()
    record = stack.enter_context(open(args.record, "w")) if args.record else None  # noqa: SIM115
    storage = BrokerStorage(
        StorageOptions(
            disk=args.disk,
            log_dir=args.log_dir or SIM_LOG_DIR,
            config=config,
            topic_configs={t: config.with_(**c) for t, c in topic_configs.items()},
            repair_mode=args.repair_mode,
            seed=args.seed,
        )
    )
    policy = {
        "disk": args.disk,
        "flush_messages": None if config.flush_messages == LONG_MAX else config.flush_messages,
        "flush_ms": None if config.flush_ms == LONG_MAX else config.flush_ms,
        "repair_mode": args.repair_mode,
        "topic_configs": {t: dict(c) for t, c in topic_configs.items()},
    }
    ledger = Ledger(record, policy)
    broker = Broker(
        storage,
        BrokerOptions(LOOPBACK, args.port, args.partitions, True, args.offsets_partitions),
        ledger,
    )
    server = Server(
        broker,
        admin_port=args.admin_port,
        default_fault=args.fault,
        checkpoint_interval_ms=args.checkpoint_interval_ms,
    )
    return storage, broker, server, stack


def _serve(args: argparse.Namespace, usage_error: type[Exception]) -> int:
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="logsim serve: %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        storage, broker, server, stack = build(args)
    except (ServeUsageError, ValueError, OSError) as e:
        raise usage_error(str(e)) from None
    with stack:

        async def main() -> None:
            try:
                await server.start()
            except OSError as e:
                raise usage_error(f"cannot listen on {LOOPBACK}:{args.port}: {e}") from None
            print(
                f"logsim serve: kafka {LOOPBACK}:{broker.options.port} "
                f"admin {LOOPBACK}:{server.admin_port} log dir {storage.options.log_dir} "
                f"(disk {args.disk})",
                flush=True,
            )
            await server.serve_until_stopped()

        asyncio.run(main())
        storage.close()
        if args.save:
            storage.save(args.save)
        summary = broker.ledger.finish()
    print_verdict(summary, args.json)
    return 0 if summary["ok"] else 1


def _verdict(args: argparse.Namespace, usage_error: type[Exception]) -> int:
    try:
        with open(args.record) as f:
            summary = read_record(f)
    except (OSError, ValueError) as e:
        raise usage_error(f"{args.record}: {e}") from None
    print_verdict(summary, args.json)
    return 0 if summary["ok"] else 1


def _ranges(ranges: list[list[int]]) -> str:
    if not ranges:
        return "0"
    n = sum(b - a + 1 for a, b in ranges)
    shown = ", ".join(f"{a}..{b}" if a != b else str(a) for a, b in ranges[:4])
    return f"{n} [{shown}{', ...' if len(ranges) > 4 else ''}]"


def print_verdict(summary: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(summary, indent=2))
        return
    p = summary["policy"]
    print(
        f"policy: flush.messages={p.get('flush_messages') or 'never'} "
        f"flush.ms={p.get('flush_ms') or 'never'} disk={p.get('disk')} "
        f"repair={p.get('repair_mode')}; {summary['cuts']} power cut(s)"
    )
    rows = [
        (
            "partition",
            "acknowledged",
            "present after cuts",
            "lost (allowed)",
            "lost (beyond policy)",
        )
    ]
    for name, part in sorted(summary["partitions"].items()):
        rows.append(
            (
                name,
                str(part["acknowledged"]),
                ",".join(map(str, part["present_after"])) or "-",
                _ranges(part["lost_allowed"]),
                _ranges(part["lost_beyond_policy"]),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    for name, part in sorted(summary["partitions"].items()):
        for c in part.get("commits_lost", []):
            print(
                f"acknowledged COMMIT marker lost: {name} offset {c['offset']} (its transaction is "
                f"aborted at reboot; {'unflushed, allowed' if c['allowed'] else 'BEYOND POLICY'})"
            )
    for o in summary["offsets_beyond_end"]:
        print(
            f"committed offset past the log end: group {o['group']} {o['partition']} "
            f"offset {o['offset']} > log end {o['log_end']}"
        )
    if summary["ok"]:
        print("verdict: ok: every acknowledged record lost was unflushed, as the policy allows")
    else:
        print(
            "verdict: LOSS BEYOND POLICY: acknowledged records below the recovery point were lost"
        )
