"""Differential recovery: the same damaged log dir through Kafka's own recovery and through
`logrepair repair --mode kafka`, and every way their results differ.

A case is a simulator workload (the project's own `Log` writing every codec, transactions with
their markers, compaction, retention, truncations, several segments), a crash state at one of its
operations (`simulator.faults`), and optionally one `logsim inject` fault on top. It is built twice
on real files: Kafka recovers one copy (each partition dir as LogManager loads it, checkpoints and
all), logrepair repairs the other, and `compare` lists the divergences.
"""

from __future__ import annotations

import random
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from logrepair.format.walker import Walker
from logrepair.recovery.repair import RepairResult, repair
from logrepair.recovery.settings import Settings
from logrepair.storage import layout
from logrepair.storage.osdisk import OsDisk
from simulator import inject
from simulator.disk import SimDisk
from simulator.faults import crash_states
from simulator.workload import WorkloadSpec, run_workload

from .harness import RecoverServer

SEGMENT_FILES = (layout.LOG_SUFFIX, layout.INDEX_SUFFIX, layout.TIME_INDEX_SUFFIX, ".txnindex")


@dataclass(frozen=True)
class Case:
    spec: WorkloadSpec
    point: int
    """Crash just after this trace operation (the last one when the workload has fewer)."""
    crash_fault: str
    variant: int
    inject: str | None = None
    inject_seed: int = 0

    def label(self) -> str:
        hurt = f" + inject {self.inject}#{self.inject_seed}" if self.inject else ""
        return f"{self.spec} @op {self.point} {self.crash_fault}#{self.variant}{hurt}"


@dataclass
class Outcome:
    """One case's result: what each side did and where they differ."""

    case: Case
    kafka: dict[str, Any] = field(default_factory=dict)
    repair: RepairResult | None = None
    divergences: list[str] = field(default_factory=list)
    preallocation_only: list[str] = field(default_factory=list)
    """Index files equal but for Kafka's preallocated zeros (the active segment's)."""
    kafka_failed: bool = False


def build(case: Case, root: Path) -> Path | None:
    """The crashed (and injected) log dir of `case`, written under `root`; None when the crash
    came before the log dir held a partition."""
    disk = SimDisk()
    states = []

    def at(op) -> None:
        if op.index == case.point:
            states.extend(crash_states(disk, op.index, [case.crash_fault], case.spec.seed))

    disk.listeners.append(at)
    run_workload(case.spec, disk)
    if not states:
        states.extend(crash_states(disk, len(disk.trace) - 1, [case.crash_fault], case.spec.seed))
    if not states:
        return None
    state = states[case.variant % len(states)]
    state.image.write_to(str(root))
    log_dir = root / case.spec.log_dir.lstrip("/")
    if not log_dir.is_dir() or not partition_dirs(log_dir):
        return None
    if case.inject:
        try:
            inject.inject(str(log_dir), case.inject, case.inject_seed, in_place=True)
        except inject.InjectError:
            pass  # this log dir cannot take the fault (no index to corrupt, ...): crash only
    return log_dir


def partition_dirs(log_dir: Path) -> list[Path]:
    """What LogManager loads: every topic-partition dir (no `-delete`/`-stray`/`-future` here)."""
    out = []
    for p in sorted(log_dir.iterdir()):
        topic, sep, part = p.name.rpartition("-")
        if p.is_dir() and sep and topic and part.isdigit():
            out.append(p)
    return out


def settings_for(spec: WorkloadSpec) -> Settings:
    cfg = spec.config()
    return Settings(
        index_interval_bytes=cfg.index_interval_bytes,
        segment_index_bytes=cfg.segment_index_bytes,
        message_max_bytes=cfg.max_message_bytes,
    )


def kafka_config(spec: WorkloadSpec) -> dict[str, int]:
    """The topic config the workload wrote with, as Kafka's topic config keys."""
    cfg = spec.config()
    return {
        "index.interval.bytes": cfg.index_interval_bytes,
        "segment.index.bytes": cfg.segment_index_bytes,
        "max.message.bytes": cfg.max_message_bytes,
    }


def run_case(case: Case, work: Path, server: RecoverServer) -> Outcome | None:
    """Builds `case` twice under `work`, recovers one copy with Kafka and repairs the other."""
    built = build(case, work / "a")
    if built is None:
        return None
    ours = work / "b" / built.relative_to(work / "a")
    shutil.copytree(work / "a", work / "b", symlinks=True)
    outcome = Outcome(case)
    for pdir in partition_dirs(built):
        outcome.kafka[pdir.name] = server.recover(
            pdir, from_log_dir=True, clean_shutdown=False, config=kafka_config(case.spec)
        )
    outcome.repair = repair(
        OsDisk(), str(ours), "kafka", settings_for(case.spec), quarantine_root=str(work / "q")
    )
    compare(built, ours, outcome)
    return outcome


def compare(theirs: Path, ours: Path, outcome: Outcome) -> None:
    """Fills `outcome.divergences`: per partition, the segment files, indexes and log end."""
    assert outcome.repair is not None
    for name, answer in outcome.kafka.items():
        if answer["error"] is not None:
            outcome.kafka_failed = True
            if not _says_kafka_fails(outcome.repair, name):
                err = answer["error"]
                outcome.divergences.append(
                    f"{name}: Kafka fails ({err['class']}: {err['message']}) and logrepair's plan "
                    "does not say so"
                )
            continue
        k_dir, o_dir = theirs / name, ours / name
        k_files = _segment_files(k_dir, answer)
        o_files = _segment_files(o_dir, None) if o_dir.is_dir() else {}
        k_logs = {n for n in k_files if n.endswith(layout.LOG_SUFFIX)}
        o_logs = {n for n in o_files if n.endswith(layout.LOG_SUFFIX)}
        if k_logs != o_logs:
            outcome.divergences.append(
                f"{name}: segments Kafka keeps {sorted(k_logs)}, logrepair {sorted(o_logs)}"
            )
        for file in sorted(set(k_files) | set(o_files)):
            if file.endswith(layout.LOG_SUFFIX) and file not in (k_logs & o_logs):
                continue
            k, o = k_files.get(file, b""), o_files.get(file, b"")
            if k == o:
                continue
            if file.endswith(layout.LOG_SUFFIX):
                outcome.divergences.append(
                    f"{name}/{file}: .log differs (Kafka {len(k)} bytes, logrepair {len(o)}, "
                    f"first difference at {_first_difference(k, o)})"
                )
            elif _is_preallocation(k, o):
                outcome.preallocation_only.append(f"{name}/{file}")
            elif file.rsplit(".", 1)[0] + layout.LOG_SUFFIX in (k_logs & o_logs):
                outcome.divergences.append(
                    f"{name}/{file}: differs (Kafka {len(k)} bytes, logrepair {len(o)}, first "
                    f"difference at {_first_difference(k, o)})"
                )
        ours_end = log_end_offset(o_dir) if o_dir.is_dir() else None
        if ours_end != answer["log_end_offset"]:
            outcome.divergences.append(
                f"{name}: log end offset Kafka {answer['log_end_offset']}, logrepair {ours_end}"
            )


def _says_kafka_fails(result: RepairResult, partition: str) -> bool:
    """logrepair's plan says, about this partition, that Kafka cannot load it (in a note, a defect
    it leaves, or the reason of an action that repairs what Kafka fails on)."""
    texts = [*result.plan.notes, *(str(d) for d in result.plan.left)]
    texts += [f"{a.file}: {a.reason}" for a in result.plan.actions]
    words = ("does not start", "startup aborts", "start-up aborts", "offline")
    return any(partition + "/" in t and any(w in t for w in words) for t in texts)


def _segment_files(pdir: Path, answer: dict | None) -> dict[str, bytes]:
    """Segment files by name; those Kafka renamed to `.deleted` count as gone."""
    gone = set(answer["deleted"]) if answer else set()
    out = {}
    for p in pdir.iterdir():
        if p.name.endswith(SEGMENT_FILES) and p.name not in gone and p.is_file():
            out[p.name] = p.read_bytes()
    return out


def _is_preallocation(kafka: bytes, ours: bytes) -> bool:
    return len(kafka) > len(ours) and kafka.startswith(ours) and not kafka[len(ours) :].strip(b"\0")


def _first_difference(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def log_end_offset(pdir: Path) -> int | None:
    """As Kafka computes it: the next offset after the last batch of the last segment, or that
    segment's base offset when it holds none."""
    logs = sorted(p for p in pdir.iterdir() if p.name.endswith(layout.LOG_SUFFIX))
    if not logs:
        return None
    data = logs[-1].read_bytes()
    end = int(logs[-1].name.split(".")[0])
    for item in Walker(memoryview(data), file_size=len(data)):
        if hasattr(item, "last_offset"):
            end = item.last_offset + 1
    return end


def random_case(rng: random.Random, spec: WorkloadSpec, faults: list[str], injects: list[str]):
    """A case from a seeded generator (the thorough run's driver uses it)."""
    return Case(
        spec,
        rng.randrange(0, 600),
        rng.choice(faults),
        rng.randrange(8),
        rng.choice([None, *injects]),
        rng.randrange(1000),
    )
