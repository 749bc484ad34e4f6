"""`logrepair dump` of a segment's side files: `.index`, `.timeindex`, `.txnindex`, `.snapshot`
(spec fmt §10.4-10.7), with kafka-dump-log's lines and end-of-run stderr reports."""

from __future__ import annotations

import json
import os
from pathlib import Path

from logrepair.cli import main
from logrepair.format.batch_builder import build_batch
from logrepair.format.batch_layout import Record
from logrepair.storage.offset_index import encode_entry as index_entry
from logrepair.storage.producer_snapshot import ProducerSnapshotEntry, encode_snapshot
from logrepair.storage.time_index import encode_entry as time_entry
from logrepair.storage.txn_index import AbortedTxn

T0 = 1700000000000
BASE = 100
PREFIX = f"{BASE:020d}"


def dump(capsys, *args: str) -> tuple[int, list[str], list[str]]:
    status = main(["dump", *args])
    captured = capsys.readouterr()
    return status, captured.out.splitlines(), captured.err.splitlines()


def segment(tmp_path: Path) -> list[int]:
    """Five one-record batches at offsets 100-104, timestamps T0+0..4; returns their positions."""
    positions, data = [], b""
    for i in range(5):
        positions.append(len(data))
        data += build_batch([Record(BASE + i, T0 + i, None, b"v" * 50)], base_offset=BASE + i)
    (tmp_path / f"{PREFIX}.log").write_bytes(data)
    return positions


def test_offset_index_entries_stop_at_zero_slots(tmp_path, capsys) -> None:
    pos = segment(tmp_path)
    index = tmp_path / f"{PREFIX}.index"
    index.write_bytes(index_entry(1, pos[1]) + index_entry(3, pos[3]) + bytes(16))
    status, out, err = dump(capsys, str(index))
    assert (status, err) == (0, [])
    assert out == [
        f"Dumping {index}",
        f"offset: 101 position: {pos[1]}",
        f"offset: 103 position: {pos[3]}",
    ]


def test_offset_index_mismatches(tmp_path, capsys) -> None:
    pos = segment(tmp_path)
    index = tmp_path / f"{PREFIX}.index"
    index.write_bytes(index_entry(1, pos[2]) + index_entry(3, pos[3]) + index_entry(4, 10**6))
    status, out, err = dump(capsys, str(index), "--verify-index-only")
    assert status == 0 and out == [f"Dumping {index}"]
    assert err == [
        f"Mismatches in :{os.path.abspath(index)}",
        "  Index offset: 104, log offset: -1",  # points past the end of the log
        "  Index offset: 101, log offset: 102",
    ]


def test_offset_index_max_message_size(tmp_path, capsys) -> None:
    pos = segment(tmp_path)
    index = tmp_path / f"{PREFIX}.index"
    index.write_bytes(index_entry(1, pos[1]))
    _, _, err = dump(capsys, str(index), "--max-message-size", "40")
    assert err[1] == "  Index offset: 101, log offset: -1"  # no whole batch fits in 40 bytes


def test_offset_index_empty_and_sanity(tmp_path, capsys) -> None:
    segment(tmp_path)
    index = tmp_path / f"{PREFIX}.index"
    index.write_bytes(b"")
    assert dump(capsys, str(index))[1] == [f"Dumping {index}", f"{index} is empty."]
    index.write_bytes(index_entry(1, 0))
    status, out, _ = dump(capsys, str(index), "--index-sanity-check")
    assert status == 0 and out[1] == f"{index} passed sanity check."
    index.write_bytes(index_entry(1, 0) + b"\x00\x00\x00")
    status, out, err = dump(capsys, str(index), "--index-sanity-check")
    assert status == 1 and out == [f"Dumping {index}"]
    assert err == [
        f"Index file {index} is corrupt, found 11 bytes which is neither positive nor a multiple of 8"
    ]


def test_index_without_its_log(tmp_path, capsys) -> None:
    index = tmp_path / f"{PREFIX}.index"
    index.write_bytes(index_entry(1, 0))
    status, out, err = dump(capsys, str(index))
    assert status == 0 and out[1] == "offset: 101 position: 0"
    assert err == [f"{tmp_path / PREFIX}.log not found: the entries of {index} are not verified"]


def test_time_index_entries_and_errors(tmp_path, capsys) -> None:
    pos = segment(tmp_path)
    (tmp_path / f"{PREFIX}.index").write_bytes(index_entry(2, pos[2]))
    tindex = tmp_path / f"{PREFIX}.timeindex"
    tindex.write_bytes(
        time_entry(T0 + 1, 1)
        + time_entry(T0 + 9, 3)  # the batch at 103 has timestamp T0+3
        + time_entry(T0 + 2, 2)  # earlier than the previous entry
        + time_entry(T0 + 20, 7)  # no such offset
        + bytes(12)
    )
    status, out, err = dump(capsys, str(tindex))
    assert status == 0
    assert out == [
        f"Dumping {tindex}",
        f"timestamp: {T0 + 1} offset: 101",
        f"timestamp: {T0 + 9} offset: 103",
        f"timestamp: {T0 + 2} offset: 102",
        f"timestamp: {T0 + 20} offset: 107",
    ]
    absolute = os.path.abspath(tindex)
    assert err == [
        f"Found timestamp mismatch in :{absolute}",
        f"  Index timestamp: {T0 + 9}, log timestamp: {T0 + 3}",
        f"Found out of order timestamp in :{absolute}",
        f"  Index timestamp: {T0 + 2}, Previously indexed timestamp: {T0 + 9}",
        "The following indexed offsets are not found in the log.",
        "Indexed offset: 107, found log offset: -1",
    ]


def test_time_index_sanity(tmp_path, capsys) -> None:
    segment(tmp_path)
    tindex = tmp_path / f"{PREFIX}.timeindex"
    tindex.write_bytes(time_entry(T0 + 5, 1) + time_entry(T0 + 1, 2))
    status, out, err = dump(capsys, str(tindex), "--index-sanity-check")
    assert status == 1 and out == [f"Dumping {tindex}"]
    assert err == [
        f"Corrupt time index found, time index file ({tindex}) has non-zero size but the last "
        f"timestamp is {T0 + 1} which is less than the first timestamp {T0 + 5}"
    ]
    tindex.write_bytes(time_entry(T0 + 1, 1))
    assert dump(capsys, str(tindex), "--index-sanity-check")[1][1] == (
        f"{tindex} passed sanity check."
    )


def test_txn_index(tmp_path, capsys) -> None:
    path = tmp_path / f"{PREFIX}.txnindex"
    path.write_bytes(
        AbortedTxn(7, 100, 104, 100).encode() + AbortedTxn(8, 105, 110, 106).encode() + b"\x00" * 20
    )
    status, out, err = dump(capsys, str(path))
    assert (status, err) == (0, [])
    assert out[1:] == [
        "version: 0 producerId: 7 firstOffset: 100 lastOffset: 104 lastStableOffset: 100",
        "version: 0 producerId: 8 firstOffset: 105 lastOffset: 110 lastStableOffset: 106",
    ]
    # Kafka reads only the first byte of the int16 version: 0x0100 is version 1.
    path.write_bytes(b"\x01" + AbortedTxn(7, 100, 104, 100).encode()[1:])
    status, out, err = dump(capsys, str(path))
    assert status == 1 and out == [f"Dumping {path}"]
    assert err == [
        f"Unexpected aborted transaction version 1 in transaction index {path}, current version is 0"
    ]


def test_snapshot(tmp_path, capsys) -> None:
    path = tmp_path / f"{PREFIX}.snapshot"
    entries = [
        ProducerSnapshotEntry(7, 1, 9, 104, 4, T0, 3, 100),
        ProducerSnapshotEntry(8, 0, 2, 105, 5, T0 + 1, -1, -1),  # sequences wrap below 0
        ProducerSnapshotEntry(9, 2, -1, -1, 0, T0 + 2, -1, -1),  # no batch metadata
    ]
    path.write_bytes(encode_snapshot(entries))
    status, out, err = dump(capsys, str(path))
    assert (status, err) == (0, [])
    assert out[1:] == [
        f"producerId: 7 producerEpoch: 1 coordinatorEpoch: 3 currentTxnFirstOffset: OptionalLong[100] "
        f"lastTimestamp: {T0} firstSequence: 5 lastSequence: 9 lastOffset: 104 offsetDelta: 4 "
        f"timestamp: {T0}",
        f"producerId: 8 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty "
        f"lastTimestamp: {T0 + 1} firstSequence: 2147483645 lastSequence: 2 lastOffset: 105 "
        f"offsetDelta: 5 timestamp: {T0 + 1}",
        f"producerId: 9 producerEpoch: 2 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty "
        f"lastTimestamp: {T0 + 2} ",
    ]


def test_corrupt_and_empty_snapshot(tmp_path, capsys) -> None:
    path = tmp_path / f"{PREFIX}.snapshot"
    raw = bytearray(encode_snapshot([ProducerSnapshotEntry(7, 1, 9, 104, 4, T0, 3, 100)]))
    raw[-1] ^= 1
    path.write_bytes(bytes(raw))
    status, out, err = dump(capsys, str(path))
    assert status == 1 and out == [f"Dumping {path}"]
    assert len(err) == 1 and err[0].startswith("Snapshot is corrupt (CRC is no longer valid).")
    path.write_bytes(b"")
    status, _, err = dump(capsys, str(path))
    assert status == 1 and err[0].startswith("Snapshot failed schema validation: ")


def test_json_for_side_files(tmp_path, capsys) -> None:
    pos = segment(tmp_path)
    index = tmp_path / f"{PREFIX}.index"
    index.write_bytes(index_entry(1, pos[1]))
    tindex = tmp_path / f"{PREFIX}.timeindex"
    tindex.write_bytes(time_entry(T0 + 1, 1))
    txn = tmp_path / f"{PREFIX}.txnindex"
    txn.write_bytes(AbortedTxn(7, 100, 104, 100).encode())
    snap = tmp_path / f"{PREFIX}.snapshot"
    snap.write_bytes(encode_snapshot([ProducerSnapshotEntry(9, 2, -1, -1, 0, T0, -1, -1)]))
    status, out, _ = dump(capsys, "--json", str(index), str(tindex), str(txn), str(snap))
    assert status == 0
    assert [json.loads(line) for line in out] == [
        {"file": str(index), "offset": 101, "position": pos[1]},
        {"file": str(tindex), "timestamp": T0 + 1, "offset": 101},
        {
            "file": str(txn),
            "version": 0,
            "producer_id": 7,
            "first_offset": 100,
            "last_offset": 104,
            "last_stable_offset": 100,
        },
        {
            "file": str(snap),
            "producer_id": 9,
            "producer_epoch": 2,
            "coordinator_epoch": -1,
            "current_txn_first_offset": None,
            "last_timestamp": T0,
            "last_sequence": None,
            "last_offset": None,
            "offset_delta": None,
        },
    ]


def test_end_of_run_reports_come_after_all_files(tmp_path, capsys) -> None:
    data = b"".join(
        build_batch([Record(o, T0, None, b"v")], base_offset=o) for o in (BASE, BASE + 2)
    )
    log = tmp_path / f"{PREFIX}.log"
    log.write_bytes(data)
    index = tmp_path / f"{PREFIX}.index"
    index.write_bytes(index_entry(1, 0))  # the batch at 0 ends at offset 100, not 101
    _, out, err = dump(capsys, str(log), str(index), "--deep-iteration")
    assert out[-1] == "offset: 101 position: 0"
    assert err == [
        f"Mismatches in :{os.path.abspath(index)}",
        "  Index offset: 101, log offset: 100",
        f"Non-consecutive offsets in {os.path.abspath(log)}",
        "  100 is followed by 102",
    ]
