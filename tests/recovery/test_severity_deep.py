"""Damage and notices (issue 12.5), and `--deep-iteration` (issue 11.8): batches whose CRC holds
but whose records do not decode are found only when asked, and then removed by salvage and
point-in-time; without it the report says records were not decoded."""

from __future__ import annotations

import json
import struct

import pytest

from logrepair.format.batch_builder import build_batch
from logrepair.format.batch_layout import Record
from logrepair.format.crc import crc32c
from logrepair.recovery.scan import scan_path
from logrepair.recovery.settings import Settings
from logrepair.storage import layout
from logrepair.storage.scan import LogScan
from tests.test_cli_recovery import cli

from .builders import DISK, T0, batch, batches, write_offsets, write_segment
from .checks import repair_checked


def _recrc(raw: bytearray) -> bytes:
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    return bytes(raw)


def bad_records(offset: int) -> bytes:
    """A batch whose CRC holds but whose first record's length is wrong."""
    raw = bytearray(batch(offset, n=3))
    raw[61] = 0x7E  # zigzag varint 63: not the record's length
    return _recrc(raw)


def bad_compression(offset: int) -> bytes:
    """A gzip batch whose CRC holds but whose compressed bytes do not inflate."""
    records = [Record(offset + i, T0 + i, b"k", bytes(200), ()) for i in range(3)]
    raw = bytearray(build_batch(records, base_offset=offset, codec=1))
    raw[70:90] = bytes(20)
    return _recrc(raw)


@pytest.fixture(params=[bad_records, bad_compression])
def undecodable(request, log_dir):
    write_segment(log_dir / "t-0", 0, [*batches(0, 5), request.param(5), *batches(8, 5)])
    write_offsets(log_dir, layout.RECOVERY_POINT_CHECKPOINT, {("t", 0): 0})
    return log_dir


def test_shallow_verify_says_records_were_not_decoded(undecodable):
    proc = cli("verify", str(undecodable))
    assert proc.returncode == 0 and "records were not decoded" in proc.stdout, proc
    out = json.loads(cli("verify", str(undecodable), "--json").stdout)
    assert out["deep"] is False and out["clean"] is True


def test_deep_verify_finds_the_batch_a_consumer_stops_at(undecodable):
    proc = cli("verify", str(undecodable), "--deep-iteration", "--json")
    assert proc.returncode == 1, proc
    out = json.loads(proc.stdout)
    assert out["deep"] is True
    [f] = out["partitions"][0]["defects"]
    assert f["kind"] in ("invalid_records", "decompression_failed") and f["offset"] == 5
    assert f["severity"] == "damage" and f["position"] == 5 * len(batch(0))


@pytest.mark.parametrize("mode", ["salvage", "point-in-time"])
def test_strict_modes_remove_it_under_deep_iteration(undecodable, mode):
    settings = Settings(deep_iteration=True)
    result = repair_checked(undecodable, mode, settings)
    assert result.plan.removed_bytes > 0
    after = scan_path(DISK, str(undecodable), settings)
    assert after.clean
    offsets = [
        b.base_offset
        for s in after.partitions[0].segments
        for b in _batches(undecodable / "t-0" / layout.log_file_name(s.base_offset))
    ]
    assert 5 not in offsets
    if mode == "salvage":
        assert 8 in offsets  # every valid batch kept


def test_kafka_mode_keeps_it_as_kafka_does(undecodable):
    result = repair_checked(undecodable, "kafka", Settings(deep_iteration=True))
    assert result.plan.removed_bytes == 0
    assert [f["fixed_by"] for f in result.plan.left] == [["point-in-time", "salvage"]]


def _batches(path):
    return [b for b in LogScan(DISK, str(path)) if hasattr(b, "base_offset")]


def test_notices_alone_leave_verify_exit_0(log_dir):
    write_segment(log_dir / "t-0", 0, [*batches(0, 3), batch(3, value_size=3000), *batches(4, 2)])
    (log_dir / "t-0" / "notes.txt").write_text("x")
    proc = cli("verify", str(log_dir), "--message-max-bytes", "2000", "--json")
    out = json.loads(proc.stdout)
    found = {f["kind"]: f["severity"] for f in out["partitions"][0]["defects"]}
    assert found == {"batch_too_large": "notice", "stray_file": "notice"}
    assert proc.returncode == 0 and out["clean"] is True
    text = cli("verify", str(log_dir), "--message-max-bytes", "2000").stdout
    assert "0 damage, 2 notice(s)" in text and "[notice]" in text
    # damage beside them sets exit 1
    with open(log_dir / "t-0" / layout.log_file_name(0), "ab") as f:
        f.write(b"\x00" * 40)
    assert cli("verify", str(log_dir), "--message-max-bytes", "2000").returncode == 1


def test_repair_takes_deep_iteration_on_the_command_line(log_dir):
    write_segment(log_dir / "t-0", 0, [*batches(0, 5), bad_records(5), *batches(8, 5)])
    shallow = json.loads(
        cli("repair", str(log_dir), "--mode", "salvage", "--dry-run", "--json").stdout
    )
    assert shallow["removed_bytes"] == 0
    proc = cli("repair", str(log_dir), "--mode", "salvage", "--deep-iteration", "--json")
    assert proc.returncode == 1, proc
    assert json.loads(proc.stdout)["removed_bytes"] == len(bad_records(5))
    assert cli("verify", str(log_dir), "--deep-iteration").returncode == 0
