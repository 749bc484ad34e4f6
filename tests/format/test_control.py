"""Control records and end-transaction markers (spec fmt §2.10, §11)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from logrepair.format.batch import RecordBatch
from logrepair.format.batch_builder import build_control_batch, build_end_txn_marker
from logrepair.format.control import (
    ControlType,
    EndTransactionMarker,
    encode_control_key,
    parse_control_key,
)
from logrepair.format.errors import FormatError


def test_marker_record_bytes_match_the_spec_vector() -> None:
    marker = EndTransactionMarker(ControlType.COMMIT, 0x0EEEEEEE)
    batch = build_end_txn_marker(
        marker, base_offset=0, producer_id=1, producer_epoch=0, timestamp=0
    )
    assert len(batch) == 78
    assert batch[61:] == bytes.fromhex("20 00 00 00 08 00 00 00 01 0C 00 00 0E EE EE EE 00")


@given(
    st.sampled_from([ControlType.COMMIT, ControlType.ABORT]),
    st.integers(min_value=-(2**31), max_value=2**31 - 1),
    st.integers(min_value=0, max_value=2**62),
    st.integers(min_value=0, max_value=2**15 - 1),
    st.integers(min_value=0, max_value=2**45),
)
def test_marker_batch_round_trip(control_type, epoch, producer_id, producer_epoch, ts) -> None:
    data = build_end_txn_marker(
        EndTransactionMarker(control_type, epoch),
        base_offset=42,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        timestamp=ts,
        partition_leader_epoch=3,
    )
    batch = RecordBatch.parse(data)
    assert batch.size == 78 and batch.crc_valid
    assert batch.is_control and batch.is_transactional
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (
        producer_id,
        producer_epoch,
        -1,
    )
    assert batch.first_timestamp == batch.max_timestamp == ts
    assert batch.control_type() is control_type
    assert batch.end_txn_marker() == EndTransactionMarker(control_type, epoch)


def test_marker_needs_a_producer() -> None:
    with pytest.raises(ValueError, match="valid producerId"):
        build_end_txn_marker(
            EndTransactionMarker(ControlType.ABORT, 0),
            base_offset=0,
            producer_id=-1,
            producer_epoch=0,
            timestamp=0,
        )


def test_marker_type_must_be_commit_or_abort() -> None:
    with pytest.raises(ValueError):
        EndTransactionMarker(ControlType.LEADER_CHANGE, 0)


def test_other_control_batches_carry_their_type() -> None:
    data = build_control_batch(ControlType.LEADER_CHANGE, b"\x00\x00", base_offset=9, timestamp=5)
    batch = RecordBatch.parse(data)
    assert batch.is_control and not batch.is_transactional
    assert batch.control_type() is ControlType.LEADER_CHANGE
    with pytest.raises(
        FormatError, match="Invalid control record type for end transaction marker 2"
    ):
        batch.end_txn_marker()


def test_unknown_type_ids_map_to_unknown() -> None:
    assert parse_control_key(b"\x00\x00\x00\x63") == (ControlType.UNKNOWN, 99)


def test_higher_key_version_is_read_as_version_0() -> None:
    assert parse_control_key(b"\x00\x05\x00\x00") == (ControlType.ABORT, 0)


@pytest.mark.parametrize(
    ("key", "message"),
    [
        (b"\x00\x00\x01", "Must have at least 4 bytes, but found only 3"),
        (None, "Must have at least 4 bytes, but found only 0"),
        (b"\xff\xff\x00\x01", "Invalid version found for control record: -1"),
    ],
)
def test_bad_control_keys(key, message: str) -> None:
    with pytest.raises(FormatError, match=message) as e:
        parse_control_key(key)
    assert e.value.kind == "invalid_control_record"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (b"\x00\x00\x00\x00\x01", "Must have at least 6 bytes, but found only 5"),
        (b"\xff\xfe\x00\x00\x00\x01", "Invalid version found for end transaction marker: -2"),
    ],
)
def test_bad_marker_values(value: bytes, message: str) -> None:
    with pytest.raises(FormatError, match=message):
        EndTransactionMarker.parse(encode_control_key(ControlType.COMMIT), value)


def test_marker_value_extra_bytes_and_newer_versions_are_tolerated() -> None:
    value = b"\x00\x01\x00\x00\x00\x07" + b"extra"
    assert EndTransactionMarker.parse(encode_control_key(ControlType.ABORT), value) == (
        EndTransactionMarker(ControlType.ABORT, 7)
    )
