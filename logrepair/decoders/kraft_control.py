"""KRaft's control records (types 2-6 of `ControlRecordType`) as kafka-dump-log prints them.

`__cluster_metadata` batches and KRaft snapshots (`.checkpoint`) carry leader changes, snapshot
headers and footers, the KRaft version and the voter set as control records whose values are
generated messages (`clients/src/main/resources/common/message/*.json`). Kafka reads each at version
0 (`ControlRecordUtils`) and prints it as JSON at the version its own `Version` field names.
"""

from __future__ import annotations

from ..format.control import ControlType
from .schema import Array, DecodeError, Field, Message, Struct, Uuid, read_message, to_kafka_json

_ZERO_UUID = Uuid(bytes(16))

_VOTER = Struct("Voter", (Field("VoterId", "int32"), Field("VoterDirectoryId", "uuid", "1+")))
LEADER_CHANGE = Message(
    "LeaderChangeMessage",
    (
        Field("Version", "int16"),
        Field("LeaderId", "int32"),
        Field("Voters", Array(_VOTER)),
        Field("GrantingVoters", Array(_VOTER)),
    ),
    valid="0-1",
    flexible="0+",
)
SNAPSHOT_HEADER = Message(
    "SnapshotHeaderRecord",
    (Field("Version", "int16"), Field("LastContainedLogTimestamp", "int64")),
    flexible="0+",
)
SNAPSHOT_FOOTER = Message("SnapshotFooterRecord", (Field("Version", "int16"),), flexible="0+")
KRAFT_VERSION = Message(
    "KRaftVersionRecord", (Field("Version", "int16"), Field("KRaftVersion", "int16")), flexible="0+"
)
VOTERS = Message(
    "VotersRecord",
    (
        Field("Version", "int16"),
        Field(
            "Voters",
            Array(
                Struct(
                    "Voter",
                    (
                        Field("VoterId", "int32"),
                        Field("VoterDirectoryId", "uuid"),
                        Field(
                            "Endpoints",
                            Array(
                                Struct(
                                    "Endpoint",
                                    (
                                        Field("Name", "string"),
                                        Field("Host", "string"),
                                        Field("Port", "uint16"),
                                    ),
                                )
                            ),
                        ),
                        Field(
                            "KRaftVersionFeature",
                            Struct(
                                "KRaftVersionFeature",
                                (
                                    Field("MinSupportedVersion", "int16"),
                                    Field("MaxSupportedVersion", "int16"),
                                ),
                            ),
                        ),
                    ),
                )
            ),
        ),
    ),
    flexible="0+",
)

# control type -> (schema, the label kafka-dump-log puts before the JSON)
_KRAFT = {
    ControlType.LEADER_CHANGE: (LEADER_CHANGE, "LeaderChange:"),
    ControlType.SNAPSHOT_HEADER: (SNAPSHOT_HEADER, "SnapshotHeader"),
    ControlType.SNAPSHOT_FOOTER: (SNAPSHOT_FOOTER, "SnapshotFooter"),
    ControlType.KRAFT_VERSION: (KRAFT_VERSION, "KRaftVersion"),
    ControlType.KRAFT_VOTERS: (VOTERS, "KRaftVoters"),
}


def is_kraft_control(control_type: ControlType) -> bool:
    return control_type in _KRAFT


def format_kraft_control(control_type: ControlType, value: bytes | memoryview | None) -> str:
    """`<label> <json>` for one KRaft control record's value. Raises DecodeError where Kafka's
    deserializer throws."""
    schema, label = _KRAFT[control_type]
    if value is None:
        raise DecodeError(f"{schema.name} control record has no value")
    decoded = read_message(schema, value, 0)
    version = decoded["version"]
    lo, hi = 0, 1 if schema is LEADER_CHANGE else 0
    if not lo <= version <= hi:
        # JsonConverter.write refuses a version the message does not have.
        raise DecodeError(f"Can't write version {version} of {schema.name}")
    if version == 1:  # read at version 0: fields added later hold their defaults
        for voters in (decoded["voters"], decoded["grantingVoters"]):
            for voter in voters:
                voter["voterDirectoryId"] = _ZERO_UUID
    return f"{label} {to_kafka_json(decoded)}"
