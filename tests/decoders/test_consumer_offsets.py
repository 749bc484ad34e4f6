"""`__consumer_offsets` decoding: typed results, kafka-dump-log text (spec fmt §9.1, §9.3), bad input."""

from __future__ import annotations

import base64
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from logrepair.decoders import (
    DecodeError,
    GroupRecord,
    OffsetCommit,
    UnknownRecordType,
    decode_offsets_record,
    format_offsets_record,
)
from logrepair.decoders.consumer_offsets import (
    CONSUMER_PROTOCOL_ASSIGNMENT,
    CONSUMER_PROTOCOL_SUBSCRIPTION,
    GROUP_METADATA_KEY,
    GROUP_METADATA_VALUE,
    OFFSET_COMMIT_KEY,
    OFFSET_COMMIT_VALUE,
)
from logrepair.format.varint import write_unsigned_varint

from .encode import encode


def commit_key(group: str = "g", topic: str = "t", partition: int = 0, version: int = 1) -> bytes:
    return encode(
        OFFSET_COMMIT_KEY, {"group": group, "topic": topic, "partition": partition}, version
    )


def test_spec_example_text() -> None:
    value = encode(
        OFFSET_COMMIT_VALUE,
        {"offset": 42, "leaderEpoch": 0, "metadata": "", "commitTimestamp": 1700000000000},
        3,
    )
    assert format_offsets_record(commit_key(), value, 7) == (
        '{"type":"1","data":{"group":"g","topic":"t","partition":0}}',
        '{"version":"3","data":{"offset":42,"leaderEpoch":0,"metadata":"","commitTimestamp":1700000000000}}',
    )


@pytest.mark.parametrize(
    ("version", "data_text"),
    [
        (0, '{"offset":5,"metadata":"m","commitTimestamp":11}'),
        (1, '{"offset":5,"metadata":"m","commitTimestamp":11,"expireTimestamp":12}'),
        (2, '{"offset":5,"metadata":"m","commitTimestamp":11}'),
        (3, '{"offset":5,"leaderEpoch":3,"metadata":"m","commitTimestamp":11}'),
        (4, '{"offset":5,"leaderEpoch":3,"metadata":"m","commitTimestamp":11}'),
    ],
)
def test_offset_commit_value_versions(version: int, data_text: str) -> None:
    fields = {
        "offset": 5,
        "leaderEpoch": 3,
        "metadata": "m",
        "commitTimestamp": 11,
        "expireTimestamp": 12,
    }
    value = encode(OFFSET_COMMIT_VALUE, fields, version)
    record = decode_offsets_record(commit_key(version=0), value)
    assert isinstance(record, OffsetCommit)
    assert (record.key_version, record.group, record.topic, record.partition) == (0, "g", "t", 0)
    assert record.value is not None
    assert record.value.version == version
    assert record.value.offset == 5
    assert record.value.leader_epoch == (3 if version >= 3 else -1)
    assert record.value.expire_timestamp == (12 if version == 1 else -1)
    assert record.value.commit_timestamp == 11
    _, payload = format_offsets_record(commit_key(version=0), value, 0)
    assert payload == f'{{"version":"{version}","data":{data_text}}}'


def test_flexible_value_skips_unknown_tagged_fields() -> None:
    body = encode(OFFSET_COMMIT_VALUE, {"offset": 9, "metadata": "x", "commitTimestamp": 1}, 4)
    # Replace the empty tagged section with one unknown tag (7) of 3 bytes.
    value = body[:-1] + write_unsigned_varint(1) + bytes([7, 3, 1, 2, 3])
    record = decode_offsets_record(commit_key(), value)
    assert isinstance(record, OffsetCommit) and record.value is not None
    assert record.value.offset == 9


def test_tombstone() -> None:
    record = decode_offsets_record(commit_key(), None)
    assert isinstance(record, OffsetCommit) and record.value is None
    assert format_offsets_record(commit_key(), None, 3)[1] == "<DELETE>"
    group = decode_offsets_record(encode(GROUP_METADATA_KEY, {"group": "g"}, 2), None)
    assert isinstance(group, GroupRecord) and group.value is None and group.group == "g"


def subscription(version: int = 3) -> bytes:
    data = {
        "topics": ["a", "b"],
        "userData": None,
        "ownedPartitions": [{"topic": "a", "partitions": [0, 1]}],
        "generationId": 4,
        "rackId": "r1",
    }
    return encode(CONSUMER_PROTOCOL_SUBSCRIPTION, data, version)


def assignment() -> bytes:
    data = {"assignedPartitions": [{"topic": "a", "partitions": [1]}], "userData": b"\x01"}
    return encode(CONSUMER_PROTOCOL_ASSIGNMENT, data, 0)


def group_value(version: int, protocol_type: str = "consumer", sub: bytes | None = None) -> bytes:
    member = {
        "memberId": "m-1",
        "groupInstanceId": None,
        "clientId": "c",
        "clientHost": "/10.0.0.1",
        "rebalanceTimeout": 300000,
        "sessionTimeout": 45000,
        "subscription": subscription() if sub is None else sub,
        "assignment": assignment(),
    }
    data = {
        "protocolType": protocol_type,
        "generation": 7,
        "protocol": "range",
        "leader": "m-1",
        "currentStateTimestamp": 1700000000001,
        "members": [member],
    }
    return encode(GROUP_METADATA_VALUE, data, version)


def test_group_metadata_golden_text_decodes_consumer_protocol() -> None:
    key = encode(GROUP_METADATA_KEY, {"group": "g"}, 2)
    key_text, payload = format_offsets_record(key, group_value(3), 0)
    assert key_text == '{"type":"2","data":{"group":"g"}}'
    assert payload == (
        '{"version":"3","data":{"protocolType":"consumer","generation":7,"protocol":"range",'
        '"leader":"m-1","currentStateTimestamp":1700000000001,"members":[{"memberId":"m-1",'
        '"groupInstanceId":null,"clientId":"c","clientHost":"/10.0.0.1","rebalanceTimeout":300000,'
        '"sessionTimeout":45000,"subscription":{"topics":["a","b"],"userData":null,'
        '"ownedPartitions":[{"topic":"a","partitions":[0,1]}],"generationId":4,"rackId":"r1"},'
        '"assignment":{"assignedPartitions":[{"topic":"a","partitions":[1]}],"userData":"AQ=="}}]}}'
    )


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_group_metadata_versions(version: int) -> None:
    key = encode(GROUP_METADATA_KEY, {"group": "g"}, 2)
    record = decode_offsets_record(key, group_value(version))
    assert isinstance(record, GroupRecord)
    assert (record.record_type, record.type_name, record.group) == (2, "GroupMetadata", "g")
    assert record.value_version == version and record.value is not None
    member = record.value["members"][0]
    assert ("groupInstanceId" in member) == (version >= 3)
    assert ("rebalanceTimeout" in member) == (version >= 1)
    assert ("currentStateTimestamp" in record.value) == (version >= 2)
    assert member["subscription"]["topics"] == ["a", "b"]


def test_undecodable_subscription_stays_base64() -> None:
    bad = b"\x00\x09junk"  # version 9 of ConsumerProtocolSubscription does not exist
    key = encode(GROUP_METADATA_KEY, {"group": "g"}, 2)
    _, payload = format_offsets_record(key, group_value(3, sub=bad), 0)
    assert payload is not None
    assert f'"subscription":"{base64.b64encode(bad).decode()}"' in payload
    assert '"assignment":{"assignedPartitions"' in payload


def test_non_consumer_protocol_keeps_bytes() -> None:
    key = encode(GROUP_METADATA_KEY, {"group": "g"}, 2)
    record = decode_offsets_record(key, group_value(3, protocol_type="connect"))
    assert isinstance(record, GroupRecord) and record.value is not None
    assert record.value["members"][0]["subscription"] == subscription()


def test_kip848_records() -> None:
    key = struct.pack(">hh", 3, 1) + b"g"
    value = b"\x00\x00" + struct.pack(">i", 12) + b"\x00"
    record = decode_offsets_record(key, value)
    assert isinstance(record, GroupRecord)
    assert (record.type_name, record.group, record.value) == (
        "ConsumerGroupMetadata",
        "g",
        {"epoch": 12},
    )
    assert format_offsets_record(key, value, 0) == (
        '{"type":"3","data":{"groupId":"g"}}',
        '{"version":"0","data":{"epoch":12}}',
    )


def test_kip848_member_metadata_and_unknown_schema() -> None:
    key = struct.pack(">hh", 5, 1) + b"g" + struct.pack(">h", 2) + b"m1"
    value = (
        b"\x00\x00"
        + b"\x00\x00"  # InstanceId null, RackId null
        + b"\x02c\x03h1"  # ClientId "c", ClientHost "h1"
        + b"\x02\x02t"  # SubscribedTopicNames ["t"]
        + b"\x00"  # SubscribedTopicRegex null
        + struct.pack(">i", 5000)
        + b"\x06range"  # ServerAssignor "range"
        + b"\x01\x00\x02\xab\xcd"  # one tagged field: tag 0, 2 bytes
    )
    record = decode_offsets_record(key, value)
    assert isinstance(record, GroupRecord) and record.value is not None
    assert record.key == {"groupId": "g", "memberId": "m1"}
    assert record.value["subscribedTopicNames"] == ["t"]
    assert record.value["classicMemberMetadata"] == b"\xab\xcd"
    # Type 4's value schema is not in the spec: reported undecoded, the key still decoded.
    key4 = struct.pack(">hh", 4, 1) + b"g"
    record4 = decode_offsets_record(key4, b"\x00\x00\x01\x02")
    assert isinstance(record4, GroupRecord) and record4.undecoded_value == b"\x01\x02"
    assert format_offsets_record(key4, b"\x00\x00\x01\x02", 0)[1] == (
        '{"version":"0","undecoded":"AQI="}'
    )


@pytest.mark.parametrize(
    ("key", "value", "text"),
    [
        (
            struct.pack(">h", 99) + b"x",
            None,
            "Unknown record type 99 at offset 17, skipping.",
        ),
        (b"\x00", None, "Error at offset 17, skipping. Could not read version from key's buffer."),
        (
            b"\x00\x01\x00\x01g",
            None,
            "Error at offset 17, skipping. Could not read record with version 1 from key's buffer "
            "due to: null.",
        ),
        (
            b"\x00\x01\xff\xff",
            None,
            "Error at offset 17, skipping. Could not read record with version 1 from key's buffer "
            "due to: non-nullable field group was serialized as null.",
        ),
        (
            None,
            b"\x00\x00",
            "Failed to decode message at offset 17 using the specified decoder "
            "(message had a missing key)",
        ),
    ],
)
def test_key_errors(key: bytes | None, value: bytes | None, text: str) -> None:
    assert format_offsets_record(key, value, 17) == (text, None)


def test_value_errors() -> None:
    key = commit_key()
    assert format_offsets_record(key, b"\x00\x09" + b"\x00" * 30, 1) == (
        "Error at offset 1, skipping. Could not read record with version 9 from value's buffer "
        "due to: Can't read version 9 of OffsetCommitValue.",
        None,
    )
    assert format_offsets_record(key, b"", 1)[0] == (
        "Error at offset 1, skipping. Could not read version from value's buffer."
    )
    with pytest.raises(UnknownRecordType):
        decode_offsets_record(b"\x01\x00", None)
    with pytest.raises(DecodeError, match="the record has no key"):
        decode_offsets_record(None, b"\x00\x00")


def test_huge_array_count_is_refused_before_allocating() -> None:
    key = encode(GROUP_METADATA_KEY, {"group": "g"}, 2)
    value = (
        b"\x00\x00"
        + struct.pack(">h", 1)
        + b"c"
        + struct.pack(">i", 1)
        + b"\xff\xff" * 2
        + struct.pack(">i", 0x7FFFFFFF)
    )
    with pytest.raises(DecodeError, match="Tried to allocate a collection of size 2147483647"):
        decode_offsets_record(key, value)


def test_overlong_varint_and_huge_bytes() -> None:
    # v4 (flexible) metadata length as a 5-byte varint with the continuation bit in byte 5
    value = b"\x00\x04" + struct.pack(">q", 1) + struct.pack(">i", 0) + b"\xff" * 5
    with pytest.raises(DecodeError, match="Varint is too long"):
        decode_offsets_record(commit_key(), value)
    member = (
        struct.pack(">h", 1)
        + b"m"
        + struct.pack(">h", 1)
        + b"c"
        + struct.pack(">h", 1)
        + b"h"
        + struct.pack(">i", 1)
        + struct.pack(">i", 2**31 - 1)
    )
    value = (
        b"\x00\x00"
        + struct.pack(">h", 1)
        + b"c"
        + struct.pack(">i", 1)
        + b"\xff\xff\xff\xff"
        + struct.pack(">i", 1)
        + member
    )
    with pytest.raises(DecodeError, match=r"byte array of 2147483647 byte\(s\): only 0"):
        decode_offsets_record(encode(GROUP_METADATA_KEY, {"group": "g"}, 2), value)


def test_json_escapes_as_jackson() -> None:
    key = commit_key(group='a"b\\c\n\x01é')
    text, _ = format_offsets_record(key, None, 0)
    assert text == '{"type":"1","data":{"group":"a\\"b\\\\c\\n\\u0001é","topic":"t","partition":0}}'


@given(st.binary(max_size=64), st.none() | st.binary(max_size=64))
def test_arbitrary_bytes_never_raise_other_errors(key: bytes, value: bytes | None) -> None:
    try:
        decode_offsets_record(key, value)
    except DecodeError:
        pass
    key_text, _ = format_offsets_record(key, value, 0)
    assert key_text


@given(st.integers(0, 4), st.integers(0, 2**62), st.integers(-1, 2**31 - 1), st.text(max_size=20))
def test_offset_commit_round_trip(version: int, offset: int, epoch: int, metadata: str) -> None:
    fields = {"offset": offset, "leaderEpoch": epoch, "metadata": metadata, "commitTimestamp": 3}
    record = decode_offsets_record(commit_key(), encode(OFFSET_COMMIT_VALUE, fields, version))
    assert isinstance(record, OffsetCommit) and record.value is not None
    assert (record.value.offset, record.value.metadata) == (offset, metadata)
    assert record.value.leader_epoch == (epoch if version >= 3 else -1)
