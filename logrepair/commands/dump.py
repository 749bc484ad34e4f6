"""`logrepair dump FILE...`: kafka-dump-log's view of segment files, defect-tolerant.

Exit status: 0 when every file read cleanly, 1 when a damaged region (or a failed sanity check, an
unreadable snapshot or transaction index) was reported, 2 for unusable input.
"""

from __future__ import annotations

import argparse
import sys

from ..cli import InputError
from ..dump import DumpOptions, DumpReport, UnusableFile, check_file, dump_file
from ..dump.report import DEFAULT_MAX_BYTES, DEFAULT_MAX_MESSAGE_SIZE
from ..storage.osdisk import OsDisk


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not 0 < value <= 2**31 - 1:
        raise argparse.ArgumentTypeError(f"must be between 1 and 2147483647: {value}")
    return value


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "dump",
        help="print the batches, records and index entries of segment files, as kafka-dump-log",
        description=(
            "Print segment files (.log, .index, .timeindex, .txnindex, .snapshot, KRaft "
            ".checkpoint) with kafka-dump-log's lines. Damaged regions of a .log are reported as "
            "defects and the dump goes on past them."
        ),
    )
    p.add_argument("files", nargs="*", metavar="FILE", help="files to dump, in this order")
    p.add_argument(
        "--files",
        dest="file_list",
        action="append",
        default=[],
        metavar="FILE,...",
        help="kafka-dump-log's form of the file list: comma-separated paths",
    )
    p.add_argument(
        "--deep-iteration", action="store_true", help="print every record, not only batches"
    )
    p.add_argument(
        "--print-data-log",
        action="store_true",
        help="print record keys and values (implies --deep-iteration)",
    )
    p.add_argument(
        "--skip-record-metadata",
        action="store_true",
        help="leave out the offset/timestamp/size part of record lines",
    )
    p.add_argument(
        "--index-sanity-check",
        action="store_true",
        help="for .index/.timeindex files: only run Kafka's sanity check",
    )
    p.add_argument(
        "--verify-index-only",
        action="store_true",
        help="for .index/.timeindex files: check entries against the log without printing them",
    )
    p.add_argument(
        "--max-message-size",
        type=_positive_int,
        default=DEFAULT_MAX_MESSAGE_SIZE,
        metavar="BYTES",
        help="bytes read at each .index entry to check it (default %(default)s)",
    )
    p.add_argument(
        "--max-bytes",
        type=_positive_int,
        default=DEFAULT_MAX_BYTES,
        metavar="BYTES",
        help="read at most this many bytes of a .log (default %(default)s)",
    )
    decoders = p.add_mutually_exclusive_group()
    decoders.add_argument(
        "--offsets-decoder",
        action="store_true",
        help="decode __consumer_offsets records (implies --print-data-log)",
    )
    decoders.add_argument(
        "--transaction-log-decoder",
        action="store_true",
        help="decode __transaction_state records (implies --print-data-log)",
    )
    p.add_argument(
        "--json", action="store_true", help="JSON Lines on stdout: one object per batch or entry"
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    decoder = (
        "offsets"
        if args.offsets_decoder
        else "transaction-log"
        if args.transaction_log_decoder
        else None
    )
    opts = DumpOptions(
        deep=args.deep_iteration,
        print_data=args.print_data_log,
        skip_record_metadata=args.skip_record_metadata,
        verify_index_only=args.verify_index_only,
        index_sanity_check=args.index_sanity_check,
        max_message_size=args.max_message_size,
        max_bytes=args.max_bytes,
        decoder=decoder,
        json=args.json,
    )
    files = [*args.files, *(p for group in args.file_list for p in group.split(",") if p)]
    if not files:
        raise InputError("logrepair dump: no files given")
    disk = OsDisk()
    for path in files:
        try:
            check_file(disk, path)
        except UnusableFile as e:
            raise InputError(f"logrepair dump: {e}") from None
    report = DumpReport(sys.stdout, sys.stderr)
    try:
        for path in files:
            dump_file(disk, path, opts, report)
    finally:
        report.flush()
        sys.stdout.flush()
        report.finish()
    return 1 if report.defects else 0
