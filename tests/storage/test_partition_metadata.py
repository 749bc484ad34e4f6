"""partition.metadata and Kafka's Uuid text (spec fmt §8.4)."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from logrepair.storage.checkpoints import CheckpointError
from logrepair.storage.disk import join
from logrepair.storage.partition_metadata import (
    PartitionMetadata,
    encode_partition_metadata,
    read_partition_metadata,
    uuid_from_string,
    uuid_to_string,
    write_partition_metadata,
)

TOPIC_ID = bytes.fromhex("6b7e2c1f0a3d4e5f8091a2b3c4d5e6f7")
TOPIC_ID_TEXT = base64.urlsafe_b64encode(TOPIC_ID).decode().rstrip("=")


@pytest.fixture
def path(tmp_path) -> str:
    return join(str(tmp_path), "partition.metadata")


def test_exact_bytes(disk, path) -> None:
    write_partition_metadata(disk, path, TOPIC_ID)
    assert disk.read_file(path) == f"version: 0\ntopic_id: {TOPIC_ID_TEXT}".encode()
    assert len(TOPIC_ID_TEXT) == 22
    assert not disk.exists(path + ".tmp")
    assert read_partition_metadata(disk, path) == PartitionMetadata(0, TOPIC_ID)


@given(st.binary(min_size=16, max_size=16).filter(any))
def test_uuid_round_trip(uuid) -> None:
    text = uuid_to_string(uuid)
    assert len(text) == 22 and "=" not in text
    assert uuid_from_string(text) == uuid
    assert uuid_from_string(text + "==") == uuid  # Java's decoder accepts padding
    data = encode_partition_metadata(uuid)
    assert data.endswith(text.encode())


@pytest.mark.parametrize(
    "text",
    ["", "AAAA", "x" * 25, "+" * 22, "/" * 22, "A" * 21 + "!", TOPIC_ID_TEXT + "="],
)
def test_bad_uuids(text) -> None:
    with pytest.raises(ValueError):
        uuid_from_string(text)


@pytest.mark.parametrize(
    "data",
    [
        f"version: 0\ntopic_id: {TOPIC_ID_TEXT}\n",
        f"version:\t0\ntopic_id:  {TOPIC_ID_TEXT}",
        f"anything: 0\nkey: {TOPIC_ID_TEXT}\nextra lines are ignored",
        f"version: 3\ntopic_id: {TOPIC_ID_TEXT}",
    ],
)
def test_accepted(disk, path, data) -> None:
    disk.write_file_atomic(path, data.encode())
    assert read_partition_metadata(disk, path).topic_id == TOPIC_ID


@pytest.mark.parametrize(
    ("data", "line_number", "message"),
    [
        ("version:0\ntopic_id: x", 1, "Malformed line in checkpoint file [{p}]: version:0"),
        ("version: x\ntopic_id: y", 1, "Malformed line in checkpoint file [{p}]: version: x"),
        ("version: 0: 1\ntopic_id: y", 1, "Malformed line in checkpoint file [{p}]: version: 0: 1"),
        ("version: 0\ntopic_id:abc", 2, "Malformed line in checkpoint file [{p}]: topic_id:abc"),
        ("version: 0\ntopic_id: abc", 2, "Malformed line in checkpoint file [{p}]: topic_id: abc"),
        ("version: -1\ntopic_id: abc", 1,
         "Unrecognized version of partition metadata file + ({p}): -1"),
        ("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA", 2,
         "Invalid topic ID in partition metadata file ({p})"),
        ("", 1, "Partition metadata file {p} is empty"),
        ("version: 0\n", 2, "Partition metadata file {p} has no topic_id line"),
    ],
)  # fmt: skip
def test_malformed(disk, path, data, line_number, message) -> None:
    disk.write_file_atomic(path, data.encode())
    with pytest.raises(CheckpointError) as info:
        read_partition_metadata(disk, path)
    assert info.value.message == message.format(p=path)
    assert info.value.line_number == line_number
