"""Deep verify vs shallow verify vs kafka-python iterating the same records.

Writes one partition of uncompressed v2 batches (`--size` bytes, `--batch-bytes` a batch, 200-byte
values, as bench/repair.py writes them) and measures, as CPU seconds of this process (best of
`--runs`):

- shallow verify: `scan_path` as `logrepair verify` runs it (batches framed and CRC-checked,
  indexes held against them, no record decoded);
- deep verify: the same with `--deep-iteration` (every record decoded and checked; in C when the
  accelerator is built, which the output says);
- kafka-python: `MemoryRecords` over the same `.log` bytes, every record iterated, as a consumer
  decodes them (on the first `--kafka-python-bytes`, scaled by records/s: it is slow).

The ratios are what `--deep-iteration` costs over the shallow scan, and how it compares with a
client library reading the same records.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from logrepair.format.batch import ACCELERATED
from logrepair.recovery.scan import scan_path
from logrepair.recovery.settings import Settings
from logrepair.storage import layout
from logrepair.storage.osdisk import OsDisk

from .format_walk import kafka_python_records
from .repair import MiB, parse_size, write_partition


def _cpu(fn) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench deep_verify", description=__doc__)
    ap.add_argument("--size", type=parse_size, default=parse_size("64M"))
    ap.add_argument("--batch-bytes", type=int, default=16 * 1024)
    ap.add_argument("--kafka-python-bytes", type=parse_size, default=parse_size("8M"))
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)
    disk = OsDisk()
    with tempfile.TemporaryDirectory(prefix="bench-deep-") as root:
        pdir = os.path.join(root, "t-0")
        count, step = write_partition(pdir, args.size, args.batch_bytes)
        size = count * step
        records = count * max(1, args.batch_bytes // 220)
        shallow = min(_cpu(lambda: scan_path(disk, pdir, Settings())) for _ in range(args.runs))
        deep_settings = Settings(deep_iteration=True)
        scans = []
        deep = min(
            _cpu(lambda: scans.append(scan_path(disk, pdir, deep_settings)))
            for _ in range(args.runs)
        )
        assert all(s.clean for s in scans)
        log = os.path.join(pdir, layout.log_file_name(0))
        kp = min(
            kafka_python_records(log, min(size, args.kafka_python_bytes))
            for _ in range(max(1, args.runs - 1))
        )
        kp_rate = kp[0] / kp[1]  # records/s
    rows = [
        ("shallow verify", shallow, records / shallow),
        (
            f"deep verify ({'C accelerator' if ACCELERATED else 'pure Python'})",
            deep,
            records / deep,
        ),
        ("kafka-python record iteration", records / kp_rate, kp_rate),
    ]
    print(
        f"{size / MiB:.0f} MiB, {count:,} batches of {step:,} bytes, {records:,} records "
        f"(kafka-python on the first {min(size, args.kafka_python_bytes) / MiB:.0f} MiB)"
    )
    for name, seconds, rate in rows:
        print(
            f"  {name:<34} {size / MiB / seconds:9.0f} MiB/s {rate / 1e6:8.2f} M records/s "
            f"{seconds / shallow:7.2f}x shallow time"
        )
    print(
        f"deep costs {deep / shallow:.2f}x shallow; deep reads records "
        f"{(records / deep) / kp_rate:.1f}x as fast as kafka-python"
    )
    return 0
