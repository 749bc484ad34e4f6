"""The options and output of `repair --mode heal` (the rest of `repair` is the same)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

from ..cli import InputError
from ..recovery.healing import heal
from ..recovery.repair import RepairResult
from ._recovery_options import absolute, emit, journaled_run


def heal_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("heal (--mode heal)")
    g.add_argument(
        "--replica",
        action="append",
        default=[],
        metavar="REPLICA_PATH",
        help="another broker's log dir or partition dir holding the same partitions (mounted "
        "or copied; only read); repeatable",
    )
    g.add_argument(
        "--beyond-high-watermark",
        action="store_true",
        help="also fill offsets past every checkpointed high watermark, where all replicas "
        "holding them agree",
    )


def run_heal(args: argparse.Namespace, render: Callable[[RepairResult], str]) -> int:
    if args.mode != "heal":
        raise InputError("logrepair: --replica is only for --mode heal")
    if not args.replica:
        raise InputError("logrepair: --mode heal needs at least one --replica REPLICA_PATH")
    replicas = [absolute(r) for r in args.replica]
    for r in replicas:
        if not os.path.isdir(r):
            raise InputError(f"logrepair: replica {r}: no such directory")
    found = {}

    def run(disk, path, settings, **kw):
        found["heal"] = heal(
            disk,
            path,
            settings,
            replicas,
            beyond_high_watermark=args.beyond_high_watermark,
            **kw,
        )
        return found["heal"].result

    journaled_run(args, run)
    healed = found["heal"]
    text = render(healed.result)
    extra = healed.lines()
    emit(args, healed.to_json(), text + ("\n" + "\n".join(extra) if extra else ""))
    if args.dry_run:
        return 1 if healed.result.plan.actions else 0
    return 1 if healed.lost else 0
