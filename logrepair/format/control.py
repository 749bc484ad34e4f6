"""Control records (spec fmt §2.10): the key every control record carries, and end-transaction markers.

A control batch holds records whose key says what they control. Transaction markers (COMMIT/ABORT)
are what producer-state recovery reads back, so their parsing follows Kafka's checks and messages
exactly; the KRaft types (2-6) are recognised by type only.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum

from .errors import FormatError

_KEY = struct.Struct(">hh")
_MARKER_VALUE = struct.Struct(">hi")

CONTROL_KEY_SIZE = _KEY.size
END_TXN_MARKER_VALUE_SIZE = _MARKER_VALUE.size
# One marker record: length varint, attributes, deltas, key/value lengths, key, value, header count.
END_TXN_MARKER_RECORD_SIZE = 17


class ControlType(IntEnum):
    """`ControlRecordType`; ids Kafka does not know map to UNKNOWN."""

    UNKNOWN = -1
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


def encode_control_key(control_type: ControlType, version: int = 0) -> bytes:
    if control_type is ControlType.UNKNOWN:
        raise ValueError("cannot write a control record of type UNKNOWN")
    return _KEY.pack(version, int(control_type))


def parse_control_key(key: bytes | memoryview | None) -> tuple[ControlType, int]:
    """Returns (type, type id as stored); a version above 0 is read as version 0, as Kafka does."""
    size = 0 if key is None else len(key)
    if size < CONTROL_KEY_SIZE:
        raise FormatError(
            "invalid_control_record",
            "Invalid value size found for end control record key. "
            f"Must have at least 4 bytes, but found only {size}",
        )
    version, type_id = _KEY.unpack_from(key, 0)
    if version < 0:
        raise FormatError(
            "invalid_control_record",
            f"Invalid version found for control record: {version}. May indicate data corruption",
        )
    try:
        return ControlType(type_id), type_id
    except ValueError:
        return ControlType.UNKNOWN, type_id


@dataclass(frozen=True, slots=True)
class EndTransactionMarker:
    """A COMMIT or ABORT written by the transaction coordinator of `coordinator_epoch`."""

    control_type: ControlType
    coordinator_epoch: int

    def __post_init__(self) -> None:
        if self.control_type not in (ControlType.COMMIT, ControlType.ABORT):
            raise ValueError(
                f"Invalid control record type for end transaction marker {self.control_type!r}"
            )

    def key(self) -> bytes:
        return encode_control_key(self.control_type)

    def value(self) -> bytes:
        return _MARKER_VALUE.pack(0, self.coordinator_epoch)

    @classmethod
    def parse(
        cls, key: bytes | memoryview | None, value: bytes | memoryview | None
    ) -> EndTransactionMarker:
        """`EndTransactionMarker.deserialize`: extra value bytes are ignored, as Kafka ignores them."""
        control_type, type_id = parse_control_key(key)
        if control_type not in (ControlType.COMMIT, ControlType.ABORT):
            raise FormatError(
                "invalid_control_record",
                f"Invalid control record type for end transaction marker {type_id}",
            )
        size = 0 if value is None else len(value)
        if size < END_TXN_MARKER_VALUE_SIZE:
            raise FormatError(
                "invalid_control_record",
                "Invalid value size found for end transaction marker. "
                f"Must have at least 6 bytes, but found only {size}",
            )
        version, coordinator_epoch = _MARKER_VALUE.unpack_from(value, 0)
        if version < 0:
            raise FormatError(
                "invalid_control_record",
                f"Invalid version found for end transaction marker: {version}. "
                "May indicate data corruption",
            )
        return cls(control_type, coordinator_epoch)
