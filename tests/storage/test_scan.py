"""The windowed scan: the same batches and defects as one walk over the whole file, memory flat."""

from __future__ import annotations

import random
import struct
import tracemalloc

import pytest
from hypothesis import given
from hypothesis import strategies as st

from logrepair.format.batch import Record, build_batch
from logrepair.format.errors import Defect
from logrepair.format.walker import Walker
from logrepair.storage.disk import join
from logrepair.storage.osdisk import OsDisk, OsFile
from logrepair.storage.scan import LogScan


def make_log(sizes: list[int], seed: int = 0) -> bytes:
    """Batches of one record each, values of the given sizes, offsets 0, 1, 2, ..."""
    rng = random.Random(seed)
    out = bytearray()
    for offset, size in enumerate(sizes):
        value = rng.randbytes(size)
        out += build_batch(
            [Record(offset, 1_700_000_000_000 + offset, None, value)], base_offset=offset
        )
    return bytes(out)


def summary(items) -> list[tuple]:
    """What a scan said, copied out of the window while each item is still valid."""
    out = []
    for item in items:
        if isinstance(item, Defect):
            out.append(("defect", item.kind, item.position, item.length, item.offset))
        else:
            out.append(("batch", item.position, item.size, item.base_offset, bytes(item.raw)))
    return out


def write(tmp_path, data: bytes) -> str:
    path = join(str(tmp_path), "00000000000000000000.log")
    OsDisk().write_file_atomic(path, data)
    return path


@pytest.mark.parametrize("window", [1, 61, 100, 1000, 4096, 8 << 20])
def test_every_window_size_sees_the_same_batches(tmp_path, window) -> None:
    data = make_log([0, 10, 3000, 5, 20000, 100, 0, 7000])
    path = write(tmp_path, data)
    scan = LogScan(OsDisk(), path, window_size=window)
    got = summary(scan)
    assert got == summary(Walker(data))
    assert scan.position == len(data) == scan.file_size
    assert scan.batches == 8 and scan.expected_offset == 8
    positions = [g[1] for g in got]
    assert positions == sorted(positions) and positions[0] == 0


@given(
    st.lists(st.integers(0, 3000), min_size=0, max_size=12),
    st.integers(1, 9000),
    st.sampled_from(["none", "torn", "zeros", "flip", "junk"]),
    st.integers(0, 2**32),
)
def test_windowed_scan_equals_one_walk(tmp_path_factory, sizes, window, damage, seed) -> None:
    data = bytearray(make_log(sizes, seed))
    rng = random.Random(seed)
    if damage == "torn" and data:
        del data[rng.randrange(len(data)) :]
    elif damage == "zeros":
        data += bytes(rng.randrange(1, 5000))
    elif damage == "flip" and data:
        data[rng.randrange(len(data))] ^= 0x40
    elif damage == "junk":
        data += rng.randbytes(rng.randrange(1, 500))
    path = write(tmp_path_factory.mktemp("scan"), bytes(data))
    expected = summary(Walker(bytes(data)))
    assert summary(LogScan(OsDisk(), path, window_size=window)) == expected
    assert list(LogScan(OsDisk(), path, window_size=window).validate()) == list(
        Walker(bytes(data)).validate()
    )


@given(
    st.lists(st.integers(0, 2000), min_size=2, max_size=10),
    st.integers(200, 6000),
    st.integers(0, 2**32),
)
def test_resync_keeps_every_batch_across_windows(tmp_path_factory, sizes, window, seed) -> None:
    data = bytearray(make_log(sizes, seed))
    rng = random.Random(seed)
    start = rng.randrange(len(data) - 20)
    data[start : start + 20] = bytes(20)
    path = write(tmp_path_factory.mktemp("resync"), bytes(data))
    whole = summary(Walker(bytes(data), resync=True))
    windowed = summary(LogScan(OsDisk(), path, window_size=window, resync=True))
    assert [w for w in windowed if w[0] == "batch"] == [w for w in whole if w[0] == "batch"]

    def covered(items) -> int:
        return sum(i[3] for i in items if i[0] == "defect")

    # A damaged region may be reported in pieces at window edges, never with bytes gained or lost.
    assert covered(windowed) == covered(whole)


def test_batch_larger_than_the_window_grows_it_once(tmp_path) -> None:
    data = make_log([100, 300_000, 100])
    path = write(tmp_path, data)
    scan = LogScan(OsDisk(), path, window_size=4096)
    assert [s[:4] for s in summary(scan)] == [s[:4] for s in summary(Walker(data))]
    assert scan.batches == 3


def test_length_past_the_end_is_a_defect_not_an_allocation(tmp_path) -> None:
    header = struct.pack(">qi", 0, 2**31 - 1) + struct.pack(">ib", 0, 2)
    path = write(tmp_path, make_log([10]) + header + bytes(100))
    tracemalloc.start()
    try:
        items = summary(LogScan(OsDisk(), path, window_size=4096))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [i[1] if i[0] == "defect" else "batch" for i in items] == ["batch", "torn_tail"]
    assert peak < 1 << 20


def test_memory_stays_flat_in_the_file_size(tmp_path) -> None:
    data = make_log([256 * 1024] * 64)  # 16 MiB of batches
    path = write(tmp_path, data)
    tracemalloc.start()
    try:
        scan = LogScan(OsDisk(), path, window_size=1 << 20)
        assert all(not isinstance(item, Defect) for item in scan)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert scan.batches == 64
    assert peak < 3 << 20


def test_start_and_expected_offset_resume_a_scan(tmp_path) -> None:
    path = write(tmp_path, make_log([10, 20, 30]))
    whole = [(b.position, b.base_offset) for b in LogScan(OsDisk(), path)]
    scan = LogScan(OsDisk(), path, start=whole[1][0], expected_offset=1)
    assert [(b.position, b.base_offset) for b in scan] == whole[1:]
    # Resuming with a later expected offset makes the walker see a regression.
    regressed = list(LogScan(OsDisk(), path, start=whole[1][0], expected_offset=5))
    assert isinstance(regressed[0], Defect) and regressed[0].kind == "offset_regression"


def test_empty_file(tmp_path) -> None:
    scan = LogScan(OsDisk(), write(tmp_path, b""))
    assert list(scan) == [] and scan.position == 0 and scan.batches == 0


def test_missing_file(tmp_path) -> None:
    with pytest.raises(FileNotFoundError):
        list(LogScan(OsDisk(), join(str(tmp_path), "none.log")))


def test_window_size_must_be_positive(tmp_path) -> None:
    with pytest.raises(ValueError):
        LogScan(OsDisk(), "x", window_size=0)


class _OverstatedFile(OsFile):
    """A file whose size says more than its reads give: the file shrank during the scan."""

    def size(self) -> int:
        return super().size() + 1000


class _ShrinkingDisk(OsDisk):
    def open(self, path: str, *, write: bool = False, create: bool = False) -> OsFile:
        f = super().open(path, write=write, create=create)
        f.__class__ = _OverstatedFile
        return f


def test_a_file_that_shrinks_under_the_scan_ends_where_the_bytes_end(tmp_path) -> None:
    data = make_log([10, 20])
    scan = LogScan(_ShrinkingDisk(), write(tmp_path, data), window_size=64)
    assert summary(scan) == summary(Walker(data))
    assert scan.file_size == scan.position == len(data)
