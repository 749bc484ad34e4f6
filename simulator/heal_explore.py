"""Heal under crashes: the replicated workload crashed at sampled points, then every broker of
every crash state repaired three ways — `heal` from the other brokers' copies, `kafka`, and
`salvage` — to measure what each loses and to hold heal to its invariants.

Crash states come in two kinds: a correlated power loss (every broker's disk crashes at the same
moment: one crash image of the shared SimDisk) and a crash of one broker alone (its files from the
crash image, the other brokers' as they were, still running). A broker's loss is the number of
offsets below the high watermark it checkpointed that its repaired log no longer holds.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from dataclasses import dataclass, field

from logrepair.recovery.heal_invariants import from_replicas, nothing_diverged
from logrepair.recovery.healing import heal
from logrepair.recovery.invariants import BatchId, inventory, well_formed
from logrepair.recovery.path_kind import NotALogDir
from logrepair.recovery.repair import repair
from logrepair.recovery.settings import Settings
from logrepair.storage import layout
from logrepair.storage.checkpoints import CheckpointError, read_offsets
from simulator.disk import DiskImage, SimDisk
from simulator.faults import crash_states
from simulator.invariants import Violation
from simulator.replicas import TOPIC, ReplicaSpec, run_replicated

MODES = ("heal", "kafka", "salvage")
QUARANTINE = "/quarantine"
FROM_REPLICAS = "from_replicas"
NOTHING_DIVERGED = "nothing_diverged"
HEAL_WELL_FORMED = "heal_well_formed"
REPLICAS_UNTOUCHED = "replicas_untouched"
HEAL_NO_WORSE = "heal_no_worse"
"""Over a scenario, heal loses no more acknowledged offsets, in no more cases, than kafka mode or
salvage."""
HEAL_INVARIANTS = (
    FROM_REPLICAS,
    NOTHING_DIVERGED,
    HEAL_WELL_FORMED,
    REPLICAS_UNTOUCHED,
    HEAL_NO_WORSE,
)


@dataclass
class HealOptions:
    faults: tuple[str, ...] = ("lose_unsynced", "torn_write", "garbage_block", "bit_rot")
    samples: int = 20
    """Crash points sampled at random over the workload's operations."""
    seed: int = 0
    max_variants: int | None = 2
    """Variants per fault and crash point."""
    independent: bool = True
    """Also crash each broker alone (the others keep running)."""


@dataclass
class HealReport:
    states: int = 0
    """Crash states explored (each repaired on every broker)."""
    cases: int = 0
    """(state, broker) pairs where some acknowledged offset was missing or the log was damaged."""
    lossless: Counter = field(default_factory=Counter)
    """Per mode: cases where the repaired broker holds every acknowledged offset."""
    lost_offsets: Counter = field(default_factory=Counter)
    violations: list[Violation] = field(default_factory=list)
    elapsed: float = 0.0

    @property
    def states_per_second(self) -> float:
        return self.states / self.elapsed if self.elapsed else 0.0

    def worse_than_local(self) -> list[str]:
        """Modes that lost less than heal (none, when heal is right)."""
        return [
            m
            for m in ("kafka", "salvage")
            if self.lossless[m] > self.lossless["heal"]
            or self.lost_offsets[m] < self.lost_offsets["heal"]
        ]

    def figures(self) -> dict:
        out = self.to_json()
        out.pop("violations")
        return out

    def to_json(self) -> dict:
        return {
            "crash_states": self.states,
            "damaged_cases": self.cases,
            "lossless": {m: self.lossless[m] for m in MODES},
            "lossless_share": {
                m: round(self.lossless[m] / self.cases, 3) if self.cases else None for m in MODES
            },
            "acknowledged_offsets_lost": {m: self.lost_offsets[m] for m in MODES},
            "seconds": round(self.elapsed, 1),
            "violations": [v.to_json() for v in self.violations],
        }


def explore_heal(spec: ReplicaSpec, opts: HealOptions) -> HealReport:
    report = HealReport()
    started = time.monotonic()
    probe = SimDisk()
    run_replicated(spec, probe)
    rng = random.Random(opts.seed)
    points = sorted(rng.sample(range(len(probe.trace)), min(opts.samples, len(probe.trace))))
    images: list[tuple[str, DiskImage, range]] = []
    disk = SimDisk()

    def at(op) -> None:
        if op.index not in wanted:
            return
        live = disk.volatile_image()
        for state in crash_states(
            disk, op.index, list(opts.faults), opts.seed, max_variants=opts.max_variants
        ):
            images.append((f"{state.label} all brokers", state.image, range(spec.brokers)))
            if opts.independent:
                # the brokers still running are not damaged: only the crashed one is repaired
                for b in range(spec.brokers):
                    merged = _merge(state.image, live, spec, b)
                    images.append((f"{state.label} broker{b} alone", merged, range(b, b + 1)))

    wanted = set(points)
    disk.listeners.append(at)
    run_replicated(spec, disk)
    for label, image, brokers in images:
        report.states += 1
        for b in brokers:
            _check(spec, label, image, b, report)
    report.elapsed = time.monotonic() - started
    return report


def _merge(crashed: DiskImage, live: DiskImage, spec: ReplicaSpec, broker: int) -> DiskImage:
    """Broker `broker`'s files from the crash, every other broker's as they are."""
    mine = spec.log_dir(broker) + "/"
    files = {p: d for p, d in live.files.items() if not p.startswith(mine)}
    files.update({p: d for p, d in crashed.files.items() if p.startswith(mine)})
    dirs = {d for d in live.dirs if not (d + "/").startswith(mine)}
    dirs |= {d for d in crashed.dirs if (d + "/").startswith(mine)}
    return DiskImage(files, dirs)


def _committed(image: DiskImage, log_dir: str) -> int:
    disk = SimDisk.from_image(image)
    path = f"{log_dir}/{layout.REPLICATION_CHECKPOINT}"
    if not disk.exists(path):
        return 0
    try:
        return read_offsets(disk, path).get(layout.TopicPartition(TOPIC, 0), 0)
    except CheckpointError:
        return 0


def _missing(batches: list[BatchId], committed: int) -> int:
    """Offsets below `committed` no batch covers (in order, duplicates ignored)."""
    covered = set()
    for b in batches:
        if b.base_offset < committed:
            covered.update(range(b.base_offset, min(b.last_offset, committed - 1) + 1))
    return committed - len(covered)


def _check(spec: ReplicaSpec, label: str, image: DiskImage, b: int, report: HealReport) -> None:
    log_dir = spec.log_dir(b)
    if not any(p.startswith(log_dir + "/") and p.endswith(".log") for p in image.files):
        return
    others = [spec.log_dir(o) for o in range(spec.brokers) if o != b]
    committed = _committed(image, log_dir)
    settings = Settings()
    base = SimDisk.from_image(image)
    before = _inventory(base, log_dir)
    partition = f"{TOPIC}-0"
    damaged = _missing(before.get(partition, []), committed) > 0
    losses = {}
    for mode in MODES:
        disk = SimDisk.from_image(image)
        state = f"{label}, broker{b}, {mode}"
        try:
            if mode == "heal":
                done = heal(disk, log_dir, settings, others, quarantine_root=QUARANTINE)
                result = done.result
            else:
                result = repair(disk, log_dir, mode, settings, quarantine_root=QUARANTINE)
        except Exception as e:  # any escape is a bug of the tool, reported as a violation
            report.violations.append(
                Violation(HEAL_WELL_FORMED, state, f"{type(e).__name__}: {e}", partition)
            )
            return
        damaged = damaged or any(
            a.file.endswith(".log") and a.action in ("truncate", "split", "delete", "write_file")
            for a in result.plan.actions
        )
        after = inventory(disk, log_dir)
        losses[mode] = _missing(after.get(partition, []), committed)
        if mode == "heal":
            _heal_invariants(
                spec, state, base, disk, log_dir, others, before, after, result, report
            )
    if not damaged:
        return
    report.cases += 1
    for mode, lost in losses.items():
        report.lost_offsets[mode] += lost
        if lost == 0:
            report.lossless[mode] += 1


def _heal_invariants(spec, state, base, disk, log_dir, others, before, after, result, report):
    partition = f"{TOPIC}-0"
    replicas = [_inventory(base, o) for o in others]
    problems = [(FROM_REPLICAS, p) for p in from_replicas(before, after, replicas)]
    problems += [
        (HEAL_WELL_FORMED, p)
        for p in well_formed(disk, log_dir, "salvage", Settings(), result.plan.left, result.scan)
    ]
    if spec.unclean_at is not None:
        div = spec.log_dir(spec.diverged_broker)
        if div != log_dir:
            rest = [_inventory(base, o) for o in others if o != div]
            problems += [
                (NOTHING_DIVERGED, p)
                for p in nothing_diverged(before, after, _inventory(base, div), rest)
            ]
    for o in others:
        if _tree(base, o) != _tree(disk, o):
            problems.append((REPLICAS_UNTOUCHED, f"{o} changed"))
    for invariant, detail in problems:
        report.violations.append(Violation(invariant, state, detail, partition))


def _inventory(disk: SimDisk, path: str) -> dict[str, list[BatchId]]:
    """A copy's batches; none for a broker whose log dir the crash left without anything."""
    try:
        return inventory(disk, path)
    except NotALogDir:
        return {}


def _tree(disk: SimDisk, root: str) -> dict[str, bytes]:
    image = disk.volatile_image()
    return {p: d for p, d in image.files.items() if p.startswith(root + "/")}
