"""`quiet_run` two ways, held to one answer: the C accelerator and the pure-Python reference.

On valid segments (with their own indexes and Kafka's index interval), on damaged ones and on
random bytes, under random limits, both return the same batches, positions, state and points.
The cross-implementation tests skip, saying why, where the extension is not built; the reference
tests always run.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from logrepair.format.batch_builder import build_batch
from logrepair.format.batch_layout import Record
from logrepair.format.batch_runs import NONE, quiet_run_python
from logrepair.format.crc import crc32c
from logrepair.storage.index_builder import recovery_index_bytes

from .strategies import segments
from .test_records_accel import _records, needs_accelerator

INT64_MAX = 2**63 - 1
_LENGTH = struct.Struct(">i")


def _index_of(data: bytes, base: int, interval: int) -> tuple[bytes, bytes]:
    """The offset and time index Kafka's recovery writes for `data` (valid batches)."""
    points, pos = [], 0
    while pos + 12 <= len(data):
        size = 12 + _LENGTH.unpack_from(data, pos + 8)[0]
        last = int.from_bytes(data[pos : pos + 8], "big") + _LENGTH.unpack_from(data, pos + 23)[0]
        points.append((pos, last, int.from_bytes(data[pos + 35 : pos + 43], "big", signed=True)))
        pos += size
    return recovery_index_bytes(points, base, interval, 2**31)


@st.composite
def arguments(
    draw, data: bytes, base: int, permissive: bool = False, valid: bytes = b"", epoch: int = -1
):
    """`quiet_run`'s arguments over `data`: each a value every batch of `valid` (the segment before
    any damage) passes, or (unless `permissive`, one time in sixteen) one drawn around it."""

    def pick(loose, tight):
        if permissive or draw(st.integers(0, 15)):
            return loose
        return draw(tight)

    interval = draw(st.sampled_from([0, 100, 4096]))
    oi, ti = _index_of(valid, base, interval) if valid else (b"", b"")
    oi = pick(oi, st.sampled_from([b"", oi[8:], bytes(len(oi))]))
    ti = pick(ti, st.sampled_from([b"", ti[12:]]))
    return (
        data,
        pick(0, st.integers(0, 80)),
        pick(len(data), st.integers(0, len(data) + 8)),
        pick(0, st.sampled_from([1, 2**40])),
        pick(2**31 - 12, st.sampled_from([1000, 49])),
        pick(0, st.sampled_from([base, base + 1]) | st.integers(base - 3, base + 2**12)),
        pick(INT64_MAX - 1, st.sampled_from([base + 2**12])),
        pick(INT64_MAX, st.sampled_from([300, 2000])),
        pick(epoch, st.sampled_from([-2, 0, 3])),
        oi,
        0,
        len(oi) // 8,
        base,
        pick(NONE, st.sampled_from([base - 1, base + 50])),
        ti,
        0,
        len(ti) // 12,
        base,
        draw(st.booleans()),
        draw(st.integers(0, 2**20)),
        0,
        pick(NONE, st.sampled_from([base, base + 100])),
        interval,
        pick(-1, st.sampled_from([0, 1, 3])),
    )


def _damaged(draw, data: bytes) -> bytes:
    raw = bytearray(data)
    for op, where, blob in draw(
        st.lists(
            st.tuples(
                st.sampled_from(["flip", "cut", "insert", "zero"]),
                st.integers(0, 10**6),
                st.binary(min_size=1, max_size=20),
            ),
            max_size=3,
        )
    ):
        at = where % (len(raw) + 1)
        if op == "flip" and raw:
            raw[at % len(raw)] ^= 1 << (where % 8)
        elif op == "cut":
            del raw[at:]
        elif op == "insert":
            raw[at:at] = blob
        else:
            raw[at : at + len(blob)] = bytes(len(blob))
    return bytes(raw)


@needs_accelerator
@given(data=st.data(), segment=segments(max_batches=8, same_epoch=True))
def test_c_and_python_agree_on_valid_and_damaged_segments(data, segment) -> None:
    valid, specs = segment
    base = specs[0].kwargs["base_offset"]
    raw = data.draw(st.sampled_from([valid, _damaged(data.draw, valid)]))
    epoch = specs[0].kwargs["partition_leader_epoch"]
    args = data.draw(arguments(raw, base, valid=valid, epoch=epoch))
    event(f"quiet batches: {min(_records.quiet_run(*args)[0], 2)}")
    assert _records.quiet_run(*args) == quiet_run_python(*args)


@needs_accelerator
@given(data=st.data(), junk=st.binary(max_size=400))
def test_c_and_python_agree_on_random_bytes(data, junk) -> None:
    args = data.draw(arguments(junk, 0))
    assert _records.quiet_run(*args) == quiet_run_python(*args)


def _large_batches(sizes: list[int], base: int = 7) -> bytes:
    """Batches with values of these sizes: CRCs over every length around the C code's rounds."""
    out, offset = [], base
    for i, size in enumerate(sizes):
        value = bytes((offset * 31 + j) & 0xFF for j in range(size))
        out.append(build_batch([Record(offset, 1000 + i, None, value, ())], base_offset=offset))
        offset += 1
    return b"".join(out)


@pytest.mark.parametrize("accelerated", [False, True])
@given(sizes=st.lists(st.integers(0, 5000), min_size=1, max_size=4), data=st.data())
def test_valid_batches_under_permissive_limits_are_all_quiet(accelerated, sizes, data) -> None:
    """The CRC (C: three interleaved streams of 256 bytes, then single steps) holds on every
    length, and Kafka's points are each batch's (bytes before it, last offset, max timestamp)."""
    if accelerated and _records is None:
        pytest.skip("the C accelerator is not built")
    run = _records.quiet_run if accelerated else quiet_run_python
    raw = _large_batches(sizes)
    args = list(data.draw(arguments(raw, 7, permissive=True, valid=raw)))
    args[18], args[19] = True, 0
    n, end, first, last, *_, points = run(*args)
    assert (n, end, first, last) == (len(sizes), len(raw), 7, 7 + len(sizes) - 1)
    triples = struct.unpack(f"={3 * n}q", points)
    assert list(triples[1::3]) == list(range(7, 7 + n))
    assert list(triples[2::3]) == [1000 + i for i in range(n)]


@pytest.mark.parametrize("accelerated", [False, True])
def test_max_batches_bounds_the_run_and_its_points(accelerated) -> None:
    """A run given a whole buffer of valid batches stops after `max_batches` of them, where the
    next call goes on: its points (24 bytes a batch) are bounded by the count, not the span."""
    if accelerated and _records is None:
        pytest.skip("the C accelerator is not built")
    run = _records.quiet_run if accelerated else quiet_run_python
    raw = _large_batches([10] * 7)
    args = [raw, 0, len(raw), 0, 2**31, 0, INT64_MAX - 1, INT64_MAX, -1]
    args += [b"", 0, 0, 0, NONE, b"", 0, 0, 0, True, 0, 0, NONE, 4096]
    pos, runs = 0, []
    while pos < len(raw):
        n, pos, first, last, *_, points = run(raw, pos, *args[2:], 3)
        assert len(points) == 24 * n
        runs.append((n, first, last))
    assert runs == [(3, 7, 9), (3, 10, 12), (1, 13, 13)]
    assert run(*args, 0)[:2] == (0, 0)


def test_a_damaged_crc_ends_the_run_before_the_batch() -> None:
    raw = bytearray(_large_batches([10, 3000, 10]))
    second = 12 + _LENGTH.unpack_from(raw, 8)[0]
    raw[second + 500] ^= 0x40
    args = (bytes(raw), 0, len(raw), 0, 2**31, 0, INT64_MAX - 1, INT64_MAX, -1)
    args += (b"", 0, 0, 0, NONE, b"", 0, 0, 0, False, 0, 0, NONE, 4096)
    n, end, *_ = quiet_run_python(*args)
    assert (n, end) == (1, second)
    if _records is not None:
        assert _records.quiet_run(*args) == quiet_run_python(*args)


@needs_accelerator
def test_the_c_call_checks_its_arguments() -> None:
    good = [b"", 0, 0, 0, 49, 0, 0, 0, 0, b"", 0, 0, 0, NONE, b"", 0, 0, 0, 0, 0, 0, NONE, 0]
    assert _records.quiet_run(*good)[0] == 0
    with pytest.raises(TypeError):
        _records.quiet_run(*good[:-1])
    with pytest.raises(TypeError):
        _records.quiet_run(*good, -1, 0)
    with pytest.raises(OverflowError):
        _records.quiet_run(*good[:5], 2**64, *good[6:])
    with pytest.raises(TypeError):
        _records.quiet_run("text", *good[1:])


@needs_accelerator
@pytest.mark.parametrize("hardware", [True, False])
@given(data=st.binary(max_size=4000), pad=st.integers(0, 7))
def test_the_c_crc_is_the_crc32c_packages(hardware, data, pad) -> None:
    """Both of C's ways (SSE4.2 where the CPU has it, and the table every other CPU uses), at every
    length and alignment."""
    view = memoryview(bytes(pad) + data)[pad:]
    assert _records.crc32c(view, hardware) == crc32c(data)
