"""The repair invariants of design.md, checked on disk images with messages that say where.

The checks read images with their own small model of Kafka's recovery (`kafka_oracle`), not with
the code under test, so a bug in the repair cannot hide itself. Each failure is a `Violation`
naming the invariant, the crash state, and the first offset or byte where the result differs.

`Expectation` is what the crash left and what the program did before it (computed once per crash
state); `check_result` holds the image after a repair against it.
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass, field

from logrepair.format.batch import RecordBatch
from logrepair.format.walker import Walker
from simulator.disk import DiskImage, SimDisk

WELL_FORMED = "well_formed"
DURABLE = "durable"
NO_INVENTION = "no_invention"
MINIMAL_LOSS = "minimal_loss"
ACCOUNTED = "accounted"
IDEMPOTENT = "idempotent"
CRASH_SAFE = "crash_safe_repair"
INVARIANTS = (WELL_FORMED, DURABLE, NO_INVENTION, MINIMAL_LOSS, ACCOUNTED, IDEMPOTENT, CRASH_SAFE)

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_CHECKPOINT = "replication-offset-checkpoint"
CLEAN_SHUTDOWN = ".kafka_cleanshutdown"
_SEGMENT = re.compile(r"^(\d{20})\.log$")
_PARTITION = re.compile(r"^(.+)-(\d+)$")


@dataclass(frozen=True)
class BatchRef:
    """A valid batch found in an image: where, which offsets, and its exact bytes."""

    base: int
    last: int
    data: bytes
    file: str
    position: int


@dataclass
class Segment:
    path: str
    base: int
    batches: list[BatchRef]
    defect: tuple[int, str] | None  # (position, kind) of the first invalid byte, if any
    size: int


@dataclass(frozen=True)
class Violation:
    invariant: str
    state: str
    detail: str
    partition: str = ""
    offset: int | None = None
    file: str | None = None
    position: int | None = None

    def to_json(self) -> dict:
        return {
            "invariant": self.invariant,
            "state": self.state,
            "partition": self.partition,
            "offset": self.offset,
            "file": self.file,
            "position": self.position,
            "detail": self.detail,
        }

    def __str__(self) -> str:
        where = f" at offset {self.offset}" if self.offset is not None else ""
        if self.file:
            where += f" ({self.file}" + (f" byte {self.position})" if self.position else ")")
        return f"{self.invariant}: {self.partition}{where}: {self.detail} [{self.state}]"


def walk(
    data: bytes, path: str, *, resync: bool = False, check_offsets: bool = False
) -> tuple[list[BatchRef], tuple | None]:
    """Valid batches of a `.log` content; without resync, up to the first defect (Kafka's rule,
    which checks CRCs, not offsets); `check_offsets` also rejects batches whose offsets go back."""
    batches, defect = _walk(bytes(data), path, resync, check_offsets)
    return list(batches), defect


@functools.lru_cache(maxsize=16384)
def _walk(
    data: bytes, path: str, resync: bool, check_offsets: bool
) -> tuple[tuple[BatchRef, ...], tuple | None]:
    # Memoised: exploration walks the same segment contents in thousands of crash images.
    out: list[BatchRef] = []
    defect = None
    for item in Walker(data, resync=resync, check_offsets=check_offsets):
        if isinstance(item, RecordBatch):
            out.append(
                BatchRef(item.base_offset, item.last_offset, bytes(item.raw), path, item.position)
            )
        else:
            if defect is None:
                defect = (item.position, item.kind)
            if not resync:
                break
    return tuple(out), defect


def partitions(image: DiskImage, log_dir: str) -> list[str]:
    """Partition dirs directly under `log_dir` in the image (topic-partition names)."""
    prefix = log_dir.rstrip("/") + "/"
    out = set()
    for d in image.dirs:
        if d.startswith(prefix) and "/" not in d[len(prefix) :]:
            if _PARTITION.match(d[len(prefix) :]):
                out.add(d)
    return sorted(out)


def segments(image: DiskImage, part: str) -> list[Segment]:
    """The partition's `.log` files, by base offset, each walked as Kafka's recovery walks it."""
    prefix = part.rstrip("/") + "/"
    out = []
    for path, data in image.files.items():
        if not path.startswith(prefix):
            continue
        m = _SEGMENT.match(path[len(prefix) :])
        if m and "/" not in path[len(prefix) :]:
            batches, defect = walk(data, path)
            out.append(Segment(path, int(m.group(1)), batches, defect, len(data)))
    return sorted(out, key=lambda s: s.base)


def read_offset_checkpoint(image: DiskImage, path: str) -> dict[tuple[str, int], int] | None:
    """A root offset checkpoint as Kafka reads it; None when missing or malformed."""
    data = image.files.get(path)
    if data is None:
        return None
    try:
        lines = data.decode("utf-8").splitlines()
        if int(lines[0]) != 0:
            return None
        count = int(lines[1]) if len(lines) > 1 else 0
        entries = [line.split() for line in lines[2:]]
        if len(entries) != count or any(len(e) != 3 for e in entries):
            return None
        return {(e[0], int(e[1])): int(e[2]) for e in entries}
    except (UnicodeDecodeError, ValueError, IndexError):
        return None


def _tp(part: str) -> tuple[str, int]:
    m = _PARTITION.match(part.rstrip("/").rpartition("/")[2])
    assert m, part
    return m.group(1), int(m.group(2))


def checkpointed(image: DiskImage, log_dir: str, name: str, part: str) -> int | None:
    cp = read_offset_checkpoint(image, f"{log_dir.rstrip('/')}/{name}")
    return None if cp is None else cp.get(_tp(part))


def kafka_oracle(image: DiskImage, log_dir: str, part: str) -> list[BatchRef] | None:
    """The batches a broker keeps at an unclean start (spec recovery §6), or None when the image
    holds an interrupted swap, whose outcome this model does not decide."""
    prefix = part.rstrip("/") + "/"
    if any(p.startswith(prefix) and p.endswith(".swap") for p in image.files):
        return None
    segs = segments(image, part)
    if not segs:
        return []
    clean = f"{log_dir.rstrip('/')}/{CLEAN_SHUTDOWN}" in image.files
    rp = checkpointed(image, log_dir, RECOVERY_POINT_CHECKPOINT, part) or 0
    start = max((i for i, s in enumerate(segs) if s.base <= rp), default=0)
    kept: list[BatchRef] = []
    for i, seg in enumerate(segs):
        if clean or i < start:
            # Trusted without reading: whatever the file holds stays (including damage).
            kept.extend(seg.batches)
            continue
        kept.extend(seg.batches)
        if seg.defect is not None:
            break  # truncated: every later unflushed segment is deleted
    lso = checkpointed(image, log_dir, LOG_START_OFFSET_CHECKPOINT, part) or 0
    leo = kept[-1].last + 1 if kept else segs[-1].base
    return [] if leo < lso else kept


def all_valid_batches(image: DiskImage, part: str) -> list[BatchRef]:
    """Every batch salvage can keep: CRC-valid, found by resynchronising past damage, with offsets
    that fit (at or above its segment's base, above the batch kept before it). The base offset is
    outside the CRC, so a batch whose first sector was lost can look valid with offset 0."""
    kept: list[BatchRef] = []
    segs = segments(image, part)
    for i, seg in enumerate(segs):
        data = image.files[seg.path]
        next_base = segs[i + 1].base if i + 1 < len(segs) else None
        for b in walk(data, seg.path, resync=True, check_offsets=True)[0]:
            if b.base >= seg.base and (not kept or b.base > kept[-1].last):
                if next_base is not None and b.last >= next_base:
                    break  # a stale tail (see `_stale_from`)
                kept.append(b)
    return kept


def _stale_from(batches: list[BatchRef], next_base: int | None) -> int:
    """How many of a segment's batches come before its stale tail: a segment named N was created
    when the log ended at N, so batches at or past N in the one before it are a truncation that
    was never made durable (the strict modes cut them and keep the newer segment)."""
    if next_base is None:
        return len(batches)
    return next((i for i, b in enumerate(batches) if b.last >= next_base), len(batches))


def point_in_time_oracle(image: DiskImage, part: str) -> list[BatchRef]:
    """The prefix before the first defect anywhere: damage inside a segment, or a segment whose
    offsets overlap the previous one's (the overlapping segment and all after it go)."""
    kept: list[BatchRef] = []
    segs = segments(image, part)
    for i, seg in enumerate(segs):
        last = kept[-1].last if kept else -1
        if kept and (seg.base <= last or (seg.batches and seg.batches[0].base <= last)):
            break
        stale = _stale_from(seg.batches, segs[i + 1].base if i + 1 < len(segs) else None)
        kept.extend(seg.batches[:stale])
        if seg.defect is not None and stale == len(seg.batches):
            break
    return kept


@dataclass
class Expectation:
    """What one crash state demands of a repair, per partition dir."""

    log_dir: str
    state: str
    durable: dict[str, list[BatchRef]]
    destroyed: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    """Per partition, (file, position) of durable bytes the fault destroyed."""
    _key: int | None = None

    def key(self) -> int:
        """Identifies the durable demand (not the state label): equal keys, equal checks."""
        if self._key is None:
            self._key = hash(
                tuple((p, tuple(b.data for b in bs)) for p, bs in sorted(self.durable.items()))
            )
        return self._key


def image_digest(image: DiskImage) -> bytes:
    """A digest of every path and byte of an image, to recognise a crash image seen before."""
    h = hashlib.blake2b(digest_size=20)
    for path in sorted(image.files):
        data = image.files[path]
        h.update(f"{path}\0{len(data)}\0".encode())
        h.update(data)
    for d in sorted(image.dirs):
        h.update(f"{d}/\0".encode())
    return h.digest()


def durable_live_batches(disk: SimDisk, log_dir: str) -> dict[str, list[BatchRef]]:
    """Batches durable at this moment that the program still held: in a `.log` of both the durable
    and the volatile image, at the same offset, byte for byte. A segment being deleted (renamed
    `.deleted`, unlinked) is no longer held, so its batches are not demanded back."""
    durable, volatile = disk.durable_image(), disk.volatile_image()
    out = {}
    for part in partitions(volatile, log_dir):
        live = {(b.base, b.data) for b in _live_batches(volatile, part)}
        out[part] = [
            b for s in segments(durable, part) for b in s.batches if (b.base, b.data) in live
        ]
    return out


def _swaps(image: DiskImage, part: str) -> dict[int, list[BatchRef]]:
    """Compacted segments waiting as `<base>.log.swap`, by base offset."""
    prefix = part.rstrip("/") + "/"
    out = {}
    for path, data in image.files.items():
        name = path[len(prefix) :] if path.startswith(prefix) else ""
        if name.endswith(".log.swap") and _SEGMENT.match(name[: -len(".swap")]):
            out[int(name[:20])] = walk(data, path)[0]
    return out


def _live_batches(image: DiskImage, part: str) -> list[BatchRef]:
    """The partition's batches as the program sees them: once a compacted segment is renamed
    `.swap` (the commit point of Kafka's replaceSegments), it stands for the segment it replaces."""
    swaps = _swaps(image, part)
    kept = [b for s in segments(image, part) if s.base not in swaps for b in s.batches]
    return kept + [b for batches in swaps.values() for b in batches]


def written_batches(disk: SimDisk) -> set[bytes]:
    """Every batch the program ever wrote into a segment file, from the trace."""
    out: set[bytes] = set()
    for op in disk.trace:
        if op.kind == "write" and ".log" in op.path:
            out.update(b.data for b in walk(op.data, op.path, resync=True)[0])
    return out


def _result_batches(image: DiskImage, part: str) -> list[BatchRef]:
    return [b for s in segments(image, part) for b in s.batches]


def _shape_problem(segs: list[Segment]) -> tuple[str, int | None, str, int | None] | None:
    """The first way the segments are not well-formed: (detail, offset, file, position)."""
    prev_last = -1
    for seg in segs:
        if seg.defect is not None:
            pos, kind = seg.defect
            offset = seg.batches[-1].last + 1 if seg.batches else seg.base
            return f"{kind} in segment", offset, seg.path, pos
        first = seg.batches[0].base if seg.batches else None
        if seg.base <= prev_last or (first is not None and seg.base > first):
            detail = f"segment named {seg.base} after last offset {prev_last}, first batch {first}"
            return detail, first, seg.path, None
        for b in seg.batches:
            if b.base <= prev_last:
                return f"offset {b.base} after {prev_last}", b.base, b.file, b.position
            prev_last = b.last
    return None


def check_well_formed(image: DiskImage, log_dir: str, state: str) -> list[Violation]:
    """Invariant 1 on the log bytes, segment names and offset checkpoints (index files are
    left to `logrepair verify`, which the idempotence check runs)."""
    out = []
    for part in partitions(image, log_dir):
        segs = segments(image, part)
        problem = _shape_problem(segs)
        if problem is not None:
            detail, offset, file, position = problem
            out.append(Violation(WELL_FORMED, state, detail, part, offset, file, position))
        leftovers = sorted(
            p
            for p in image.files
            if p.startswith(part + "/") and p.endswith((".swap", ".cleaned", ".deleted"))
        )
        if leftovers:
            out.append(
                Violation(
                    WELL_FORMED, state, "leftover file after recovery", part, None, leftovers[0]
                )
            )
        if problem is not None or not segs:
            continue
        last = segs[-1]
        leo = last.batches[-1].last + 1 if last.batches else last.base
        for name in (RECOVERY_POINT_CHECKPOINT, REPLICATION_CHECKPOINT):
            value = checkpointed(image, log_dir, name, part)
            if value is not None and value > leo:
                detail = f"{name} {value} beyond log end {leo}"
                out.append(Violation(WELL_FORMED, state, detail, part, value))
    return out


def check_result(
    result: DiskImage, crash: DiskImage, expect: Expectation, written: set[bytes], mode: str
) -> list[Violation]:
    """Invariants 1-4 for one repaired image."""
    state = expect.state
    out = check_well_formed(result, expect.log_dir, state)
    for part in sorted(set(partitions(crash, expect.log_dir)) | set(expect.durable)):
        got = _result_batches(result, part)
        have = {(b.base, b.data) for b in got}
        # 3. No invention.
        for b in got:
            if b.data not in written:
                out.append(
                    Violation(
                        NO_INVENTION, state, "batch never written", part, b.base, b.file, b.position
                    )
                )
                break
        # 2. Durable.
        demanded = _minus_destroyed(
            expect.durable.get(part, []), expect.destroyed.get(part, []), mode
        )
        for b in demanded:
            if (b.base, b.data) not in have:
                out.append(
                    Violation(
                        DURABLE,
                        state,
                        "durable batch missing or changed",
                        part,
                        b.base,
                        b.file,
                        b.position,
                    )
                )
                break
        # 4. Minimal loss: exactly the oracle's batches (kafka, point-in-time); all valid (salvage).
        if _swaps(crash, part):
            continue  # an interrupted swap: which data Kafka keeps is the swap's decision (§6.3)
        if mode == "kafka":
            oracle = kafka_oracle(crash, expect.log_dir, part)
        elif mode == "point-in-time":
            oracle = point_in_time_oracle(crash, part)
        else:
            oracle = all_valid_batches(crash, part)
        if oracle is None:
            continue
        if mode == "salvage":
            for b in oracle:
                if (b.base, b.data) not in have:
                    out.append(
                        Violation(
                            MINIMAL_LOSS,
                            state,
                            "valid batch removed",
                            part,
                            b.base,
                            b.file,
                            b.position,
                        )
                    )
                    break
            continue
        diff = _first_difference(oracle, got)
        if diff is not None:
            offset, detail = diff
            out.append(Violation(MINIMAL_LOSS, state, detail, part, offset))
    return out


def _minus_destroyed(
    batches: list[BatchRef], destroyed: list[tuple[str, int]], mode: str
) -> list[BatchRef]:
    if not destroyed:
        return batches
    hit = [
        b
        for b in batches
        if any(f == b.file and b.position <= p < b.position + len(b.data) for f, p in destroyed)
    ]
    if not hit:
        return batches
    if mode == "salvage":
        gone = {id(b) for b in hit}
        return [b for b in batches if id(b) not in gone]
    first = min(b.base for b in hit)
    return [b for b in batches if b.base < first]


def _first_difference(expected: list[BatchRef], got: list[BatchRef]) -> tuple[int, str] | None:
    for e, g in zip(expected, got, strict=False):
        if e.base != g.base or e.data != g.data:
            return (
                e.base,
                f"expected the batch at {e.base} ({len(e.data)} bytes), found {g.base} ({len(g.data)} bytes)",
            )
    if len(got) > len(expected):
        g = got[len(expected)]
        return g.base, f"kept the batch at {g.base}, which the mode drops"
    if len(expected) > len(got):
        e = expected[len(got)]
        return e.base, f"removed the batch at {e.base}, which the mode keeps"
    return None
