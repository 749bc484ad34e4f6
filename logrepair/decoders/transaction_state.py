"""`__transaction_state` records (spec fmt §9.2, §9.3): one transactional id's coordinator state.

`decode_transaction_record` gives a typed result; `format_transaction_record` gives kafka-dump-log's
`--transaction-log-decoder` key and payload text.
"""

from __future__ import annotations

from dataclasses import dataclass

from .schema import (
    Array,
    DecodeError,
    Field,
    Message,
    Struct,
    UnknownRecordType,
    missing_key_text,
    read_message,
    read_record_part,
    read_version,
    to_kafka_json,
)

TRANSACTION_LOG_KEY = Message("TransactionLogKey", (Field("TransactionalId", "string"),), valid="0")
TRANSACTION_LOG_VALUE = Message(
    "TransactionLogValue",
    (
        Field("ProducerId", "int64"),
        Field("ProducerEpoch", "int16"),
        Field("TransactionTimeoutMs", "int32"),
        Field("TransactionStatus", "int8"),
        Field(
            "TransactionPartitions",
            Array(
                Struct(
                    "PartitionsSchema",
                    (Field("Topic", "string"), Field("PartitionIds", Array("int32"))),
                )
            ),
            nullable="0+",
        ),
        Field("TransactionLastUpdateTimestampMs", "int64"),
        Field("TransactionStartTimestampMs", "int64"),
        Field("PreviousProducerId", "int64", versions="1+", tag=0, default=-1),
        Field("NextProducerId", "int64", versions="1+", tag=1, default=-1),
        Field("ClientTransactionVersion", "int16", versions="1+", tag=2, default=0),
    ),
    valid="0-1",
    flexible="1+",
)

TRANSACTION_STATES = (
    "Empty",
    "Ongoing",
    "PrepareCommit",
    "PrepareAbort",
    "CompleteCommit",
    "CompleteAbort",
    "Dead",
    "PrepareEpochFence",
)


class UnknownKeyVersion(DecodeError):
    """A key version other than 0: Kafka shows such records as `unknown::version=<v>`."""

    def __init__(self, version: int) -> None:
        super().__init__(f"unknown::version={version}")
        self.version = version


@dataclass(frozen=True, slots=True)
class TransactionMetadata:
    version: int
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    state: str
    partitions: tuple[tuple[str, int], ...]
    last_update_timestamp: int
    start_timestamp: int
    previous_producer_id: int
    next_producer_id: int
    client_transaction_version: int


@dataclass(frozen=True, slots=True)
class TransactionRecord:
    """`value` None is a tombstone (the transactional id expired)."""

    transactional_id: str
    value: TransactionMetadata | None


def decode_transaction_record(key: bytes | None, value: bytes | None) -> TransactionRecord:
    """Decodes one record; raises `UnknownKeyVersion` or `DecodeError` (Kafka's messages)."""
    key_version = read_version(key, "key")
    if key_version != 0:
        raise UnknownKeyVersion(key_version)
    transactional_id = read_message(TRANSACTION_LOG_KEY, memoryview(key)[2:], 0)["transactionalId"]
    if value is None:
        return TransactionRecord(transactional_id, None)
    version = read_version(value, "value")
    if not 0 <= version <= 1:
        raise DecodeError(f"Unknown version {version} from the transaction log message value")
    v = read_message(TRANSACTION_LOG_VALUE, memoryview(value)[2:], version)
    status = v["transactionStatus"]
    if not 0 <= status < len(TRANSACTION_STATES):
        raise DecodeError(
            f"Unknown transaction state id {status} from the transaction status message"
        )
    state = TRANSACTION_STATES[status]
    partitions: dict[tuple[str, int], None] = {}  # Kafka keeps a set: duplicates collapse
    if state != "Empty":  # Kafka ignores the partitions of an Empty transaction
        for entry in v["transactionPartitions"] or ():
            for p in entry["partitionIds"]:
                partitions[(entry["topic"], p)] = None
    return TransactionRecord(
        transactional_id,
        TransactionMetadata(
            version=version,
            producer_id=v["producerId"],
            producer_epoch=v["producerEpoch"],
            transaction_timeout_ms=v["transactionTimeoutMs"],
            state=state,
            partitions=tuple(partitions),
            last_update_timestamp=v["transactionLastUpdateTimestampMs"],
            start_timestamp=v["transactionStartTimestampMs"],
            previous_producer_id=v.get("previousProducerId", -1),
            next_producer_id=v.get("nextProducerId", -1),
            client_transaction_version=v.get("clientTransactionVersion", 0),
        ),
    )


def format_transaction_record(
    key: bytes | None, value: bytes | None, offset: int
) -> tuple[str, str | None]:
    """kafka-dump-log's `--transaction-log-decoder` text (Kafka 4's coordinator record form, the
    same as `--offsets-decoder`'s): key `{"type":"0","data":{...}}`, payload
    `{"version":"<v>","data":{...}}` or `<DELETE>`; a record it cannot read is one
    `Unknown record type ...`/`Error at offset ...` key text and no payload."""
    if key is None:
        return missing_key_text(offset), None
    try:
        record_type = read_version(key, "key")
        if record_type != 0:
            raise UnknownRecordType(record_type)
        key_data = read_record_part(TRANSACTION_LOG_KEY, key, record_type, "key")
        if value is None:
            return to_kafka_json({"type": "0", "data": key_data}), "<DELETE>"
        version = read_version(value, "value")
        value_data = read_record_part(TRANSACTION_LOG_VALUE, value, version, "value")
    except UnknownRecordType as exc:
        return f"Unknown record type {exc.record_type} at offset {offset}, skipping.", None
    except DecodeError as exc:
        return f"Error at offset {offset}, skipping. {exc}", None
    return (
        to_kafka_json({"type": "0", "data": key_data}),
        to_kafka_json({"version": str(version), "data": value_data}),
    )
