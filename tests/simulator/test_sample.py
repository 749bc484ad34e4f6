"""The demo's damaged log dir: made by the real Log, damaged as crashes do, and repairable."""

from __future__ import annotations

from logrepair.recovery.repair import repair
from logrepair.recovery.scan import scan_path
from logrepair.recovery.settings import Settings
from logrepair.storage.osdisk import OsDisk
from simulator.disk import SimDisk
from simulator.sample import build_damaged_logdir

SETTINGS = Settings(index_interval_bytes=512)


def test_sample_damage_is_what_verify_finds(tmp_path) -> None:
    root = str(tmp_path / "kafka-logs")
    damage = build_damaged_logdir(root, seed=0)
    assert [d.fault for d in damage] == [
        "stale_recovery_point",
        "torn_tail",
        "garbage_tail",
        "offset_index_corrupt",
        "crc_mismatch",
    ]
    scan = scan_path(OsDisk(), root, SETTINGS)
    kinds = {f.kind for f in scan.all_findings()}
    assert {"torn_tail", "garbage_tail", "offset_index_corrupt", "crc_mismatch"} <= kinds
    assert "recovery_point_beyond_end" in kinds
    topics = {p.topic for p in scan.partitions}
    assert topics == {"orders", "clicks"} and len(scan.partitions) == 5


def test_salvage_repairs_the_sample(tmp_path) -> None:
    root = str(tmp_path / "kafka-logs")
    build_damaged_logdir(root, seed=1)
    repair(OsDisk(), root, "salvage", SETTINGS, quarantine_root=str(tmp_path / "q"))
    after = scan_path(OsDisk(), root, SETTINGS)
    assert after.clean, [f.to_json() for f in after.all_findings()]


def test_same_seed_same_sample_on_any_disk() -> None:
    a, b = SimDisk(), SimDisk()
    assert build_damaged_logdir(a, 3) == build_damaged_logdir(b, 3)
    assert a.volatile_image() == b.volatile_image()
