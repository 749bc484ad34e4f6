"""`logrepair demo`: the main job end to end on a sample broker log dir damaged as crashes do.

The sample is made by the simulator (`simulator.sample.build_damaged_logdir`): several topics and
partitions, compressed and uncompressed, transactions; then a torn tail, a garbage block after the
last batch, a corrupt index, a bit flip in an old segment and a stale recovery-point checkpoint.
The demo runs verify, a dry run, the repair and verify again, saying what happened at each step.
Exit status 0 when the final verify is clean.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile

from ..cli import InputError
from ..recovery import notation
from ..recovery.planner import MODES
from ..recovery.repair import repair
from ..recovery.scan import scan_path
from ..recovery.settings import Settings
from ..storage.osdisk import OsDisk
from . import repair as repair_command
from . import verify as verify_command


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "demo",
        help="damage a sample log dir as crashes do, then verify, repair and verify it",
        description="Build a sample broker log dir (made by the simulator), damage it as crashes "
        "do, and run verify, a dry run, the repair and verify again, printing each step.",
    )
    p.add_argument(
        "--dir",
        metavar="DIR",
        help="build the sample here (must not exist or be empty) and keep it; default: a "
        "temporary directory, removed afterwards",
    )
    p.add_argument("--seed", type=int, default=7, help="the sample's seed (default %(default)s)")
    p.add_argument(
        "--mode",
        choices=MODES,
        default="salvage",
        help="repair mode (default %(default)s: keeps every valid batch)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        from simulator.sample import build_damaged_logdir
    except ImportError as e:  # an install without the simulator package
        raise InputError(f"logrepair demo needs the simulator package: {e}") from None
    if args.dir:
        base = os.path.abspath(args.dir)
        if os.path.exists(base) and (not os.path.isdir(base) or os.listdir(base)):
            raise InputError(f"logrepair: {base} exists and is not an empty directory")
        os.makedirs(base, exist_ok=True)
        cleanup = False
    else:
        base = tempfile.mkdtemp(prefix="logrepair-demo-")
        cleanup = True
    try:
        return _demo(base, args.seed, args.mode, build_damaged_logdir, kept=not cleanup)
    finally:
        if cleanup:
            shutil.rmtree(base, ignore_errors=True)


def _step(n: int, title: str) -> None:
    print()
    print(f"== {n}. {title} " + "=" * max(0, 70 - len(title)))


def _demo(base: str, seed: int, mode: str, build, *, kept: bool) -> int:
    disk = OsDisk()
    log_dir = os.path.join(base, "kafka-logs")
    settings = Settings()
    _step(1, "a sample broker log dir, damaged the way crashes do (made by the simulator)")
    damage = build(log_dir, seed)
    print(f"log dir: {log_dir}")
    for d in damage:
        where = f"{os.path.relpath(d.file, log_dir)} {notation.at(d.position, d.length)}"
        print(f"  {d.fault:<22} {where}: {d.detail}")

    _step(2, f"logrepair verify {log_dir}")
    before = scan_path(disk, log_dir, settings)
    print(verify_command.render(before))

    _step(3, f"logrepair repair {log_dir} --mode {mode} --dry-run")
    planned = repair(disk, log_dir, mode, settings, dry_run=True)
    print(repair_command.render(planned))

    _step(4, f"logrepair repair {log_dir} --mode {mode}")
    applied = repair(disk, log_dir, mode, settings)
    print(repair_command.render(applied))

    _step(5, f"logrepair verify {log_dir}")
    after = scan_path(disk, log_dir, settings)
    print(verify_command.render(after))

    print()
    if after.clean:
        kept_batches = (
            "kept every valid batch" if mode == "salvage" else f"did what --mode {mode} does"
        )
        print(
            f"The repair removed {applied.plan.removed_bytes:,} bytes and {kept_batches}; "
            "everything it removed or replaced went to its quarantine."
        )
        if kept:
            print(
                f"`logrepair undo {applied.quarantine}` puts the damaged state back byte for byte."
            )
        else:
            print(
                "The sample and its quarantine are temporary, removed as the demo exits; run `logrepair "
                "demo --dir DIR` to keep them and try `logrepair undo` on the quarantine."
            )
        return 0
    print(f"The log dir still has {len(after.all_findings())} defect(s) after --mode {mode}.")
    return 1
