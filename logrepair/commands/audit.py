"""`logrepair audit PATH...`: checkpoints held against the data, replicas against each other."""

from __future__ import annotations

import argparse
import json
import re
import sys

from .. import json_out, pool
from ..audit.discovery import DiscoveryError, discover
from ..audit.errors import SummaryError
from ..audit.local import DEFAULT_RECOVERY_RATE, audit_paths
from ..audit.model import AuditReport
from ..audit.report import format_bytes
from ..cli import InputError
from ..storage.layout import LOCK_FILE
from ..storage.logdir import lock_note
from ..storage.osdisk import OsDisk
from ._recovery_options import add_jobs_option

_MASTER = re.compile(r"local(\[[0-9*]+(,[0-9]+)?\])?|(spark|k8s|mesos)://.+|yarn")
_UNITS = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "ki": 2**10, "mi": 2**20, "gi": 2**30}


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "audit",
        help="hold checkpoints, leader epochs and consumer offsets against the data; compare "
        "replicas",
        description="Audit Kafka log dirs: recovery points, high watermarks, log start offsets "
        "and leader epochs against what the segments hold; how much an unclean start would "
        "recover; committed consumer offsets; meta.properties; replicas compared batch by batch. "
        "Exit 1 on findings.",
    )
    p.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="a broker's log dir, a partition dir, or a folder with one sub-folder per broker",
    )
    p.add_argument("--json", action="store_true", help="print the audit as one JSON object")
    p.add_argument(
        "--recovery-rate",
        default=f"{DEFAULT_RECOVERY_RATE // 2**20}MiB",
        metavar="RATE",
        help="bytes per second one recovery thread re-reads, for the recovery-time estimate "
        "(default: %(default)s; units k, M, G, KiB, MiB, GiB)",
    )
    p.add_argument("--report", metavar="FILE.html", help="also write a self-contained HTML report")
    add_jobs_option(p, "partitions (with --summaries-out: segments)")
    add_spark_option(
        p, "run on Spark", "(with PATHs, every executor must see them at the same place)"
    )
    p.add_argument("--out", metavar="DIR", help="with --spark: write the tables as Parquet here")
    p.add_argument(
        "--summaries-out",
        metavar="DEST",
        help="scan the PATHs of this broker and write its scan summary (Parquet) under DEST, a "
        "folder or a URI (file://, s3://, hdfs://), for a fleet audit with --from-summaries",
    )
    p.add_argument(
        "--broker",
        metavar="NAME",
        help="with --summaries-out: this broker's label (default: node-<node.id> from "
        "meta.properties, else the log dir's path)",
    )
    p.add_argument(
        "--full-rescan",
        action="store_true",
        help="with --summaries-out: scan every segment, even those unchanged since the last summary",
    )
    p.add_argument(
        "--from-summaries",
        nargs="+",
        metavar="SRC",
        help="with --spark: audit the fleet from the summaries under SRC (the DEST of "
        "--summaries-out runs) instead of reading log dirs",
    )
    p.set_defaults(run=run)


def add_spark_option(p: argparse.ArgumentParser, what: str, note: str = "") -> None:
    """`--spark [MASTER]`: the default master when given alone (see `is_master`)."""
    p.add_argument(
        "--spark",
        nargs="?",
        const="",
        default=None,
        metavar="MASTER",
        help=f"{what}: local[*] by default, or a master URL such as spark://host:7077 {note}".strip(),
    )


def require(module: str, what: str) -> None:
    """An optional dependency (the `spark` extra), or one clear line saying how to get it."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise InputError(
            f"logrepair: {what} needs the Python package {module}: pip install 'logrepair[spark]'"
        )


def is_master(text: str) -> bool:
    """Whether `--spark`'s value is a master URL rather than the first PATH."""
    return _MASTER.fullmatch(text) is not None


def parse_rate(text: str) -> int:
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([kmgKMG]i?)?[bB]?(?:/s)?\s*", text)
    if not m:
        raise InputError(f"logrepair audit: --recovery-rate: not a rate: {text!r}")
    rate = int(float(m.group(1)) * _UNITS[(m.group(2) or "").lower()])
    if rate <= 0:
        raise InputError("logrepair audit: --recovery-rate must be positive")
    return rate


def run(args: argparse.Namespace) -> int:
    rate = parse_rate(args.recovery_rate)
    paths = list(args.paths)
    master = args.spark
    if master and not is_master(master):
        paths.insert(0, master)  # `--spark PATH ...`: the default master
        master = ""
    _check_modes(args, paths, master)
    if args.summaries_out:
        return write_summaries_command(args, paths)
    if args.report:
        require("matplotlib", "--report")
    if master is not None:
        require("pyspark", "--spark")
    try:
        if master is None:
            report = audit_paths(paths, recovery_rate=rate, partitions=pool.mapper(args.jobs))
        else:
            from ..audit.spark import audit_paths_spark, spark_session

            if args.from_summaries:  # refused in one line before Spark starts
                require("pyarrow", "--from-summaries")
                from ..audit.summary_store import read_manifests

                read_manifests(args.from_summaries)
            spark = spark_session(master or None, app_name="logrepair-audit")
            try:
                if args.from_summaries:
                    from ..audit.spark_summaries import audit_summaries_spark

                    report = audit_summaries_spark(
                        spark, args.from_summaries, recovery_rate=rate, out=args.out
                    )
                else:
                    report = audit_paths_spark(spark, paths, recovery_rate=rate, out=args.out)
            finally:
                spark.stop()
    except (DiscoveryError, SummaryError) as e:
        raise InputError(f"logrepair audit: {e}") from None
    if args.report:
        from ..audit.report import render_html

        with open(args.report, "w", encoding="utf-8") as f:
            f.write(render_html(report))
    locks = {d.path: lock_note(OsDisk(), f"{d.path}/{LOCK_FILE}") for d in report.log_dirs}
    if args.json:
        data = report.to_json()
        for d in data["log_dirs"]:
            d["locked_by_other_process"] = locks[d["path"]][0]
        sys.stdout.write(json_out.dumps(data) + "\n")  # one write, not one per token
    else:
        print_table(report)
        for _, note in locks.values():
            if note:
                sys.stdout.write(f"note: {note}\n")
    return 0 if report.clean else 1


def _check_modes(args: argparse.Namespace, paths: list[str], master: str | None) -> None:
    """The three ways to run: PATHs (here or on Spark), PATHs --summaries-out, --spark
    --from-summaries; one line for any other combination."""
    if args.from_summaries:
        if master is None:
            raise InputError("logrepair audit: --from-summaries needs --spark")
        if paths:
            raise InputError(
                f"logrepair audit: --from-summaries reads summaries, not PATHs: {paths[0]}"
            )
    elif not paths:
        raise InputError("logrepair audit: at least one PATH is required")
    if args.out and master is None:
        raise InputError("logrepair audit: --out needs --spark")
    if args.jobs is not None and master is not None:
        raise InputError(
            "logrepair audit: --jobs is for the audit on this machine; on Spark the master sets "
            "the parallelism (local[N] for N cores here)"
        )
    if args.summaries_out:
        clash = [
            flag
            for flag, given in (("--spark", master is not None), ("--report", args.report))
            if given
        ]
        if clash:
            raise InputError(
                f"logrepair audit: --summaries-out writes this broker's summary; {clash[0]} "
                "belongs to the fleet audit (--spark --from-summaries)"
            )
    elif args.broker is not None or args.full_rescan:
        raise InputError("logrepair audit: --broker and --full-rescan need --summaries-out")


def write_summaries_command(args: argparse.Namespace, paths: list[str]) -> int:
    """`audit PATH... --summaries-out DEST`: exit 0 once every broker's summary is in place."""
    require("pyarrow", "--summaries-out")
    segments = pool.mapper(args.jobs)
    try:
        # pyarrow (0.15-0.4 s) loads while the log dirs are found: beside the workers, which list
        # the partition dirs meanwhile, not before them
        with pool.importing("logrepair.audit.summary_writer"):
            plans = discover(OsDisk(), paths, segments)
        from ..audit.summary_writer import write_summaries

        written = write_summaries(
            paths,
            args.summaries_out,
            broker=args.broker,
            full_rescan=args.full_rescan,
            segments=segments,
            plans=plans,
        )
    except (DiscoveryError, SummaryError) as e:
        raise InputError(f"logrepair audit: {e}") from None
    if args.json:
        json.dump({"summaries": [w.to_json() for w in written]}, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    for w in written:
        share = f" ({100 * w.summary_bytes / w.log_bytes:.2f}% of it)" if w.log_bytes else ""
        print(
            f"{w.broker} (cluster {w.cluster}): {w.partitions} partitions in {w.log_dirs} log "
            f"dirs, {w.segments} segments ({w.scanned} scanned, {w.segments - w.scanned} "
            f"unchanged since the last summary), {format_bytes(w.log_bytes)} of log → "
            f"{format_bytes(w.summary_bytes)} of summary{share} in {w.path}"
        )
    return 0


def print_table(report: AuditReport) -> None:
    out = sys.stdout
    rows = [("LOG DIR", "BROKER", "CLEAN", "PARTS", "UNFLUSHED", "RECOVERY", "EST.")]
    for d in report.log_dirs:
        rows.append(
            (
                d.path,
                d.broker,
                "yes" if d.clean_shutdown else "no",
                str(d.partitions),
                format_bytes(d.unflushed_bytes),
                format_bytes(d.recovery_bytes),
                f"{d.recovery_seconds:.1f}s",
            )
        )
    _print_rows(rows, out)
    shown = [p for p in report.partitions if p.findings or p.unflushed_bytes]
    if shown:
        out.write("\n")
        rows = [("PARTITION", "BROKER", "STATE", "LSO", "LEO", "RP", "HW", "UNFLUSHED", "FINDINGS")]
        for p in shown:
            rows.append(
                (
                    f"{p.topic}-{p.partition}",
                    p.broker,
                    p.state,
                    str(p.log_start_offset),
                    str(p.log_end_offset),
                    _opt(p.recovery_point),
                    _opt(p.high_watermark),
                    format_bytes(p.unflushed_bytes),
                    ",".join(sorted({f.kind for f in p.findings})) or "-",
                )
            )
        _print_rows(rows, out)
    differing = [r for r in report.replicas if r.findings]
    if differing:
        out.write("\n")
        rows = [("REPLICAS", "BROKERS", "LOG ENDS", "HIGH WATERMARKS", "DIVERGED AT")]
        for r in differing:
            rows.append(
                (
                    f"{r.topic}-{r.partition}",
                    ",".join(r.brokers),
                    ",".join(map(str, r.log_end_offsets)),
                    ",".join(_opt(h) for h in r.high_watermarks),
                    _opt(r.diverged_at),
                )
            )
        _print_rows(rows, out)
    found = report.all_findings()
    if found:
        out.write("\n")
        for scope, where, f in found:
            out.write(f"{f.kind}: {where or scope}: {f.detail}\n")
    out.write(
        f"\n{len(report.partitions)} partitions in {len(report.log_dirs)} log dirs, "
        f"{len(report.replicas)} replicated: "
        + (
            "clean\n"
            if not found
            else f"clean ({len(found)} notices)\n"
            if report.clean
            else f"{len(found)} findings\n"
        )
    )


def _print_rows(rows: list[tuple[str, ...]], out) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        out.write("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() + "\n")


def _opt(v: int | None) -> str:
    return "-" if v is None else str(v)
