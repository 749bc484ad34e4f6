"""A scan reads the next window while it checks one (storage/windows.py, `DiskFile.read_ahead`).

On the reader thread (`OsFile` with the page cache bypassed: `_NOWAIT` off, as on a cold file or a
kernel without RWF_NOWAIT) and in program order (the simulator's SimDisk), the scan says what one
walk over the whole file says; every read, ahead or not, is one the simulator can fault, and its
error comes when the scan takes that window; a file that shrinks, a FIFO and Ctrl-C end the scan
cleanly, with no reader thread left running."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
import sys
import threading
import time
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from logrepair.format.walker import Walker
from logrepair.recovery.scan import scan_path
from logrepair.recovery.settings import Settings
from logrepair.storage import layout, osdisk
from logrepair.storage.osdisk import OsDisk
from logrepair.storage.scan import DEFAULT_MAX_BATCH_SIZE, LogScan
from simulator.disk import DiskImage, IoFault, SimDisk

from ..format.test_walker_mutation import mutated
from ..recovery.builders import batch, write_segment
from .test_scan import exact, make_log, summary, write

LOG = "/data/t-0/" + layout.log_file_name(0)


@contextlib.contextmanager
def reader_thread():
    """Every read ahead on the reader thread: nothing is taken from the page cache first."""
    saved, osdisk._NOWAIT = osdisk._NOWAIT, None
    try:
        yield
    finally:
        osdisk._NOWAIT = saved


def readers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("logrepair-read-ahead")]


def sim_disk(data: bytes, *faults: IoFault) -> SimDisk:
    return SimDisk.from_image(DiskImage({LOG: data}, {"/data", "/data/t-0"}), io_faults=faults)


@given(
    st.lists(st.integers(0, 3000), max_size=12),
    st.integers(1, 9000),
    st.sampled_from(["none", "torn", "flip"]),
    st.booleans(),
)
def test_a_scan_on_the_reader_thread_equals_one_walk(
    tmp_path_factory, sizes, window, damage, resync
) -> None:
    data = bytearray(make_log(sizes, len(sizes)))
    if damage == "torn" and data:
        del data[len(data) * 2 // 3 :]
    elif damage == "flip" and data:
        data[len(data) // 2] ^= 0x40
    path = write(tmp_path_factory.mktemp("ahead"), bytes(data))
    whole = Walker(bytes(data), resync=resync)
    with reader_thread():
        scan = LogScan(OsDisk(), path, window_size=window, resync=resync)
        assert summary(scan) == summary(whole)
    assert (scan.position, scan.batches) == (whole.position, whole.batches)
    assert not readers()  # (joined when the file closed)


@given(mutated(), st.integers(1, 700), st.booleans())
def test_a_scan_of_damaged_files_on_the_reader_thread_equals_one_walk(
    tmp_path_factory, data, window, resync
) -> None:
    """Damaged regions across windows (resync carries them on), the walker stuck before a
    length it cannot frame (the window doubles): what one walk over the whole file says."""
    path = write(tmp_path_factory.mktemp("damaged"), data)
    whole = Walker(data, resync=resync, max_batch_size=DEFAULT_MAX_BATCH_SIZE)
    with reader_thread():
        scan = LogScan(OsDisk(), path, window_size=window, resync=resync)
        assert exact(scan) == exact(whole)
    assert (scan.position, scan.batches) == (whole.position, whole.batches)


def test_a_batch_larger_than_the_room_before_a_read_gets_a_buffer_of_its_own(tmp_path) -> None:
    """Half-window buffers of 4 KiB leave 1 KiB before each read for the walker's carry: the
    9 KiB batch between small ones needs a larger buffer, and the scan goes on reading ahead."""
    data = make_log([100] * 30 + [9000] + [100] * 60 + [3000, 2500] * 4)
    path = write(tmp_path, data)
    with reader_thread():
        assert summary(LogScan(OsDisk(), path, window_size=8192)) == summary(Walker(data))


def test_a_batch_larger_than_half_the_window_is_held_once(tmp_path) -> None:
    """6 MiB and 5 MiB batches among small ones, 1 MiB windows: each big batch is read again
    into the one grown buffer (kept), not copied beside another, so the peak is the largest
    batch and about a window, as without read ahead."""
    big = 6 << 20
    data = make_log([100] * 50 + [big] + [100] * 50 + [5 << 20] + [3000] * 20)
    path = write(tmp_path, data)
    expected = [(i[0], i[1], i[2]) for i in summary(Walker(data))]
    del data
    with reader_thread():
        tracemalloc.start()
        try:
            got = [
                (type(i).__name__.lower(), i.position, i.size)
                for i in LogScan(OsDisk(), path, window_size=1 << 20)
            ]
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert [("batch", p, n) for _, p, n in got] == expected
    assert peak < big + (2 << 20)


def test_every_read_is_one_the_simulator_faults_when_the_scan_takes_its_window() -> None:
    """An I/O error on the k-th read of the `.log` (the first window, then each read ahead):
    the scan has yielded the batches before that window, then raises the error naming the file."""
    data = make_log([1000] * 40)
    whole = summary(Walker(data))
    before = []  # (items yielded before the error, for each k)
    for k in range(64):
        items: list = []
        try:
            for item in LogScan(
                sim_disk(data, IoFault("eio_read", k, ".log")), LOG, window_size=8192
            ):
                items += summary([item])
        except OSError as e:
            assert (e.errno, e.filename) == (errno.EIO, LOG)
            assert items == whole[: len(items)]
            before.append(len(items))
            continue
        assert items == whole  # (k is past the last read)
        break
    assert len(before) > 5 and before == sorted(before)  # (each read as late or later)


def test_an_io_error_mid_segment_in_verify_names_the_file(tmp_path) -> None:
    """Through verify's own scan of a segment larger than the default window (so its second
    window is read ahead): the simulator's EIO there stops verify with the file's name, the
    error the CLI turns into its one line."""
    pdir = tmp_path / "t-0"
    write_segment(pdir, 0, [batch(i, value_size=16_000) for i in range(600)])
    files = {f"/data/t-0/{p.name}": p.read_bytes() for p in pdir.iterdir()}
    for nth in (1, 2):
        disk = SimDisk.from_image(
            DiskImage(files, {"/data", "/data/t-0"}), io_faults=[IoFault("eio_read", nth, ".log")]
        )
        with pytest.raises(OSError) as e:
            scan_path(disk, "/data/t-0", Settings())
        assert (e.value.errno, e.value.filename) == (errno.EIO, LOG)
    clean = SimDisk.from_image(DiskImage(files, {"/data", "/data/t-0"}))
    assert scan_path(clean, "/data/t-0", Settings()).clean


def test_a_file_that_shrinks_while_read_ends_where_its_bytes_end(tmp_path) -> None:
    """Cut to the middle of a batch two windows on, while the scan walks its first window: the
    scan reads what is left and says the file ends torn there, as one walk over the cut file."""
    data = make_log([1000] * 40)
    path = write(tmp_path, data)
    cut = len(data) * 3 // 4 + 10
    with reader_thread():
        scan = LogScan(OsDisk(), path, window_size=8192)
        got = []
        for item in scan:
            if not got:
                os.truncate(path, cut)
            got.append(summary([item])[0])
    assert got == summary(Walker(data[:cut]))
    assert scan.position == scan.file_size == cut
    assert not readers()


def test_a_fifo_fails_its_read_ahead_with_its_name_and_stops_nothing(tmp_path) -> None:
    """A FIFO where a `.log` should be (scans check the type first; this is past that check):
    opening it does not block, a scan sees an empty file, and a read ahead fails at once with
    the FIFO's name, the reader thread then gone with the file."""
    fifo = str(tmp_path / layout.log_file_name(0))
    os.mkfifo(fifo)
    assert list(LogScan(OsDisk(), fifo, window_size=64)) == []
    with reader_thread(), OsDisk().open(fifo) as f:
        with pytest.raises(OSError) as e:
            f.read_ahead(0, memoryview(bytearray(64))).result(timeout=10)
        assert e.value.errno == errno.ESPIPE and e.value.filename == fifo
    assert not readers()


def test_ctrl_c_mid_scan_leaves_no_reader_and_no_open_file(tmp_path) -> None:
    path = write(tmp_path, make_log([1000] * 40))
    fds = len(os.listdir("/proc/self/fd"))
    with reader_thread(), pytest.raises(KeyboardInterrupt):
        for _ in LogScan(OsDisk(), path, window_size=8192):
            signal.raise_signal(signal.SIGINT)  # (a read ahead is in flight or done by now)
    assert not readers()
    assert len(os.listdir("/proc/self/fd")) == fds


def _evict(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fdatasync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def test_ctrl_c_during_a_cold_verify_is_one_line(tmp_path) -> None:
    """The real CLI on a segment whose pages were evicted (so its reads go to the reader thread),
    interrupted once it has the segment open: exit 2 and one line, never a traceback or a hang."""
    pdir = tmp_path / "t-0"
    write_segment(
        pdir, 0, [batch(40 * i, n=40, value_size=200) for i in range(3000)], indexes=False
    )
    log = pdir / layout.log_file_name(0)
    _evict(log)
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    proc = subprocess.Popen(
        [sys.executable, "-m", "logrepair.cli", "verify", "--deep-iteration", str(pdir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        with contextlib.suppress(OSError):
            fds = os.listdir(f"/proc/{proc.pid}/fd")
            if any(_names(proc.pid, fd) == str(log) for fd in fds):
                break
        time.sleep(0.001)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert (proc.returncode, err) == (2, "logrepair: interrupted\n")


def _names(pid: int, fd: str) -> str:
    try:
        return os.readlink(f"/proc/{pid}/fd/{fd}")
    except OSError:
        return ""
