"""A seeded mutation fuzzer over a real broker log dir: segment, index, snapshot and checkpoint bytes.

The seed dir is written by the project's own storage `LogDir` (every codec, a committed and an
aborted transaction, leader epochs, several segments per partition), then completed with the files a
broker also keeps (`meta.properties`, `partition.metadata`, `cleaner-offset-checkpoint`). Each case
copies it, applies one to three mutations to randomly chosen files, and holds the tool to its
promises on the result (`check_case`): verify never fails; every mode either repairs with the
invariants of design.md holding (well-formed, idempotent, no invention, accounted, undo byte for
byte) or refuses with one of the tool's refusals. Everything follows from the case's seed, so a
failure is replayed with `python -m tests.fuzz.run --seed S --cases 1`.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import signal
import struct
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from logrepair.commands._recovery_options import REFUSALS
from logrepair.format.crc import crc32c
from logrepair.recovery.invariants import (
    accounted,
    inventory,
    no_invention,
    tree_digest,
    well_formed,
)
from logrepair.recovery.repair import repair
from logrepair.recovery.scan import scan_path
from logrepair.recovery.settings import Settings
from logrepair.recovery.undo import undo
from logrepair.storage import checkpoints
from logrepair.storage.clock import ManualClock
from logrepair.storage.layout import TopicPartition
from logrepair.storage.log import ProducerRecord
from logrepair.storage.log_config import LogConfig
from logrepair.storage.logdir import LogDir
from logrepair.storage.meta_properties import MetaProperties, write_meta_properties
from logrepair.storage.osdisk import OsDisk
from logrepair.storage.partition_metadata import write_partition_metadata

DISK = OsDisk()
MODES = ("kafka", "point-in-time", "salvage")
CASE_SECONDS = 20
"""A case (verify and three repairs with their checks) that runs this long is a hang."""

EXTREMES = (
    2**63 - 1,
    -(2**63),
    -1,
    0,
    2**31 - 1,
    -(2**31),
    2**32 - 1,
    2**15 - 1,
    -(2**15),
    2**62,
    2**31,
    1,
)

# The v2 batch header: (name, position, struct format); attributes onward is covered by the CRC.
HEADER_FIELDS = (
    ("base_offset", 0, ">q"),
    ("batch_length", 8, ">i"),
    ("partition_leader_epoch", 12, ">i"),
    ("magic", 16, ">b"),
    ("attributes", 21, ">h"),
    ("last_offset_delta", 23, ">i"),
    ("base_timestamp", 27, ">q"),
    ("max_timestamp", 35, ">q"),
    ("producer_id", 43, ">q"),
    ("producer_epoch", 51, ">h"),
    ("base_sequence", 53, ">i"),
    ("record_count", 57, ">i"),
)
CRC_FROM = 21


def build_seed(root: Path) -> Path:
    """A log dir as a broker leaves it after a clean shutdown, in ROOT/logs."""
    logs = root / "logs"
    clock = ManualClock(1_700_000_000_000)
    config = LogConfig(segment_bytes=700, index_interval_bytes=128)
    ld = LogDir.open(DISK, str(logs), config, clock=clock, create=True)
    for p in range(2):
        log = ld.create_log(TopicPartition("t", p))
        for i in range(12):
            clock.advance(10)
            record = ProducerRecord(b"k%d" % i, bytes(40) + b"v%d" % i)
            log.append([record, record], codec=i % 5, leader_epoch=i // 4)
        log.append(
            [ProducerRecord(b"tx", b"v")],
            producer_id=7,
            producer_epoch=0,
            base_sequence=0,
            is_transactional=True,
            leader_epoch=3,
        )
        log.append_end_txn(7, 0, commit=p == 0, leader_epoch=3)
        log.roll()
        log.append([ProducerRecord(b"x", b"y")], leader_epoch=3)
        log.flush()
        write_partition_metadata(
            DISK, str(logs / f"t-{p}" / "partition.metadata"), bytes(range(16))
        )
    ld.checkpoint()
    ld.close()
    checkpoints.write_offsets(
        DISK, str(logs / "cleaner-offset-checkpoint"), {TopicPartition("t", 0): 5}
    )
    write_meta_properties(
        DISK,
        str(logs / "meta.properties"),
        MetaProperties(1, "q1Sh-9_ISia_zwGINzRvyQ", 1, "AAAAAAAAAAAAAAAAAAAAAw"),
    )
    return logs


# --- mutations ---------------------------------------------------------------------------------


def _flip(rng: random.Random, data: bytearray) -> str:
    if not data:
        return "flip (empty)"
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(data))
        data[i] ^= 1 << rng.randrange(8)
    return "flip"


def _truncate(rng: random.Random, data: bytearray) -> str:
    n = rng.randint(0, len(data))
    del data[n:]
    return f"truncate to {n}"


def _insert(rng: random.Random, data: bytearray) -> str:
    i = rng.randint(0, len(data))
    junk = rng.choice(
        [bytes(rng.randint(1, 64)), rng.randbytes(rng.randint(1, 64)), b"\xff" * rng.randint(1, 16)]
    )
    data[i:i] = junk
    return f"insert {len(junk)} at {i}"


def _splice(rng: random.Random, data: bytearray) -> str:
    """A stretch of the file copied over another place (a misdirected or duplicated write)."""
    if len(data) < 2:
        return "splice (short)"
    a = rng.randrange(len(data))
    b = rng.randint(a + 1, min(len(data), a + 200))
    chunk = data[a:b]
    at = rng.randint(0, len(data))
    if rng.random() < 0.5:
        data[at:at] = chunk
    else:
        data[at : at + len(chunk)] = chunk
    return f"splice {a}..{b} at {at}"


def _zero(rng: random.Random, data: bytearray) -> str:
    """A run of zeros (a torn or unwritten page)."""
    if not data:
        return "zero (empty)"
    a = rng.randrange(len(data))
    b = min(len(data), a + rng.choice([1, 8, 61, 512, 4096]))
    data[a:b] = bytes(b - a)
    return f"zero {a}..{b}"


def _batch_positions(data: bytes) -> list[int]:
    out, pos = [], 0
    while pos + 61 <= len(data):
        out.append(pos)
        (length,) = struct.unpack_from(">i", data, pos + 8)
        if length < 49:
            break
        pos += 12 + length
    return out


def _header_field(rng: random.Random, data: bytearray) -> str:
    """An extreme value in one header field of one batch; half the time the CRC is recomputed, so
    the value reaches every check behind the CRC."""
    positions = _batch_positions(data)
    if not positions:
        return _flip(rng, data)
    pos = rng.choice(positions)
    name, at, fmt = rng.choice(HEADER_FIELDS)
    size = struct.calcsize(fmt)
    bits = size * 8
    value = rng.choice(EXTREMES)
    value = (value + 2 ** (bits - 1)) % 2**bits - 2 ** (bits - 1)
    struct.pack_into(fmt, data, pos + at, value)
    resealed = rng.random() < 0.5
    if resealed:
        (length,) = struct.unpack_from(">i", data, pos + 8)
        end = min(len(data), pos + 12 + max(length, 49))
        struct.pack_into(">I", data, pos + 17, crc32c(bytes(data[pos + CRC_FROM : end])))
    return f"{name}={value} in batch at {pos}{' (CRC resealed)' if resealed else ''}"


_NUMBER = re.compile(rb"-?\d+")


def _number(rng: random.Random, data: bytearray) -> str:
    """An extreme integer in place of one number of a text file."""
    numbers = list(_NUMBER.finditer(data))
    if not numbers:
        return _garbage_line(rng, data)
    m = rng.choice(numbers)
    value = str(rng.choice(EXTREMES + (2**64, -(2**64), 10**30))).encode()
    data[m.start() : m.end()] = value
    return f"number {m.group().decode()} -> {value.decode()}"


GARBAGE_LINES = (
    b"",
    b"garbage",
    b"t 0",
    b"t 0 1 2",
    b"t -1 5",
    b"x y 9223372036854775807",
    b"bad topic 0 5",
    b"t\t0\t5",
    b"\xff\xfe 0 1",
    b"99999999999999999999",
    b"0 0 0",
    b"t 0 -5",
    b"=",
    b"version=99",
    b"topic_id: \x00",
)


def _garbage_line(rng: random.Random, data: bytearray) -> str:
    lines = bytes(data).split(b"\n")
    i = rng.randint(0, len(lines))
    line = rng.choice(GARBAGE_LINES)
    if rng.random() < 0.5 and i < len(lines):
        lines[i] = line
    else:
        lines.insert(i, line)
    data[:] = b"\n".join(lines)
    return f"line {i} := {line!r}"


BINARY = (_flip, _truncate, _insert, _splice, _zero)
SEGMENT = BINARY + (_header_field, _header_field, _header_field)
TEXT = (_number, _number, _garbage_line, _truncate, _flip, _insert)


def _mutations_for(name: str) -> tuple[Callable[[random.Random, bytearray], str], ...]:
    if name.endswith(".log"):
        return SEGMENT
    if name.endswith((".index", ".timeindex", ".txnindex", ".snapshot")):
        return BINARY
    return TEXT


def mutate(logs: Path, rng: random.Random) -> list[str]:
    """One to three mutations of files under LOGS; returns what was done, for the failure report."""
    files = sorted(p for p in logs.rglob("*") if p.is_file() and p.name != ".lock")
    done = []
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        # segments are where the data is: weight them as much as all the other files together
        logs_ = [p for p in files if p.name.endswith(".log")]
        target = rng.choice(logs_) if rng.random() < 0.5 else rng.choice(files)
        data = bytearray(target.read_bytes())
        what = rng.choice(_mutations_for(target.name))(rng, data)
        target.write_bytes(bytes(data))
        done.append(f"{target.relative_to(logs)}: {what}")
    return done


# --- the oracle --------------------------------------------------------------------------------


class Hang(Exception):
    pass


@contextmanager
def deadline(seconds: int) -> Iterator[None]:
    def expired(signum, frame):
        raise Hang(f"no result after {seconds} s")

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@dataclass
class Outcome:
    seed: int
    mutations: list[str]
    problems: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)
    repaired: list[str] = field(default_factory=list)


def check_mode(logs: Path, mode: str, settings: Settings, out: Outcome) -> None:
    """Repair LOGS in MODE, then the invariants; undo must restore every byte."""
    root = str(logs)
    before_tree = tree_digest(DISK, root)
    before = inventory(DISK, root)
    prefix_of = inventory(DISK, root, stale=False) if mode == "point-in-time" else None
    try:
        result = repair(DISK, root, mode, settings)
    except REFUSALS as e:
        out.refused[mode] = str(e).splitlines()[0] if str(e) else type(e).__name__
        if tree_digest(DISK, root) != before_tree:
            out.problems.append(f"{mode}: refused ({e}) after changing files")
        return
    out.repaired.append(mode)
    after = inventory(DISK, root)
    problems = well_formed(DISK, root, mode, settings, result.plan.left, result.scan)
    if prefix_of is not None:
        problems += no_invention(prefix_of, after, prefix=True)
    else:
        problems += no_invention(before, after, prefix=False)
    problems += accounted(DISK, result.plan, result.quarantine)
    if result.quarantine is not None:
        undo(DISK, result.quarantine)
        if tree_digest(DISK, root) != before_tree:
            problems.append("undo did not restore every byte")
    out.problems += [f"{mode}: {p}" for p in problems]


def check_case(work: Path, seed_logs: Path, seed: int) -> Outcome:
    """One case in WORK (emptied first): mutate a copy of the seed, verify, repair in each mode."""
    rng = random.Random(seed)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    pristine = work / "mutated"
    shutil.copytree(seed_logs, pristine)
    out = Outcome(seed, mutate(pristine, rng))
    try:
        with deadline(CASE_SECONDS):
            for deep in (False, True):
                try:
                    scan_path(DISK, str(pristine), Settings(deep_iteration=deep)).to_json()
                except REFUSALS as e:  # exit 2 with one line (e.g. no longer a log dir)
                    out.refused["verify"] = str(e)
            for mode in MODES:
                logs = work / mode / "logs"
                shutil.copytree(pristine, logs)
                # odd seeds repair with --deep-iteration: records are decoded and acted on
                check_mode(logs, mode, Settings(deep_iteration=seed % 2 == 1), out)
    except Hang as e:
        out.problems.append(f"hang: {e}")
    except Exception:
        out.problems.append("internal error:\n" + traceback.format_exc())
    return out


def run(seeds: range, work: Path, report: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    """Every case of SEEDS; the failing ones returned (each is replayable by its seed)."""
    seed_logs = build_seed(work / "seed")
    failures = []
    for seed in seeds:
        out = check_case(work / "case", seed_logs, seed)
        if report is not None:
            report(out)
        if out.problems:
            failures.append(out)
            keep = work / f"failed-{seed}"
            if not keep.exists() and os.environ.get("FUZZ_KEEP"):
                shutil.copytree(work / "case" / "mutated", keep)
    return failures
