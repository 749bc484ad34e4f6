"""Differential recovery: the same damaged log dir through Kafka's own recovery and through
`logrepair repair --mode kafka`, and every way their results differ.

A case is a simulator workload (the project's own `Log` writing every codec, transactions with
their markers, compaction, retention, truncations, several segments), a crash state at one of its
operations (`simulator.faults`), and optionally one `logsim inject` fault on top. It is built twice
on real files: Kafka recovers one copy (each partition dir as LogManager loads it, checkpoints and
all), logrepair repairs the other, and `compare` lists the divergences.
"""

from __future__ import annotations

import json
import random
import shutil
import struct
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from logrepair.recovery.repair import repair
from logrepair.recovery.settings import Settings
from logrepair.storage import layout
from logrepair.storage.osdisk import OsDisk
from simulator import inject
from simulator.disk import SimDisk
from simulator.faults import CRASH_FAULTS, crash_states
from simulator.inject import INJECT_FAULTS
from simulator.workload import CODECS, WorkloadSpec, run_workload

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

    case: Case | None
    """None for a log dir built by hand."""
    kafka: dict[str, Any] = field(default_factory=dict)
    repair: dict[str, Any] = field(default_factory=dict)
    """logrepair's result as `repair --json` prints it."""
    divergences: list[str] = field(default_factory=list)
    preallocation_only: list[str] = field(default_factory=list)
    """Index files equal but for Kafka's preallocated zeros (the active segment's)."""
    epochs_next_load: list[str] = field(default_factory=list)
    """Partitions whose leader epochs logrepair writes as Kafka's next load of its own result
    does, not as its first (docs/spec-notes.md: the fixed point)."""
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
    if not states:  # past the end, or nothing pending there for this fault: the process dies
        states.extend(crash_states(disk, len(disk.trace) - 1, ["process_crash"], case.spec.seed))
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


def run_case(case: Case, work: Path, server: RecoverServer, *, cli: bool = False) -> Outcome | None:
    """Builds `case` under `work` and runs it through both (`differ`)."""
    built = build(case, work / "a")
    if built is None:
        return None
    return differ(
        built,
        work,
        server,
        settings_for(case.spec),
        kafka_config(case.spec),
        Outcome(case),
        cli=cli,
    )


def differ(
    built: Path,
    work: Path,
    server: RecoverServer,
    settings: Settings,
    config: dict[str, int],
    outcome: Outcome,
    *,
    cli: bool = False,
) -> Outcome:
    """Copies the log dir `built` (under `work/a`) to `work/b`, recovers `a` with Kafka and
    repairs `b` (in-process, or with `cli` through `logrepair repair --mode kafka --json` in a
    subprocess), compares them, and has Kafka load the repaired result again."""
    ours = work / "b" / built.relative_to(work / "a")
    shutil.copytree(work / "a", work / "b", symlinks=True)
    for pdir in partition_dirs(built):
        outcome.kafka[pdir.name] = server.recover(
            pdir, from_log_dir=True, clean_shutdown=False, config=config
        )
    outcome.repair = (repair_cli if cli else repair_in_process)(ours, work / "q", settings)
    compare(built, ours, outcome)
    accept_epochs_of_next_load(built, ours, outcome, server, config)
    reload_repaired(ours, outcome, server, config)
    return outcome


def accept_epochs_of_next_load(
    theirs: Path, ours: Path, outcome: Outcome, server: RecoverServer, config: dict[str, int]
) -> None:
    """A deliberate departure (docs/spec-notes.md): where Kafka's load drops a checkpoint entry
    past the new log end whose epoch hid the recovered batches' own, its next load adds their
    epoch back; kafka mode writes that fixed point at once. Accepted only where Kafka's load of
    its own result (a copy) writes exactly logrepair's entries."""
    for name in list(outcome.kafka):
        found = [d for d in outcome.divergences if d.startswith(f"{name}: leader epochs Kafka ")]
        if not found:
            continue
        again = theirs.parent.parent / "kafka-again"
        shutil.rmtree(again, ignore_errors=True)
        shutil.copytree(theirs, again / theirs.name, symlinks=True)
        answer = server.recover(
            again / theirs.name / name, from_log_dir=True, clean_shutdown=False, config=config
        )
        if answer["error"] is None and _epochs(again / theirs.name / name) == _epochs(ours / name):
            outcome.divergences = [d for d in outcome.divergences if d not in found]
            outcome.epochs_next_load.append(name)


def reload_repaired(
    ours: Path, outcome: Outcome, server: RecoverServer, config: dict[str, int]
) -> None:
    """Kafka loads logrepair's result (on a copy) as a restarted broker would: it must not fail
    unless logrepair said it would, and its recovery must find nothing to cut or delete."""
    again = ours.parent.parent / "again"
    shutil.copytree(ours.parent, again, symlinks=True)
    for pdir in partition_dirs(again / ours.name):
        before = {p.name: p.stat().st_size for p in pdir.iterdir() if p.name.endswith(".log")}
        answer = server.recover(pdir, from_log_dir=True, clean_shutdown=False, config=config)
        if answer["error"] is not None:
            if not _says_kafka_fails(outcome.repair, pdir.name):
                err = answer["error"]
                outcome.divergences.append(
                    f"{pdir.name}: Kafka fails on logrepair's result ({err['class']}: "
                    f"{err['message']}) and the plan does not say so"
                )
            continue
        after = {s["base_offset"]: s["size"] for s in answer["segments"]}
        kept = {layout.offset_from_file_name(n): size for n, size in before.items()}
        if after != kept:
            outcome.divergences.append(
                f"{pdir.name}: Kafka's recovery of logrepair's result changes it: segments "
                f"{kept} become {after}"
            )


def repair_in_process(log_dir: Path, quarantine: Path, settings: Settings) -> dict[str, Any]:
    result = repair(OsDisk(), str(log_dir), "kafka", settings, quarantine_root=str(quarantine))
    return result.to_json()


def repair_cli(log_dir: Path, quarantine: Path, settings: Settings) -> dict[str, Any]:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "logrepair",
            "repair",
            str(log_dir),
            "--mode",
            "kafka",
            "--json",
            "--quarantine",
            str(quarantine),
            "--index-interval-bytes",
            str(settings.index_interval_bytes),
            "--segment-index-bytes",
            str(settings.segment_index_bytes),
            "--message-max-bytes",
            str(settings.message_max_bytes),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode not in (0, 1):
        raise AssertionError(f"logrepair repair exited {proc.returncode}: {proc.stderr.strip()}")
    return json.loads(proc.stdout)


def compare(theirs: Path, ours: Path, outcome: Outcome) -> None:
    """Fills `outcome.divergences`: per partition, the segment files, indexes and log end."""
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
        if _says_kafka_fails(outcome.repair, name):
            outcome.divergences.append(
                f"{name}: logrepair says Kafka cannot load it, but Kafka does: "
                + "; ".join(_failure_claims(outcome.repair, name))
            )
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
            elif _is_preallocation(k, o, _logical_size(answer, file)):
                outcome.preallocation_only.append(f"{name}/{file}")
            elif file.rsplit(".", 1)[0] + layout.LOG_SUFFIX in (k_logs & o_logs):
                outcome.divergences.append(
                    f"{name}/{file}: differs (Kafka {len(k)} bytes, logrepair {len(o)}, first "
                    f"difference at {_first_difference(k, o)})"
                )
        k_epochs, o_epochs = _epochs(k_dir), _epochs(o_dir)
        untouched = not any(a["file"].startswith(name + "/") for a in outcome.repair["actions"])
        if untouched and not (o_dir / layout.LEADER_EPOCH_CHECKPOINT).exists():
            o_epochs = k_epochs  # the recovery point did not move: Kafka's next load creates it
        if k_epochs != o_epochs:
            outcome.divergences.append(
                f"{name}: leader epochs Kafka {k_epochs}, logrepair {o_epochs}"
            )
        ours_end = log_end_offset(o_dir) if o_dir.is_dir() else None
        if ours_end != answer["log_end_offset"]:
            outcome.divergences.append(
                f"{name}: log end offset Kafka {answer['log_end_offset']}, logrepair {ours_end}"
            )


def _failure_claims(result: dict[str, Any], partition: str) -> list[str]:
    """What logrepair's plan says, about this partition, of Kafka failing to load it (in a note,
    a defect it leaves, or the reason of an action that repairs what Kafka fails on)."""
    texts = [*result["notes"], *(json.dumps(d) for d in result["left"])]
    texts += [f"{a['file']}: {a['reason']}" for a in result["actions"]]
    words = ("does not start", "startup aborts", "start-up aborts", "offline")
    return [t for t in texts if partition + "/" in t and any(w in t for w in words)]


def _says_kafka_fails(result: dict[str, Any], partition: str) -> bool:
    return bool(_failure_claims(result, partition))


def _segment_files(pdir: Path, answer: dict | None) -> dict[str, bytes]:
    """Segment files by name; those Kafka renamed to `.deleted` count as gone, unless a segment of
    Kafka's log has that name again (an overflow split's first piece replaces the segment it
    split under the same name, beside the old files renamed `.deleted`)."""
    answer = answer or {}
    live = {layout.log_file_name(s["base_offset"]) for s in answer.get("segments") or []}
    stems = {name[: -len(layout.LOG_SUFFIX)] for name in live}
    gone = {n for n in answer.get("deleted", []) if n.rpartition(".")[0] not in stems}
    out = {}
    for p in pdir.iterdir():
        if p.name.endswith(SEGMENT_FILES) and p.name not in gone and p.is_file():
            out[p.name] = p.read_bytes()
    return out


def _epochs(pdir: Path) -> list[str] | None:
    """The leader-epoch-checkpoint's entry lines (a missing file reads as none, as Kafka's)."""
    path = pdir / layout.LEADER_EPOCH_CHECKPOINT
    if not path.exists():
        return []
    return path.read_text(errors="replace").splitlines()[2:]


def _logical_size(answer: dict, file: str) -> int | None:
    """The bytes of entries Kafka's index of `file` holds (the harness reports them per segment)."""
    key = {layout.INDEX_SUFFIX: "index_bytes", layout.TIME_INDEX_SUFFIX: "time_index_bytes"}
    stem, _, suffix = file.partition(".")
    for segment in answer.get("segments", []):
        if segment["base_offset"] == int(stem) and "." + suffix in key:
            return segment.get(key["." + suffix])
    return None


def _is_preallocation(kafka: bytes, ours: bytes, logical: int | None) -> bool:
    """Kafka's file is ours followed by its preallocation: zeros, or past the index's logical
    end (a truncation drops entries without clearing their bytes)."""
    if len(kafka) <= len(ours) or not kafka.startswith(ours):
        return False
    return logical == len(ours) or not kafka[len(ours) :].strip(b"\0")


def _first_difference(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def log_end_offset(pdir: Path) -> int | None:
    """As Kafka's `readNextOffset` computes it: the next offset after the last batch of the last
    segment, batches read by their size fields alone (no CRC check), or that segment's base
    offset when it holds none."""
    logs = sorted(p for p in pdir.iterdir() if p.name.endswith(layout.LOG_SUFFIX))
    if not logs:
        return None
    data = logs[-1].read_bytes()
    end = int(logs[-1].name.split(".")[0])
    position = 0
    while position + 17 < len(data):
        base, length = struct.unpack_from(">qi", data, position)
        if length < 14 or position + 12 + length > len(data):
            break
        last = base
        if data[position + 16] >= 2 and position + 27 <= len(data):
            last += struct.unpack_from(">i", data, position + 23)[0]
        end = last + 1
        position += 12 + length
    return end


def random_spec(rng: random.Random) -> WorkloadSpec:
    """A small workload over the whole parameter space: every codec, transactions, compaction,
    retention, truncations, leader epochs, several segments, both index intervals."""
    segment_bytes = rng.choice([600, 1200, 4096])
    records = rng.randint(1, 4)
    lo = rng.randint(8, 120)
    hi = min(lo + rng.randint(0, 200), (segment_bytes - 200) // records - 20)
    return WorkloadSpec(
        seed=rng.randrange(2**16),
        partitions=rng.randint(1, 2),
        appends=rng.randint(1, 40),
        records=(1, records),
        record_bytes=(min(lo, hi), hi),
        keys=rng.randint(0, 8),
        codecs=tuple(rng.sample(list(CODECS), rng.randint(1, 3))),
        transactions=rng.choice([0.0, 0.3, 1.0]),
        segment_bytes=segment_bytes,
        index_interval_bytes=rng.choice([0, 64, 256, 4096]),
        flush_every=rng.randint(0, 6),
        checkpoint_every=rng.randint(0, 6),
        retention_bytes=rng.choice([-1, 2500]),
        retention_every=rng.randint(0, 5),
        truncate_every=rng.choice([0, 7]),
        leader_epoch_every=rng.choice([0, 5]),
        compact_at_end=rng.random() < 0.2,
    )


def random_case(seed: int, n: int) -> Case:
    """Case `n` of the seeded run `seed`: reproducible on its own, whatever ran before it."""
    rng = random.Random(f"{seed}:{n}")
    spec = random_spec(rng)
    return Case(
        spec,
        rng.randrange(0, 400),
        rng.choice(list(CRASH_FAULTS)),
        rng.randrange(8),
        rng.choice([None, None, *INJECT_FAULTS]),
        rng.randrange(1000),
    )


def main(argv: list[str] | None = None) -> int:
    """The long differential run: `python -m tests.kafka.differential --cases 5000 --seed 1`."""
    import argparse
    import collections
    import re
    import tempfile
    import time

    from .harness import recover_server

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--case", type=int, help="run only this case and keep its dirs")
    args = parser.parse_args(argv)
    numbers = [args.case] if args.case is not None else range(args.cases)
    kinds: collections.Counter[str] = collections.Counter()
    first: dict[str, str] = {}
    stats: collections.Counter[str] = collections.Counter()
    faults: collections.Counter[str] = collections.Counter()
    started = time.perf_counter()
    shm = "/dev/shm" if Path("/dev/shm").is_dir() else None
    with recover_server() as server:
        for n in numbers:
            case = random_case(args.seed, n)
            work = Path(tempfile.mkdtemp(prefix="oracle-", dir=shm))
            try:
                outcome = run_case(case, work, server)
            finally:
                if args.case is None:
                    shutil.rmtree(work, ignore_errors=True)
            if outcome is None:
                stats["no partition at the crash"] += 1
                continue
            stats["cases"] += 1
            faults[case.crash_fault] += 1
            faults[f"inject {case.inject}"] += case.inject is not None
            stats["Kafka fails the partition"] += outcome.kafka_failed
            stats["Kafka deletes a segment"] += any(
                f.endswith(layout.LOG_SUFFIX)
                for a in outcome.kafka.values()
                for f in a.get("deleted", [])
            )
            stats["index differs only by preallocation"] += bool(outcome.preallocation_only)
            stats["leader epochs of Kafka's next load"] += bool(outcome.epochs_next_load)
            for d in outcome.divergences:
                key = re.sub(r"\d+", "N", d)[:160]
                kinds[key] += 1
                first.setdefault(key, f"case {n}: {d}")
            if args.case is not None:
                print(case)
                print(json.dumps({"kafka": outcome.kafka, "repair": outcome.repair}, indent=1))
                print(f"kept in {work}")
    print(f"{dict(stats)} in {time.perf_counter() - started:.0f} s (seed {args.seed})")
    print("cases by fault:", ", ".join(f"{k} {v}" for k, v in sorted(faults.items())))
    print(f"divergences: {sum(kinds.values())}")
    for key, count in kinds.most_common():
        print(f"{count:6}  {first[key]}")
    return 1 if kinds else 0


if __name__ == "__main__":
    sys.exit(main())
