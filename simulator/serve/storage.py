"""The broker's log dir, on the simulator's disk or the real one, with power cuts and reboots.

A power cut stops the storage where it stands: on a SimDisk, one of the simulator's crash faults
(`simulator.faults`) decides which unsynced changes reach the platter; on the real disk only a
process crash can be modelled (everything written stays in the page cache). The reboot then does
what an operator's start script would: `logrepair repair --mode MODE` on the log dir, then opens it
as a broker does.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass, field

from logrepair.recovery.repair import repair as run_repair
from logrepair.recovery.settings import Settings
from logrepair.storage import clean_shutdown
from logrepair.storage.disk import Disk, parent_of
from logrepair.storage.layout import TopicPartition
from logrepair.storage.log import Log
from logrepair.storage.log_config import LogConfig
from logrepair.storage.logdir import LogDir
from logrepair.storage.osdisk import OsDisk
from simulator.disk import DiskImage, Op, SimDisk
from simulator.faults import CRASH_FAULTS, CrashState, crash_states
from simulator.repair import QUARANTINE, without_quarantine

log = logging.getLogger(__name__)

SIM_LOG_DIR = "/kafka-logs"


class PowerCut(BaseException):
    """Raised from a SimDisk listener: the power went at this operation (not an error to handle)."""


@dataclass
class CutReport:
    """What one power cut and reboot did."""

    number: int
    fault: str
    variant: int
    at_op: int
    mode: str
    recovery_points: dict[TopicPartition, int]
    """Each partition's recovery point (what was flushed) at the cut."""
    log_ends_before: dict[TopicPartition, int]
    log_ends_after: dict[TopicPartition, int] = field(default_factory=dict)
    removed_offsets: list[list[int]] = field(default_factory=list)
    damage: list[dict] = field(default_factory=list)
    repair_seconds: float = 0.0
    reboot_seconds: float = 0.0


@dataclass
class StorageOptions:
    disk: str = "sim"  # sim | os
    log_dir: str = SIM_LOG_DIR
    config: LogConfig = field(default_factory=LogConfig)
    topic_configs: dict[str, LogConfig] = field(default_factory=dict)
    repair_mode: str = "kafka"
    seed: int = 0


class BrokerStorage:
    """The open log dir; `cut` and `reboot` replace it by what a power loss and restart leave."""

    def __init__(self, options: StorageOptions) -> None:
        self.options = options
        self.rng = random.Random(options.seed)
        self.disk: Disk = SimDisk() if options.disk == "sim" else OsDisk()
        self.cuts = 0
        self._armed: CrashState | None = None
        self.log_dir = self._open()

    @property
    def simulated(self) -> bool:
        return isinstance(self.disk, SimDisk)

    def config_for(self, tp: TopicPartition) -> LogConfig:
        return self.options.topic_configs.get(tp.topic, self.options.config)

    def _open(self) -> LogDir:
        disk, path = self.disk, self.options.log_dir
        if not disk.exists(path):  # Kafka's createAndValidateLogDirs: created, parent flushed
            disk.make_dirs(path)
            disk.fsync_dir(parent_of(path))
        elif disk.list_dir(path) and not clean_shutdown.had_clean_shutdown(disk, path):
            self._repair()  # a log dir a crashed broker left: recovered before it is served
        return LogDir.open(self.disk, self.options.log_dir, self.config_for, create=True)

    @property
    def logs(self) -> dict[TopicPartition, Log]:
        return self.log_dir.logs

    def create_log(self, tp: TopicPartition) -> Log:
        return self.log_dir.create_log(tp)

    # --- power ----------------------------------------------------------------------------------

    def arm(self, after_ops: int, fault: str) -> None:
        """Cuts the power `after_ops` disk operations from now (SimDisk only), inside whatever
        storage call runs then: the crash image is taken just after that operation, and the
        call is stopped there by `PowerCut`."""
        if not isinstance(self.disk, SimDisk):
            raise ValueError("a cut at a later operation needs --disk sim")
        self._check_fault(fault)
        disk = self.disk
        target = len(disk.trace) + max(1, after_ops)

        def listener(op: Op) -> None:
            if op.index + 1 >= target:
                if self._armed is None:
                    self._armed = self._crash_state(fault)
                raise PowerCut(f"power cut after disk operation {op.describe()}")

        self.disarm()
        disk.listeners.append(listener)

    def disarm(self) -> None:
        if isinstance(self.disk, SimDisk):
            self.disk.listeners.clear()
        self._armed = None

    def _check_fault(self, fault: str) -> None:
        if fault not in CRASH_FAULTS:
            raise ValueError(f"unknown fault {fault!r}; one of {', '.join(CRASH_FAULTS)}")
        if not self.simulated and fault != "process_crash":
            raise ValueError("--disk os can only model process_crash (the page cache survives)")

    def _crash_state(self, fault: str) -> CrashState:
        assert isinstance(self.disk, SimDisk)
        point, seed = len(self.disk.trace), self.rng.randrange(2**31)
        states = list(crash_states(self.disk, point, [fault], seed))
        if not states:  # nothing for the fault to act on (e.g. no unsynced write to tear)
            return CrashState(point, fault, 0, seed, self.disk.durable_image())
        return states[self.rng.randrange(len(states))]

    def cut_and_reboot(self, fault: str) -> CutReport:
        """Power loss now under `fault`, then repair and reopen. The old LogDir is abandoned."""
        armed = self._armed
        if armed is not None:
            fault = armed.fault
        self._check_fault(fault)
        self.disarm()
        self.cuts += 1
        report = CutReport(
            self.cuts,
            fault,
            0,
            len(self.disk.trace) if isinstance(self.disk, SimDisk) else 0,
            self.options.repair_mode,
            {tp: lg.recovery_point for tp, lg in self.logs.items()},
            {tp: lg.log_end_offset for tp, lg in self.logs.items()},
        )
        started = time.monotonic()
        image = None
        if isinstance(self.disk, SimDisk):  # the image first: closing files writes nothing after
            state = armed or self._crash_state(fault)
            report.at_op = state.point
            report.variant = state.variant
            report.damage = [d.to_json() for d in state.damage]
            image = without_quarantine(state.image)
        self.log_dir.abandon()
        if image is not None:
            self.disk = SimDisk.from_image(image, self.disk.model)
        repaired = time.monotonic()
        if self.disk.exists(self.options.log_dir):
            report.removed_offsets = self._repair()
        report.repair_seconds = time.monotonic() - repaired
        self.log_dir = self._open()
        report.log_ends_after = {tp: lg.log_end_offset for tp, lg in self.logs.items()}
        report.reboot_seconds = time.monotonic() - started
        log.info(
            "power cut #%d (%s) at disk op %d; repaired (%s) and reopened in %.3f s",
            report.number, fault, report.at_op, report.mode, report.reboot_seconds,
        )  # fmt: skip
        return report

    def _repair(self) -> list[list[int]]:
        """`logrepair repair --mode MODE` on the log dir; the offset ranges it removed."""
        result = run_repair(
            self.disk,
            self.options.log_dir,
            self.options.repair_mode,
            Settings(),
            quarantine_root=QUARANTINE if self.simulated else None,
        )
        return [list(r) for r in result.plan.removed_offsets]

    def close(self) -> None:
        """A clean shutdown."""
        self.disarm()
        self.log_dir.close()

    def save(self, target: str) -> None:
        """Writes the log dir's files under a real directory (SimDisk only; for `logrepair dump`)."""
        if isinstance(self.disk, SimDisk):
            image = without_quarantine(self.disk.volatile_image())
            prefix = self.options.log_dir.rstrip("/") + "/"
            DiskImage(
                {p[len(prefix) :]: d for p, d in image.files.items() if p.startswith(prefix)},
                {d[len(prefix) :] for d in image.dirs if d.startswith(prefix)},
            ).write_to(target)
