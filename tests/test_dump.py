"""`logrepair dump` of `.log` files: kafka-dump-log's line shapes (spec fmt §10.3), the JSON Lines
contract (design.md), and damaged regions reported without stopping the dump."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logrepair.cli import main
from logrepair.decoders.consumer_offsets import OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE
from logrepair.decoders.transaction_state import TRANSACTION_LOG_KEY, TRANSACTION_LOG_VALUE
from logrepair.dump.scala_order import hash_map_order, java_string_hash
from logrepair.format.batch import RecordBatch
from logrepair.format.batch_builder import build_batch, build_control_batch, build_end_txn_marker
from logrepair.format.batch_layout import HEADER, Record
from logrepair.format.compression import Codec, compress
from logrepair.format.control import ControlType, EndTransactionMarker
from logrepair.format.crc import crc32, crc32c
from logrepair.format.legacy import build_legacy_batch
from tests.contracts import DUMP_BATCH_KEYS

from .decoders.encode import encode

REPO = Path(__file__).resolve().parent.parent
T0 = 1700000000000
LOG = "00000000000000000000.log"


def run_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """The real CLI in a subprocess (PYTHONPATH makes it this checkout's code)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("LOGREPAIR_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "logrepair", "dump", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )


def dump(capsys, *args: str) -> tuple[int, list[str], list[str]]:
    """The CLI in-process: (exit status, stdout lines, stderr lines)."""
    status = main(["dump", *args])
    captured = capsys.readouterr()
    return status, captured.out.splitlines(), captured.err.splitlines()


def write_log(tmp_path: Path, *entries: bytes, name: str = LOG) -> str:
    path = tmp_path / name
    path.write_bytes(b"".join(entries))
    return str(path)


def crc_of(batch: bytes) -> int:
    return RecordBatch(memoryview(batch)).crc


def test_v2_batch_and_record_lines(tmp_path, capsys) -> None:
    b = build_batch(
        [
            Record(0, T0, b"k", b"hello"),
            Record(1, T0 + 1, None, b"x", (("h1", b"v"), ("h2", None))),
        ],
        base_offset=0,
        partition_leader_epoch=3,
    )
    path = write_log(tmp_path, b)
    status, out, err = dump(capsys, path, "--print-data-log")
    assert status == 0 and err == []
    assert out == [
        f"Dumping {path}",
        "Log starting offset: 0",
        "baseOffset: 0 lastOffset: 1 count: 2 baseSequence: -1 lastSequence: -1 producerId: -1 "
        "producerEpoch: -1 partitionLeaderEpoch: 3 isTransactional: false isControl: false "
        f"deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: {T0 + 1} size: {len(b)} "
        f"magic: 2 compresscodec: none crc: {crc_of(b)} isvalid: true",
        f"| offset: 0 CreateTime: {T0} keySize: 1 valueSize: 5 sequence: -1 headerKeys: [] "
        "key: k payload: hello",
        f"| offset: 1 CreateTime: {T0 + 1} keySize: -1 valueSize: 1 sequence: -1 "
        "headerKeys: [h1,h2] payload: x",
    ]


def test_producer_fields_append_time_delete_horizon_and_codec(tmp_path, capsys) -> None:
    a = build_batch(
        [Record(10, T0, b"a", b"1"), Record(11, T0 + 5, b"b", b"2")],
        base_offset=10,
        producer_id=42,
        producer_epoch=2,
        base_sequence=2**31 - 1,  # the last sequence wraps to 0
        timestamp_type="append",
        log_append_time=T0 + 99,
        codec=3,
    )
    h = build_batch([Record(12, T0, b"c", None)], base_offset=12, delete_horizon_ms=T0 + 7)
    path = write_log(tmp_path, a, h, name="00000000000000000010.log")
    status, out, _ = dump(capsys, path, "--deep-iteration")
    assert status == 0
    assert out[1] == "Log starting offset: 10"
    assert out[2] == (
        "baseOffset: 10 lastOffset: 11 count: 2 baseSequence: 2147483647 lastSequence: 0 "
        "producerId: 42 producerEpoch: 2 partitionLeaderEpoch: -1 isTransactional: false "
        f"isControl: false deleteHorizonMs: OptionalLong.empty position: 0 LogAppendTime: {T0 + 99} "
        f"size: {len(a)} magic: 2 compresscodec: lz4 crc: {crc_of(a)} isvalid: true"
    )
    # Under LogAppendTime every record shows the batch's max timestamp.
    assert out[3] == (
        f"| offset: 10 LogAppendTime: {T0 + 99} keySize: 1 valueSize: 1 sequence: 2147483647 "
        "headerKeys: []"
    )
    assert out[4].startswith(f"| offset: 11 LogAppendTime: {T0 + 99} ") and "sequence: 0 " in out[4]
    assert f"deleteHorizonMs: OptionalLong[{T0 + 7}] position: {len(a)} " in out[5]
    assert (
        out[6]
        == f"| offset: 12 CreateTime: {T0} keySize: 1 valueSize: -1 sequence: -1 headerKeys: []"
    )


def test_control_batches(tmp_path, capsys) -> None:
    data = build_batch(
        [Record(0, T0, b"k", b"v")],
        base_offset=0,
        producer_id=7,
        producer_epoch=1,
        base_sequence=0,
        is_transactional=True,
    )
    marker = build_end_txn_marker(
        EndTransactionMarker(ControlType.ABORT, 9),
        base_offset=1,
        producer_id=7,
        producer_epoch=1,
        timestamp=T0,
    )
    # LeaderChangeMessage v0 (flexible): version, leaderId 1, voters [1], grantingVoters [1]
    voter = b"\x02\x00\x00\x00\x01\x00"
    leader_change = b"\x00\x00\x00\x00\x00\x01" + voter + voter + b"\x00"
    leader = build_control_batch(
        ControlType.LEADER_CHANGE, leader_change, base_offset=2, timestamp=T0
    )
    torn = build_control_batch(ControlType.LEADER_CHANGE, b"\x00\x00", base_offset=3, timestamp=T0)
    path = write_log(tmp_path, data, marker, leader, torn)
    status, out, _ = dump(capsys, path, "--print-data-log")
    assert status == 0
    assert len(marker) == 78
    assert "isTransactional: true isControl: true" in out[4] and "size: 78 " in out[4]
    assert out[5] == (
        f"| offset: 1 CreateTime: {T0} keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] "
        "endTxnMarker: ABORT coordinatorEpoch: 9"
    )
    # Control records never go through the data parser: no key/payload part.
    # KRaft's control records print as JSON, as kafka-dump-log 4.1 prints them.
    assert out[7] == (
        f"| offset: 2 CreateTime: {T0} keySize: 4 valueSize: 19 sequence: -1 headerKeys: [] "
        'LeaderChange: {"version":0,"leaderId":1,"voters":[{"voterId":1}],'
        '"grantingVoters":[{"voterId":1}]}'
    )
    # One Kafka cannot read (it dies with a BufferUnderflowException) is named and the dump goes on.
    assert out[9] == (
        f"| offset: 3 CreateTime: {T0} keySize: 4 valueSize: 2 sequence: -1 headerKeys: [] "
        "controlRecordError: null"
    )


def test_legacy_entries(tmp_path, capsys) -> None:
    v0 = build_legacy_batch([Record(0, None, b"k", b"v0")], magic=0, base_offset=0)
    v1 = build_legacy_batch([Record(1, T0, None, b"v1")], magic=1, base_offset=1)
    wrapper = build_legacy_batch(
        [Record(2, T0 + 1, b"a", b"x"), Record(3, T0 + 2, b"b", b"y")],
        magic=1,
        base_offset=2,
        codec=1,
    )
    path = write_log(tmp_path, v0, v1, wrapper)
    status, out, _ = dump(capsys, path, "--print-data-log")
    assert status == 0
    v0_crc = struct.unpack_from(">I", v0, 12)[0]
    assert out[2] == (
        f"offset: 0 position: 0 NoTimestampType: -1 size: {len(v0)} magic: 0 compresscodec: none "
        f"crc: {v0_crc} isvalid: true"
    )
    assert out[3] == (
        f"| offset: 0 NoTimestampType: -1 keySize: 1 valueSize: 2 isValid: true crc: {v0_crc}}} "
        "key: k payload: v0"
    )
    v1_crc = struct.unpack_from(">I", v1, 12)[0]
    assert out[4] == (
        f"offset: 1 position: {len(v0)} CreateTime: {T0} size: {len(v1)} magic: 1 "
        f"compresscodec: none crc: {v1_crc} isvalid: true"
    )
    assert out[5] == (
        f"| offset: 1 CreateTime: {T0} keySize: -1 valueSize: 2 isValid: true crc: {v1_crc}}} "
        "payload: v1"
    )
    assert out[6].startswith(f"offset: 3 position: {len(v0) + len(v1)} CreateTime: {T0 + 2} ")
    assert "magic: 1 compresscodec: gzip" in out[6]
    inner = [line for line in out[7:9]]
    assert inner[0].startswith(
        f"| offset: 2 CreateTime: {T0 + 1} keySize: 1 valueSize: 1 isValid: true crc: "
    )
    assert inner[1].endswith("} key: b payload: y")


def test_skip_record_metadata(tmp_path, capsys) -> None:
    b = build_batch([Record(0, T0, b"k", b"v"), Record(1, T0, None, b"w")], base_offset=0)
    path = write_log(tmp_path, b)
    _, out, _ = dump(capsys, path, "--print-data-log", "--skip-record-metadata")
    assert out[3:] == ["| key: k payload: v", " payload: w"]


def test_offsets_decoder(tmp_path, capsys) -> None:
    key = encode(OFFSET_COMMIT_KEY, {"group": "g", "topic": "t", "partition": 0}, 1)
    value = encode(
        OFFSET_COMMIT_VALUE,
        {"offset": 42, "leaderEpoch": 0, "metadata": "", "commitTimestamp": T0},
        3,
    )
    b = build_batch([Record(0, T0, key, value), Record(1, T0, key, None)], base_offset=0)
    path = write_log(tmp_path, b)
    _, out, _ = dump(capsys, path, "--offsets-decoder")
    assert out[3].endswith(
        ' key: {"type":"1","data":{"group":"g","topic":"t","partition":0}} payload: '
        '{"version":"3","data":{"offset":42,"leaderEpoch":0,"metadata":"",'
        f'"commitTimestamp":{T0}}}}}'
    )
    assert out[4].endswith(" payload: <DELETE>")


def test_transaction_log_decoder(tmp_path, capsys) -> None:
    key = encode(TRANSACTION_LOG_KEY, {"transactionalId": "tx"}, 0)
    value = encode(
        TRANSACTION_LOG_VALUE,
        {
            "producerId": 5,
            "producerEpoch": 0,
            "transactionTimeoutMs": 60000,
            "transactionStatus": 2,
            "transactionPartitions": [{"topic": "t", "partitionIds": [1]}],
            "transactionLastUpdateTimestampMs": T0,
            "transactionStartTimestampMs": T0,
        },
        0,
    )
    path = write_log(tmp_path, build_batch([Record(0, T0, key, value)], base_offset=0))
    _, out, _ = dump(capsys, path, "--transaction-log-decoder", "--skip-record-metadata")
    assert out[3] == (
        '| key: {"type":"0","data":{"transactionalId":"tx"}} payload: {"version":"0","data":'
        '{"producerId":5,"producerEpoch":0,"transactionTimeoutMs":60000,"transactionStatus":2,'
        '"transactionPartitions":[{"topic":"t","partitionIds":[1]}],'
        f'"transactionLastUpdateTimestampMs":{T0},"transactionStartTimestampMs":{T0}}}}}'
    )


def test_non_consecutive_offsets_on_stderr(tmp_path, capsys) -> None:
    batches = [build_batch([Record(o, T0, None, b"v")], base_offset=o) for o in (0, 1, 5, 6, 9)]
    path = write_log(tmp_path, *batches)
    _, _, err = dump(capsys, path, "--deep-iteration")
    assert err == [
        f"Non-consecutive offsets in {os.path.abspath(path)}",
        "  6 is followed by 9",
        "  1 is followed by 5",
    ]


def test_damaged_regions_are_reported_and_skipped(tmp_path, capsys) -> None:
    good = [build_batch([Record(o, T0, None, b"value")], base_offset=o) for o in range(4)]
    bad = bytearray(good[1])
    bad[-1] ^= 0xFF  # CRC mismatch
    junk = b"\xde\xad\xbe\xef" * 10
    torn = good[3][:30]
    path = write_log(tmp_path, good[0], bytes(bad), junk, good[2], torn)
    status, out, err = dump(capsys, path)
    assert status == 1
    n = len(good[0])
    assert out[2].startswith("baseOffset: 0 ")
    assert out[3].startswith("baseOffset: 1 lastOffset: 1 ") and out[3].endswith("isvalid: false")
    # The CRC-failed batch and the junk after it are one region: resync finds batch 2 after both.
    assert out[4].startswith(
        f"defect: crc_mismatch position: {n} length: {n + 40} offset: 1 detail: Record is corrupt"
    )
    assert (
        out[5].startswith("baseOffset: 2 lastOffset: 2 ") and f"position: {2 * n + 40} " in out[5]
    )
    assert out[6].startswith(f"defect: torn_tail position: {3 * n + 40} length: 30 ")
    assert out[7] == f"Found 30 invalid bytes at the end of {LOG}"
    assert err == []


def test_records_that_do_not_decode(tmp_path, capsys) -> None:
    b = bytearray(build_batch([Record(0, T0, b"k", b"v")], base_offset=0))
    struct.pack_into(">i", b, 57, 2)  # two records declared, one present
    struct.pack_into(">i", b, 23, 1)
    struct.pack_into(">I", b, 17, crc32c(memoryview(b)[21:]))
    path = write_log(tmp_path, bytes(b))
    status, out, _ = dump(capsys, path, "--deep-iteration")
    assert status == 1
    assert out[2].startswith("baseOffset: 0 lastOffset: 1 count: 2 ")
    assert out[3] == (
        f"defect: record_count_mismatch position: 0 length: {len(b)} offset: 0 detail: "
        "Incorrect declared batch size, premature EOF reached"
    )


def test_max_bytes_cuts_silently(tmp_path, capsys) -> None:
    batches = [build_batch([Record(o, T0, None, b"v")], base_offset=o) for o in range(3)]
    path = write_log(tmp_path, *batches)
    status, out, _ = dump(capsys, path, "--max-bytes", str(len(batches[0]) + 10))
    assert status == 0
    assert len(out) == 3 and out[2].startswith("baseOffset: 0 ")


def test_json_lines_contract(tmp_path, capsys) -> None:
    v2 = build_batch(
        [Record(0, T0, b"k", b"v", (("h", b"x"),)), Record(1, T0 + 3, None, None)],
        base_offset=0,
        codec=4,
    )
    v0 = build_legacy_batch([Record(2, None, None, b"z")], magic=0, base_offset=2)
    bad = bytearray(build_batch([Record(3, T0, None, b"v")], base_offset=3))
    bad[-1] ^= 1
    path = write_log(tmp_path, v2, v0, bytes(bad))
    status, out, _ = dump(capsys, path, "--json")
    assert status == 1
    objs = [json.loads(line) for line in out]
    assert list(objs[0]) == DUMP_BATCH_KEYS
    assert objs[0]["codec"] == "zstd" and objs[0]["timestamp_type"] == "create"
    assert (objs[0]["first_timestamp"], objs[0]["max_timestamp"]) == (T0, T0 + 3)
    assert list(objs[1]) == DUMP_BATCH_KEYS
    assert objs[1]["magic"] == 0 and objs[1]["timestamp_type"] is None
    for key in ("producer_id", "producer_epoch", "base_sequence", "partition_leader_epoch"):
        assert objs[1][key] is None
    assert objs[2] == {
        "file": path,
        "defect": {
            "kind": "crc_mismatch",
            "position": len(v2) + len(v0),
            "length": len(bad),
            "detail": objs[2]["defect"]["detail"],
        },
    }
    _, deep, _ = dump(capsys, path, "--json", "--deep-iteration")
    first = json.loads(deep[0])
    assert list(first) == [*DUMP_BATCH_KEYS, "records"]
    assert first["records"] == [
        {
            "offset": 0,
            "timestamp": T0,
            "key": "aw==",
            "value": "dg==",
            "headers": [{"key": "h", "value": "eA=="}],
        },
        {"offset": 1, "timestamp": T0 + 3, "key": None, "value": None, "headers": []},
    ]
    assert json.loads(deep[1])["records"] == [
        {"offset": 2, "timestamp": None, "key": None, "value": "eg==", "headers": []}
    ]


def test_json_with_decoder(tmp_path, capsys) -> None:
    key = encode(OFFSET_COMMIT_KEY, {"group": "g", "topic": "t", "partition": 1}, 1)
    path = write_log(tmp_path, build_batch([Record(0, T0, key, None)], base_offset=0))
    _, out, _ = dump(capsys, path, "--json", "--offsets-decoder")
    record = json.loads(out[0])["records"][0]
    assert record["decoded"] == {
        "key": '{"type":"1","data":{"group":"g","topic":"t","partition":1}}',
        "payload": "<DELETE>",
    }


# --- bad input, through the real CLI in a subprocess ------------------------------------------


def test_missing_file_and_directory(tmp_path) -> None:
    r = run_cli(str(tmp_path / LOG))
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr.strip() == f"logrepair dump: {tmp_path / LOG}: no such file"
    r = run_cli(str(tmp_path))
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "is a directory" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("kind", ["fifo", "socket", "dangling symlink"])
@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_special_file_is_refused_without_blocking(tmp_path, monkeypatch, kind, json_flag) -> None:
    """A FIFO under a segment's name, with no writer, used to block the read forever (the old
    dump printed an empty dump with exit 0 once a writer closed it); now one line, exit 2."""
    import socket

    path = tmp_path / LOG
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        monkeypatch.chdir(tmp_path)  # a socket's path is limited to 108 bytes
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(LOG)
    else:
        path.symlink_to(tmp_path / "gone.log")
    r = run_cli(*json_flag, str(path), str(tmp_path / "later.log"), timeout=20)
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    what = {"fifo": "a FIFO (named pipe)", "socket": "a unix socket"}.get(kind)
    if what:
        assert r.stderr.strip() == (
            f"logrepair dump: {path} is not a regular file but {what}; never opened"
        )
    else:
        assert r.stderr.strip() == f"logrepair dump: {path}: a symbolic link to nothing"


def test_character_device_is_refused(tmp_path) -> None:
    """/dev/zero never ends: dumping it would read forever."""
    link = tmp_path / LOG
    link.symlink_to("/dev/zero")
    r = run_cli(str(link), timeout=20)
    assert r.returncode == 2
    assert r.stderr.strip().endswith("is not a regular file but a character device; never opened")


def test_bad_names_and_unknown_suffix(tmp_path) -> None:
    (tmp_path / "broken.log").write_bytes(b"")
    r = run_cli(str(tmp_path / "broken.log"))
    assert r.returncode == 2 and "must start with the segment's base offset" in r.stderr
    (tmp_path / "notes.txt").write_bytes(b"x")
    r = run_cli(str(tmp_path / "notes.txt"))
    assert r.returncode == 0
    assert r.stdout == f"Dumping {tmp_path / 'notes.txt'}\n"
    assert r.stderr == f"Ignoring unknown file {tmp_path / 'notes.txt'}\n"


def test_empty_log_is_a_valid_empty_segment(tmp_path) -> None:
    path = write_log(tmp_path)
    r = run_cli(path, "--deep-iteration")
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout == f"Dumping {path}\nLog starting offset: 0\n"


def test_junk_file(tmp_path) -> None:
    path = write_log(tmp_path, os.urandom(4096))
    r = run_cli(path, "--json")
    assert r.returncode == 1 and r.stderr == ""
    defects = [json.loads(line)["defect"] for line in r.stdout.splitlines()]
    assert sum(d["length"] for d in defects) == 4096


def test_huge_length_field(tmp_path) -> None:
    good = build_batch([Record(0, T0, None, b"v")], base_offset=0)
    huge = bytearray(build_batch([Record(1, T0, None, b"v")], base_offset=1))
    struct.pack_into(">i", huge, 8, 2**31 - 1)
    path = write_log(tmp_path, good, bytes(huge))
    r = run_cli(path)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    lines = r.stdout.splitlines()
    assert lines[3].startswith(f"defect: torn_tail position: {len(good)} length: {len(huge)} ")


def test_overlong_varint_in_a_record(tmp_path) -> None:
    b = bytearray(build_batch([Record(0, T0, None, b"v")], base_offset=0))
    b[61:66] = b"\xff\xff\xff\xff\xff"  # the record length varint, now 5 bytes with the MSB set
    struct.pack_into(">I", b, 17, crc32c(memoryview(b)[21:]))
    path = write_log(tmp_path, bytes(b))
    r = run_cli(path, "--deep-iteration")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stdout.splitlines()[3].startswith("defect: ")


def decompression_bomb() -> bytes:
    import gzip

    body = gzip.compress(b"\x00" * (80 << 20), compresslevel=1)
    header = HEADER.pack(0, 61 + len(body) - 12, -1, 2, 0, 1, 0, T0, T0, -1, -1, -1, 1)
    out = bytearray(header + body)
    struct.pack_into(">I", out, 17, crc32c(memoryview(out)[21:]))
    return bytes(out)


@pytest.mark.slow
def test_decompression_bomb(tmp_path) -> None:
    after = build_batch([Record(1, T0, None, b"v")], base_offset=1)
    path = write_log(tmp_path, decompression_bomb(), after)
    r = run_cli(path, "--deep-iteration")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    lines = r.stdout.splitlines()
    assert "compresscodec: gzip" in lines[2]
    assert lines[3].startswith("defect: decompression_failed position: 0 ")
    assert lines[4].startswith("baseOffset: 1 ")


def test_legacy_crc_is_checked_with_crc32(tmp_path) -> None:
    v1 = bytearray(build_legacy_batch([Record(0, T0, b"k", b"v")], magic=1, base_offset=0))
    v1[-1] ^= 1
    path = write_log(tmp_path, bytes(v1))
    r = run_cli(path, "--deep-iteration")
    lines = r.stdout.splitlines()
    assert r.returncode == 1
    assert lines[2].endswith(f"crc: {struct.unpack_from('>I', v1, 12)[0]} isvalid: false")
    assert lines[3].startswith("| offset: 0 CreateTime: ") and "isValid: false" in lines[3]
    assert lines[4].startswith("defect: crc_mismatch position: 0 length: 36 ")


def test_kraft_snapshot_and_files_option(tmp_path, capsys) -> None:
    b = build_batch([Record(0, T0, None, b"v")], base_offset=0)
    snap = write_log(tmp_path, b, name="00000000000000000100-0000000003.checkpoint")
    boot = write_log(tmp_path, b, name="bootstrap.checkpoint")
    status, out, _ = dump(capsys, "--files", f"{snap},{boot}")
    assert status == 0
    assert out[:2] == [f"Dumping {snap}", "Snapshot end offset: 100, epoch: 3"]
    assert out[3:5] == [f"Dumping {boot}", "KRaft bootstrap snapshot"]


def test_json_records_that_do_not_decode(tmp_path, capsys) -> None:
    b = bytearray(build_batch([Record(0, T0, b"k", b"v")], base_offset=0))
    b[61] = 0x7E  # record length 63: past the end of the batch
    struct.pack_into(">I", b, 17, crc32c(memoryview(b)[21:]))
    path = write_log(tmp_path, bytes(b))
    assert json.loads(dump(capsys, path, "--json")[1][0])["crc_valid"] is True
    status, out, _ = dump(capsys, path, "--json", "--deep-iteration")
    assert status == 1
    assert json.loads(out[0])["defect"]["kind"] == "invalid_records"


def test_non_consecutive_pairs_are_capped(tmp_path, capsys, monkeypatch) -> None:
    from logrepair.dump import log

    monkeypatch.setattr(log, "MAX_PAIRS", 2)
    batches = [build_batch([Record(o, T0, None, b"v")], base_offset=o) for o in (0, 2, 4, 6, 8)]
    _, _, err = dump(capsys, write_log(tmp_path, *batches), "--deep-iteration")
    assert err[1:] == [
        "  (2 later pairs not shown)",
        "  2 is followed by 4",
        "  0 is followed by 2",
    ]


@settings(max_examples=60)
@given(
    st.lists(
        st.one_of(
            st.integers(0, 3).map(lambda n: ("batch", n)),
            st.binary(min_size=1, max_size=80).map(lambda junk: ("junk", junk)),
        ),
        max_size=8,
    )
)
def test_every_byte_is_a_batch_or_a_defect(parts) -> None:
    """Whatever the file holds, the JSON dump accounts for each byte once, in order."""
    import io
    import tempfile
    from contextlib import redirect_stderr, redirect_stdout

    data, offset = b"", 0
    for kind, arg in parts:
        if kind == "batch":
            records = [Record(offset + i, T0, None, b"x" * i) for i in range(arg + 1)]
            data += build_batch(records, base_offset=offset, codec=arg % 2)
            offset += arg + 1
        else:
            data += arg
    with tempfile.TemporaryDirectory() as d:
        path = write_log(Path(d), data)
        out = io.StringIO()
        with redirect_stdout(out), redirect_stderr(io.StringIO()):
            status = main(["dump", path, "--json", "--deep-iteration"])
    objs = [json.loads(line) for line in out.getvalue().splitlines()]
    position = 0
    for obj in objs:
        item = obj.get("defect", obj)
        assert item["position"] == position
        position += item["length"] if "defect" in obj else item["size"]
    assert position == len(data)
    assert status == (1 if any("defect" in o for o in objs) else 0)


def test_a_region_longer_than_the_scan_window_is_one_defect(tmp_path, capsys) -> None:
    """20 MiB of zeros span three 8 MiB scan windows: one defect, named where it starts."""
    good = [build_batch([Record(o, T0, None, b"value")], base_offset=o) for o in range(2)]
    hole = 20 << 20
    path = write_log(tmp_path, good[0], bytes(hole), good[1])
    status, out, _ = dump(capsys, path, "--json")
    assert status == 1
    objs = [json.loads(line) for line in out]
    n = len(good[0])
    assert [o.get("position", o.get("defect", {}).get("position")) for o in objs] == [
        0,
        n,
        n + hole,
    ]
    defect = objs[1]["defect"]
    assert (defect["kind"], defect["length"]) == ("bad_length", hole)
    assert defect["detail"] == (
        "zero-filled region: Found record size 0 smaller than minimum record overhead (14); "
        f"{hole} bytes skipped to the next valid batch"
    )
    # Cut inside the region by --max-bytes, the dump is silent about it, as kafka-dump-log is.
    status, out, _ = dump(capsys, path, "--max-bytes", str(n + (10 << 20)))
    assert status == 0 and len(out) == 3 and out[2].startswith("baseOffset: 0 ")


def test_legacy_wrapper_with_a_corrupt_inner_message(tmp_path, capsys) -> None:
    """kafka-dump-log shows each inner message's CRC and whether it holds, and goes on."""
    entries = bytearray(
        build_legacy_batch(
            [Record(0, T0, b"a", b"1"), Record(1, T0, b"b", b"2")], magic=1, base_offset=0
        )
    )
    entries[-1] ^= 0x01  # the second message's value: its own CRC no longer holds
    inner = bytes(entries)  # two entries of equal size, compressed by hand into a gzip wrapper
    body = struct.pack(">bbq", 1, 1, T0) + struct.pack(">i", -1)
    value = compress(Codec.GZIP, inner, magic=1)
    body += struct.pack(">i", len(value)) + value
    message = struct.pack(">I", crc32(body)) + body
    path = write_log(tmp_path, struct.pack(">qi", 1, len(message)) + message)
    status, out, _ = dump(capsys, path, "--deep-iteration")
    assert status == 0
    first_crc = struct.unpack_from(">I", inner, 12)[0]
    second_crc = struct.unpack_from(">I", inner, len(inner) // 2 + 12)[0]
    assert out[3].endswith(f"isValid: true crc: {first_crc}}}")
    assert out[4].endswith(f"isValid: false crc: {second_crc}}}")


def test_compacted_batch_and_legacy_v0_wrapper(tmp_path, capsys) -> None:
    # The cleaner keeps a batch's last offset while removing records: count 1, offsets 0..4.
    compacted = build_batch([Record(2, T0, b"k", b"v")], base_offset=0, last_offset=4)
    wrapper = build_legacy_batch(
        [Record(5, None, b"a", b"1"), Record(7, None, b"b", b"2")], magic=0, base_offset=5, codec=2
    )
    path = write_log(tmp_path, compacted, wrapper)
    status, out, err = dump(capsys, path, "--deep-iteration")
    assert status == 0
    assert out[2].startswith("baseOffset: 0 lastOffset: 4 count: 1 ")
    assert out[3].startswith(f"| offset: 2 CreateTime: {T0} keySize: 1 valueSize: 1 ")
    assert out[4].startswith(f"offset: 7 position: {len(compacted)} NoTimestampType: -1 ")
    assert "magic: 0 compresscodec: snappy" in out[4]
    assert out[5].startswith(
        "| offset: 5 NoTimestampType: -1 keySize: 1 valueSize: 1 isValid: true"
    )
    assert out[6].startswith("| offset: 7 ")
    assert err == [
        f"Non-consecutive offsets in {os.path.abspath(path)}",
        "  5 is followed by 7",
        "  2 is followed by 5",
    ]


def test_end_of_run_sections_follow_kafkas_hash_map_order() -> None:
    # The order a real Kafka 4.1.1 kafka-dump-log printed these four files' index mismatches in.
    paths = [
        "/tmp/bdirs/killed/compacted-0/00000000000000001336.index",
        "/tmp/bdirs/killed/events-0/00000000000000000542.index",
        "/tmp/bdirs/killed/events-2/00000000000000000452.index",
        "/tmp/bdirs/killed/txn-1/00000000000000000000.index",
    ]
    assert hash_map_order([(p, 1) for p in paths]) == [paths[0], paths[2], paths[1], paths[3]]
    assert java_string_hash("hello") == 99162322 and java_string_hash("polygenelubricants") < 0
    # Twelve files grow the table to 32 slots; so do eleven when the last is put a second time
    # (replacing a value counts as a put in Scala's HashMap).
    many = [f"/d/t-{i}/00000000000000000000.index" for i in range(12)]
    grown = hash_map_order([(p, 1) for p in many])
    twice = hash_map_order([(p, 1) for p in many[:10]] + [(many[10], 2)])
    assert twice == [p for p in grown if p in many[:11]]
