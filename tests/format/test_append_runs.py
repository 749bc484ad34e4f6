"""`append_run` two ways, held to one answer: the C accelerator and the pure-Python reference.

On valid appends of every v2 kind and codec, on damaged ones and on random bytes, under random
batch length limits, both return the same batches, offsets, timestamps, epoch assignments and
producer rows; and on valid appends the reference sums up exactly what the walker's batches add up
to. The cross-implementation tests skip, saying why, where the extension is not built.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from logrepair.format.append_runs import NO_TIMESTAMP, NONE, append_run_python
from logrepair.format.batch import RecordBatch
from logrepair.format.compression import Codec
from logrepair.format.walker import Walker

from .strategies import segments
from .test_batch_runs import _damaged, _large_batches
from .test_records_accel import _records, needs_accelerator

MAX_LENGTH = 2**31 - 12
ALL_CODECS = tuple(int(c) for c in Codec)
lengths = st.sampled_from([MAX_LENGTH, MAX_LENGTH, 1000, 49])


@needs_accelerator
@given(data=st.data(), segment=segments(max_batches=8, codecs=ALL_CODECS))
def test_c_and_python_agree_on_valid_and_damaged_appends(data, segment) -> None:
    valid, _ = segment
    raw = data.draw(st.sampled_from([valid, _damaged(data.draw, valid)]))
    max_length = data.draw(lengths)
    event(f"batches in the run: {min(append_run_python(raw, max_length)[0], 2)}")
    assert _records.append_run(raw, max_length) == append_run_python(raw, max_length)


@needs_accelerator
@given(junk=st.binary(max_size=400), max_length=lengths)
def test_c_and_python_agree_on_random_bytes(junk, max_length) -> None:
    assert _records.append_run(junk, max_length) == append_run_python(junk, max_length)


@pytest.mark.parametrize("accelerated", [False, True])
@given(segment=segments(max_batches=8, codecs=ALL_CODECS))
def test_a_valid_append_is_one_run_of_what_its_batches_add_up_to(accelerated, segment) -> None:
    """The sum `Log.append_batches` takes from the run is the walker's batches' (Kafka's
    `LogAppendInfo`: first and last offsets, max timestamp and its batch's last offset, the epochs
    Kafka's batch-by-batch assignment would assign, and what producer state reads of each batch
    with a producer id)."""
    if accelerated and _records is None:
        pytest.skip("the C accelerator is not built")
    run = _records.append_run if accelerated else append_run_python
    raw, _ = segment
    batches = [b for b in Walker(raw) if isinstance(b, RecordBatch)]
    n, end, first, last, max_ts, ts_offset, epochs, producers, txn = run(raw, MAX_LENGTH)
    assert (n, end, first, last) == (
        len(batches),
        len(raw),
        batches[0].base_offset,
        batches[-1].last_offset,
    )
    expected_ts, expected_offset = NO_TIMESTAMP, batches[-1].last_offset
    for b in batches:
        if b.max_timestamp > expected_ts:
            expected_ts, expected_offset = b.max_timestamp, b.last_offset
    assert (max_ts, ts_offset) == (expected_ts, expected_offset)
    rows = []
    for b in batches:
        if b.producer_id >= 0:
            rows += [b.producer_id, b.producer_epoch, b.base_sequence]
            rows += [b.base_offset, b.last_offset, b.max_timestamp]
    assert list(struct.unpack(f"={len(rows)}q", producers)) == rows
    assert txn == any(b.producer_id >= 0 and b.attributes & 0x30 for b in batches)
    assigned, pairs = None, []
    for b in batches:
        if b.partition_leader_epoch >= 0 and b.partition_leader_epoch != assigned:
            pairs += [b.partition_leader_epoch, b.base_offset]
            assigned = b.partition_leader_epoch
    assert list(struct.unpack(f"={len(pairs)}q", epochs)) == pairs


@pytest.mark.parametrize("accelerated", [False, True])
def test_a_damaged_crc_ends_the_run_before_the_batch(accelerated) -> None:
    if accelerated and _records is None:
        pytest.skip("the C accelerator is not built")
    run = _records.append_run if accelerated else append_run_python
    raw = bytearray(_large_batches([10, 3000, 10]))
    second = 12 + struct.unpack_from(">i", raw, 8)[0]
    raw[second + 500] ^= 0x40
    assert run(bytes(raw), MAX_LENGTH)[:4] == (1, second, 7, 7)
    assert run(b"", MAX_LENGTH) == (0, 0, NONE, NONE, NO_TIMESTAMP, NONE, b"", b"", False)


@needs_accelerator
def test_the_c_call_checks_its_arguments() -> None:
    with pytest.raises(TypeError):
        _records.append_run(b"")
    with pytest.raises(OverflowError):
        _records.append_run(b"", 2**64)
    with pytest.raises(TypeError):
        _records.append_run("text", 49)
