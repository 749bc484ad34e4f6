"""The windowed scan: the same batches and defects as one walk over the whole file, memory flat."""

from __future__ import annotations

import random
import struct
import time
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logrepair.format.batch_builder import build_batch
from logrepair.format.batch_layout import Record
from logrepair.format.errors import Defect
from logrepair.format.walker import Walker
from logrepair.storage.disk import join
from logrepair.storage.osdisk import OsDisk, OsFile
from logrepair.storage.scan import DEFAULT_MAX_BATCH_SIZE, LogScan
from tests.format.test_walker_mutation import mutated


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


def exact(items) -> list:
    """Defects with every field, batches by where they lie and their bytes."""
    return [i if isinstance(i, Defect) else ("batch", i.position, bytes(i.raw)) for i in items]


@settings(max_examples=100)
@given(mutated(), st.integers(1, 700), st.booleans())
def test_windowed_scan_of_damaged_files_equals_one_walk(
    tmp_path_factory, data, window, resync
) -> None:
    """Whatever the window size, the scan says what one walk over the whole file says: with
    resync, a damaged region that spans windows is one defect, named where it starts."""
    path = write(tmp_path_factory.mktemp("damaged"), data)
    whole = Walker(data, resync=resync, max_batch_size=DEFAULT_MAX_BATCH_SIZE)
    scan = LogScan(OsDisk(), path, window_size=window, resync=resync)
    assert exact(scan) == exact(whole)
    assert (scan.position, scan.batches, scan.expected_offset) == (
        whole.position,
        whole.batches,
        whole.expected_offset,
    )


def test_a_region_across_many_windows_is_one_defect(tmp_path) -> None:
    data = make_log([100] * 3)
    cut = len(make_log([100]))
    damaged = data[:cut] + bytes(50_000) + random.Random(7).randbytes(50_000) + data[cut:]
    path = write(tmp_path, damaged)
    items = summary(LogScan(OsDisk(), path, window_size=1000, resync=True))
    assert [i[:4] for i in items] == [
        ("batch", 0, cut, 0),
        ("defect", "bad_length", cut, 100_000),
        ("batch", cut + 100_000, cut, 1),
        ("batch", cut * 2 + 100_000, cut, 2),
    ]


@pytest.mark.parametrize("window", [1, 100, 4096])
def test_end_scans_a_prefix_as_a_file_that_ends_there(tmp_path, window) -> None:
    data = make_log([10, 3000, 20, 500])
    path = write(tmp_path, data)
    for end in (0, 61, len(make_log([10, 3000])), len(data) - 5, len(data), len(data) + 100):
        scan = LogScan(OsDisk(), path, window_size=window, end=end, resync=True)
        assert summary(scan) == summary(Walker(data[:end], resync=True))
        assert scan.position == scan.file_size == min(end, len(data))
    start = len(make_log([10]))
    scan = LogScan(OsDisk(), path, start=start, end=start + 40)
    assert summary(scan) == [("defect", "torn_tail", start, 40, None)]
    with pytest.raises(ValueError):
        LogScan(OsDisk(), path, end=-1)


def test_a_length_above_max_batch_size_is_bad_length_without_reading_it(tmp_path) -> None:
    """A junk length that the file is large enough to hold: a defect, resync goes on past it, and
    the scan never holds more than a window (a sparse file keeps the test small on disk)."""
    first, last = make_log([10]), build_batch([Record(1, 0, None, b"x")], base_offset=1)
    junk = struct.pack(">qi", 1, 80 << 20) + struct.pack(">ib", 0, 2) + bytes(44)
    path = join(str(tmp_path), "00000000000000000000.log")
    tail_at = 90 << 20
    with open(path, "wb") as f:
        f.write(first + junk)
        f.seek(tail_at)
        f.write(last)
    tracemalloc.start()
    try:
        items = summary(LogScan(OsDisk(), path, window_size=1 << 20, resync=True))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [i[:4] for i in items] == [
        ("batch", 0, len(first), 0),
        ("defect", "bad_length", len(first), tail_at - len(first)),
        ("batch", tail_at, len(last), 1),
    ]
    assert peak < 3 << 20
    # Raised above the claim, the scan reads the entry to find its CRC wrong instead.
    scan = LogScan(OsDisk(), path, window_size=1 << 20, resync=True, max_batch_size=100 << 20)
    assert [i[1] for i in summary(scan)] == [0, "crc_mismatch", tail_at]


def test_damaged_regions_scan_in_time_close_to_clean_data(tmp_path) -> None:
    """Resync over zeros and random junk runs in C (regexes, zero runs), not per byte in Python:
    64 MiB of zeros and 8 MiB of random bytes took over 10 s of CPU before, about 0.3 s now."""
    rng = random.Random(3)
    path = join(str(tmp_path), "00000000000000000000.log")
    with open(path, "wb") as f:
        f.write(make_log([100]))
        f.write(rng.randbytes(8 << 20))
        f.truncate(72 << 20)  # a sparse zero-filled end
    started = time.process_time()
    items = summary(LogScan(OsDisk(), path, resync=True))
    spent = time.process_time() - started
    assert [i[0] for i in items] == ["batch", "defect"]
    assert items[1][3] == (72 << 20) - len(make_log([100]))
    assert spent < 4.0


def test_batch_larger_than_the_window_grows_it_once(tmp_path) -> None:
    data = make_log([100, 300_000, 100])
    path = write(tmp_path, data)
    scan = LogScan(OsDisk(), path, window_size=4096)
    assert [s[:4] for s in summary(scan)] == [s[:4] for s in summary(Walker(data))]
    assert scan.batches == 3


def test_length_past_the_end_is_a_defect_not_an_allocation(tmp_path) -> None:
    header = struct.pack(">qi", 1, 2**31 - 1) + struct.pack(">ib", 0, 2)  # (offset 1: the next one)
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
