"""Payload decoders for Kafka's internal topics, used by `logrepair dump` and the audit.

Record keys and values of `__consumer_offsets` and `__transaction_state` are version-prefixed
generated messages (spec fmt §9), as are the values of KRaft's control records (`kraft_control`);
`schema` reads them from declared schemas.
"""

from .consumer_offsets import (
    GroupRecord,
    OffsetCommit,
    OffsetCommitValue,
    decode_offsets_record,
    format_offsets_record,
)
from .kraft_control import format_kraft_control, is_kraft_control
from .schema import DecodeError, UnknownRecordType
from .transaction_state import (
    TransactionMetadata,
    TransactionRecord,
    UnknownKeyVersion,
    decode_transaction_record,
    format_transaction_record,
)

__all__ = [
    "DecodeError",
    "GroupRecord",
    "OffsetCommit",
    "OffsetCommitValue",
    "TransactionMetadata",
    "TransactionRecord",
    "UnknownKeyVersion",
    "UnknownRecordType",
    "decode_offsets_record",
    "decode_transaction_record",
    "is_kraft_control",
    "format_kraft_control",
    "format_offsets_record",
    "format_transaction_record",
]
