"""Offsets missing between segments (issue 12.3): an emptied middle segment of a topic that is not
compacted is an `offset_hole` naming the missing offsets; point-in-time cuts there, salvage drops
the segment and reports the gap, kafka mode leaves it, audit reports it."""

from __future__ import annotations

import json

import pytest

from logrepair.audit.local import audit_paths
from logrepair.recovery.scan import scan_path
from logrepair.recovery.settings import Settings, SettingsError
from logrepair.storage import layout

from .builders import DISK, batches, write_offsets, write_segment
from .checks import repair_checked


def _emptied(log_dir, *, junk: bytes = b""):
    """t-0: segments 0 (0..90), 91 (emptied: `junk` left, its indexes still naming 91..120) and
    121 (121..150)."""
    pdir = log_dir / "t-0"
    write_segment(pdir, 0, batches(0, 91), interval=1000)
    write_segment(pdir, 91, batches(91, 30), interval=1000)
    write_segment(pdir, 121, batches(121, 30), interval=1000)
    (pdir / layout.log_file_name(91)).write_bytes(junk)
    write_offsets(log_dir, layout.RECOVERY_POINT_CHECKPOINT, {("t", 0): 151})
    write_offsets(log_dir, layout.REPLICATION_CHECKPOINT, {("t", 0): 151})
    return pdir


def _holes(log_dir, settings=None):
    found = scan_path(DISK, str(log_dir), settings or Settings()).all_findings()
    return [f for f in found if f.kind == "offset_hole"], found


@pytest.mark.parametrize("junk", [b"", bytes(300), b"\x7f" * 300])
def test_an_emptied_middle_segment_is_a_hole_naming_its_offsets(log_dir, junk):
    _emptied(log_dir, junk=junk)
    holes, found = _holes(log_dir)
    assert len(holes) == 1
    h = holes[0].to_json()
    assert (h["file"], h["offset"], h["last_offset"], h["severity"]) == (
        "t-0/00000000000000000091.log",
        91,
        120,
        "damage",
    )
    assert "offsets 91..120 are missing" in h["detail"]
    assert not any("None" in f.detail for f in found)


def test_point_in_time_cuts_at_the_hole(log_dir):
    _emptied(log_dir)
    result = repair_checked(log_dir, "point-in-time")
    p = scan_path(DISK, str(log_dir), Settings()).partitions[0]
    assert p.log_end_offset == 91 and [s.base_offset for s in p.segments] == [0]
    assert (121, 150) in result.plan.removed_offsets


def test_salvage_keeps_every_batch_drops_the_empty_segment_and_reports_the_gap(log_dir):
    _emptied(log_dir)
    result = repair_checked(log_dir, "salvage")
    p = scan_path(DISK, str(log_dir), Settings()).partitions[0]
    assert [s.base_offset for s in p.segments] == [0, 121] and p.log_end_offset == 151
    assert (91, 120) in result.plan.gaps


def test_kafka_mode_leaves_the_hole_and_says_which_modes_fix_it(log_dir):
    _emptied(log_dir)
    result = repair_checked(log_dir, "kafka")
    left = [f for f in result.plan.left if f["kind"] == "offset_hole"]
    assert [f["fixed_by"] for f in left] == [["point-in-time", "salvage"]]


def test_audit_reports_the_hole(log_dir):
    _emptied(log_dir)
    report = audit_paths([str(log_dir)])
    holes = [f for _, _, f in report.all_findings() if f.kind == "offset_hole"]
    assert len(holes) == 1 and "offsets 91..120 are missing" in holes[0].detail


def test_compaction_explains_the_gap(log_dir):
    _emptied(log_dir)
    assert _holes(log_dir, Settings().with_topic_override("t:cleanup.policy=compact"))[0] == []
    write_offsets(log_dir, layout.CLEANER_CHECKPOINT, {("t", 0): 50})
    assert _holes(log_dir)[0] == []  # the cleaner has run on it
    # ...unless the topic's config says it is not compacted
    assert len(_holes(log_dir, Settings().with_topic_override("t:cleanup.policy=delete"))[0]) == 1


def test_no_hole_below_the_log_start_nor_without_evidence(log_dir):
    pdir = _emptied(log_dir)
    write_offsets(log_dir, layout.LOG_START_OFFSET_CHECKPOINT, {("t", 0): 121})
    assert _holes(log_dir)[0] == []
    (log_dir / layout.LOG_START_OFFSET_CHECKPOINT).unlink()
    # an empty segment with empty indexes says nothing about what it held (salvage leaves gaps
    # between segments too, and reports them itself)
    for suffix in (layout.INDEX_SUFFIX, layout.TIME_INDEX_SUFFIX):
        (pdir / layout.segment_file_name(91, suffix)).write_bytes(b"")
    assert _holes(log_dir)[0] == []


def test_verify_json_and_text_name_the_hole(log_dir):
    from tests.test_cli_recovery import cli

    _emptied(log_dir)
    proc = cli("verify", str(log_dir))
    assert (
        proc.returncode == 1 and "offset_hole" in proc.stdout and "(offset 91..120)" in proc.stdout
    )
    out = json.loads(cli("verify", str(log_dir), "--json").stdout)
    kinds = [d["kind"] for d in out["partitions"][0]["defects"]]
    assert "offset_hole" in kinds


def test_cleanup_policy_from_server_properties_and_topic_config():
    broker = Settings().with_broker_properties("log.cleanup.policy = compact,delete\n", "s.p")
    assert broker.compacted is True and Settings().compacted is None
    assert broker.with_topic_override("t:cleanup.policy=delete").for_topic("t").compacted is False
    with pytest.raises(SettingsError, match="not delete, compact or both"):
        Settings().with_topic_override("t:cleanup.policy=forever")
