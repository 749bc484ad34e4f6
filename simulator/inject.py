"""`logsim inject`: damage a real log dir (or a copy of it) the way crashes and disks do.

Each fault kind picks its victim with a seeded `random.Random`, so `--seed` reproduces it, and
returns one `Damage` per change. Every kind here is one that `logrepair repair --mode salvage` brings
back to a state `logrepair verify` calls clean (tests/simulator/test_inject.py holds that).

Segments are walked through a bounded window, so a log dir of any size costs a few MiB of memory.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from logrepair.format.batch import RecordBatch
from logrepair.format.walker import Walker
from logrepair.recovery.path_kind import classify
from logrepair.recovery.runs import lock_run
from logrepair.storage.disk import LockHeld
from logrepair.storage.logdir import DirLock
from logrepair.storage.osdisk import OsDisk
from simulator.faults import Damage

WINDOW = 4 * 1024 * 1024
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
_SEGMENT = re.compile(r"^(\d{20})\.log$")
_PARTITION = re.compile(r"^(.+)-(\d+)$")


class InjectError(ValueError):
    """The target cannot take this fault (no partition, no segment with batches, ...)."""


@dataclass(frozen=True)
class Partition:
    path: str
    topic: str
    partition: int
    log_dir: str | None  # the broker log dir holding the root checkpoints, when known

    def segments(self) -> list[str]:
        names = sorted(n for n in os.listdir(self.path) if _SEGMENT.match(n))
        return [os.path.join(self.path, n) for n in names]


def find_partitions(path: str) -> list[Partition]:
    """The partition dirs of `path`: itself when it holds segments, else its topic-partition dirs."""
    if not os.path.isdir(path):
        raise InjectError(f"{path} is not a directory")
    if any(_SEGMENT.match(n) for n in os.listdir(path)):
        return [_partition(path, None)]
    out = []
    for name in sorted(os.listdir(path)):
        sub = os.path.join(path, name)
        m = _PARTITION.match(name)
        if m and os.path.isdir(sub) and "." not in m.group(2):
            if any(_SEGMENT.match(n) for n in os.listdir(sub)):
                out.append(_partition(sub, path))
    if not out:
        raise InjectError(f"{path} holds no partition with segments")
    return out


def _partition(path: str, log_dir: str | None) -> Partition:
    name = os.path.basename(os.path.normpath(path))
    m = _PARTITION.match(name)
    if not m:
        raise InjectError(f"{path} is not named topic-partition")
    return Partition(path, m.group(1), int(m.group(2)), log_dir)


def batches(path: str) -> Iterator[tuple[int, int, int, int]]:
    """(position, size, base offset, last offset) of each valid batch, up to the first defect."""
    size = os.path.getsize(path)
    position = 0
    window = WINDOW
    with open(path, "rb") as f:
        while position < size:
            f.seek(position)
            buf = f.read(window)
            walker = Walker(buf, file_position=position, file_size=size)
            for item in walker:
                if not isinstance(item, RecordBatch):
                    return
                yield item.position, item.size, item.base_offset, item.last_offset
            if walker.position == position:
                if walker.needed <= window:
                    return
                window = walker.needed
            position = walker.position


def _last_batch(seg: str) -> tuple[int, int, int, int] | None:
    last = None
    for b in batches(seg):
        last = b
    return last


def _pick_batch(parts: list[Partition], rng: random.Random) -> tuple[str, tuple] | None:
    """A batch chosen uniformly over every segment (reservoir sampling keeps memory flat)."""
    chosen, seen = None, 0
    for part in parts:
        for seg in part.segments():
            for b in batches(seg):
                seen += 1
                if rng.randrange(seen) == 0:
                    chosen = (seg, b)
    return chosen


def _write_at(path: str, position: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(position)
        f.write(data)


def _tails(parts: list[Partition]) -> list[tuple[str, tuple]]:
    out = []
    for part in parts:
        segs = part.segments()
        if segs:
            last = _last_batch(segs[-1])
            if last is not None:
                out.append((segs[-1], last))
    if not out:
        raise InjectError("no partition whose last segment holds a batch")
    return out


def torn_tail(parts: list[Partition], rng: random.Random) -> list[Damage]:
    """A power loss mid-append: the active segment ends inside its last batch."""
    seg, (pos, size, base, _) = rng.choice(_tails(parts))
    cut = pos + rng.randrange(1, size)
    end = os.path.getsize(seg)
    os.truncate(seg, cut)
    # the damage as the file now holds it (README, Notation): the torn batch, what is left of it
    detail = f"batch at offset {base} cut at byte {cut}: its last {end - cut} bytes lost"
    return [Damage("torn_tail", seg, pos, cut - pos, detail)]


def _append_tail(parts: list[Partition], rng: random.Random, junk: bool) -> list[Damage]:
    seg, _ = rng.choice(_tails(parts))
    end = os.path.getsize(seg)
    length = rng.randrange(18, 4097)
    data = rng.randbytes(length) if junk else bytes(length)
    with open(seg, "ab") as f:
        f.write(data)
    what = "junk" if junk else "zeros"
    return [Damage("junk_tail" if junk else "garbage_tail", seg, end, length, f"{what} appended")]


def garbage_tail(parts: list[Partition], rng: random.Random) -> list[Damage]:
    """The size of the active segment reached the disk before its data: zeros after the last batch."""
    return _append_tail(parts, rng, junk=False)


def junk_tail(parts: list[Partition], rng: random.Random) -> list[Damage]:
    """As garbage_tail, but the new blocks hold stale junk instead of zeros."""
    return _append_tail(parts, rng, junk=True)


def bit_flip(parts: list[Partition], rng: random.Random) -> list[Damage]:
    """Bit rot: one bit flips inside a batch's CRC-covered bytes, in any segment."""
    picked = _pick_batch(parts, rng)
    if picked is None:
        raise InjectError("no segment holds a batch")
    seg, (pos, size, base, _) = picked
    at = pos + rng.randrange(21, size)
    bit = rng.randrange(8)
    with open(seg, "r+b") as f:
        f.seek(at)
        byte = f.read(1)[0]
        f.seek(at)
        f.write(bytes([byte ^ (1 << bit)]))
    return [Damage("bit_flip", seg, at, 1, f"bit {bit} flipped in the batch at offset {base}")]


def zero_block(parts: list[Partition], rng: random.Random) -> list[Damage]:
    """A lost sector: a 512-byte aligned block inside a batch reads back as zeros."""
    picked = _pick_batch(parts, rng)
    if picked is None:
        raise InjectError("no segment holds a batch")
    seg, (pos, size, base, _) = picked
    start = (pos + rng.randrange(size)) // 512 * 512
    length = min(512, os.path.getsize(seg) - start)
    _write_at(seg, start, bytes(length))
    return [Damage("zero_block", seg, start, length, f"block zeroed near offset {base}")]


def _indexes(parts: list[Partition], suffix: str, entry: int) -> list[str]:
    out = []
    for part in parts:
        for seg in part.segments():
            idx = seg[: -len(".log")] + suffix
            if os.path.exists(idx) and os.path.getsize(idx) >= entry:
                out.append(idx)
    return out


def corrupt_index(parts: list[Partition], rng: random.Random) -> list[Damage]:
    """An offset index entry overwritten (a torn index page): it points past the end of the log."""
    candidates = _indexes(parts, ".index", 8)
    if not candidates:
        raise InjectError("no offset index with an entry")
    idx = rng.choice(candidates)
    slot = rng.randrange(os.path.getsize(idx) // 8) * 8
    _write_at(idx, slot, struct.pack(">ii", rng.randrange(1 << 20), 0x7FFFFFF0))
    return [Damage("corrupt_index", idx, slot, 8, "entry points past the end of the log")]


def corrupt_time_index(parts: list[Partition], rng: random.Random) -> list[Damage]:
    """A time index entry overwritten with an offset past the end of its segment."""
    candidates = _indexes(parts, ".timeindex", 12)
    if not candidates:
        raise InjectError("no time index with an entry")
    idx = rng.choice(candidates)
    slot = rng.randrange(os.path.getsize(idx) // 12) * 12
    _write_at(idx, slot, struct.pack(">qi", 1 << 62, 0x7FFFFFF0))
    return [Damage("corrupt_time_index", idx, slot, 12, "entry past the end of the segment")]


def delete_index(parts: list[Partition], rng: random.Random) -> list[Damage]:
    """An offset index lost (deleted by hand, as operators are told to do, or never created)."""
    candidates = _indexes(parts, ".index", 0)
    if not candidates:
        raise InjectError("no offset index")
    idx = rng.choice(candidates)
    length = os.path.getsize(idx)
    os.unlink(idx)
    return [Damage("delete_index", idx, 0, length, "offset index deleted")]


def orphan_index(parts: list[Partition], rng: random.Random) -> list[Damage]:
    """An index whose segment is gone (a deletion interrupted between the two unlinks)."""
    part = rng.choice(parts)
    segs = part.segments()
    last = _last_batch(segs[-1]) if segs else None
    base = (last[3] if last else 0) + 1000
    idx = os.path.join(part.path, f"{base:020d}.index")
    with open(idx, "wb"):
        pass
    return [Damage("orphan_index", idx, 0, 0, "index with no segment")]


def cleaned_leftover(parts: list[Partition], rng: random.Random) -> list[Damage]:
    """A compaction interrupted before its swap: a `.log.cleaned` copy of a segment."""
    part = rng.choice(parts)
    seg = rng.choice(part.segments())
    dst = seg + ".cleaned"
    shutil.copyfile(seg, dst)
    return [Damage("cleaned_leftover", dst, 0, os.path.getsize(dst), "copy of a segment")]


def _read_checkpoint(path: str) -> list[list[str]]:
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    return [line.split() for line in lines[2:]]


def _write_checkpoint(path: str, entries: list[list[str]]) -> None:
    text = "0\n" + f"{len(entries)}\n" + "".join(" ".join(e) + "\n" for e in entries)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def _log_end(part: Partition) -> int:
    segs = part.segments()  # find_partitions only returns partitions with a segment
    last = _last_batch(segs[-1])
    return last[3] + 1 if last else int(os.path.basename(segs[-1])[:20])


def recovery_point_beyond_end(parts: list[Partition], rng: random.Random) -> list[Damage]:
    """A recovery point checkpointed past the log end: flushed data lost (or a stale copy restored)."""
    rooted = [p for p in parts if p.log_dir]
    if not rooted:
        raise InjectError("a partition dir alone has no recovery-point-offset-checkpoint")
    part = rng.choice(rooted)
    path = os.path.join(part.log_dir, RECOVERY_POINT_CHECKPOINT)
    entries = _read_checkpoint(path) if os.path.exists(path) else []
    entries = [e for e in entries if e[:2] != [part.topic, str(part.partition)]]
    beyond = _log_end(part) + rng.randrange(1, 1000)
    entries.append([part.topic, str(part.partition), str(beyond)])
    _write_checkpoint(path, entries)
    return [
        Damage(
            "recovery_point_beyond_end",
            path,
            0,
            os.path.getsize(path),
            f"{part.topic}-{part.partition} at {beyond}",
        )
    ]


def corrupt_checkpoint(parts: list[Partition], rng: random.Random) -> list[Damage]:
    """A torn leader-epoch-checkpoint after a power loss: its text ends mid-line in junk."""
    part = rng.choice(parts)
    path = os.path.join(part.path, LEADER_EPOCH_CHECKPOINT)
    with open(path, "wb") as f:
        f.write(b"0\n3\n0 0\n1 \x00\x00\x00")
    return [Damage("corrupt_checkpoint", path, 0, os.path.getsize(path), "malformed text")]


INJECT_FAULTS: dict[str, Callable[[list[Partition], random.Random], list[Damage]]] = {
    "torn_tail": torn_tail,
    "garbage_tail": garbage_tail,
    "junk_tail": junk_tail,
    "bit_flip": bit_flip,
    "zero_block": zero_block,
    "corrupt_index": corrupt_index,
    "corrupt_time_index": corrupt_time_index,
    "delete_index": delete_index,
    "orphan_index": orphan_index,
    "cleaned_leftover": cleaned_leftover,
    "recovery_point_beyond_end": recovery_point_beyond_end,
    "corrupt_checkpoint": corrupt_checkpoint,
}


def describe_faults() -> list[tuple[str, str]]:
    """(name, first line of its docstring) for every inject fault, for `logsim inject --list`."""
    return [(n, (fn.__doc__ or "").strip().splitlines()[0]) for n, fn in INJECT_FAULTS.items()]


def inject(
    path: str, fault: str, seed: int, *, out: str | None = None, in_place: bool = False
) -> list[Damage]:
    """Damages a copy of `path` at `out` (or `path` itself with `in_place`); returns the changes."""
    fn = INJECT_FAULTS.get(fault)
    if fn is None:
        raise InjectError(f"unknown fault {fault!r}; `logsim inject --list` names them")
    if in_place == (out is not None):
        raise InjectError("give either --out COPY or --in-place")
    parts = find_partitions(path)  # refuse before copying anything
    target = path
    if out is not None:
        if os.path.exists(out):
            raise InjectError(f"{out} already exists")
        if parts[0].log_dir is None and not _PARTITION.match(
            os.path.basename(os.path.normpath(out))
        ):
            raise InjectError(
                f"a copy of partition dir {path} must be named topic-partition too "
                f"(e.g. {os.path.join(out, os.path.basename(os.path.normpath(path)))})"
            )
        shutil.copytree(path, out, symlinks=True)
        target = out
    lock = _lock_in_place(path) if in_place else None
    try:
        return fn(find_partitions(target), random.Random(f"inject:{fault}:{seed}"))
    except InjectError:
        if out is not None:
            shutil.rmtree(out)
        raise
    finally:
        if lock is not None:
            lock.release()


def _lock_in_place(path: str) -> DirLock:
    """Damaging a log dir in place takes its `.lock` as the tool's repairs do, so it never writes
    under a running broker or a repair."""
    disk = OsDisk()
    real = disk.real_path(path)
    try:
        return lock_run(disk, real, classify(disk, real))
    except LockHeld as e:
        raise InjectError(str(e)) from None
