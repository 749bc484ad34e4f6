"""`__transaction_state` decoding: typed results and kafka-dump-log text (spec fmt §9.2, §9.3)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from logrepair.decoders import (
    DecodeError,
    UnknownKeyVersion,
    decode_transaction_record,
    format_transaction_record,
)
from logrepair.decoders.transaction_state import TRANSACTION_LOG_KEY, TRANSACTION_LOG_VALUE

from .encode import encode

KEY = encode(TRANSACTION_LOG_KEY, {"transactionalId": "tx-1"}, 0)


def value(version: int, status: int = 1, **extra: object) -> bytes:
    data = {
        "producerId": 1000,
        "producerEpoch": 3,
        "transactionTimeoutMs": 60000,
        "transactionStatus": status,
        "transactionPartitions": [
            {"topic": "orders", "partitionIds": [2, 0]},
            {"topic": "audit", "partitionIds": [1]},
        ],
        "transactionLastUpdateTimestampMs": 1700000000500,
        "transactionStartTimestampMs": 1700000000000,
        **extra,
    }
    return encode(TRANSACTION_LOG_VALUE, data, version)


KEY_JSON = '{"type":"0","data":{"transactionalId":"tx-1"}}'


def test_golden_text_v0() -> None:
    # Kafka 4's kafka-dump-log prints transaction log records as coordinator records (JSON).
    assert format_transaction_record(KEY, value(0), 5) == (
        KEY_JSON,
        '{"version":"0","data":{"producerId":1000,"producerEpoch":3,"transactionTimeoutMs":60000,'
        '"transactionStatus":1,"transactionPartitions":[{"topic":"orders","partitionIds":[2,0]},'
        '{"topic":"audit","partitionIds":[1]}],"transactionLastUpdateTimestampMs":1700000000500,'
        '"transactionStartTimestampMs":1700000000000}}',
    )


def test_v1_tagged_fields_are_printed_only_when_not_default() -> None:
    payload = format_transaction_record(KEY, value(1, previousProducerId=999), 0)[1] or ""
    assert payload.startswith('{"version":"1","data":{') and payload.endswith(
        ',"previousProducerId":999}}'
    )


def test_v1_tagged_fields() -> None:
    record = decode_transaction_record(
        KEY, value(1, status=4, previousProducerId=999, clientTransactionVersion=2)
    )
    assert record.value is not None
    m = record.value
    assert (m.version, m.state, m.previous_producer_id, m.next_producer_id) == (
        1,
        "CompleteCommit",
        999,
        -1,
    )
    assert m.client_transaction_version == 2
    assert m.partitions == (("orders", 2), ("orders", 0), ("audit", 1))
    assert m.start_timestamp == 1700000000000


@pytest.mark.parametrize("version", [0, 1])
def test_empty_state_ignores_null_partitions(version: int) -> None:
    raw = value(version, status=0, transactionPartitions=None)
    record = decode_transaction_record(KEY, raw)
    assert record.value is not None and record.value.partitions == ()
    assert '"transactionPartitions":null' in (format_transaction_record(KEY, raw, 0)[1] or "")


def test_all_state_names() -> None:
    names = [
        "Empty",
        "Ongoing",
        "PrepareCommit",
        "PrepareAbort",
        "CompleteCommit",
        "CompleteAbort",
        "Dead",
        "PrepareEpochFence",
    ]
    for status, name in enumerate(names):
        record = decode_transaction_record(KEY, value(0, status=status))
        assert record.value is not None and record.value.state == name


def test_tombstone_and_unknown_key_version() -> None:
    assert format_transaction_record(KEY, None, 0) == (KEY_JSON, "<DELETE>")
    other = struct.pack(">h", 1) + KEY[2:]
    assert format_transaction_record(other, None, 3) == (
        "Unknown record type 1 at offset 3, skipping.",
        None,
    )
    with pytest.raises(UnknownKeyVersion):
        decode_transaction_record(other, None)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            struct.pack(">h", 2) + b"\x00" * 40,
            "Unknown version 2 from the transaction log message value",
        ),
        (None, "Unknown transaction state id 8 from the transaction status message"),
        (b"\x00", "Could not read version from value's buffer."),
    ],
)
def test_value_errors_are_reported_not_raised(raw: bytes | None, message: str) -> None:
    if raw is None:
        raw = value(0, status=8)
    with pytest.raises(DecodeError, match=message):
        decode_transaction_record(KEY, raw)


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        (
            struct.pack(">h", 2) + b"\x00" * 40,
            "Could not read record with version 2 from value's buffer due to: "
            "Can't read version 2 of TransactionLogValue.",
        ),
        (b"\x00", "Could not read version from value's buffer."),
    ],
)
def test_kafka_dump_log_text_of_unreadable_values(raw: bytes, text: str) -> None:
    assert format_transaction_record(KEY, raw, 9) == (f"Error at offset 9, skipping. {text}", None)
    # An unknown state id is not checked by the JSON form: it prints the number.
    assert '"transactionStatus":8' in (
        format_transaction_record(KEY, value(0, status=8), 0)[1] or ""
    )


def test_missing_key() -> None:
    assert format_transaction_record(None, value(0), 4) == (
        "Failed to decode message at offset 4 using the specified decoder "
        "(message had a missing key)",
        None,
    )


@given(st.binary(max_size=48), st.none() | st.binary(max_size=96))
def test_arbitrary_bytes_never_raise_other_errors(key: bytes, raw: bytes | None) -> None:
    try:
        decode_transaction_record(key, raw)
    except DecodeError:
        pass
    assert format_transaction_record(key, raw, 0)[0]


@given(
    st.integers(0, 1),
    st.integers(-1, 2**63 - 1),
    st.lists(st.tuples(st.text(min_size=1, max_size=8), st.integers(0, 1000)), max_size=5),
)
def test_round_trip(version: int, producer_id: int, parts: list[tuple[str, int]]) -> None:
    raw = value(
        version,
        producerId=producer_id,
        transactionPartitions=[{"topic": t, "partitionIds": [p]} for t, p in parts],
    )
    record = decode_transaction_record(KEY, raw)
    assert record.value is not None and record.value.producer_id == producer_id
    assert record.value.partitions == tuple(dict.fromkeys(parts))
