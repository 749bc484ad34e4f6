"""Repair speed and memory: kafka-mode and salvage repair of a large partition vs shallow verify.

Writes one partition of `--size` bytes (default 1 GiB) of uncompressed v2 batches of `--batch`
bytes, in one segment, with the indexes Kafka's recovery writes, then measures, each in a child
process (so peak RSS is the child's own):

- the shallow verify of the partition, `logrepair verify` (batch-level: every batch framed and
  CRC-checked, offsets, indexes and checkpoints held against the log; no record decoded): the
  baseline the kafka repair is held to;
- for reference, the bare shallow walk of the format layer (`storage.scan.LogScan.validate()`),
  which checks batches only and keeps nothing;
- kafka-mode repair after a torn tail and one corrupt index entry. Target: >= 0.7x the speed of
  `logrepair verify`;
- salvage repair of the same segment with one corrupt batch in the middle (half the segment is
  copied to a new segment, around the page cache, with the indexes the scan computed, and the
  corrupt batch kept in quarantine). Target: >= 0.5x the speed of `logrepair verify`;
- point-in-time repair of the same damage (the segment cut before the corrupt batch, the half
  after it copied into the quarantine). Target: >= 0.5x the speed of `logrepair verify`;
- the undo of each;
- the floor of a salvage without a reflink, in one child: verify, then the moved half copied
  once (the tool's own copy, around the page cache) and fsynced; salvage is held to it too;
- peak RSS of the kafka repair at the full size and at 1/8 of it: flat means it does not grow.

`--memory` measures instead peak RSS (each command in a fresh child process) of verify, audit,
the kafka dry run and salvage (one corrupt batch mid-segment) at several sizes of 1 KiB batches
(`--sizes`, default 128M,1G,2G): memory flat in the number of batches means one figure per
command whatever the size.

Speeds are bytes of log per CPU second of the child (`time.process_time`, best of `--runs`), as in
the format bench, so other load on a shared machine disturbs the ratios less; wall-clock speeds
(which include fsync waits) are printed beside them. The damaged state is restored by `undo`
between runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

from logrepair.format.batch_builder import build_batch
from logrepair.format.batch_layout import Record
from logrepair.storage import layout
from logrepair.storage.index_builder import build_indexes

MiB = 1024 * 1024


def parse_size(text: str) -> int:
    units = {"K": 1024, "M": MiB, "G": 1024 * MiB}
    text = text.strip().upper().removesuffix("B").removesuffix("I")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


class _Header:
    __slots__ = ("size", "last_offset", "max_timestamp")

    def __init__(self, size: int, last_offset: int, max_timestamp: int) -> None:
        self.size, self.last_offset, self.max_timestamp = size, last_offset, max_timestamp


def write_partition(pdir: str, size: int, batch_bytes: int) -> tuple[int, int]:
    """Streams `size` bytes of batches to `<pdir>/0.log` with its indexes; returns (batches, size
    of one batch). The base offset field is outside the CRC, so one template serves every batch."""
    os.makedirs(pdir, exist_ok=True)
    records = max(1, batch_bytes // 220)
    template = bytearray(
        build_batch(
            [
                Record(i, 1_700_000_000_000 + i, b"k%015d" % i, bytes(200), ())
                for i in range(records)
            ],
            base_offset=0,
        )
    )
    step = len(template)
    count = max(1, size // step)
    headers = []
    chunk = bytearray()
    with open(os.path.join(pdir, layout.log_file_name(0)), "wb") as f:
        for n in range(count):
            template[0:8] = (n * records).to_bytes(8, "big")
            chunk += template
            headers.append(
                _Header(step, n * records + records - 1, 1_700_000_000_000 + records - 1)
            )
            if len(chunk) >= 8 * MiB:
                f.write(chunk)
                chunk.clear()
        f.write(chunk)
    offset_index, time_index = build_indexes(headers, 0, 4096, 2**31 - 8)
    with open(os.path.join(pdir, layout.index_file_name(0)), "wb") as f:
        f.write(offset_index)
    with open(os.path.join(pdir, layout.time_index_file_name(0)), "wb") as f:
        f.write(time_index)
    return count, step


CHILD = r"""
import json, resource, sys, time
from logrepair.storage.osdisk import OsDisk
from logrepair.storage.scan import LogScan
from logrepair.recovery.repair import repair
from logrepair.recovery.scan import scan_path
from logrepair.recovery.settings import Settings
from logrepair.recovery.undo import undo
what, path = sys.argv[1], sys.argv[2]
disk = OsDisk()
t0, c0 = time.perf_counter(), time.process_time()
out = {}
if what == "validate":
    defects = list(LogScan(disk, path).validate())
    out["defects"] = len(defects)
elif what == "verify":
    out["clean"] = scan_path(disk, path, Settings()).clean
elif what == "undo":
    undo(disk, path)
elif what == "audit":
    from logrepair.audit.local import audit_paths
    out["clean"] = audit_paths([path]).clean
elif what == "floor":
    # the least a salvage can do without a reflink: read every batch once (verify), write the
    # moved ones once (the tool's own copy, around the page cache), fsynced
    out["clean"] = scan_path(disk, path, Settings()).clean
    log, start = sys.argv[3], int(sys.argv[4])
    with disk.open(log) as fin, disk.open(log + ".floor", create=True) as fout:
        fin.copy_to(start, fin.size() - start, fout, 0)
        fout.fsync()
    disk.unlink(log + ".floor")
elif what == "dry-run":
    out["actions"] = len(repair(disk, path, "kafka", Settings(), dry_run=True).plan.actions)
else:
    result = repair(disk, path, what, Settings())
    out["quarantine"] = result.quarantine
    out["removed_bytes"] = result.plan.removed_bytes
    out["actions"] = [a.action for a in result.plan.actions]
out["seconds"] = time.process_time() - c0
out["wall"] = time.perf_counter() - t0
try:
    # this process's own peak (VmHWM): ru_maxrss also counts the parent's RSS at the fork, which
    # Linux carries over the exec
    with open("/proc/self/status") as f:
        out["rss_kib"] = next(int(l.split()[1]) for l in f if l.startswith("VmHWM:"))
except (OSError, StopIteration):
    out["rss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps(out))
"""


def child(what: str, path: str, *args: str) -> dict:
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, what, path, *args], capture_output=True, text=True, env=env
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{what} {path} failed: {proc.stderr}")
    return json.loads(proc.stdout)


def damage_kafka(pdir: str, step: int) -> None:
    """A torn tail (half of the last batch gone) and one corrupt offset-index entry."""
    log = os.path.join(pdir, layout.log_file_name(0))
    os.truncate(log, os.path.getsize(log) - step // 2)
    index = os.path.join(pdir, layout.index_file_name(0))
    entries = os.path.getsize(index) // 8
    with open(index, "r+b") as f:
        f.seek((entries // 2) * 8 + 4)
        f.write((2**31 - 1).to_bytes(4, "big"))


def damage_salvage(pdir: str, count: int, step: int) -> None:
    """One bit flipped inside the middle batch."""
    with open(os.path.join(pdir, layout.log_file_name(0)), "r+b") as f:
        f.seek((count // 2) * step + 100)
        b = f.read(1)
        f.seek((count // 2) * step + 100)
        f.write(bytes([b[0] ^ 1]))


def warm(*dirs: str) -> None:
    """Reads every file under `dirs` into the page cache, so each timed command starts warm as
    verify does: a repair writes its copies around the cache (the new segment, the quarantine's
    blobs), and reading them back cold would time the device, not the command."""
    buf = bytearray(8 * MiB)
    for d in dirs:
        for parent, _, names in os.walk(d):
            for name in names:
                with open(os.path.join(parent, name), "rb", buffering=0) as f:
                    while f.readinto(buf):
                        pass


def measure(root: str, size: int, batch_bytes: int, runs: int) -> dict:
    log_dir = os.path.join(root, f"kafka-logs-{size}")
    pdir = os.path.join(log_dir, "bench-0")
    count, step = write_partition(pdir, size, batch_bytes)
    with open(os.path.join(log_dir, layout.RECOVERY_POINT_CHECKPOINT), "w") as f:
        f.write("0\n1\nbench 0 0\n")
    quarantine = log_dir + ".logrepair-quarantine"

    def warm_child(what: str, path: str, *args: str) -> dict:
        warm(log_dir, quarantine)
        return child(what, path, *args)

    log = os.path.join(pdir, layout.log_file_name(0))
    real = os.path.getsize(log)
    child("validate", log)  # warm the page cache, as a re-run on a real broker host would be
    validate = min((child("validate", log) for _ in range(runs)), key=lambda r: r["seconds"])
    verify = min((child("verify", log_dir) for _ in range(runs)), key=lambda r: r["seconds"])
    verify["wall"] = min(r["wall"] for r in [verify, child("verify", log_dir)])
    damage_kafka(pdir, step)
    kafka_runs = []
    for n in range(runs):
        result = warm_child("kafka", log_dir)
        assert result["removed_bytes"] == step - step // 2, result
        kafka_runs.append(result)
        if n + 1 < runs:
            warm_child("undo", result["quarantine"])
    kafka = min(kafka_runs, key=lambda r: r["seconds"])
    assert child("verify", log_dir)["clean"]
    damage_salvage(pdir, count - 1, step)
    moved_from = str(((count - 1) // 2 + 1) * step)
    floor = min(
        (warm_child("floor", log_dir, log, moved_from) for _ in range(runs)),
        key=lambda r: r["seconds"],
    )
    salvage_runs, undo_runs = [], []
    for _ in range(runs):
        result = warm_child("salvage", log_dir)
        assert result["removed_bytes"] == step, result
        salvage_runs.append(result)
        undo_runs.append(warm_child("undo", result["quarantine"]))
    salvage = min(salvage_runs, key=lambda r: r["seconds"])
    undo_salvage = min(undo_runs, key=lambda r: r["seconds"])
    cut_runs, undo_cut_runs = [], []
    for _ in range(runs):
        result = warm_child("point-in-time", log_dir)
        assert result["removed_bytes"] == (count - 1 - (count - 1) // 2) * step, result
        cut_runs.append(result)
        undo_cut_runs.append(warm_child("undo", result["quarantine"]))
    cut = min(cut_runs, key=lambda r: r["seconds"])
    undo_cut = min(undo_cut_runs, key=lambda r: r["seconds"])
    shutil.rmtree(log_dir)
    shutil.rmtree(log_dir + ".logrepair-quarantine", ignore_errors=True)
    return {
        "bytes": real,
        "batches": count,
        "validate": validate,
        "verify": verify,
        "kafka": kafka,
        "floor": floor,
        "salvage": salvage,
        "undo_salvage": undo_salvage,
        "cut": cut,
        "undo_cut": undo_cut,
    }


MEMORY_COMMANDS = ("verify", "audit", "dry-run", "salvage")


def measure_memory(root: str, size: int, batch_bytes: int) -> dict[str, int]:
    """Peak RSS (KiB) of each of `MEMORY_COMMANDS` on one partition of `size` bytes."""
    log_dir = os.path.join(root, f"kafka-logs-{size}")
    pdir = os.path.join(log_dir, "bench-0")
    count, step = write_partition(pdir, size, batch_bytes)
    with open(os.path.join(log_dir, layout.RECOVERY_POINT_CHECKPOINT), "w") as f:
        f.write("0\n1\nbench 0 0\n")
    try:
        out = {what: child(what, log_dir)["rss_kib"] for what in MEMORY_COMMANDS[:-1]}
        damage_salvage(pdir, count - 1, step)
        salvage = child("salvage", log_dir)
        assert salvage["removed_bytes"] == step, salvage
        out["salvage"] = salvage["rss_kib"]
        return out
    finally:
        shutil.rmtree(log_dir)
        shutil.rmtree(log_dir + ".logrepair-quarantine", ignore_errors=True)


def memory_main(sizes: list[int], batch_bytes: int, where: str | None) -> int:
    root = tempfile.mkdtemp(prefix="bench-repair-memory-", dir=where)
    try:
        rows = [(size, measure_memory(root, size, batch_bytes)) for size in sizes]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"peak RSS (MiB), one partition of {batch_bytes} B batches, each command a new process")
    print(f"{'log size':>10} " + " ".join(f"{c:>9}" for c in MEMORY_COMMANDS))
    for size, rss in rows:
        print(
            f"{size / MiB:7.0f} MiB " + " ".join(f"{rss[c] / 1024:9.0f}" for c in MEMORY_COMMANDS)
        )
    first, last = rows[0][1], rows[-1][1]
    grown = {c: (last[c] - first[c]) / 1024 for c in MEMORY_COMMANDS}
    print("growth from the smallest to the largest: " + ", ".join(
        f"{c} {g:+.0f} MiB" for c, g in grown.items()
    ))  # fmt: skip
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench repair", description=__doc__.splitlines()[0])
    p.add_argument(
        "--size", default="1G", help="partition size (default 1G; e.g. 64M for a quick run)"
    )
    p.add_argument("--batch", default="16K", help="batch size (default 16K)")
    p.add_argument("--runs", type=int, default=2, help="best of this many runs (default 2)")
    p.add_argument("--dir", help="where to write the partitions (default: a temp dir)")
    p.add_argument(
        "--memory",
        action="store_true",
        help="measure peak RSS of verify, audit, dry run and salvage at --sizes instead",
    )
    p.add_argument(
        "--sizes",
        default="128M,1G,2G",
        help="with --memory: partition sizes (default 128M,1G,2G; batches of --batch, default 1K)",
    )
    args = p.parse_args(argv)
    if args.memory:
        batch = parse_size(args.batch if args.batch != "16K" else "1K")
        sizes = [parse_size(s) for s in args.sizes.split(",")]
        return memory_main(sizes, batch, args.dir)
    size, batch_bytes = parse_size(args.size), parse_size(args.batch)
    root = tempfile.mkdtemp(prefix="bench-repair-", dir=args.dir)
    try:
        full = measure(root, size, batch_bytes, args.runs)
        small = measure(root, max(size // 8, batch_bytes), batch_bytes, 1)
    finally:
        shutil.rmtree(root, ignore_errors=True)

    def speed(r: dict, n: int, key: str = "seconds") -> float:
        return n / max(r[key], 1e-9) / MiB

    n = full["bytes"]
    base = speed(full["verify"], n)
    wall_base = speed(full["verify"], n, "wall")
    print(f"partition: {n / MiB:.0f} MiB in {full['batches']} batches of {batch_bytes // 1024} KiB")
    print(f"{'':<36} {'CPU':>8}         ratio   {'wall':>8}         ratio")
    print(
        f"{'shallow verify (logrepair verify)':<36} {base:8.0f} MiB/s   1.00x   "
        f"{wall_base:8.0f} MiB/s   1.00x   (baseline)"
    )
    rows = [
        ("bare walk (LogScan.validate)", full["validate"], None),
        ("kafka repair: torn tail + index", full["kafka"], 0.7),
        ("floor: verify + copy of moved half", full["floor"], None),
        ("salvage: corrupt batch mid-segment", full["salvage"], 0.5),
        ("undo of the salvage", full["undo_salvage"], None),
        ("point-in-time: cut before it", full["cut"], 0.5),
        ("undo of the point-in-time", full["undo_cut"], None),
    ]
    status = 0
    for name, r, target in rows:
        ratio = speed(r, n) / base
        mark = ""
        if target is not None:
            mark = f"  target >= {target}x: {'ok' if ratio >= target else 'MISSED'}"
            status |= int(ratio < target)
        wall = speed(r, n, "wall")
        print(
            f"{name:<36} {speed(r, n):8.0f} MiB/s  {ratio:5.2f}x   {wall:8.0f} MiB/s  "
            f"{wall / wall_base:5.2f}x{mark}"
        )
    print(
        f"salvage against its floor (same run): {speed(full['salvage'], n) / speed(full['floor'], n):.2f}x"
    )
    print(
        f"peak RSS, kafka repair: {full['kafka']['rss_kib'] / 1024:.0f} MiB at {n / MiB:.0f} MiB, "
        f"{small['kafka']['rss_kib'] / 1024:.0f} MiB at {small['bytes'] / MiB:.0f} MiB; "
        f"salvage: {full['salvage']['rss_kib'] / 1024:.0f} MiB / "
        f"{small['salvage']['rss_kib'] / 1024:.0f} MiB"
    )
    return status


if __name__ == "__main__":
    sys.exit(main())
