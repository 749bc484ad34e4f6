"""`logrepair export PATH --out DIR`: the records of a log dir as Parquet."""

from __future__ import annotations

import argparse
import json
import sys

from ..audit.discovery import DiscoveryError
from ..cli import InputError
from .audit import add_spark_option, is_master, require


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "export",
        help="write the records of a log dir to Parquet",
        description="Write every record of the live partitions under PATH (topic, partition, "
        "offset, timestamp, key, value, headers, corrupt) to Parquet: one file per partition "
        "with pyarrow, or a Spark-written dataset with --spark.",
    )
    p.add_argument("path", nargs="?", metavar="PATH", help="a broker's log dir or a partition dir")
    p.add_argument("--out", required=True, metavar="DIR", help="where the Parquet files go")
    p.add_argument(
        "--include-corrupt",
        action="store_true",
        help="also export the records of batches that fail their CRC, flagged corrupt=true",
    )
    add_spark_option(p, "export on Spark")
    p.add_argument("--json", action="store_true", help="print a JSON summary")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.path is None and args.spark and not is_master(args.spark):
        args.path, args.spark = args.spark, ""  # `--spark PATH`: the default master
    if args.path is None:
        raise InputError("logrepair export: PATH is required")
    require("pyarrow", "export")
    if args.spark is not None:
        require("pyspark", "export --spark")
    try:
        if args.spark is None:
            from ..audit.export import export_local
            from ..storage.osdisk import OsDisk

            files, stats = export_local(
                OsDisk(), args.path, args.out, include_corrupt=args.include_corrupt
            )
            summary = {
                "out": args.out,
                "files": files,
                "records": stats.records,
                "skipped_batches": stats.skipped_batches,
            }
        else:
            from ..audit.spark import export_spark, spark_session

            spark = spark_session(args.spark or None, app_name="logrepair-export")
            try:
                segments = export_spark(
                    spark, args.path, args.out, include_corrupt=args.include_corrupt
                )
            finally:
                spark.stop()
            summary = {"out": args.out, "segments": segments}
    except DiscoveryError as e:
        raise InputError(f"logrepair export: {e}") from None
    if args.json:
        json.dump(summary, sys.stdout)
        sys.stdout.write("\n")
    else:
        print(", ".join(f"{k}: {v}" for k, v in summary.items()))
    return 0
