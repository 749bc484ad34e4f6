"""`logsim`: run scenario files, explore crash states of a workload, inject faults into a log dir.

Exit status: 0 all well; 1 an invariant was violated (run, explore); 2 bad usage, unreadable
input or an internal error, with one line on stderr (never a traceback; LOGREPAIR_DEBUG=1 shows
it). `--json` prints only JSON on stdout. Progress goes to stderr, and only when stderr is a
terminal.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

from simulator.disk import PersistenceModel
from simulator.explore import ALL_FAULTS, ExploreError, ExploreOptions, explore, shrink
from simulator.faults import CRASH_FAULTS
from simulator.inject import INJECT_FAULTS, InjectError, describe_faults, inject
from simulator.repair import MODES
from simulator.scenario import ScenarioError, find_scenarios, load_scenario, run_scenario
from simulator.serve import cli as serve_cli
from simulator.workload import SpecError, WorkloadSpec


class UsageError(Exception):
    """Bad input: one line on stderr, exit 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, not argparse's usage block
        raise UsageError(message)


class _Progress:
    """A one-line progress bar on stderr, drawn only on a terminal."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.enabled = sys.stderr.isatty()

    def __call__(self, done: int, total: int) -> None:
        if self.enabled and total:
            width = 30
            filled = width * done // total
            bar = "#" * filled + "." * (width - filled)
            sys.stderr.write(f"\r{self.label} [{bar}] {done}/{total}")
            if done >= total:
                sys.stderr.write("\r" + " " * (len(self.label) + width + 24) + "\r")
            sys.stderr.flush()


def _csv(value: str, allowed: Sequence[str], what: str) -> tuple[str, ...]:
    items = tuple(allowed) if value == "all" else tuple(v for v in value.split(",") if v)
    for item in items:
        if item not in allowed:
            raise UsageError(f"unknown {what} {item!r}; one of {', '.join(allowed)}")
    if not items:
        raise UsageError(f"no {what} given")
    return items


def _run(args: argparse.Namespace) -> int:
    try:
        scenarios = [load_scenario(p) for p in find_scenarios(args.paths)]
    except ScenarioError as e:
        raise UsageError(str(e)) from None
    results = []
    for sc in scenarios:
        if args.seed is not None:
            sc.options.seed = args.seed
        try:
            results.append(
                run_scenario(sc, progress=_Progress(sc.name), shrink_failures=not args.no_shrink)
            )
        except ExploreError as e:
            raise UsageError(f"{sc.path}: {e}") from None
    if args.json:
        print(json.dumps({"scenarios": [r.to_json() for r in results]}, indent=2))
    else:
        rows = [("scenario", "states", "states/s", "violations", "result")]
        for r in results:
            shown = len(r.report.violations)
            verdict = "ok" if r.ok else "FAIL"
            if r.missing:
                verdict += f" (expected {', '.join(r.missing)} not seen)"
            if r.too_few_states:
                verdict += f" (fewer than {r.scenario.min_states} states)"
            rows.append(
                (
                    r.scenario.name,
                    str(r.report.states),
                    f"{r.report.states_per_second:.0f}",
                    str(shown),
                    verdict,
                )
            )
        widths = [max(len(row[i]) for row in rows) for i in range(5)]
        for row in rows:
            print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
        for r in results:
            for v in r.unexpected[:3]:
                print(f"  {r.scenario.name}: {v}")
            if r.reproducer is not None:
                print(
                    f"  {r.scenario.name}: smallest reproducer: {json.dumps(r.reproducer[0].to_dict())}"
                )
    return 0 if all(r.ok for r in results) else 1


def _explore(args: argparse.Namespace) -> int:
    try:
        spec = WorkloadSpec(
            seed=args.seed,
            partitions=args.partitions,
            appends=args.appends,
            records=(1, args.max_records),
            record_bytes=(args.min_record_bytes, args.max_record_bytes),
            keys=args.keys,
            codecs=_csv(args.codecs, ("none", "gzip", "snappy", "lz4", "zstd"), "codec"),
            transactions=args.transactions,
            segment_bytes=args.segment_bytes,
            flush_messages=args.flush_messages,
            flush_every=args.flush_every,
            checkpoint_every=args.checkpoint_every,
            retention_bytes=args.retention_bytes,
            retention_every=args.retention_every,
            truncate_every=args.truncate_every,
            preallocate=args.preallocate,
            leader_epoch_every=args.leader_epoch_every,
            compact_at_end=args.compact_at_end,
            clean_shutdown=args.clean_shutdown,
        )
        model = PersistenceModel(
            sector_size=args.sector_size,
            size_before_data=not args.ordered_size,
            reorder=not args.no_reorder,
            atomic_rename=not args.non_atomic_rename,
        )
        opts = ExploreOptions(
            faults=_csv(args.faults, ALL_FAULTS, "fault"),
            modes=_csv(args.modes, MODES, "mode"),
            seed=args.seed,
            samples=args.samples,
            io_samples=args.io_samples,
            io_path=args.io_path,
            max_variants=args.max_variants,
            deep_every=args.deep_every,
            repair_crash_points=args.repair_crash_points,
            model=model,
        )
    except (SpecError, ExploreError, ValueError) as e:
        raise UsageError(str(e)) from None
    try:
        report = explore(spec, opts, progress=_Progress("explore"))
    except ExploreError as e:
        raise UsageError(str(e)) from None
    out = report.to_json()
    if report.violations and not args.no_shrink:
        first = report.violations[0]
        shrunk = shrink(spec, opts, first.invariant)
        if shrunk is not None:
            small, violation = shrunk
            out["reproducer"] = {"workload": small.to_dict(), "violation": violation.to_json()}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(
            f"{report.ops} operations, {report.points} crash points, {report.states} crash states "
            f"in {report.elapsed:.2f} s ({report.states_per_second:.0f} states/s), "
            f"{len(report.violations)} violations"
        )
        grouped: dict[str, int] = {}
        for fault, n in report.by_fault.items():  # eio_write@12+process_crash -> eio_write
            kind = fault.partition("@")[0]
            grouped[kind] = grouped.get(kind, 0) + n
        for fault, n in sorted(grouped.items()):
            print(f"  {fault}: {n}")
        for v in report.violations[:10]:
            print(f"  {v}")
        if "reproducer" in out:
            print(f"  smallest reproducer: {json.dumps(out['reproducer']['workload'])}")
    return 1 if report.violations else 0


def _inject(args: argparse.Namespace) -> int:
    if args.list:
        for name, doc in describe_faults():
            print(f"{name}\t{doc}")
        return 0
    if args.path is None or args.fault is None:
        raise UsageError("inject needs PATH and --fault KIND (or --list)")
    try:
        damage = inject(args.path, args.fault, args.seed, out=args.out, in_place=args.in_place)
    except (InjectError, OSError) as e:
        raise UsageError(str(e)) from None
    if args.json:
        print(json.dumps([d.to_json() for d in damage], indent=2))
    else:
        for d in damage:
            print(f"{d.fault}: {d.file} @{d.position}+{d.length}: {d.detail}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="logsim", description="Crash simulator for Kafka log directories.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = sub.add_parser("run", help="run scenario files (exit 1 on any unexpected violation)")
    run.add_argument("paths", nargs="+", metavar="SCENARIO_OR_DIR")
    run.add_argument("--seed", type=int, help="override every scenario's seed")
    run.add_argument("--no-shrink", action="store_true", help="do not shrink failing scenarios")
    run.add_argument("--json", action="store_true")
    run.set_defaults(func=_run)

    ex = sub.add_parser("explore", help="crash a workload at every operation under every fault")
    ex.add_argument("--appends", type=int, default=40)
    ex.add_argument("--partitions", type=int, default=1)
    ex.add_argument("--max-records", type=int, default=4)
    ex.add_argument("--min-record-bytes", type=int, default=16)
    ex.add_argument("--max-record-bytes", type=int, default=120)
    ex.add_argument("--keys", type=int, default=0)
    ex.add_argument("--codecs", default="none", help="comma-separated, or all")
    ex.add_argument("--transactions", type=float, default=0.0)
    ex.add_argument("--segment-bytes", type=int, default=2048)
    ex.add_argument("--flush-messages", type=int)
    ex.add_argument("--flush-every", type=int, default=8)
    ex.add_argument("--checkpoint-every", type=int, default=8)
    ex.add_argument("--retention-bytes", type=int, default=-1)
    ex.add_argument("--retention-every", type=int, default=0)
    ex.add_argument("--truncate-every", type=int, default=0)
    ex.add_argument("--preallocate", action="store_true")
    ex.add_argument("--leader-epoch-every", type=int, default=0)
    ex.add_argument("--compact-at-end", action="store_true")
    ex.add_argument("--clean-shutdown", action="store_true")
    ex.add_argument("--faults", default=",".join(CRASH_FAULTS), help="comma-separated, or all")
    ex.add_argument("--modes", default="kafka", help="comma-separated, or all")
    ex.add_argument("--seed", type=int, default=0)
    ex.add_argument("--samples", type=int, help="random crash points instead of every operation")
    ex.add_argument("--io-samples", type=int, default=20, help="armed calls per I/O fault kind")
    ex.add_argument("--io-path", default="", help="arm I/O faults only on paths containing this")
    ex.add_argument("--max-variants", type=int, help="variants per fault and crash point")
    ex.add_argument("--deep-every", type=int, default=0, help="idempotence/undo/repair checks")
    ex.add_argument("--repair-crash-points", type=int, help="repair ops to crash at (default all)")
    ex.add_argument("--sector-size", type=int, default=512)
    ex.add_argument(
        "--ordered-size", action="store_true", help="sizes never reach disk before data"
    )
    ex.add_argument("--no-reorder", action="store_true")
    ex.add_argument("--non-atomic-rename", action="store_true")
    ex.add_argument("--no-shrink", action="store_true", help="do not shrink the first violation")
    ex.add_argument("--json", action="store_true")
    ex.set_defaults(func=_explore)

    inj = sub.add_parser("inject", help="damage a copy of a real log dir")
    inj.add_argument("path", nargs="?", metavar="PATH")
    inj.add_argument("--fault", choices=list(INJECT_FAULTS), metavar="KIND")
    inj.add_argument("--seed", type=int, default=0)
    inj.add_argument("--out", metavar="COPY")
    inj.add_argument("--in-place", action="store_true")
    inj.add_argument("--list", action="store_true", help="print the fault kinds")
    inj.add_argument("--json", action="store_true")
    inj.set_defaults(func=_inject)

    serve_cli.add_parsers(sub, UsageError)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return args.func(args)
    except UsageError as e:
        print(f"logsim: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (`| head`): nothing left to say
        return 0
    except KeyboardInterrupt:
        print("logsim: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # a bug in logsim, not a finding: still one line, and a way to see more
        if os.environ.get("LOGREPAIR_DEBUG"):
            import traceback

            traceback.print_exc()
        print(
            f"logsim: internal error: {type(e).__name__}: {e} (LOGREPAIR_DEBUG=1 shows where)",
            file=sys.stderr,
        )
        return 2


if __name__ == "__main__":
    sys.exit(main())
