"""Producer-state snapshots: layout, Kafka's checks and messages, in-place writes (spec fmt §7.2)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from logrepair.format.crc import crc32c
from logrepair.storage.disk import join
from logrepair.storage.osdisk import OsDisk
from logrepair.storage.producer_snapshot import (
    CorruptSnapshotError,
    ProducerSnapshotEntry,
    decode_snapshot,
    encode_snapshot,
    read_snapshot,
    write_snapshot,
)

ENTRY = ProducerSnapshotEntry(
    producer_id=1000,
    epoch=3,
    last_sequence=41,
    last_offset=120,
    offset_delta=9,
    timestamp=1_700_000_000_000,
    coordinator_epoch=2,
    current_txn_first_offset=-1,
)

entries_strategy = st.lists(
    st.builds(
        ProducerSnapshotEntry,
        st.integers(-(2**63), 2**63 - 1),
        st.integers(-(2**15), 2**15 - 1),
        st.integers(-(2**31), 2**31 - 1),
        st.integers(-(2**63), 2**63 - 1),
        st.integers(-(2**31), 2**31 - 1),
        st.integers(-(2**63), 2**63 - 1),
        st.integers(-(2**31), 2**31 - 1),
        st.integers(-(2**63), 2**63 - 1),
    ),
    max_size=20,
)


def test_layout() -> None:
    raw = encode_snapshot([ENTRY])
    assert len(raw) == 10 + 46
    version, crc, count = struct.unpack_from(">hIi", raw)
    assert (version, count) == (1, 1)
    assert crc == crc32c(raw[6:])
    assert struct.unpack_from(">qhiqiqiq", raw, 10) == (
        1000,
        3,
        41,
        120,
        9,
        1_700_000_000_000,
        2,
        -1,
    )
    assert encode_snapshot([]) == struct.pack(">hIi", 1, crc32c(bytes(4)), 0)


@given(entries_strategy)
def test_round_trip(entries) -> None:
    assert decode_snapshot(encode_snapshot(entries)) == entries


def test_entry_meanings() -> None:
    assert ENTRY.has_batch_metadata and not ENTRY.has_ongoing_transaction
    empty = ProducerSnapshotEntry(1, 0, -1, -1, 0, 5, -1, 77)
    assert not empty.has_batch_metadata and empty.has_ongoing_transaction


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "Snapshot failed schema validation: the file has 0 bytes, too few for the version"),
        (
            struct.pack(">h", 2) + bytes(8),
            "Snapshot failed schema validation: Snapshot contained an unknown file version 2",
        ),
        (
            struct.pack(">h", 0),
            "Snapshot failed schema validation: Snapshot contained an unknown file version 0",
        ),
        (
            struct.pack(">hI", 1, 0),
            "Snapshot failed schema validation: the file has 6 bytes, too few for the snapshot "
            "header",
        ),
        (
            struct.pack(">hIi", 1, 0, -1),
            "Snapshot failed schema validation: non-nullable field producerEntries was serialized "
            "as null",
        ),
        (
            struct.pack(">hIi", 1, 0, 2**31 - 1),
            "Snapshot failed schema validation: Tried to allocate a collection of size 2147483647, "
            "but there are only 0 bytes remaining.",
        ),
        (
            struct.pack(">hIi", 1, 0, 2) + bytes(50),
            "Snapshot failed schema validation: entry 1 of 2 is cut off by the end of the file",
        ),
    ],
)
def test_schema_errors(data, message) -> None:
    with pytest.raises(CorruptSnapshotError) as info:
        decode_snapshot(data)
    assert str(info.value) == message


def test_crc_mismatch_message() -> None:
    raw = bytearray(encode_snapshot([ENTRY]))
    raw[20] ^= 0xFF
    stored = struct.unpack_from(">I", raw, 2)[0]
    with pytest.raises(CorruptSnapshotError) as info:
        decode_snapshot(raw)
    assert str(info.value) == (
        f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {stored}. "
        f"Computed crc: {crc32c(bytes(raw[6:]))}"
    )


def test_trailing_bytes_fail_the_crc() -> None:
    with pytest.raises(CorruptSnapshotError, match="CRC is no longer valid"):
        decode_snapshot(encode_snapshot([ENTRY]) + b"\x00")


def test_write_is_in_place_without_truncation(tmp_path) -> None:
    """As Kafka: a shorter snapshot over a longer file leaves the old tail, so it reads as corrupt."""
    disk = OsDisk()
    path = join(str(tmp_path), "00000000000000000120.snapshot")
    write_snapshot(disk, path, [ENTRY, ENTRY])
    assert read_snapshot(disk, path) == [ENTRY, ENTRY]
    write_snapshot(disk, path, [ENTRY], sync=False)
    assert disk.size(path) == 10 + 2 * 46
    with pytest.raises(CorruptSnapshotError) as info:
        read_snapshot(disk, path)
    assert path in str(info.value)


def test_read_missing_is_file_not_found(tmp_path) -> None:
    with pytest.raises(FileNotFoundError):
        read_snapshot(OsDisk(), join(str(tmp_path), "00000000000000000000.snapshot"))


def test_large_garbage_file_is_rejected_from_its_header(tmp_path) -> None:
    disk = OsDisk()
    path = join(str(tmp_path), "00000000000000000000.snapshot")
    with disk.open(path, create=True) as f:
        f.write_at(0, struct.pack(">hIi", 1, 0, 300_000))
        f.truncate(32 << 20)  # sparse: 32 MiB of zeros, 13.8 MB of "entries"
    with pytest.raises(CorruptSnapshotError, match="CRC is no longer valid"):
        read_snapshot(disk, path)
