"""The leader's side of a produce: batch validation, offset assignment, producer sequence checks."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from logrepair.format.batch import RecordBatch
from logrepair.format.batch_builder import build_batch
from logrepair.format.batch_layout import Record
from logrepair.format.compression import Codec
from logrepair.protocol.errors import ErrorCode
from logrepair.storage.log import Log
from logrepair.storage.producer_state import ProducerState
from simulator.disk import SimDisk
from simulator.serve.log_validator import InvalidBatch, assign_offsets, validate
from simulator.serve.offsets_topic import java_string_hash, partition_for
from simulator.serve.producers import SequenceChecks


def _batch(
    n: int = 3, *, codec: int = 0, pid: int = -1, epoch: int = -1, seq: int = -1, **kw
) -> bytes:
    records = [Record(i, 1_700_000_000_000 + i, b"k%d" % i, b"v" * i, ()) for i in range(n)]
    return build_batch(records, base_offset=0, codec=codec, producer_id=pid,
                       producer_epoch=epoch, base_sequence=seq, **kw)  # fmt: skip


@given(st.sampled_from(list(Codec)), st.integers(1, 20), st.integers(0, 2**40),
       st.integers(0, 1000), st.booleans())  # fmt: skip
def test_assigned_offsets_keep_the_records_and_a_valid_crc(codec, n, base, epoch, append_time):
    batch = validate(_batch(n, codec=int(codec)), 1 << 20)
    now = 1_800_000_000_000
    out = RecordBatch(memoryview(assign_offsets(batch, base, epoch, now if append_time else None)))
    assert out.crc_valid and out.base_offset == base and out.partition_leader_epoch == epoch
    assert [r.offset for r in out.records()] == list(range(base, base + n))
    assert [r.value for r in out.records()] == [r.value for r in batch.records()]
    if append_time:
        assert out.timestamp_type == "append" and out.max_timestamp == now
        assert all(r.timestamp == now for r in out.records())
    else:
        assert out.timestamp_type == "create" and out.max_timestamp == batch.max_timestamp


@pytest.mark.parametrize(
    "data, error",
    [
        (_batch()[:-1], ErrorCode.CORRUPT_MESSAGE),  # torn
        (_batch()[:20] + b"\x00" + _batch()[21:], ErrorCode.CORRUPT_MESSAGE),  # CRC
        (_batch() + _batch(), ErrorCode.INVALID_RECORD),  # two batches
        (_batch(200), ErrorCode.MESSAGE_TOO_LARGE),
        (_batch(is_control=True, pid=5, epoch=0), ErrorCode.INVALID_RECORD),
        (_batch()[:16] + b"\x01" + _batch()[17:], ErrorCode.INVALID_RECORD),  # magic 1
    ],
)
def test_invalid_batches_get_kafkas_error_codes(data: bytes, error: ErrorCode) -> None:
    with pytest.raises(InvalidBatch) as e:
        validate(data, 1024)
    assert e.value.error == error


def _checks_after(*batches: bytes) -> tuple[SequenceChecks, int]:
    checks, offset = SequenceChecks(ProducerState()), 0
    for data in batches:
        b = validate(data, 1 << 20)
        assert checks.check(b) is None
        checks.appended(b, offset)
        offset += b.count
    return checks, offset


def test_duplicates_out_of_order_and_fenced_epochs() -> None:
    first, second = _batch(3, pid=7, epoch=1, seq=0), _batch(2, pid=7, epoch=1, seq=3)
    checks, _ = _checks_after(first, second)
    dup = checks.check(validate(first, 1 << 20))
    assert dup is not None and (dup.first_offset, dup.last_offset) == (0, 2)
    assert checks.check(validate(_batch(1, pid=7, epoch=1, seq=5), 1 << 20)) is None
    for data, error in [
        (_batch(1, pid=7, epoch=1, seq=9), ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER),
        (_batch(1, pid=7, epoch=0, seq=5), ErrorCode.INVALID_PRODUCER_EPOCH),
        (_batch(1, pid=7, epoch=2, seq=4), ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER),
    ]:
        with pytest.raises(InvalidBatch) as e:
            checks.check(validate(data, 1 << 20))
        assert e.value.error == error
    assert checks.check(validate(_batch(1, pid=7, epoch=2, seq=0), 1 << 20)) is None
    assert checks.check(validate(_batch(1, pid=8, epoch=0, seq=42), 1 << 20)) is None  # unknown


def test_sequence_checks_start_from_the_partitions_producer_state() -> None:
    """After a reboot the only memory is the log: its last batch per producer."""
    disk = SimDisk()
    log = Log.open(disk, "/d/t-0")
    log.append_batches(_batch(3, pid=7, epoch=1, seq=0))
    log.append_batches(
        assign_offsets(validate(_batch(2, pid=7, epoch=1, seq=3), 1 << 20), 3, 0, None)
    )
    checks = SequenceChecks(log.producer_state)
    dup = checks.check(validate(_batch(2, pid=7, epoch=1, seq=3), 1 << 20))
    assert dup is not None and (dup.first_offset, dup.last_offset) == (3, 4)
    with pytest.raises(InvalidBatch):
        checks.check(validate(_batch(1, pid=7, epoch=1, seq=6), 1 << 20))
    assert checks.check(validate(_batch(1, pid=7, epoch=1, seq=5), 1 << 20)) is None


def test_offsets_partition_is_kafkas() -> None:
    # Java: "my-group".hashCode() == -1906497762, "".hashCode() == 0
    assert java_string_hash("my-group") == -1906497762
    assert java_string_hash("") == 0
    assert partition_for("my-group", 50) == 1906497762 % 50
