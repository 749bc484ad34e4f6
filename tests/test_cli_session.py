"""A new user's session on a damaged log dir, through the real CLI, asserting that what the tool
says reads right at every step: verify, a dry run, the repair, verify again, the wrong directory,
undo.

The log dir: `orders-0` with a corrupt batch in the middle of its active segment, `payments-1`
whose middle segment was emptied (zeros where its batches were) and whose last batch is torn
although the high watermark says both were acknowledged, `links-0` whose second segment is a
symbolic link to a file elsewhere, and `clicks-0`, healthy.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from logrepair.recovery.invariants import tree_digest
from logrepair.storage import layout

from .contracts import REPAIR_KEYS, REPAIR_PARTITION_KEYS
from .recovery.builders import (
    BATCH_SIZE,
    batches,
    flip_byte,
    truncate,
    write_offsets,
    write_segment,
)
from .test_cli_recovery import DISK, cli, one_line_error
from .test_readme import README


@pytest.fixture
def log_dir(tmp_path) -> Path:
    d = tmp_path / "kafka-logs"
    for base in (0, 10):
        write_segment(d / "orders-0", base, batches(base, 10))
    for base in (0, 10, 20):
        write_segment(d / "payments-1", base, batches(base, 10))
    write_segment(d / "clicks-0", 0, batches(0, 5))
    write_segment(d / "links-0", 0, batches(0, 5))
    elsewhere = write_segment(tmp_path / "elsewhere", 5, batches(5, 5), indexes=False)
    os.symlink(elsewhere, d / "links-0" / layout.log_file_name(5))
    flip_byte(d / "orders-0" / layout.log_file_name(10), 4 * BATCH_SIZE + 40)  # offset 14
    truncate(d / "payments-1" / layout.log_file_name(20), 10 * BATCH_SIZE - 20)  # offset 29 torn
    (d / "payments-1" / layout.log_file_name(10)).write_bytes(bytes(10 * BATCH_SIZE))  # a hole
    tps = [("orders", 0), ("payments", 1), ("clicks", 0)]
    write_offsets(d, layout.RECOVERY_POINT_CHECKPOINT, dict(zip(tps, (10, 20, 5), strict=True)))
    write_offsets(d, layout.REPLICATION_CHECKPOINT, dict(zip(tps, (20, 30, 5), strict=True)))
    write_offsets(d, layout.LOG_START_OFFSET_CHECKPOINT, dict.fromkeys(tps, 0))
    return d


def test_a_new_users_session_reads_right_at_every_step(log_dir: Path):
    original = tree_digest(DISK, str(log_dir))

    # 1. verify: each defect, and what each mode would cost here to fix it
    proc = cli("verify", str(log_dir))
    assert proc.returncode == 1
    text = proc.stdout
    assert "crc_mismatch" in text and "torn_tail" in text
    assert f"orders-0/{layout.log_file_name(10)} @{4 * BATCH_SIZE}+{BATCH_SIZE}" in text
    assert (
        "fixed by: kafka (removes offsets 14..19; acknowledged offsets lost 14..19), "
        "point-in-time (removes offsets 14..19; acknowledged offsets lost 14..19), "
        "salvage (removes offset 14; acknowledged offsets lost 14)"
    ) in text
    assert (
        "salvage (removes only the damaged batches; acknowledged offsets lost 10..19, 29)" in text
    )
    assert "offset_hole                    payments-1/" in text  # the emptied middle segment

    # 2. the dry run: per partition, in offsets, and one line to paste to the application owners
    proc = cli("repair", str(log_dir), "--mode", "salvage", "--dry-run")
    assert proc.returncode == 1, proc.stderr
    assert tree_digest(DISK, str(log_dir)) == original
    lines = proc.stdout.splitlines()
    assert any(line.strip().startswith("orders-0: offsets removed 14 (1 offset,") for line in lines)
    assert any("payments-1: damaged batches removed" in line for line in lines)
    assert not any(line.strip().startswith("clicks-0") for line in lines)  # untouched
    # the partition holding a symlink is left as it is, and the plan says why
    assert any("note: links-0: left as it is" in line for line in lines)
    summary = lines[-1]
    assert summary.startswith("summary: salvage repair of") and "dry run" in summary
    assert "orders-0 lost offset 14, all acknowledged" in summary
    assert "payments-1 lost offsets 10..19, 29 (11), all acknowledged" in summary

    # 3. the repair, as a script reads it: each partition's own ranges, never merged
    proc = cli("repair", str(log_dir), "--mode", "salvage", "--json")
    assert proc.returncode == 1, proc.stderr
    out = json.loads(proc.stdout)
    assert set(out) >= REPAIR_KEYS and out["applied"]
    by_name = {f"{p['topic']}-{p['partition']}": p for p in out["partitions"]}
    assert set(by_name) == {"orders-0", "payments-1"}
    for p in by_name.values():
        assert set(p) >= REPAIR_PARTITION_KEYS
    orders, payments = by_name["orders-0"], by_name["payments-1"]
    assert orders["removed_offsets"] == orders["gaps"] == orders["acknowledged_lost"] == [[14, 14]]
    assert orders["removed_bytes"] == BATCH_SIZE
    assert orders["high_watermark"] == [20, 20] and orders["recovery_point"] == [10, 20]
    # the hole was not this repair's doing: a gap left, acknowledged and lost, not removed
    assert payments["removed_offsets"] == [] and payments["gaps"] == [[10, 19]]
    assert payments["acknowledged_lost"] == [[10, 19], [29, 29]]
    assert payments["removed_bytes"] == 10 * BATCH_SIZE + BATCH_SIZE - 20
    assert payments["high_watermark"] == [30, 29] and payments["recovery_point"] == [20, 29]
    assert out["removed_bytes"] == orders["removed_bytes"] + payments["removed_bytes"]

    # 4. verify again: no damage (the symlink is a notice); a second repair has nothing to do
    proc = cli("verify", str(log_dir))
    assert proc.returncode == 0, proc.stdout
    assert "symlink" in proc.stdout and "[notice]" in proc.stdout
    again = cli("repair", str(log_dir), "--mode", "salvage")
    assert again.returncode == 0 and "nothing to repair" in again.stdout
    assert again.stdout.splitlines()[-1].endswith(
        "nothing to repair, nothing lost; 1 defect(s) left as they are"  # the symlink
    )

    # 5. the wrong directory: refused by every command, one line, naming the log dir inside
    for args in (
        ["verify", str(log_dir.parent)],
        ["repair", str(log_dir.parent), "--mode", "salvage"],
        ["rebuild-index", str(log_dir.parent)],
    ):
        proc = cli(*args)
        one_line_error(proc)
        assert f"it holds the log dir {log_dir}" in proc.stderr

    # 6. undo: the damaged state back, byte for byte
    proc = cli("undo", out["quarantine"])
    assert proc.returncode == 0, proc.stderr
    assert tree_digest(DISK, str(log_dir)) == original

    # 7. the README's example of a repair's output is this session's
    proc = cli("repair", str(log_dir), "--mode", "salvage")
    example = README.split("touch: the offsets removed", 1)[1].split("```", 2)[1]
    for line in example.strip().splitlines():
        assert line.replace("/var/kafka-logs", str(log_dir)) in proc.stdout, line


@pytest.mark.parametrize("mode", ["kafka", "point-in-time"])
def test_the_strict_modes_report_what_they_cut_per_partition(log_dir: Path, mode: str):
    out = json.loads(cli("repair", str(log_dir), "--mode", mode, "--dry-run", "--json").stdout)
    by_name = {f"{p['topic']}-{p['partition']}": p for p in out["partitions"]}
    assert by_name["orders-0"]["removed_offsets"] == [[14, 19]]
    assert by_name["orders-0"]["acknowledged_lost"] == [[14, 19]]
    assert by_name["payments-1"]["acknowledged_lost"] == (
        [[10, 29]] if mode == "point-in-time" else [[10, 19], [29, 29]]
    )


def test_a_folder_of_notes_is_not_a_log_dir(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "README").write_text("not kafka")
    (tmp_path / "notes" / "empty").mkdir()
    for args in (["verify"], ["repair", "--mode", "kafka"], ["rebuild-index"]):
        proc = cli(args[0], str(tmp_path / "notes"), *args[1:])
        one_line_error(proc)
        assert "not a Kafka log dir" in proc.stderr


def test_removing_only_zero_padding_exits_0(tmp_path):
    d = tmp_path / "kafka-logs"
    write_segment(d / "orders-0", 0, batches(0, 10))
    with open(d / "orders-0" / layout.log_file_name(0), "ab") as f:
        f.write(bytes(4096))
    write_offsets(d, layout.REPLICATION_CHECKPOINT, {("orders", 0): 10})
    proc = cli("repair", str(d), "--mode", "salvage")
    assert proc.returncode == 0, proc.stdout
    assert "no records lost (only 4,096 bytes of padding or junk removed)" in proc.stdout
