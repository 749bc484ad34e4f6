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
import textwrap
from collections.abc import Sequence

from logrepair import __version__
from logrepair.recovery import notation
from simulator.argtypes import int_in
from simulator.disk import PersistenceModel
from simulator.explore import ALL_FAULTS, ExploreError, ExploreOptions, explore, shrink
from simulator.faults import CRASH_FAULTS
from simulator.heal_explore import HealOptions, explore_heal
from simulator.inject import INJECT_FAULTS, InjectError, describe_faults, inject
from simulator.repair import MODES
from simulator.replicas import ReplicaSpec
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
            shown = str(len(r.report.violations))
            expected = len(r.report.violations) - len(r.unexpected)
            if expected:
                shown += f" ({expected} expected: {', '.join(r.expected_seen)})"
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
                    shown,
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
            print(f"{d.fault}: {d.file} {notation.at(d.position, d.length)}: {d.detail}")
    return 0


def _replicas(args: argparse.Namespace) -> int:
    spec = ReplicaSpec(
        appends=args.appends,
        seed=args.seed,
        unclean_at=args.unclean_at,
        leader_every=0 if args.unclean_at else args.leader_every,
    )
    faults = _csv(args.faults, tuple(CRASH_FAULTS), "fault")
    report = explore_heal(spec, HealOptions(faults=faults, samples=args.samples, seed=args.seed))
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        f = report.figures()
        print(f"{f['crash_states']} crash states, {f['damaged_cases']} damaged broker copies")
        for mode in ("heal", "kafka", "salvage"):
            share = f["lossless_share"][mode]
            print(
                f"  {mode:<8} lost nothing acknowledged in {f['lossless'][mode]} "
                f"({'-' if share is None else f'{share:.1%}'}), acknowledged offsets lost: "
                f"{f['acknowledged_offsets_lost'][mode]}"
            )
        print(f"  invariant violations: {len(report.violations)}")
        for v in report.violations[:5]:
            print(f"  {v}")
    return 1 if report.violations else 0


def _explore_parser(sub) -> None:
    ex = sub.add_parser(
        "explore",
        help="crash a workload at every operation under every fault",
        description="Run a workload on the simulated disk, crash it just after every disk "
        "operation (or at --samples random ones), build the disk images each fault could leave, "
        "repair each in every --modes mode and check the invariants.",
    )
    w = ex.add_argument_group("workload (what is written before the crash)")
    w.add_argument("--appends", type=int, default=40, help="batches appended (default 40)")
    w.add_argument("--partitions", type=int, default=1, help="partitions written (default 1)")
    w.add_argument(
        "--max-records", type=int, default=4, help="records per batch, 1 to N (default 4)"
    )
    w.add_argument(
        "--min-record-bytes", type=int, default=16, help="smallest record value, bytes (default 16)"
    )
    w.add_argument(
        "--max-record-bytes",
        type=int,
        default=120,
        help="largest record value, bytes (default 120)",
    )
    w.add_argument(
        "--keys",
        type=int,
        default=0,
        help="size of the key space; 0: records without keys (default 0)",
    )
    w.add_argument(
        "--codecs",
        default="none",
        help="compression codecs to pick from: none, gzip, snappy, lz4, zstd, comma-separated, "
        "or all (default none)",
    )
    w.add_argument(
        "--transactions",
        type=float,
        default=0.0,
        help="share of appends made in a transaction, 0 to 1, each ended by a COMMIT or ABORT "
        "marker (default 0)",
    )
    w.add_argument(
        "--segment-bytes", type=int, default=2048, help="segment.bytes: roll size (default 2048)"
    )
    w.add_argument(
        "--flush-messages",
        type=int,
        help="flush.messages: the log flushes itself after this many records (default: never)",
    )
    w.add_argument(
        "--flush-every",
        type=int,
        default=8,
        help="an explicit flush of every log after this many appends; 0: never (default 8)",
    )
    w.add_argument(
        "--checkpoint-every",
        type=int,
        default=8,
        help="recovery-point, log-start and high-watermark checkpoints written after this many "
        "appends; 0: never (default 8)",
    )
    w.add_argument(
        "--retention-bytes",
        type=int,
        default=-1,
        help="retention.bytes per partition; -1: unlimited (default -1)",
    )
    w.add_argument(
        "--retention-every",
        type=int,
        default=0,
        help="retention runs after this many appends; 0: never (default 0)",
    )
    w.add_argument(
        "--truncate-every",
        type=int,
        default=0,
        help="a follower truncation to a few offsets below the log end after this many appends; "
        "0: never (default 0)",
    )
    w.add_argument(
        "--preallocate", action="store_true", help="preallocate segment files (file.preallocate)"
    )
    w.add_argument(
        "--leader-epoch-every",
        type=int,
        default=0,
        help="a new leader epoch after this many appends; 0: epoch 0 throughout (default 0)",
    )
    w.add_argument(
        "--compact-at-end",
        action="store_true",
        help="finish with a log-cleaner replacement of partition 0's oldest segment",
    )
    w.add_argument(
        "--clean-shutdown",
        action="store_true",
        help="finish with a clean shutdown (writes .kafka_cleanshutdown)",
    )
    c = ex.add_argument_group("crashes and repairs")
    c.add_argument(
        "--faults",
        default=",".join(CRASH_FAULTS),
        help=f"crash and I/O faults, comma-separated, or all: {', '.join(ALL_FAULTS)} "
        f"(default {','.join(CRASH_FAULTS)})",
    )
    c.add_argument(
        "--modes",
        default="kafka",
        help=f"repair modes checked, comma-separated, or all: {', '.join(MODES)} (default kafka)",
    )
    c.add_argument(
        "--seed", type=int, default=0, help="seed of the workload and the faults (default 0)"
    )
    c.add_argument(
        "--samples",
        type=int_in(1),
        help="this many random crash points instead of every operation (default: every one)",
    )
    c.add_argument(
        "--io-samples",
        type=int,
        default=20,
        help="calls armed per I/O fault kind, at most (default 20)",
    )
    c.add_argument(
        "--io-path",
        default="",
        help="arm I/O faults only on paths containing this text (default: every path)",
    )
    c.add_argument(
        "--max-variants",
        type=int,
        help="disk images per fault and crash point, at most (default: every variant)",
    )
    c.add_argument(
        "--deep-every",
        type=int,
        default=0,
        help="every N-th state also gets the idempotence, undo and crash-during-repair checks; "
        "0: none (default 0)",
    )
    c.add_argument(
        "--repair-crash-points",
        type=int,
        help="repair operations crashed at in those checks, spread evenly (default: every one)",
    )
    d = ex.add_argument_group("persistence model (what a power loss may do)")
    d.add_argument(
        "--sector-size",
        type=int,
        default=512,
        help="sector size in bytes, 512 or 4096: the unit of torn writes (default 512)",
    )
    d.add_argument("--ordered-size", action="store_true", help="sizes never reach disk before data")
    d.add_argument(
        "--no-reorder",
        action="store_true",
        help="unsynced sectors persist in the order written",
    )
    d.add_argument(
        "--non-atomic-rename",
        action="store_true",
        help="a crash may leave a rename half done (both names)",
    )
    ex.add_argument("--no-shrink", action="store_true", help="do not shrink the first violation")
    ex.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    ex.set_defaults(func=_explore)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="logsim", description="Crash simulator for Kafka log directories.")
    parser.add_argument("--version", action="version", version=f"logsim {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = sub.add_parser(
        "run",
        help="run scenario files (exit 1 on any unexpected violation)",
        description="Run each scenario (a TOML file, or every *.toml under a directory) and "
        "print a table: crash states checked, violations (those the scenario's [expect] lists "
        "are counted and named as expected), and the verdict.",
    )
    run.add_argument("paths", nargs="+", metavar="SCENARIO_OR_DIR")
    run.add_argument("--seed", type=int, help="override every scenario's seed")
    run.add_argument("--no-shrink", action="store_true", help="do not shrink failing scenarios")
    run.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    run.set_defaults(func=_run)

    _explore_parser(sub)

    rep = sub.add_parser(
        "replicas",
        help="crash three replicating brokers, then heal each from the others and compare the "
        "loss with kafka mode and salvage",
    )
    rep.add_argument("--appends", type=int, default=60, help="leader appends (default 60)")
    rep.add_argument(
        "--samples", type=int_in(1), default=50, help="crash points sampled (default 50)"
    )
    rep.add_argument("--seed", type=int, default=0, help="workload and crash-point seed")
    rep.add_argument("--leader-every", type=int, default=15, help="appends between elections")
    rep.add_argument("--unclean-at", type=int, help="an unclean leader election after N appends")
    rep.add_argument(
        "--faults",
        default="lose_unsynced,torn_write,garbage_block,bit_rot",
        help="comma-separated crash faults, or all",
    )
    rep.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    rep.set_defaults(func=_replicas)

    inj = sub.add_parser(
        "inject",
        help="damage a copy of a real log dir",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=textwrap.fill(
            break_on_hyphens=False,
            text="Damage a real log dir or partition dir the way crashes and disks do. Give --out COPY "
            "(damage a copy; the original is untouched) or --in-place: one of the two is "
            "required. Prints each change as FILE @P+N (the N bytes from byte P, as the file now "
            "is: the README's notation) with what happened there.",
        ),
        epilog="fault kinds (--fault KIND):\n"
        + "\n".join(f"  {n:<26} {doc}" for n, doc in describe_faults()),
    )
    inj.add_argument("path", nargs="?", metavar="PATH", help="a log dir or a partition dir")
    inj.add_argument(
        "--fault", choices=list(INJECT_FAULTS), metavar="KIND", help="the fault kind (below)"
    )
    inj.add_argument(
        "--seed", type=int, default=0, help="picks the victim reproducibly (default 0)"
    )
    inj.add_argument("--out", metavar="COPY", help="damage a copy made here (must not exist)")
    inj.add_argument("--in-place", action="store_true", help="damage PATH itself")
    inj.add_argument("--list", action="store_true", help="print the fault kinds")
    inj.add_argument("--json", action="store_true", help="print the changes as JSON")
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
