"""Segment walk speed and memory: shallow validation vs a bare CRC loop, deep iteration vs kafka-python.

Writes uncompressed v2 batches (a 16 KiB-batch file and a 1 KiB-batch file, `--size` bytes each,
streamed to a temp dir) and reads them through one reused window (`--window`, `os.preadv`), as a
storage scanner does. Baselines:

- bare loop: read each batch's length, CRC-32C the batch over a zero-copy slice; nothing else.
  Target: the walker's full validation at >= 0.8x its speed on 16 KiB batches, >= 0.6x on 1 KiB.
- kafka-python's `MemoryRecords` record iteration. Target: deep iteration >= 5x its records/s, both
  deep validate (every record checked) and deep decode (a `Record` per record, as kafka-python builds
  an object per record). kafka-python is slow, so it runs on the first `--kafka-python-bytes` of
  each file. Deep reading runs in C when the accelerator is built (the output says which reader is
  active; `LOGREPAIR_PURE_PYTHON=1` measures the pure-Python one).
- kafka-python again, against `logrepair dump --deep-iteration --json` of the same records (the
  first `--kafka-python-bytes`, through `--max-bytes`), run in-process with its JSON Lines going to
  /dev/null through the text stdout. Target: >= 1.5x kafka-python's records/s.
- peak RSS (`ru_maxrss` of a child process) after walking the whole file and 1/8 of it: flat.

Times are CPU seconds of this process (`time.process_time`, best of `--runs`), reads included, so
other load on a shared machine disturbs the ratios less than wall-clock time would.
"""

from __future__ import annotations

import argparse
import io
import os
import random
import resource
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import redirect_stdout

from logrepair.cli import main as logrepair_main
from logrepair.format.batch_builder import build_batch
from logrepair.format.batch_layout import Record
from logrepair.format.crc import crc32c
from logrepair.format.errors import Defect
from logrepair.format.record_codec import ACCELERATED
from logrepair.format.walker import Walker

MiB = 1024 * 1024
_SIZE = struct.Struct(">i")
_BASE_OFFSET = struct.Struct(">q")
TEMPLATES = 8


def parse_size(text: str) -> int:
    units = {"K": 1024, "M": MiB, "G": 1024 * MiB}
    text = text.strip().upper().removesuffix("B").removesuffix("I")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def templates(batch_bytes: int, seed: int) -> list[tuple[bytearray, int]]:
    """Distinct batches of about `batch_bytes`, records of 16-byte keys, ~200-byte values, a header."""
    rng = random.Random(seed)
    out = []
    for _ in range(TEMPLATES):
        records: list[Record] = []
        data = b""
        while True:
            n = len(records)
            candidate = records + [
                Record(
                    n,
                    1_700_000_000_000 + n,
                    rng.randbytes(16),
                    rng.randbytes(rng.randint(150, 250)),
                    (("trace", rng.randbytes(8)),),
                )
            ]
            built = build_batch(candidate, base_offset=0)
            if len(built) > batch_bytes and records:
                break
            records, data = candidate, built
        out.append((bytearray(data), len(records)))
    return out


def write_file(path: str, size: int, batch_bytes: int) -> tuple[int, int, int]:
    """Streams batches with continuing offsets up to `size` bytes; returns (bytes, batches, records).

    The base offset is outside the CRC, so each template is reused with only its first 8 bytes
    rewritten.
    """
    pool = templates(batch_bytes, seed=batch_bytes)
    written = batches = records = 0
    chunk = bytearray()
    with open(path, "wb") as f:
        while True:
            tmpl, count = pool[batches % TEMPLATES]
            if written + len(tmpl) > size:
                break
            _BASE_OFFSET.pack_into(tmpl, 0, records)
            chunk += tmpl
            written += len(tmpl)
            batches += 1
            records += count
            if len(chunk) >= 16 * MiB:
                f.write(chunk)
                chunk.clear()
        f.write(chunk)
    return written, batches, records


def windowed(path: str, size: int, window: int, step: Callable[[memoryview, int], int]) -> float:
    """Slides one reused window along the file; `step(window_view, file_position)` returns where
    to go on. Returns elapsed seconds."""
    buf = bytearray(window)
    mv = memoryview(buf)
    fd = os.open(path, os.O_RDONLY)
    try:
        start = time.process_time()
        pos = 0
        while pos < size:
            got = os.preadv(fd, [mv[: min(window, size - pos)]], pos)
            nxt = step(mv[:got], pos)
            if nxt <= pos:
                raise RuntimeError(f"no progress at {pos}")
            pos = nxt
        return time.process_time() - start
    finally:
        os.close(fd)


def bare_loop(path: str, size: int, window: int) -> float:
    unpack = _SIZE.unpack_from
    crc = crc32c

    def step(mv: memoryview, fp: int) -> int:
        pos = 0
        n = len(mv)
        while pos + 12 <= n:
            end = pos + 12 + unpack(mv, pos + 8)[0]
            if end > n:
                break
            crc(mv[pos + 21 : end])
            pos = end
        return fp + pos

    return windowed(path, size, window, step)


class WalkDriver:
    """Carries the expected offset from one window to the next, as a storage scanner would."""

    def __init__(self, size: int, deep: bool = False) -> None:
        self.size = size
        self.deep = deep
        self.expected: int | None = None
        self.defects = 0
        self.batches = 0
        self.records = 0

    def _walker(self, mv: memoryview, fp: int) -> Walker:
        return Walker(
            mv, file_position=fp, file_size=self.size, expected_offset=self.expected, deep=self.deep
        )

    def _done(self, walker: Walker) -> int:
        self.expected = walker.expected_offset
        self.batches += walker.batches
        return walker.position

    def validate(self, mv: memoryview, fp: int) -> int:
        """Verification: full validation (deep: every record parsed too), defects only."""
        walker = self._walker(mv, fp)
        for _ in walker.validate():
            self.defects += 1
        return self._done(walker)

    def iterate(self, mv: memoryview, fp: int) -> int:
        """Batch objects for every batch."""
        walker = self._walker(mv, fp)
        for item in walker:
            if isinstance(item, Defect):
                self.defects += 1
        return self._done(walker)

    def decode(self, mv: memoryview, fp: int) -> int:
        """Every record decoded into `Record`s, as a dump or an export reads them."""
        walker = self._walker(mv, fp)
        for item in walker:
            if isinstance(item, Defect):
                self.defects += 1
            else:
                self.records += len(item.records())
        return self._done(walker)


def kafka_python_records(path: str, limit: int) -> tuple[int, float]:
    from kafka.record.memory_records import MemoryRecords

    with open(path, "rb") as f:
        data = f.read(limit)
    start = time.process_time()
    memory = MemoryRecords(data)
    n = 0
    while memory.has_next():
        batch = memory.next_batch()
        if batch is None:
            break
        for _ in batch:
            n += 1
    return n, time.process_time() - start


class RecordCounter(io.TextIOWrapper):
    """/dev/null as a text stdout that counts the record objects written to it."""

    def __init__(self) -> None:
        super().__init__(open(os.devnull, "wb"), encoding="utf-8")
        self.records = 0

    def write(self, text: str) -> int:
        self.records += text.count('{"offset":')
        return super().write(text)


def dump_json(path: str, limit: int) -> tuple[int, float]:
    """`logrepair dump --deep-iteration --json` of the first `limit` bytes: (records, CPU s)."""
    with RecordCounter() as out, redirect_stdout(out):
        start = time.process_time()
        status = logrepair_main(
            ["dump", "--deep-iteration", "--json", "--max-bytes", str(limit), path]
        )
        out.flush()
        elapsed = time.process_time() - start
    if status != 0:
        raise RuntimeError(f"dump exited {status}")
    return out.records, elapsed


def best_of(runs: int, fn: Callable[[], float]) -> float:
    return min(fn() for _ in range(runs))


def rss_probe(path: str, size: int, window: int) -> int:
    """Peak RSS (KiB) of a fresh interpreter after a shallow and a deep walk of `size` bytes."""
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "format_walk",
            "--rss-probe",
            path,
            "--probe-bytes",
            str(size),
            "--window",
            str(window),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(out.stdout.strip())


def _probe(path: str, size: int, window: int) -> int:
    """Prints this process's peak RSS in KiB after the walks.

    A child's `ru_maxrss` starts at the RSS of the process it was forked from (the bench, which has
    held kafka-python's input), so on Linux the peak is reset through `/proc/self/clear_refs` and
    read back as `VmHWM`; elsewhere `ru_maxrss` is the (upper-bound) answer.
    """
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        reset = True
    except OSError:
        reset = False
    windowed(path, size, window, WalkDriver(size).validate)
    windowed(path, size, window, WalkDriver(size, deep=True).validate)
    windowed(path, size, window, WalkDriver(size).decode)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if reset:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    peak = int(line.split()[1])
    print(peak)
    return 0


def bench_one(label: str, path: str, size: int, batch_bytes: int, args) -> bool:
    written, batches, records = write_file(path, size, batch_bytes)
    print(f"\n== {label}: {written / MiB:.0f} MiB, {batches} batches, {records} records ==")
    window = args.window
    bare = best_of(args.runs, lambda: bare_loop(path, written, window))
    drivers: list[WalkDriver] = []

    def shallow() -> float:
        drivers.append(WalkDriver(written))
        return windowed(path, written, window, drivers[-1].validate)

    walk = best_of(args.runs, shallow)
    assert drivers[-1].defects == 0 and drivers[-1].batches == batches, "walk disagrees"
    objects = best_of(
        args.runs, lambda: windowed(path, written, window, WalkDriver(written).iterate)
    )

    def deep_verify() -> float:
        drivers.append(WalkDriver(written, deep=True))
        return windowed(path, written, window, drivers[-1].validate)

    verify = best_of(args.runs, deep_verify)
    assert drivers[-1].defects == 0 and drivers[-1].batches == batches
    decoders: list[WalkDriver] = []

    def deep_decode() -> float:
        decoders.append(WalkDriver(written))
        return windowed(path, written, window, decoders[-1].decode)

    decode = best_of(args.runs, deep_decode)
    assert decoders[-1].records == records and decoders[-1].defects == 0
    kp_bytes = min(written, args.kafka_python_bytes)
    kp_runs = [kafka_python_records(path, kp_bytes) for _ in range(args.runs)]
    kp_records = kp_runs[0][0]
    kp_time = min(t for _, t in kp_runs)
    dump_runs = [dump_json(path, kp_bytes) for _ in range(args.runs)]
    assert dump_runs[0][0] == kp_records, "dump and kafka-python disagree on the records"
    dump_rps = kp_records / min(t for _, t in dump_runs)
    ratio = bare / walk
    target = 0.8 if batch_bytes >= 16 * 1024 else 0.6
    kp_rps = kp_records / kp_time
    verify_rps = records / verify
    decode_rps = records / decode
    print(f"bare loop (length + CRC-32C)      {written / bare / MiB:8.0f} MiB/s")
    print(
        f"walker.validate (full validation) {written / walk / MiB:8.0f} MiB/s   "
        f"ratio {ratio:.2f}x (target >= {target}x)"
    )
    print(
        f"walker iteration (batch objects)  {written / objects / MiB:8.0f} MiB/s   "
        f"ratio {bare / objects:.2f}x"
    )
    print(
        f"deep validate (every record)      {verify_rps:12,.0f} records/s  "
        f"{verify_rps / kp_rps:5.1f}x kafka-python (target >= 5x)"
    )
    print(
        f"deep decode (Record objects)      {decode_rps:12,.0f} records/s  "
        f"{decode_rps / kp_rps:5.1f}x kafka-python (target >= 5x)"
    )
    print(
        f"dump --deep-iteration --json      {dump_rps:12,.0f} records/s  "
        f"{dump_rps / kp_rps:5.2f}x kafka-python (target >= 1.5x)"
    )
    print(
        f"kafka-python record iteration     {kp_rps:12,.0f} records/s over the first "
        f"{kp_bytes / MiB:.0f} MiB"
    )
    ok = ratio >= target and verify_rps >= 5 * kp_rps and decode_rps >= 5 * kp_rps
    ok = ok and dump_rps >= 1.5 * kp_rps
    if not args.no_rss:
        small = rss_probe(path, written // 8, window)
        large = rss_probe(path, written, window)
        print(
            f"peak RSS after walking {written // 8 / MiB:.0f} MiB: {small / 1024:.1f} MiB; after {written / MiB:.0f} MiB: {large / 1024:.1f} MiB"
        )
        ok = ok and large < small * 1.1 + 4 * 1024
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench format_walk", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--size",
        type=parse_size,
        default=parse_size("1G"),
        help="bytes per file (default 1G; the full run must be >= 1G)",
    )
    parser.add_argument("--window", type=parse_size, default=16 * MiB)
    parser.add_argument("--runs", type=int, default=3, help="best of N for the timed walks")
    parser.add_argument("--kafka-python-bytes", type=parse_size, default=64 * MiB)
    parser.add_argument("--dir", default=None, help="where to write the temp files")
    parser.add_argument("--no-rss", action="store_true")
    parser.add_argument("--rss-probe", metavar="PATH", help=argparse.SUPPRESS)
    parser.add_argument("--probe-bytes", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rss_probe:
        return _probe(args.rss_probe, args.probe_bytes, args.window)
    reader = "C accelerator (logrepair.format._records)" if ACCELERATED else "pure Python"
    print(f"deep record reader: {reader}")
    ok = True
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="format_walk-") as tmp:
        for label, batch_bytes in (("16 KiB batches", 16 * 1024), ("1 KiB batches", 1024)):
            # a segment's name, which the dump requires, in a directory per batch size
            os.mkdir(os.path.join(tmp, str(batch_bytes)))
            path = os.path.join(tmp, str(batch_bytes), "00000000000000000000.log")
            ok = bench_one(label, path, args.size, batch_bytes, args) and ok
            os.unlink(path)
    print("\nall targets met" if ok else "\nsome targets missed")
    return 0 if ok else 1
