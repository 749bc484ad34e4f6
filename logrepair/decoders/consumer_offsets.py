"""`__consumer_offsets` records (spec fmt §9.1, §9.3): offset commits, group metadata, KIP-848 records.

The key's int16 prefix is the record type, and the key is read at that same version; the value's
prefix is its own schema version; a null value is a tombstone. `decode_offsets_record` gives typed
results (the audit computes each group's committed offsets from `OffsetCommit`s);
`format_offsets_record` gives kafka-dump-log's `--offsets-decoder` key and payload text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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

OFFSET_COMMIT_KEY = Message(
    "OffsetCommitKey",
    (Field("Group", "string"), Field("Topic", "string"), Field("Partition", "int32")),
    valid="0-1",
)
OFFSET_COMMIT_VALUE = Message(
    "OffsetCommitValue",
    (
        Field("Offset", "int64"),
        Field("LeaderEpoch", "int32", versions="3+", default=-1),
        Field("Metadata", "string"),
        Field("CommitTimestamp", "int64"),
        Field("ExpireTimestamp", "int64", versions="1", default=-1),
    ),
    valid="0-4",
    flexible="4+",
)
GROUP_METADATA_KEY = Message("GroupMetadataKey", (Field("Group", "string"),), valid="2")
_MEMBER_METADATA = Struct(
    "MemberMetadata",
    (
        Field("MemberId", "string"),
        Field("GroupInstanceId", "string", versions="3+", nullable="3+"),
        Field("ClientId", "string"),
        Field("ClientHost", "string"),
        Field("RebalanceTimeout", "int32", versions="1+", default=-1),
        Field("SessionTimeout", "int32"),
        Field("Subscription", "bytes"),
        Field("Assignment", "bytes"),
    ),
)
GROUP_METADATA_VALUE = Message(
    "GroupMetadataValue",
    (
        Field("ProtocolType", "string"),
        Field("Generation", "int32"),
        Field("Protocol", "string", nullable="0+"),
        Field("Leader", "string", nullable="0+"),
        Field("CurrentStateTimestamp", "int64", versions="2+", default=-1),
        Field("Members", Array(_MEMBER_METADATA)),
    ),
    valid="0-4",
    flexible="4+",
)

# The consumer protocol's own messages (clients/.../common/message/ConsumerProtocol*.json, not in the
# spec): what a classic consumer group keeps in each member's subscription and assignment bytes.
_TOPIC_PARTITION = Struct(
    "TopicPartition", (Field("Topic", "string"), Field("Partitions", Array("int32")))
)
CONSUMER_PROTOCOL_SUBSCRIPTION = Message(
    "ConsumerProtocolSubscription",
    (
        Field("Topics", Array("string")),
        Field("UserData", "bytes", nullable="0+"),
        Field("OwnedPartitions", Array(_TOPIC_PARTITION), versions="1+"),
        Field("GenerationId", "int32", versions="2+", default=-1),
        Field("RackId", "string", versions="3+", nullable="3+"),
    ),
    valid="0-3",
)
CONSUMER_PROTOCOL_ASSIGNMENT = Message(
    "ConsumerProtocolAssignment",
    (
        Field("AssignedPartitions", Array(_TOPIC_PARTITION)),
        Field("UserData", "bytes", nullable="0+"),
    ),
    valid="0-3",
)

# KIP-848/932 record types 3-15: keys at version = type; values version 0, flexible. The spec gives the
# value fields of types 3 and 5 only; the others' values are reported undecoded.
_GROUP_RECORD_TYPES = {
    3: ("ConsumerGroupMetadata", False),
    4: ("ConsumerGroupPartitionMetadata", False),
    5: ("ConsumerGroupMemberMetadata", True),
    6: ("ConsumerGroupTargetAssignmentMetadata", False),
    7: ("ConsumerGroupTargetAssignmentMember", True),
    8: ("ConsumerGroupCurrentMemberAssignment", True),
    9: ("ShareGroupPartitionMetadata", False),
    10: ("ShareGroupMemberMetadata", True),
    11: ("ShareGroupMetadata", False),
    12: ("ShareGroupTargetAssignmentMetadata", False),
    13: ("ShareGroupTargetAssignmentMember", True),
    14: ("ShareGroupCurrentMemberAssignment", True),
    15: ("ShareGroupStatePartitionMetadata", False),
}
_KEYS: dict[int, Message] = {0: OFFSET_COMMIT_KEY, 1: OFFSET_COMMIT_KEY, 2: GROUP_METADATA_KEY}
for _type, (_name, _with_member) in _GROUP_RECORD_TYPES.items():
    _fields = (Field("GroupId", "string"),) + (
        (Field("MemberId", "string"),) if _with_member else ()
    )
    _KEYS[_type] = Message(_name + "Key", _fields, valid=str(_type))

_VALUES: dict[int, Message] = {
    0: OFFSET_COMMIT_VALUE,
    1: OFFSET_COMMIT_VALUE,
    2: GROUP_METADATA_VALUE,
    3: Message("ConsumerGroupMetadataValue", (Field("Epoch", "int32"),), valid="0", flexible="0+"),
    5: Message(
        "ConsumerGroupMemberMetadataValue",
        (
            Field("InstanceId", "string", nullable="0+"),
            Field("RackId", "string", nullable="0+"),
            Field("ClientId", "string"),
            Field("ClientHost", "string"),
            Field("SubscribedTopicNames", Array("string")),
            Field("SubscribedTopicRegex", "string", nullable="0+"),
            Field("RebalanceTimeoutMs", "int32"),
            Field("ServerAssignor", "string", nullable="0+"),
            Field("ClassicMemberMetadata", "raw", tag=0),
        ),
        valid="0",
        flexible="0+",
    ),
}


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    version: int
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int


@dataclass(frozen=True, slots=True)
class OffsetCommit:
    """A committed offset of (group, topic, partition); `value` None is a tombstone (offset deleted)."""

    key_version: int
    group: str
    topic: str
    partition: int
    value: OffsetCommitValue | None


@dataclass(frozen=True, slots=True)
class GroupRecord:
    """Any other `__consumer_offsets` record: group metadata (type 2) and the KIP-848/932 types.

    `key` and `value` are decoded structs (Kafka's JSON field names). In a `consumer` group's
    metadata, each member's `subscription`/`assignment` is the decoded consumer-protocol struct
    where it decodes, else its bytes. `value` None with `undecoded_value` None is a tombstone;
    `undecoded_value` holds a value whose schema the spec does not give (without its version
    prefix).
    """

    record_type: int
    type_name: str
    key: dict[str, Any]
    value_version: int | None
    value: dict[str, Any] | None
    undecoded_value: bytes | None = None

    @property
    def group(self) -> str:
        return self.key.get("group", self.key.get("groupId", ""))


def _decode(key: bytes | None, value: bytes | None) -> GroupRecord:
    """Any record as a generic struct pair; `decode_offsets_record` types the offset commits."""
    record_type = read_version(key, "key")
    key_schema = _KEYS.get(record_type)
    if key_schema is None:
        raise UnknownRecordType(record_type)
    key_data = read_record_part(key_schema, key, record_type, "key")
    value_version: int | None = None
    value_data: dict[str, Any] | None = None
    undecoded: bytes | None = None
    if value is not None:
        value_version = read_version(value, "value")
        value_schema = _VALUES.get(record_type)
        if value_schema is None:
            undecoded = bytes(value[2:])
        else:
            value_data = read_record_part(value_schema, value, value_version, "value")
            if record_type == 2:
                _decode_consumer_protocol(value_data)
    name = key_schema.name.removesuffix("Key")
    return GroupRecord(record_type, name, key_data, value_version, value_data, undecoded)


def decode_offsets_record(key: bytes | None, value: bytes | None) -> OffsetCommit | GroupRecord:
    """Decodes one record; raises `UnknownRecordType` or `DecodeError` (Kafka's messages)."""
    d = _decode(key, value)
    if d.record_type in (0, 1):
        commit = None
        if d.value is not None and d.value_version is not None:
            commit = OffsetCommitValue(
                version=d.value_version,
                offset=d.value["offset"],
                leader_epoch=d.value.get("leaderEpoch", -1),
                metadata=d.value["metadata"],
                commit_timestamp=d.value["commitTimestamp"],
                expire_timestamp=d.value.get("expireTimestamp", -1),
            )
        return OffsetCommit(
            d.record_type, d.key["group"], d.key["topic"], d.key["partition"], commit
        )
    return d


def format_offsets_record(
    key: bytes | None, value: bytes | None, offset: int
) -> tuple[str, str | None]:
    """kafka-dump-log's `--offsets-decoder` text: (key text, payload text or None when not printed)."""
    if key is None:
        return missing_key_text(offset), None
    try:
        d = _decode(key, value)
    except UnknownRecordType as exc:
        return f"Unknown record type {exc.record_type} at offset {offset}, skipping.", None
    except DecodeError as exc:
        return f"Error at offset {offset}, skipping. {exc}", None
    key_text = to_kafka_json({"type": str(d.record_type), "data": d.key})
    if d.undecoded_value is not None:
        return key_text, to_kafka_json(
            {"version": str(d.value_version), "undecoded": d.undecoded_value}
        )
    if d.value is None:
        return key_text, "<DELETE>"
    return key_text, to_kafka_json({"version": str(d.value_version), "data": d.value})


def _decode_consumer_protocol(value: dict[str, Any]) -> None:
    """As DumpLogSegments: a `consumer` group's member subscription/assignment bytes become their
    decoded structs; bytes that do not decode stay as they are."""
    if value.get("protocolType") != "consumer":
        return
    for member in value["members"]:
        for name, schema in (
            ("subscription", CONSUMER_PROTOCOL_SUBSCRIPTION),
            ("assignment", CONSUMER_PROTOCOL_ASSIGNMENT),
        ):
            raw = member[name]
            try:
                member[name] = read_message(schema, memoryview(raw)[2:], read_version(raw, name))
            except DecodeError:
                continue
