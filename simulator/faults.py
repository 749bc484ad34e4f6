"""Crash states: the disk images a power loss (or a killed process) could leave at a crash point.

A crash point is "just after trace op k". At that moment a SimDisk holds a durable state and an
ordered list of pending changes; each fault below chooses which pending changes reach the platter and
how they are damaged, the way real disks and file systems fail. Every choice comes from a
`random.Random` seeded with (seed, crash point, fault), so a crash state is reproducible from those
three values plus its variant number.

I/O errors (`eio_read`, `eio_write`, `enospc`, `eio_fsync`) are not crash states: they are raised while
the program runs (see `IoFault` in disk.py); exploration runs the workload with one armed and then
crashes it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

from simulator.disk import Change, DataChange, DiskImage, EntryChange, IoFault, SimDisk
from simulator.invariants import walk

IO_FAULTS = IoFault.KINDS


@dataclass(frozen=True)
class Damage:
    """One change a fault made: the file, the byte range, and what happened there."""

    fault: str
    file: str
    position: int
    length: int
    detail: str

    def to_json(self) -> dict:
        return {
            "fault": self.fault,
            "file": self.file,
            "position": self.position,
            "length": self.length,
            "detail": self.detail,
        }


@dataclass
class CrashState:
    """A disk image after a crash, and how to reproduce it."""

    point: int
    fault: str
    variant: int
    seed: int
    image: DiskImage
    damage: list[Damage] = field(default_factory=list)
    destroyed_durable: bool = False
    """True when the fault destroyed bytes that were durable (bit rot): invariant 2 then only
    asks that exactly the destroyed batches are missing."""

    @property
    def label(self) -> str:
        return f"op {self.point}, fault {self.fault}#{self.variant}, seed {self.seed}"


Variant = tuple[DiskImage, list[Damage]]
FaultFn = Callable[[SimDisk, random.Random], list[Variant]]


def _paths(disk: SimDisk) -> dict[int, str]:
    return {n: p for p, n in disk.volatile_image().nodes.items()}


def _path(paths: dict[int, str], node: int) -> str:
    return paths.get(node, f"<unlinked inode {node}>")


def _last_write(pending: list[Change]) -> int | None:
    for i in range(len(pending) - 1, -1, -1):
        ch = pending[i]
        if isinstance(ch, DataChange) and ch.data:
            return i
    return None


def _size_after(disk: SimDisk, node: int, changes: list[Change]) -> int:
    size = len(disk.durable_content(node))
    for ch in changes:
        if isinstance(ch, DataChange) and ch.node == node:
            size = max(size, ch.end) if ch.data is not None else ch.size
    return size


def process_crash(disk: SimDisk, rng: random.Random) -> list[Variant]:
    """The process dies (OOM killer, kill -9) but the kernel lives: every write reaches the disk."""
    return [(disk.volatile_image(), [])]


def lose_unsynced(disk: SimDisk, rng: random.Random) -> list[Variant]:
    """Power loss with nothing unsynced written back: only what fsync covered survives."""
    paths = _paths(disk)
    damage = [
        Damage(
            "lose_unsynced", _path(paths, c.node), c.position, len(c.data), "unsynced write lost"
        )
        for c in disk.pending
        if isinstance(c, DataChange) and c.data
    ]
    return [(disk.durable_image(), damage)]


def torn_write(disk: SimDisk, rng: random.Random) -> list[Variant]:
    """Power loss during the last write: earlier pending changes reached the disk, that write only
    in part, cut at a sector boundary (a disk that writes whole sectors) or at any byte."""
    pending = disk.pending
    t = _last_write(pending)
    if t is None:
        return []
    w = pending[t]
    assert isinstance(w, DataChange) and w.data
    sector = disk.model.sector_size
    first = (w.position // sector + 1) * sector
    bounds = [b - w.position for b in range(first, w.end, sector)]
    cuts = sorted({*bounds[:1], *bounds[-1:]})
    if len(w.data) > 1:
        byte_cut = rng.randrange(1, len(w.data))
        if byte_cut not in cuts:
            cuts.append(byte_cut)
    path = _path(_paths(disk), w.node)
    out = []
    for cut in cuts:
        image = disk.crash_image([*pending[:t], replace(w, data=w.data[:cut])])
        how = "sector" if (w.position + cut) % sector == 0 else "byte"
        detail = f"write of {len(w.data)} bytes at {w.position} torn after {cut} ({how} boundary)"
        out.append(
            (image, [Damage("torn_write", path, w.position + cut, len(w.data) - cut, detail)])
        )
    return out


def garbage_block(disk: SimDisk, rng: random.Random) -> list[Variant]:
    """The inode's new size reached the disk but its new blocks did not: the file ends in zeros
    (freshly allocated blocks) or in junk (blocks that held someone else's old data)."""
    if not disk.model.size_before_data:
        return []
    pending = disk.pending
    t = _last_write(pending)
    if t is None:
        return []
    w = pending[t]
    assert isinstance(w, DataChange)
    path = _path(_paths(disk), w.node)
    out = []
    # Variant 0: every unsynced extension of the file is zeros. Variant 1: only the last write's
    # new blocks hold junk, the earlier pending writes made it.
    final = _size_after(disk, w.node, pending[: t + 1])
    durable = len(disk.durable_content(w.node))
    before_last = _size_after(disk, w.node, pending[:t])
    for start, fill in ((durable, "zeros"), (before_last, "junk")):
        if final <= start:
            continue
        length = final - start
        data = bytes(length) if fill == "zeros" else rng.randbytes(length)
        kept = [c for c in pending[:t] if not (fill == "zeros" and _is_data_of(c, w.node))]
        image = disk.crash_image([*kept, DataChange(w.op, w.node, start, data)])
        detail = f"size {final} persisted, bytes {start}..{final} hold {fill}"
        out.append((image, [Damage("garbage_block", path, start, length, detail)]))
    return out


def _is_data_of(c: Change, node: int) -> bool:
    return isinstance(c, DataChange) and c.node == node


def reorder(disk: SimDisk, rng: random.Random) -> list[Variant]:
    """Unsynced sectors persisted out of order: the last written sector made it to the disk, at
    least one earlier one did not and still holds its old content (zeros past the old end)."""
    if not disk.model.reorder:
        return []
    pending = disk.pending
    t = _last_write(pending)
    if t is None:
        return []
    node = pending[t].node
    sector = disk.model.sector_size
    touched: set[int] = set()
    for c in pending:
        if isinstance(c, DataChange) and c.node == node and c.data:
            touched.update(range(c.position // sector, (c.end - 1) // sector + 1))
    if len(touched) < 2:
        return []
    ordered = sorted(touched)
    last = ordered[-1]
    earlier = ordered[:-1]
    holes = {rng.choice(earlier)} | {s for s in earlier if rng.random() < 0.3}
    image = disk.crash_image(pending)
    paths = [p for p, n in image.nodes.items() if n == node]
    if not paths:
        return []
    durable_content = disk.durable_content(node)  # what the sectors that did not persist hold
    damage = []
    for p in paths:
        buf = bytearray(image.files[p])
        for s in sorted(holes):
            lo, hi = s * sector, min((s + 1) * sector, len(buf))
            if lo >= hi:
                continue  # a later truncation cut this sector off: nothing of it is left to lose
            prev = durable_content[lo:hi]
            buf[lo:hi] = prev + bytes(hi - lo - len(prev))
            damage.append(
                Damage("reorder", p, lo, hi - lo, f"sector {s} lost, sector {last} persisted")
            )
        image.files[p] = bytes(buf)
    return [(image, damage)]


def lost_dir_op(disk: SimDisk, rng: random.Random) -> list[Variant]:
    """Directory operations not yet made durable by fsync_dir are undone: the newest ones of one
    directory, or all of them; with a non-atomic rename, also a rename left half done (both names)."""
    pending = disk.pending
    by_dir: dict[int, list[int]] = {}
    for i, c in enumerate(pending):
        if isinstance(c, EntryChange):
            by_dir.setdefault(c.dir, []).append(i)
    trace = disk.trace
    atomic = disk.model.atomic_rename
    out = []
    for d in sorted(by_dir, key=lambda d: by_dir[d][-1], reverse=True)[:3]:
        idx = by_dir[d]
        ops = sorted({pending[i].op for i in idx})
        for keep_ops in sorted({len(ops) - 1, 0}, reverse=True):
            lost_ops = set(ops[keep_ops:])
            # An atomic rename is lost whole, in both directories of a cross-directory move.
            changes = [
                c
                for c in pending
                if not (isinstance(c, EntryChange) and c.op in lost_ops and (atomic or c.dir == d))
            ]
            damage = [_dir_damage(trace[o], "lost") for o in sorted(lost_ops)]
            out.append((disk.crash_image(changes), damage))
        last = trace[ops[-1]]
        if not atomic and last.kind == "rename":
            # The destination entry made it, the removal of the source did not.
            changes = [
                c
                for c in pending
                if not (isinstance(c, EntryChange) and c.op == last.index and c.target is None)
            ]
            out.append((disk.crash_image(changes), [_dir_damage(last, "half done, both names")]))
    return out


def _dir_damage(op, what: str) -> Damage:
    return Damage("lost_dir_op", op.path, 0, 0, f"{op.kind} {what}: {op.describe()}")


def bit_rot(disk: SimDisk, rng: random.Random) -> list[Variant]:
    """One bit flips in durable data of a segment (`.log`): media decay, a bad DMA, a firmware bug.
    Everything else reached the disk, so the only damage is to bytes that were already durable.

    The flip lands in bytes a batch's CRC protects, or in its length, magic or CRC field: a flip in
    the base offset or partition leader epoch (bytes 0-7 and 12-15, which no checksum covers) makes
    a different, valid-looking batch that no reader can tell from the real one."""
    image = disk.volatile_image()
    candidates = []
    for p, n in image.nodes.items():
        if not p.endswith(".log"):
            continue
        same = _common_prefix(disk.durable_content(n), image.files[p])
        batches = [b for b in walk(image.files[p][:same], p)[0] if b.position + len(b.data) <= same]
        candidates.extend((p, b) for b in batches)
    if not candidates:
        return []
    path, batch = candidates[rng.randrange(len(candidates))]
    covered = [i for i in range(len(batch.data)) if not (i < 8 or 12 <= i < 16)]
    position = batch.position + rng.choice(covered)
    bit = rng.randrange(8)
    buf = bytearray(image.files[path])
    buf[position] ^= 1 << bit
    image.files[path] = bytes(buf)
    detail = f"bit {bit} flipped in the batch at offset {batch.base}"
    return [(image, [Damage("bit_rot", path, position, 1, detail)])]


def _common_prefix(a: bytes, b: bytes) -> int:
    """Length of the longest common prefix, by halving with C-speed slice compares."""
    lo, hi = 0, min(len(a), len(b))
    if a[:hi] == b[:hi]:
        return hi
    while lo < hi:  # invariant: a[:lo] == b[:lo] and a[:hi] != b[:hi]
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


CRASH_FAULTS: dict[str, FaultFn] = {
    "process_crash": process_crash,
    "lose_unsynced": lose_unsynced,
    "torn_write": torn_write,
    "garbage_block": garbage_block,
    "reorder": reorder,
    "lost_dir_op": lost_dir_op,
    "bit_rot": bit_rot,
}
DESTROYS_DURABLE = frozenset({"bit_rot"})


def fault_rng(seed: int, point: int, fault: str) -> random.Random:
    return random.Random(f"{seed}:{point}:{fault}")


def crash_states(
    disk: SimDisk, point: int, faults: list[str], seed: int, *, max_variants: int | None = None
) -> Iterator[CrashState]:
    """Every variant of every fault at the disk's current moment (crash point `point`)."""
    for fault in faults:
        fn = CRASH_FAULTS.get(fault)
        if fn is None:
            raise ValueError(f"unknown crash fault {fault!r}; one of {', '.join(CRASH_FAULTS)}")
        variants = fn(disk, fault_rng(seed, point, fault))
        for v, (image, damage) in enumerate(variants[:max_variants]):
            yield CrashState(point, fault, v, seed, image, damage, fault in DESTROYS_DURABLE)
