"""Log under failing disks: no space during an append, read-only and full filesystems (pyfakefs)."""

from __future__ import annotations

import errno

import pytest

from logrepair.format.walker import Walker
from logrepair.storage.clock import ManualClock
from logrepair.storage.disk import Disk, DiskFile
from logrepair.storage.log import Log, LogStorageError, ProducerRecord
from logrepair.storage.log_config import LogConfig
from logrepair.storage.osdisk import OsDisk


class _FullFile(DiskFile):
    """Writes a prefix of what does not fit, then fails as a full disk does."""

    def __init__(self, inner: DiskFile, disk: _FullDisk) -> None:
        self._inner = inner
        self._disk = disk
        self.path = inner.path

    def size(self) -> int:
        return self._inner.size()

    def read_at(self, position: int, length: int) -> bytes:
        return self._inner.read_at(position, length)

    def read_into(self, position: int, buffer) -> int:
        return self._inner.read_into(position, buffer)

    def write_at(self, position: int, data) -> None:
        data = bytes(data)
        room = self._disk.budget
        if self.path.endswith(".log") and len(data) > room:
            self._inner.write_at(position, data[: max(room, 0)])
            self._disk.budget = 0
            raise OSError(errno.ENOSPC, "No space left on device", self.path)
        if self.path.endswith(".log"):
            self._disk.budget -= len(data)
        self._inner.write_at(position, data)

    def append(self, data) -> int:
        position = self.size()
        self.write_at(position, data)
        return position

    def truncate(self, size: int) -> None:
        self._inner.truncate(size)

    def fsync(self) -> None:
        self._inner.fsync()

    def close(self) -> None:
        self._inner.close()


class _FullDisk(OsDisk):
    """OsDisk whose `.log` writes fail once `budget` bytes were written."""

    def __init__(self, budget: int) -> None:
        super().__init__()
        self.budget = budget

    def open(self, path: str, *, write: bool = False, create: bool = False) -> DiskFile:
        return _FullFile(super().open(path, write=write, create=create), self)


def _values(disk: Disk, path: str) -> list[bytes]:
    lg = Log.open(disk, path, clock=ManualClock(0))
    try:
        data = lg.read(lg.log_start_offset, 1 << 20).data
        return [r.value for b in Walker(data) for r in b.records()]
    finally:
        lg.close()


def test_disk_full_during_append_is_a_clear_error_and_loses_nothing(tmp_path) -> None:
    path = str(tmp_path / "t-0")
    disk = _FullDisk(budget=400)
    lg = Log.open(disk, path, LogConfig(), clock=ManualClock(0))
    written = []
    with pytest.raises(
        LogStorageError, match=r"Error while appending records to t-0.*No space left"
    ):
        for i in range(100):
            lg.append([ProducerRecord(None, bytes([i]) * 50)])
            written.append(bytes([i]) * 50)
    assert written and lg.log_end_offset == len(written) and lg.offline
    # Kafka takes the dir offline: later changes are refused, reads of what is there still work.
    with pytest.raises(LogStorageError, match="already offline"):
        lg.append([ProducerRecord(None, b"x")])
    assert [r.value for b in Walker(lg.read(0, 1 << 20).data) for r in b.records()] == written
    lg.close()
    # The partial write was cut off: the segment ends with a whole batch and reopens cleanly.
    assert _values(OsDisk(), path) == written


def test_open_on_a_read_only_partition_dir_names_the_file(unprivileged) -> None:
    unprivileged.create_file("/data/t-0/00000000000000000000.log", st_mode=0o100444)
    unprivileged.create_file("/data/t-0/00000000000000000000.index", st_mode=0o100444)
    unprivileged.chmod("/data/t-0", 0o555)
    with pytest.raises(PermissionError) as info:
        Log.open(OsDisk(), "/data/t-0", clock=ManualClock(0))
    assert "/data/t-0/00000000000000000000.log" in str(info.value)


def test_open_on_a_full_disk_names_the_index_it_could_not_preallocate(fs) -> None:
    fs.set_disk_usage(1 << 20)
    fs.create_dir("/data")
    with pytest.raises(OSError) as info:
        Log.open(OsDisk(), "/data/t-0", clock=ManualClock(0))
    assert info.value.errno == errno.ENOSPC
    assert "/data/t-0/00000000000000000000" in str(info.value)
