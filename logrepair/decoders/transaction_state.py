"""`__transaction_state` records (spec fmt §9.2, §9.3): one transactional id's coordinator state.

`decode_transaction_record` gives a typed result; `format_transaction_record` gives kafka-dump-log's
`--transaction-log-decoder` key and payload text.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from .schema import Array, DecodeError, Field, Message, Struct, read_message

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
    key_version = _version(key, "key")
    if key_version != 0:
        raise UnknownKeyVersion(key_version)
    transactional_id = read_message(TRANSACTION_LOG_KEY, memoryview(key)[2:], 0)["transactionalId"]
    if value is None:
        return TransactionRecord(transactional_id, None)
    version = _version(value, "value")
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
    """kafka-dump-log's `--transaction-log-decoder` text: (key text, payload text or None).

    Where Kafka's tool aborts (no key, an unknown value version or state id, bytes that do not
    parse) the key text is `Error at offset <o>, skipping. <message>` and the dump goes on.
    """
    try:
        record = decode_transaction_record(key, value)
    except UnknownKeyVersion as exc:
        return str(exc), None
    except DecodeError as exc:
        return f"Error at offset {offset}, skipping. {exc}", None
    key_text = f"transaction_metadata::transactionalId={record.transactional_id}"
    m = record.value
    if m is None:
        return key_text, "<DELETE>"
    partitions = ",".join(f"{topic}-{partition}" for topic, partition in m.partitions)
    return key_text, (
        f"producerId:{m.producer_id},producerEpoch:{m.producer_epoch},state={m.state},"
        f"partitions=[{partitions}],txnLastUpdateTimestamp={m.last_update_timestamp},"
        f"txnTimeoutMs={m.transaction_timeout_ms}"
    )


def _version(buf: bytes | None, name: str) -> int:
    if buf is None:
        raise DecodeError(f"the record has no {name}")
    if len(buf) < 2:
        raise DecodeError(f"Could not read version from {name}'s buffer.")
    return struct.unpack_from(">h", buf)[0]
