"""The repair under test, run on SimDisks built from crash images.

`Repairer` wraps `logrepair.recovery.repair.repair` so exploration can repair an image, verify the
result, undo it, and crash the repair itself at each of its operations. Its quarantine lives at
`/logrepair-quarantine` on the simulated disk, outside the log dir, and is left out of result images.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from logrepair.recovery.invariants import well_formed
from logrepair.recovery.repair import repair as run_repair
from logrepair.recovery.scan import LogDirScan
from logrepair.recovery.settings import Settings
from logrepair.recovery.undo import undo as run_undo
from simulator.disk import DiskImage, Op, PersistenceModel, SimDisk
from simulator.faults import crash_states
from simulator.invariants import partitions

MODES = ("kafka", "point-in-time", "salvage")
QUARANTINE = "/logrepair-quarantine"


class RepairError(Exception):
    """The repair raised instead of repairing: itself a finding."""


class _Crash(BaseException):
    """Raised from a SimDisk listener to stop the repair at a chosen operation (power loss)."""


@dataclass
class RepairRun:
    image: DiskImage
    """The disk after the repair, without the quarantine."""
    disk: SimDisk
    actions: list
    quarantine: str | None
    left: list[dict] = field(default_factory=list)
    """The defects the repair reported it leaves (`plan.left`): kafka mode leaves some by design."""
    scan: LogDirScan | None = None
    """The scan the repair planned from (None when there was nothing to repair)."""


def without_quarantine(image: DiskImage) -> DiskImage:
    keep = lambda p: not (p == QUARANTINE or p.startswith(QUARANTINE + "/"))  # noqa: E731
    return DiskImage(
        {p: d for p, d in image.files.items() if keep(p)},
        {d for d in image.dirs if keep(d)},
        {p: n for p, n in image.nodes.items() if keep(p)},
    )


class Repairer:
    """`logrepair repair` with the settings the workload's topic was written with."""

    def __init__(
        self, settings: Settings | None = None, model: PersistenceModel | None = None
    ) -> None:
        self.settings = settings or Settings()
        self.model = model or PersistenceModel()

    def _repair(self, disk: SimDisk, log_dir: str, mode: str):
        try:
            return run_repair(disk, log_dir, mode, self.settings, quarantine_root=QUARANTINE)
        except _Crash:
            raise
        except Exception as e:  # any escape is a repair bug, reported as such
            raise RepairError(f"{type(e).__name__}: {e}") from e

    def __call__(self, image: DiskImage, log_dir: str, mode: str) -> RepairRun:
        disk = SimDisk.from_image(image, self.model)
        if not _has_log_dir(image, log_dir):
            # Crashed before the log dir held anything a broker would load: nothing to repair.
            return RepairRun(image, disk, [], None)
        result = self._repair(disk, log_dir, mode)
        return RepairRun(
            without_quarantine(disk.volatile_image()),
            disk,
            list(result.plan.actions),
            result.quarantine,
            list(result.plan.left),
            result.scan,
        )

    def not_well_formed(self, run: RepairRun, log_dir: str, mode: str) -> list[str]:
        """Invariants 1 and 6 on the repaired image, by the rule the recovery tests use
        (`logrepair.recovery.invariants.well_formed`): verify finds nothing but what the repair
        reported as left, and a second plan in the same mode is empty. Empty: all well."""
        if not _has_log_dir(run.image, log_dir):
            return []
        disk = SimDisk.from_image(run.image, self.model)
        try:
            return well_formed(disk, log_dir, mode, self.settings, run.left, run.scan)
        except Exception as e:
            raise RepairError(f"verify: {type(e).__name__}: {e}") from e

    def undo(self, run: RepairRun) -> DiskImage | None:
        """The image after undoing `run` (None when it changed nothing)."""
        if run.quarantine is None:
            return None
        try:
            run_undo(run.disk, run.quarantine)
        except Exception as e:
            raise RepairError(f"undo: {type(e).__name__}: {e}") from e
        return without_quarantine(run.disk.volatile_image())

    def crash_during_repair(
        self, image: DiskImage, log_dir: str, mode: str, *, limit: int | None = None
    ) -> Iterator[tuple[int, str, DiskImage | RepairError]]:
        """For each operation of the repair: power fails just after it (nothing unsynced survives,
        or everything does), then a second repair runs; yields (op, fault, image after it, or
        the error the second run failed with). An image without a log dir is not repaired
        (see `__call__`), so there is nothing to crash."""
        if not _has_log_dir(image, log_dir):
            return
        probe = SimDisk.from_image(image, self.model)
        self._repair(probe, log_dir, mode)
        points = range(len(probe.trace))
        if limit is not None and len(points) > limit:
            step = len(points) / limit
            points = sorted({int(i * step) for i in range(limit)} | {len(probe.trace) - 1})
        for point in points:
            disk = SimDisk.from_image(image, self.model)
            captured = []

            def crash_after(op: Op, disk=disk, point=point, captured=captured) -> None:
                if op.index == point:
                    captured.extend(
                        crash_states(disk, point, ["lose_unsynced", "process_crash"], 0)
                    )
                    raise _Crash()

            disk.listeners.append(crash_after)
            try:
                self._repair(disk, log_dir, mode)
            except _Crash:
                pass
            for state in captured:
                second = SimDisk.from_image(state.image, self.model)
                try:
                    self._repair(second, log_dir, mode)
                except RepairError as e:
                    yield point, state.fault, e
                    continue
                yield point, state.fault, without_quarantine(second.volatile_image())


def _has_log_dir(image: DiskImage, log_dir: str) -> bool:
    prefix = log_dir.rstrip("/") + "/"
    return bool(partitions(image, log_dir)) or any(
        p.startswith(prefix) and p.endswith("checkpoint") for p in image.files
    )


def repairer_for(spec, model: PersistenceModel | None = None) -> Repairer:
    """The repairer for a workload: the index settings its log was written with."""
    cfg = spec.config()
    settings = Settings(
        index_interval_bytes=cfg.index_interval_bytes,
        segment_index_bytes=cfg.segment_index_bytes,
        message_max_bytes=cfg.max_message_bytes,
    )
    return Repairer(settings, model)
