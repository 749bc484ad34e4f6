"""kafka-python and aiokafka as oracles, in both directions: what they build we read exactly, what we
build they read exactly, CRCs included, and byte for byte where both sides are deterministic."""

from __future__ import annotations

import pytest
from aiokafka.record import default_records as aio
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record import default_records as kp
from kafka.record.memory_records import MemoryRecords

from logrepair.format.batch import RecordBatch
from logrepair.format.batch_builder import build_batch
from logrepair.format.batch_layout import Record
from logrepair.format.walker import Walker

from .strategies import headers, optional_bytes

ORACLES = {
    "kafka-python": (kp.DefaultRecordBatchBuilder, kp.DefaultRecordBatch),
    "aiokafka": (aio.DefaultRecordBatchBuilder, aio.DefaultRecordBatch),
}
# gzip output depends on the zlib build and the header bytes each library writes, lz4 on frame options:
# those are compared record by record, not byte by byte.
DETERMINISTIC = (0,)


@st.composite
def producer_batches(draw):
    """What a producer sends: offsets 0..n-1, non-negative timestamps, optional idempotence."""
    n = draw(st.integers(min_value=1, max_value=15))
    first = draw(st.integers(min_value=0, max_value=2**41))
    records = [
        Record(
            i,
            first + draw(st.integers(min_value=-1000, max_value=10**6)),
            draw(optional_bytes),
            draw(optional_bytes),
            tuple((k, v if v is not None else b"") for k, v in draw(headers)),
        )
        for i in range(n)
    ]
    records = [r._replace(timestamp=max(r.timestamp, 0)) for r in records]
    if draw(st.booleans()):
        producer = (
            draw(st.integers(min_value=0, max_value=2**62)),
            draw(st.integers(min_value=0, max_value=2**15 - 1)),
            draw(st.integers(min_value=0, max_value=2**31 - 1)),
            draw(st.booleans()),
        )
    else:
        producer = (-1, -1, -1, False)
    return records, producer


def oracle_build(name: str, codec: int, records: list[Record], producer) -> bytes:
    builder_cls, _ = ORACLES[name]
    producer_id, epoch, sequence, transactional = producer
    builder = builder_cls(2, codec, int(transactional), producer_id, epoch, sequence, 10**7)
    for r in records:
        builder.append(
            r.offset, timestamp=r.timestamp, key=r.key, value=r.value, headers=list(r.headers)
        )
    return bytes(builder.build())


def ours(codec: int, records: list[Record], producer, leader_epoch: int = -1) -> bytes:
    producer_id, epoch, sequence, transactional = producer
    return build_batch(
        records,
        base_offset=0,
        codec=codec,
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=sequence,
        is_transactional=transactional,
        partition_leader_epoch=leader_epoch,
    )


def as_tuples(records) -> list[tuple]:
    return [(r.offset, r.timestamp, r.key, r.value, [tuple(h) for h in r.headers]) for r in records]


@pytest.mark.parametrize("oracle", sorted(ORACLES))
@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
@settings(max_examples=40)
@given(batch=producer_batches())
def test_we_read_what_they_build(oracle: str, codec: int, batch) -> None:
    records, producer = batch
    data = oracle_build(oracle, codec, records, producer)
    (ours_batch,) = Walker(data, deep=True)
    assert isinstance(ours_batch, RecordBatch) and ours_batch.crc_valid
    theirs = ORACLES[oracle][1](data)
    assert ours_batch.crc == theirs.crc
    assert (
        ours_batch.producer_id,
        ours_batch.producer_epoch,
        ours_batch.base_sequence,
    ) == producer[:3]
    assert ours_batch.is_transactional == producer[3]
    assert as_tuples(ours_batch.records()) == as_tuples(records)
    if codec in DETERMINISTIC:
        # The broker sets the leader epoch; kafka-python leaves 0 there, aiokafka -1.
        assert data == ours(codec, records, producer, ours_batch.partition_leader_epoch)


@pytest.mark.parametrize("oracle", sorted(ORACLES))
@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
@settings(max_examples=40)
@given(batch=producer_batches())
def test_they_read_what_we_build(oracle: str, codec: int, batch) -> None:
    records, producer = batch
    data = ours(codec, records, producer)
    theirs = ORACLES[oracle][1](data)
    assert theirs.validate_crc()
    assert theirs.crc == RecordBatch.parse(data).crc
    assert theirs.producer_id == producer[0] and theirs.base_sequence == producer[2]
    assert as_tuples(list(theirs)) == as_tuples(records)


@settings(max_examples=30)
@given(st.lists(producer_batches(), min_size=1, max_size=5), st.sampled_from([0, 1, 2, 3, 4]))
def test_kafka_python_memory_records_reads_our_segments(batches, codec: int) -> None:
    """A segment of our batches, offsets continuing, through kafka-python's MemoryRecords."""
    segment = bytearray()
    offset = 0
    expected = []
    for records, producer in batches:
        shifted = [r._replace(offset=offset + r.offset) for r in records]
        producer_id, epoch, sequence, transactional = producer
        segment += build_batch(
            shifted,
            base_offset=offset,
            codec=codec,
            producer_id=producer_id,
            producer_epoch=epoch,
            base_sequence=sequence,
            is_transactional=transactional,
        )
        expected += shifted
        offset += len(records)
    memory = MemoryRecords(bytes(segment))
    got = []
    while memory.has_next():
        batch = memory.next_batch()
        assert batch.validate_crc()
        got += list(batch)
    assert as_tuples(got) == as_tuples(expected)


def test_log_append_time_as_kafka_python_reads_it() -> None:
    data = build_batch(
        [Record(0, 10, b"k", b"v"), Record(1, 20, None, b"w")],
        base_offset=0,
        timestamp_type="append",
        log_append_time=12345,
    )
    theirs = kp.DefaultRecordBatch(data)
    assert theirs.timestamp_type == 1
    assert [r.timestamp for r in theirs] == [12345, 12345]
    assert [r.timestamp for r in RecordBatch.parse(data).records()] == [12345, 12345]


def test_control_batch_as_kafka_python_reads_it() -> None:
    from logrepair.format.batch_builder import build_end_txn_marker
    from logrepair.format.control import ControlType, EndTransactionMarker

    data = build_end_txn_marker(
        EndTransactionMarker(ControlType.ABORT, 4),
        base_offset=0,
        producer_id=9,
        producer_epoch=2,
        timestamp=1,
    )
    theirs = kp.DefaultRecordBatch(data)
    assert theirs.is_control_batch and theirs.is_transactional and theirs.validate_crc()
    (record,) = list(theirs)
    assert record.abort and record.version == 0
