"""Power loss at a chosen operation of a run on the simulator's SimDisk, for the crash-safety tests
of apply and undo."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from simulator.disk import DiskImage, SimDisk

from .builders import batches, flip_byte, log_with_records, segment_files, write_segment

ROOT = "/kafka-logs"
QUARANTINE = ROOT + ".logrepair-quarantine"


class PowerLoss(BaseException):
    """Stops a run at a chosen operation; BaseException so no handler in the code eats it."""


def image_of(real_dir: Path, root: str = ROOT) -> DiskImage:
    """A real directory tree as a disk image under `root`."""
    files, dirs = {}, {root}
    for p in real_dir.rglob("*"):
        rel = root + "/" + str(p.relative_to(real_dir))
        if p.is_dir():
            dirs.add(rel)
        else:
            files[rel] = p.read_bytes()
    return DiskImage(files, dirs)


def under(image: DiskImage, root: str = ROOT) -> dict[str, bytes]:
    """The files of `image` inside `root` (the log dir, without its quarantine), but its `.lock`:
    a run creates it when absent and removes it when done, so a crashed run leaves it behind, as a
    crashed broker does, and the next run takes it as it is."""
    lock = f"{root}/.lock"
    return {p: d for p, d in image.files.items() if p.startswith(root + "/") and p != lock}


def run_until(
    image: DiskImage, run: Callable[[SimDisk], object], stop_at: int | None
) -> tuple[SimDisk, bool]:
    """Runs `run` on a SimDisk holding `image`, cut by a power loss after operation `stop_at`
    (None: never); returns the disk and whether the run finished."""
    disk = SimDisk.from_image(image)
    if stop_at is not None:

        def listener(op) -> None:
            if len(disk.trace) >= stop_at:
                raise PowerLoss()

        disk.listeners.append(listener)
    try:
        run(disk)
    except PowerLoss:
        return disk, False
    disk.listeners.clear()
    return disk, True


def after_crash(disk: SimDisk) -> tuple[SimDisk, SimDisk]:
    """What the next run finds: everything written (the process died) or only what was fsynced
    (power loss, the worst case)."""
    return SimDisk.from_image(disk.volatile_image()), SimDisk.from_image(disk.durable_image())


def every_crash(
    image: DiskImage, run: Callable[[SimDisk], object], total: int
) -> Iterator[tuple[str, SimDisk]]:
    """For each operation k < `total` of `run`: the disks a crash after operation k leaves
    (`after_crash`), each with a line saying where the crash came."""
    for stop in range(1, total):
        crashed, finished = run_until(image, run, stop)
        assert not finished, f"the run ended before operation {stop} of {total}"
        for disk in after_crash(crashed):
            yield f"crash after operation {stop} of {total}", disk


def damaged_log_dir(tmp_path: Path) -> DiskImage:
    """Two partitions: a corrupt batch and a corrupt index in one, a zero tail in the other, and
    a recovery point below the damage: every mode truncates, splits or rewrites something."""
    d = tmp_path / "kafka-logs"
    pdir = d / "t-0"
    for n in range(2):
        write_segment(pdir, n * 6, batches(n * 6, 6))
    flip_byte(segment_files(pdir)[0], 400)
    (pdir / "00000000000000000040.index").write_bytes(bytes(8))
    log_with_records(d / "u-0", 12, segment_bytes=700)
    last = segment_files(d / "u-0")[-1]
    with open(last, "ab") as f:
        f.write(bytes(100))
    (d / "recovery-point-offset-checkpoint").write_text("0\n2\nt 0 0\nu 0 99\n")
    return image_of(d)
