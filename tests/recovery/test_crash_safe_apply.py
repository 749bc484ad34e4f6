"""A crash at any step of a repair, followed by another run, ends where an uninterrupted repair ends.

The repair runs on the simulator's SimDisk; a listener stops it (as a power loss) after operation k,
for every k. The disk left is either everything the program wrote (a process crash) or only what
was fsynced (power loss, the worst case); a second repair then runs on that image.
"""

from __future__ import annotations

import pytest

from logrepair.recovery.repair import repair
from logrepair.recovery.scan import scan_path
from logrepair.recovery.settings import Settings
from simulator.disk import DiskImage, SimDisk

from .builders import batches, flip_byte, log_with_records, segment_files, write_segment

ROOT = "/kafka-logs"
QUARANTINE = ROOT + ".logrepair-quarantine"


class _PowerLoss(BaseException):
    """Stops the repair at a chosen operation; BaseException so no handler in the code eats it."""


def _image_of(real_dir) -> DiskImage:
    files, dirs = {}, {ROOT}
    for p in real_dir.rglob("*"):
        rel = ROOT + "/" + str(p.relative_to(real_dir))
        if p.is_dir():
            dirs.add(rel)
        else:
            files[rel] = p.read_bytes()
    return DiskImage(files, dirs)


def _log_dir_only(image: DiskImage) -> dict[str, bytes]:
    return {p: d for p, d in image.files.items() if p.startswith(ROOT + "/")}


def _repair_until(image: DiskImage, mode: str, stop_at: int | None):
    disk = SimDisk.from_image(image)
    if stop_at is not None:

        def listener(op) -> None:
            if len(disk.trace) >= stop_at:
                raise _PowerLoss()

        disk.listeners.append(listener)
    try:
        repair(disk, ROOT, mode, Settings())
    except _PowerLoss:
        return disk, False
    return disk, True


def _damaged(tmp_path):
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
    return _image_of(d)


@pytest.mark.parametrize("mode", ["kafka", "salvage"])
def test_a_crash_at_any_operation_is_finished_by_the_next_run(tmp_path, mode):
    image = _damaged(tmp_path)
    reference, finished = _repair_until(image, mode, None)
    assert finished
    expected = _log_dir_only(reference.volatile_image())
    total = len(reference.trace)
    assert total > 20
    for stop in range(1, total):
        crashed, finished = _repair_until(image, mode, stop)
        assert not finished
        for after in (crashed.volatile_image(), crashed.durable_image()):
            disk = SimDisk.from_image(after)
            result = repair(disk, ROOT, mode, Settings())
            got = _log_dir_only(disk.volatile_image())
            assert got == expected, (
                f"{mode}: crash after operation {stop} of {total}: {result.finished}"
            )
            assert scan_path(disk, ROOT, Settings()).clean or mode == "kafka"
