"""Readers on other threads while the writer appends, rolls and retention deletes segments.

The copy-on-write segment list plus pinning must never hand a reader a closed or unlinked file:
every read either returns whole, valid batches holding exactly the values written at those
offsets, or says the offset is out of range."""

from __future__ import annotations

import threading
import time

from logrepair.format.errors import Defect
from logrepair.format.walker import Walker
from logrepair.storage.clock import ManualClock
from logrepair.storage.log import Log, OffsetOutOfRangeError, ProducerRecord
from logrepair.storage.log_config import LogConfig
from logrepair.storage.osdisk import OsDisk


def value_for(offset: int) -> bytes:
    return offset.to_bytes(8, "big") * 8


def test_readers_never_see_a_deleted_file(tmp_path) -> None:
    clock = ManualClock(0)
    config = LogConfig(segment_bytes=1024, retention_bytes=4096, file_delete_delay_ms=0)
    lg = Log.open(OsDisk(), str(tmp_path / "t-0"), config, clock=clock)
    stop = threading.Event()
    failures: list[str] = []
    reads = [0]

    def reader() -> None:
        while not stop.is_set():
            start = lg.log_start_offset
            try:
                got = lg.read(start, 2048)
            except OffsetOutOfRangeError:
                continue
            except Exception as e:  # anything else is a bug: report it, do not hang the test
                failures.append(f"{type(e).__name__}: {e}")
                return
            for item in Walker(got.data):
                if isinstance(item, Defect):
                    failures.append(f"defect {item.kind} in a read at {start}")
                    return
                for r in item.records():
                    if r.value != value_for(r.offset):
                        failures.append(f"offset {r.offset} holds the wrong value")
                        return
            reads[0] += 1
            time.sleep(0.0005)  # let the writer run: the GIL favours a busy reader

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    deleted = 0
    try:
        for offset in range(800):
            lg.append([ProducerRecord(None, value_for(offset))])
            if offset % 10 == 0:
                deleted += lg.delete_old_segments()
                lg.run_pending()
            if failures:
                break
    finally:
        stop.set()
        for t in threads:
            t.join()
        lg.close()
    assert not failures, failures[:3]
    assert deleted > 20 and reads[0] > 0


class _PausingDisk(OsDisk):
    """Pauses the first read of `pause_path` until the test lets it go on."""

    def __init__(self) -> None:
        super().__init__()
        self.pause_path: str | None = None
        self.inside = threading.Event()
        self.proceed = threading.Event()

    def open(self, path: str, *, write: bool = False, create: bool = False):
        f = super().open(path, write=write, create=create)
        read_at = f.read_at

        def pausing_read_at(position: int, length: int) -> bytes:
            if self.pause_path is not None and path == self.pause_path:
                self.pause_path = None
                self.inside.set()
                self.proceed.wait(10)
            return read_at(position, length)

        f.read_at = pausing_read_at
        return f


def test_a_segment_deleted_during_a_read_is_closed_only_after_it(tmp_path) -> None:
    disk = _PausingDisk()
    config = LogConfig(segment_bytes=400, retention_ms=0, file_delete_delay_ms=0)
    lg = Log.open(disk, str(tmp_path / "t-0"), config, clock=ManualClock(10**6))
    for offset in range(20):
        lg.append([ProducerRecord(None, value_for(offset), timestamp=0)])
    first = lg.segments[0]
    disk.pause_path = first.log_path
    result: list = []
    reader = threading.Thread(target=lambda: result.append(lg.read(0, 10_000)))
    reader.start()
    assert disk.inside.wait(10)
    assert lg.delete_old_segments() >= 1 and first not in lg.segments
    lg.run_pending()
    # Renamed, due for deletion, but still open for the reader that holds it.
    assert (tmp_path / "t-0" / (first.log_path.rpartition("/")[2])).exists()
    disk.proceed.set()
    reader.join()
    (got,) = result
    values = [r.value for b in Walker(got.data) for r in b.records()]
    assert values == [value_for(o) for o in range(len(values))] and values
    assert not (tmp_path / "t-0" / (first.log_path.rpartition("/")[2])).exists()
    lg.close()
