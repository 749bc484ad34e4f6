"""TransactionIndex: Kafka's TransactionIndexTest and the reading quirks of spec fmt §7.1."""

from __future__ import annotations

import struct

import pytest

from logrepair.storage.abstract_index import CorruptIndexError, IndexFileError
from logrepair.storage.disk import join
from logrepair.storage.txn_index import ENTRY_SIZE, AbortedTxn, TransactionIndex


@pytest.fixture
def path(tmp_path) -> str:
    return join(str(tmp_path), "00000000000000000000.txnindex")


def test_entry_layout_is_34_bytes_big_endian() -> None:
    raw = AbortedTxn(producer_id=7, first_offset=10, last_offset=20, last_stable_offset=15).encode()
    assert len(raw) == ENTRY_SIZE == 34
    assert raw == struct.pack(">hqqqq", 0, 7, 10, 20, 15)
    assert AbortedTxn.decode(raw) == AbortedTxn(7, 10, 20, 15)
    assert str(AbortedTxn.decode(raw)) == (
        "AbortedTxn(version=0, producerId=7, firstOffset=10, lastOffset=20, lastStableOffset=15)"
    )


def test_file_is_created_by_the_first_append(disk, path) -> None:
    idx = TransactionIndex(disk, path, 0)
    assert list(idx.iter_entries()) == [] and idx.last_offset is None
    idx.sanity_check()
    assert not disk.exists(path)
    idx.append(AbortedTxn(1, 0, 10, 11))
    idx.flush()
    assert disk.size(path) == 34
    idx.close()


def test_position_set_correctly_when_opened(disk, path) -> None:
    idx = TransactionIndex(disk, path, 0)
    txns = [AbortedTxn(0, 0, 10, 11), AbortedTxn(1, 5, 15, 13), AbortedTxn(2, 18, 35, 25)]
    for t in txns[:2]:
        idx.append(t)
    idx.close()
    reopened = TransactionIndex(disk, path, 0)
    reopened.append(txns[2])
    assert list(reopened.iter_entries()) == txns
    reopened.close()


def test_last_offset_must_increase(disk, path) -> None:
    idx = TransactionIndex(disk, path, 0)
    idx.append(AbortedTxn(1, 5, 15, 13))
    with pytest.raises(IndexFileError) as info:
        idx.append(AbortedTxn(0, 0, 15, 11))
    assert str(info.value) == (
        "The last offset of appended transactions must increase sequentially, but 15 is not "
        f"greater than current last offset 15 of index {path}"
    )
    with pytest.raises(IndexFileError):
        idx.append(AbortedTxn(0, 0, 10, 11))
    idx.close()


def test_reopened_index_remembers_its_last_offset(disk, path) -> None:
    idx = TransactionIndex(disk, path, 0)
    idx.append(AbortedTxn(1, 5, 15, 13))
    idx.close()
    with pytest.raises(IndexFileError):
        TransactionIndex(disk, path, 0).append(AbortedTxn(0, 0, 10, 11))


def test_sanity_check(disk, path) -> None:
    idx = TransactionIndex(disk, path, 0)
    idx.append(AbortedTxn(0, 0, 10, 11))
    idx.append(AbortedTxn(1, 5, 15, 13))
    idx.close()
    reopened = TransactionIndex(disk, path, 100)
    with pytest.raises(CorruptIndexError) as info:
        reopened.sanity_check()
    assert str(info.value) == (
        "Last offset of aborted transaction AbortedTxn(version=0, producerId=0, firstOffset=0, "
        f"lastOffset=10, lastStableOffset=11) in index {path} is less than start offset 100"
    )


def test_truncate(disk, path) -> None:
    idx = TransactionIndex(disk, path, 0)
    txns = [AbortedTxn(0, 0, 10, 2), AbortedTxn(1, 5, 15, 16), AbortedTxn(2, 18, 35, 25),
            AbortedTxn(3, 32, 50, 40)]  # fmt: skip
    for t in txns:
        idx.append(t)
    idx.truncate_to(51)
    assert list(idx.iter_entries()) == txns
    idx.truncate_to(50)
    assert list(idx.iter_entries()) == txns[:3]
    assert idx.last_offset == 35
    idx.append(AbortedTxn(4, 36, 40, 41))
    assert list(idx.iter_entries())[-1].last_offset == 40
    idx.reset()
    assert list(idx.iter_entries()) == [] and disk.size(path) == 0
    idx.close()


def test_partial_trailing_entry_is_ignored_and_overwritten(disk, path) -> None:
    whole = AbortedTxn(1, 0, 10, 11).encode()
    disk.write_file_atomic(path, whole + b"\x00" * 20)
    idx = TransactionIndex(disk, path, 0)
    assert list(idx.iter_entries()) == [AbortedTxn(1, 0, 10, 11)]
    idx.append(AbortedTxn(2, 12, 20, 21))
    idx.close()
    assert disk.read_file(path) == whole + AbortedTxn(2, 12, 20, 21).encode()


@pytest.mark.parametrize(
    ("first_two", "accepted", "version"),
    [
        (b"\x00\x00", True, 0),
        (b"\x00\x07", True, 0),  # the second byte is never examined
        (b"\x80\x00", True, -128),  # a negative first byte passes
        (b"\xff\xff", True, -1),
        (b"\x01\x00", False, 1),
        (b"\x7f\x00", False, 127),
    ],
)
def test_version_check_reads_the_first_byte_only(disk, path, first_two, accepted, version) -> None:
    disk.write_file_atomic(path, first_two + AbortedTxn(1, 0, 10, 11).encode()[2:])
    idx = TransactionIndex(disk, path, 0)
    if accepted:
        (txn,) = idx.iter_entries()
        assert txn.version == version and txn.last_offset == 10
    else:
        with pytest.raises(CorruptIndexError) as info:
            list(idx.iter_entries())
        assert str(info.value) == (
            f"Unexpected aborted transaction version {version} in transaction index {path}, "
            "current version is 0"
        )


def test_many_entries_are_read_in_chunks(disk, path) -> None:
    idx = TransactionIndex(disk, path, 0)
    for i in range(5000):
        idx.append(AbortedTxn(i, 2 * i, 2 * i + 1, 2 * i + 2))
    idx.close()
    entries = list(TransactionIndex(disk, path, 0).iter_entries())
    assert len(entries) == 5000 and entries[-1].last_offset == 9999
