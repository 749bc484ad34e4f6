"""The options and output of `repair --mode heal` (the rest of `repair` is the same)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

from ..cli import InputError
from ..recovery.healing import HealResult, heal
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

    def run(disk, path, settings, *, render_json, **kw):  # (heal plans here: nothing to render)
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
    emit(args, healed.to_json, lambda: _text(healed, render))
    return 1 if healed.lost else 0


def _text(healed: HealResult, render: Callable[[RepairResult], str]) -> str:
    """repair's text with the damaged ranges before its closing summary line; where nothing was
    lost, the summary says what the heal did rather than what it removed."""
    lines = render(healed.result).split("\n")
    summary = lines.pop()
    ranges = healed.source.ranges
    if ranges and not healed.lost:
        result = healed.result
        done = "applied" if result.applied else "planned (dry run)"
        filled = sum(1 for r in ranges if r.filled)
        summary = (
            f"summary: heal repair of {result.plan.root} {done}: no records lost; "
            f"{filled} of {len(ranges)} damaged range(s) filled from replicas"
        )
    return "\n".join([*lines, *healed.lines(), summary])
