"""`partition.metadata`: the topic id of a partition directory (spec fmt §8.4), and Kafka's Uuid text.

Exactly `version: 0\\ntopic_id: <uuid>`, no trailing newline; `<uuid>` is URL-safe base64 of the
16 bytes without padding (Kafka's `Uuid.toString`).
"""

from __future__ import annotations

import base64
import itertools
import re
import string
from dataclasses import dataclass

from . import java_text
from .checkpoints import CheckpointError, iter_lines
from .disk import Disk

PARTITION_METADATA_VERSION = 0
ZERO_UUID = bytes(16)
_KEY_VALUE = re.compile(r":[ \t\n\x0b\f\r]+")
_BASE64_URL_ALPHABET = frozenset(string.ascii_letters + string.digits + "-_")


def uuid_to_string(uuid: bytes) -> str:
    if len(uuid) != 16:
        raise ValueError(f"a Uuid is 16 bytes, not {len(uuid)}")
    return base64.urlsafe_b64encode(uuid).decode("ascii").rstrip("=")


def uuid_from_string(text: str) -> bytes:
    """Kafka's `Uuid.fromString`: ValueError with its messages."""
    if len(text) > 24:
        raise ValueError(
            f"Input string with prefix `{text[:24]}` is too long to be decoded as a base64 UUID"
        )
    decoded = _decode_base64_url(text)
    if len(decoded) != 16:
        raise ValueError(
            f"Input string `{text}` decoded as {len(decoded)} bytes, which is not equal to the "
            "expected 16 bytes of a base64-encoded UUID"
        )
    return decoded


def _decode_base64_url(text: str) -> bytes:
    """Java's URL-safe Base64 decoder, with its messages: padding optional, nothing outside the
    alphabet, a last unit of one character refused."""
    body = text.rstrip("=")
    bad = next((c for c in body if c not in _BASE64_URL_ALPHABET), None)
    if bad is not None:
        raise ValueError(f"Illegal base64 character {ord(bad):x}")
    if len(body) % 4 == 1:
        raise ValueError("Last unit does not have enough valid bits")
    if body != text and (len(text) % 4 or len(text) - len(body) > 2):
        raise ValueError("Input byte array has wrong 4-byte ending unit")
    return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    version: int
    topic_id: bytes

    @property
    def topic_id_string(self) -> str:
        return uuid_to_string(self.topic_id)


def encode_partition_metadata(topic_id: bytes) -> bytes:
    return f"version: {PARTITION_METADATA_VERSION}\ntopic_id: {uuid_to_string(topic_id)}".encode()


def write_partition_metadata(disk: Disk, path: str, topic_id: bytes) -> None:
    disk.write_file_atomic(path, encode_partition_metadata(topic_id))


def read_partition_metadata(
    disk: Disk, path: str, *, limit: int | None = None
) -> PartitionMetadata:
    """`PartitionMetadataReadBuffer.read`: two lines, each split on `:\\s+` into exactly two parts
    (key names are not checked); lines after the second are ignored, as in Kafka. (`limit` as for
    `checkpoints.iter_lines`.)"""
    lines = list(itertools.islice(iter_lines(disk, path, limit=limit), 2))

    def malformed(n: int) -> CheckpointError:
        return CheckpointError(
            path, f"Malformed line in checkpoint file [{path}]: {lines[n - 1]}", line_number=n
        )

    if not lines:
        # Kafka fails here with a NullPointerException (split of a missing line).
        raise CheckpointError(path, f"Partition metadata file {path} is empty", line_number=1)
    version_parts = java_text.split(_KEY_VALUE, lines[0])
    if len(version_parts) != 2:
        raise malformed(1)
    try:
        version = java_text.parse_int(version_parts[1])
    except ValueError:
        raise malformed(1) from None
    if version < PARTITION_METADATA_VERSION:
        raise CheckpointError(
            path,
            f"Unrecognized version of partition metadata file + ({path}): {version}",
            line_number=1,
        )
    if len(lines) < 2:
        raise CheckpointError(
            path, f"Partition metadata file {path} has no topic_id line", line_number=2
        )
    id_parts = java_text.split(_KEY_VALUE, lines[1])
    if len(id_parts) != 2:
        raise malformed(2)
    try:
        topic_id = uuid_from_string(id_parts[1])
    except ValueError:
        raise malformed(2) from None
    if topic_id == ZERO_UUID:
        raise CheckpointError(
            path, f"Invalid topic ID in partition metadata file ({path})", line_number=2
        )
    return PartitionMetadata(version, topic_id)
