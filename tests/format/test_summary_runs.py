"""`summary_run` two ways, held to one answer: the C accelerator and the pure-Python reference; and
the reference held to the walker whose batches it stands for.

On real log bytes of every format (magic 0 and 1 entries, v2 batches) and codec, valid or
damaged, and on random bytes, under random limits, both return the same batches, state and
columns. The cross-implementation tests skip, saying why, where the extension is not built; the
reference tests always run.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from logrepair.format.batch import RecordBatch
from logrepair.format.compression import Codec
from logrepair.format.legacy import build_legacy_batch
from logrepair.format.summary_runs import NONE, summary_run_python
from logrepair.format.walker import Walker

from .strategies import record_lists, segments
from .test_batch_runs import _damaged, _large_batches
from .test_records_accel import _records, needs_accelerator

INT64_MAX = 2**63 - 1
MAX_LENGTH = 2**31 - 13
CODECS = tuple(Codec)


@st.composite
def logs(draw) -> tuple[bytes, int]:
    """(bytes, first offset): a segment as an upgraded cluster leaves it, legacy entries (magic 0
    or 1, any legacy codec) before v2 batches of every codec, sometimes damaged."""
    valid, specs = draw(segments(max_batches=6, codecs=CODECS, same_epoch=True))
    base = specs[0].kwargs["base_offset"]
    legacy = b""
    if draw(st.booleans()):
        start = max(0, base - 40)
        records = draw(record_lists(start, max_size=3, gaps=False))
        records = [r._replace(headers=()) for r in records if r.offset < base]
        if records:
            magic = draw(st.sampled_from([0, 1]))
            codec = draw(st.sampled_from([c for c in CODECS if c != Codec.ZSTD]))
            legacy = build_legacy_batch(
                records, magic=magic, base_offset=records[0].offset, codec=codec
            )
            base = records[0].offset
    raw = legacy + valid
    if draw(st.booleans()):
        raw = _damaged(draw, raw)
    return raw, base


@st.composite
def arguments(draw, data: bytes, base: int) -> tuple:
    """`summary_run`'s arguments over `data`: each one every valid batch passes, or (one time in
    four) one drawn around it."""

    def pick(loose, tight):
        return loose if draw(st.integers(0, 3)) else draw(tight)

    return (
        data,
        pick(0, st.integers(0, 80)),
        pick(len(data), st.integers(0, len(data) + 8)),
        pick(0, st.sampled_from([1, 2**40])),
        pick(MAX_LENGTH, st.sampled_from([1000, 49])),
        pick(-(2**63), st.sampled_from([base, base + 1]) | st.integers(base - 3, base + 2**12)),
        pick(INT64_MAX, st.sampled_from([base + 2**12, base + 3])),
        pick(-1, st.integers(-2, 4)),
        pick(INT64_MAX, st.integers(base - 1, base + 2**10)),
        draw(st.integers(0, 2)),
    )


@needs_accelerator
@given(data=st.data(), log=logs())
def test_c_and_python_agree_on_real_logs_valid_and_damaged(data, log) -> None:
    raw, base = log
    args = data.draw(arguments(raw, base))
    event(f"batches in the run: {min(_records.summary_run(*args)[0], 2)}")
    assert _records.summary_run(*args) == summary_run_python(*args)


@needs_accelerator
@given(data=st.data(), junk=st.binary(max_size=400))
def test_c_and_python_agree_on_random_bytes(data, junk) -> None:
    args = data.draw(arguments(junk, 0))
    assert _records.summary_run(*args) == summary_run_python(*args)


@pytest.mark.parametrize("accelerated", [False, True])
@given(log=logs(), keep=st.integers(0, 2), top_epoch=st.integers(-1, 4))
def test_runs_take_exactly_the_walkers_valid_v2_batches(accelerated, log, keep, top_epoch) -> None:
    """Called again from where each run ends, the runs take the batches the walker yields as
    valid, in order, up to the first it yields another way (a defect or a legacy entry), and
    their columns are those batches' fields."""
    if accelerated and _records is None:
        pytest.skip("the C accelerator is not built")
    run = _records.summary_run if accelerated else summary_run_python
    raw, _ = log
    expected = []
    for item in Walker(raw, resync=True, max_batch_size=2**31 - 1):
        if not isinstance(item, RecordBatch):
            break
        expected.append(item)
    taken, pos, floor, epochs, top_epoch_before = [], 0, -(2**63), [], top_epoch
    while True:
        n, end, first, last, top, epoch_base, cut, columns = run(
            raw, pos, len(raw), 0, MAX_LENGTH, floor, INT64_MAX, top_epoch, INT64_MAX, keep
        )
        if not n:
            break
        if epoch_base != NONE:
            assert top > top_epoch
            top_epoch = top
            epochs.append((top, epoch_base))
        width = 4 * keep
        values = struct.unpack(f"={width * n}q", columns)
        taken += [tuple(values[c * n + i] for c in range(width)) for i in range(n)]
        pos, floor = end, last + 1
    fields = [
        (b.base_offset, b.last_offset, b.crc, b.position, b.size, b.partition_leader_epoch)
        + (b.max_timestamp, b.producer_id)
        for b in expected
    ]
    assert taken == [f[: 4 * keep] for f in fields]
    assert pos == (expected[-1].position + expected[-1].size if expected else 0)
    rises = []
    for b in expected:
        if b.partition_leader_epoch > top_epoch_before:
            top_epoch_before = b.partition_leader_epoch
            rises.append((top_epoch_before, b.base_offset))
    assert epochs == rises


@pytest.mark.parametrize("accelerated", [False, True])
def test_a_run_reports_the_cut_and_one_epoch_rise_and_stops_before_a_second(accelerated):
    if accelerated and _records is None:
        pytest.skip("the C accelerator is not built")
    run = _records.summary_run if accelerated else summary_run_python
    raw = _large_batches([10, 20, 30, 40], base=7)  # offsets 7..10, epoch -1
    ends = [0]
    while ends[-1] < len(raw):
        ends.append(ends[-1] + 12 + struct.unpack_from(">i", raw, ends[-1] + 8)[0])

    def with_epochs(*epochs: int) -> bytes:
        out = bytearray(raw)
        for at, epoch in zip(ends, epochs, strict=False):
            out[at + 12 : at + 16] = epoch.to_bytes(4, "big", signed=True)  # outside the CRC
        return bytes(out)

    one_rise = with_epochs(-1, -1, 5, 5)
    assert run(one_rise, 0, len(raw), 100, MAX_LENGTH, 0, INT64_MAX, -1, 8, 0)[:7] == (
        4, ends[4], 7, 10, 5, 9, 100 + ends[1]
    )  # fmt: skip
    three_rises = with_epochs(-1, 3, 5, 6)
    assert run(three_rises, 0, len(raw), 0, MAX_LENGTH, 0, INT64_MAX, -1, 7, 0)[:7] == (
        2, ends[2], 7, 8, 3, 8, 0
    )  # fmt: skip
    assert run(three_rises, ends[2], len(raw), 0, MAX_LENGTH, 9, INT64_MAX, 3, INT64_MAX, 0)[
        :7
    ] == (1, ends[3], 9, 9, 5, 9, NONE)
    assert run(raw, 0, len(raw), 0, MAX_LENGTH, 0, 9, -1, INT64_MAX, 0)[:4] == (3, ends[3], 7, 9)
    assert run(raw, 0, len(raw), 0, MAX_LENGTH, 8, INT64_MAX, -1, INT64_MAX, 0)[:2] == (0, 0)


@needs_accelerator
def test_the_c_call_checks_its_arguments() -> None:
    good = [b"", 0, 0, 0, 49, 0, 0, 0, 0, 0]
    assert _records.summary_run(*good)[0] == 0
    with pytest.raises(TypeError):
        _records.summary_run(*good[:-1])
    with pytest.raises(OverflowError):
        _records.summary_run(*good[:5], 2**64, *good[6:])
    with pytest.raises(TypeError):
        _records.summary_run("text", *good[1:])
