"""`logrepair audit PATH...`: checkpoints held against the data, replicas against each other."""

from __future__ import annotations

import argparse
import json
import re
import sys

from ..audit.discovery import DiscoveryError
from ..audit.local import DEFAULT_RECOVERY_RATE, audit_paths
from ..audit.model import AuditReport
from ..audit.report import format_bytes
from ..cli import InputError

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
    add_spark_option(p, "run on Spark", "(every executor must see the PATHs at the same place)")
    p.add_argument("--out", metavar="DIR", help="with --spark: write the tables as Parquet here")
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
    if not paths:
        raise InputError("logrepair audit: at least one PATH is required")
    if args.out and master is None:
        raise InputError("logrepair audit: --out needs --spark")
    if args.report:
        require("matplotlib", "--report")
    if master is not None:
        require("pyspark", "--spark")
    try:
        if master is None:
            report = audit_paths(paths, recovery_rate=rate)
        else:
            from ..audit.spark import audit_paths_spark, spark_session

            spark = spark_session(master or None, app_name="logrepair-audit")
            try:
                report = audit_paths_spark(spark, paths, recovery_rate=rate, out=args.out)
            finally:
                spark.stop()
    except DiscoveryError as e:
        raise InputError(f"logrepair audit: {e}") from None
    if args.report:
        from ..audit.report import render_html

        with open(args.report, "w", encoding="utf-8") as f:
            f.write(render_html(report))
    if args.json:
        json.dump(report.to_json(), sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print_table(report)
    return 0 if report.clean else 1


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
