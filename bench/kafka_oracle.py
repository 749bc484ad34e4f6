"""logrepair against Apache Kafka itself: kafka-mode repair vs Kafka's own recovery, verify vs
Kafka's DumpLogSegments, on the same 1 GiB unclean partition.

Writes one partition of `--size` bytes (default 1 GiB) of uncompressed v2 batches of `--batch`
bytes in one segment (bench/repair.py's writer), with the recovery point checkpointed at 0 and
half of the last batch torn off: a broker killed before it flushed anything. Then, on two copies:

- Kafka's recovery: the Kafka-oracle harness's `recover` (tests/kafka: `UnifiedLog.create` as
  LogManager calls it at an unclean start, Kafka 4.1.1 in-process), timed inside the JVM; the
  JVM's start-up and class loading (the rest of the command's wall time) reported apart;
- `logrepair repair --mode kafka` on the other copy (in a child process, bench/repair.py's);
- the two results checked equal (`.log` bytes, log end offset) before any figure is printed;
- Kafka's `DumpLogSegments --files` (no deep iteration), wall time less its start-up (measured on a
  one-batch file), vs `logrepair verify` of the partition: both read every batch header and check
  its CRC.

Ratios are throughputs (bytes of log per wall second; the JVM reads through the page cache as
we do), logrepair's over Kafka's: above 1 means logrepair is faster.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.repair import MiB, child, parse_size, write_partition
from logrepair.storage import layout

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.kafka import harness  # noqa: E402  (the test-only oracle, built by Maven on first use)


def make_unclean(root: str, size: int, batch_bytes: int) -> tuple[str, int]:
    """The log dir of one torn partition; returns it and the bytes a recovery must cut."""
    log_dir = os.path.join(root, "kafka-logs")
    pdir = os.path.join(log_dir, "bench-0")
    _, step = write_partition(pdir, size, batch_bytes)
    with open(os.path.join(log_dir, layout.RECOVERY_POINT_CHECKPOINT), "w") as f:
        f.write("0\n1\nbench 0 0\n")
    log = os.path.join(pdir, layout.log_file_name(0))
    os.truncate(log, os.path.getsize(log) - step // 2)
    return log_dir, step - step // 2


def kafka_recover(pdir: str) -> dict:
    start = time.perf_counter()
    answer = harness.run_json("recover", pdir, "--from-log-dir")
    answer["wall"] = time.perf_counter() - start
    answer["seconds"] = answer["elapsed_ns"] / 1e9
    if answer["error"] is not None:
        raise RuntimeError(f"Kafka's recovery failed: {answer['error']}")
    return answer


def dump_log_segments(log: str) -> float:
    """Wall seconds of Kafka's `DumpLogSegments --files LOG` (batch lines to /dev/null)."""
    start = time.perf_counter()
    subprocess.run(
        harness.java_command("kafka.tools.DumpLogSegments", "--files", log),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    return time.perf_counter() - start


def measure(root: str, size: int, batch_bytes: int, runs: int) -> dict:
    harness.ensure_built()
    source, cut = make_unclean(os.path.join(root, "source"), size, batch_bytes)
    log = os.path.join(source, "bench-0", layout.log_file_name(0))
    real = os.path.getsize(log)
    tiny = os.path.join(root, "tiny")
    write_partition(tiny, 1, batch_bytes)
    dump_start = min(
        dump_log_segments(os.path.join(tiny, layout.log_file_name(0))) for _ in range(2)
    )
    child("validate", log)  # warm the page cache for every reader alike
    verify = min((child("verify", source) for _ in range(runs)), key=lambda r: r["wall"])
    dump = min(dump_log_segments(log) for _ in range(runs)) - dump_start
    kafka, ours = [], []
    for n in range(runs):
        theirs_dir, ours_dir = os.path.join(root, f"k{n}"), os.path.join(root, f"o{n}")
        shutil.copytree(source, theirs_dir)
        shutil.copytree(source, ours_dir)
        child("validate", os.path.join(theirs_dir, "bench-0", layout.log_file_name(0)))
        kafka.append(kafka_recover(os.path.join(theirs_dir, "bench-0")))
        ours.append(child("kafka", ours_dir))
        k_log = Path(theirs_dir, "bench-0", layout.log_file_name(0))
        o_log = Path(ours_dir, "bench-0", layout.log_file_name(0))
        if k_log.stat().st_size != real - cut or not _same_file(k_log, o_log):
            raise AssertionError("Kafka's recovery and logrepair's repair left different logs")
        shutil.rmtree(theirs_dir)
        shutil.rmtree(ours_dir)
        shutil.rmtree(ours_dir + ".logrepair-quarantine", ignore_errors=True)
    best_kafka = min(kafka, key=lambda r: r["seconds"])
    best_ours = min(ours, key=lambda r: r["wall"])
    return {
        "bytes": real,
        "kafka_recover_s": best_kafka["seconds"],
        "kafka_jvm_start_s": best_kafka["wall"] - best_kafka["seconds"],
        "logrepair_repair_wall_s": best_ours["wall"],
        "logrepair_repair_cpu_s": best_ours["seconds"],
        "repair_ratio": best_kafka["seconds"] / best_ours["wall"],
        "dump_log_segments_s": dump,
        "dump_jvm_start_s": dump_start,
        "logrepair_verify_wall_s": verify["wall"],
        "verify_ratio": dump / verify["wall"],
    }


def _same_file(a: Path, b: Path) -> bool:
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            x, y = fa.read(8 * MiB), fb.read(8 * MiB)
            if x != y:
                return False
            if not x:
                return True


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench kafka_oracle", description=__doc__.splitlines()[0]
    )
    p.add_argument("--size", default="1G", help="partition size (default 1G; 64M for a quick run)")
    p.add_argument("--batch", default="16K", help="batch size (default 16K)")
    p.add_argument("--runs", type=int, default=2, help="best of N (default 2)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    try:
        harness.ensure_built()
    except harness.HarnessUnavailable as e:
        print(f"kafka_oracle: {e}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="bench-kafka-oracle-") as root:
        r = measure(root, parse_size(args.size), parse_size(args.batch), args.runs)
    if args.json:
        print(json.dumps(r))
        return 0
    mib = r["bytes"] / MiB
    print(
        f"partition: {mib:.0f} MiB, recovery point 0, torn last batch (Kafka {harness.kafka_version()})"
    )
    print(
        f"Kafka recovery      {r['kafka_recover_s']:.2f} s  {mib / r['kafka_recover_s']:.0f} MiB/s"
        f"  (+ JVM start-up {r['kafka_jvm_start_s']:.2f} s, apart)"
    )
    print(
        f"logrepair --mode kafka {r['logrepair_repair_wall_s']:.2f} s wall "
        f"({r['logrepair_repair_cpu_s']:.2f} s CPU)  {mib / r['logrepair_repair_wall_s']:.0f} MiB/s"
    )
    print(f"  ratio (logrepair / Kafka throughput): {r['repair_ratio']:.2f}x")
    print(
        f"DumpLogSegments     {r['dump_log_segments_s']:.2f} s  "
        f"(+ JVM start-up {r['dump_jvm_start_s']:.2f} s, apart)"
    )
    print(f"logrepair verify    {r['logrepair_verify_wall_s']:.2f} s wall")
    print(f"  ratio (logrepair / Kafka throughput): {r['verify_ratio']:.2f}x")
    return 0
