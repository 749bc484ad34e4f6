"""Crash-state generators: each fault leaves exactly the damage it names, deterministically."""

from __future__ import annotations

from hypothesis import given, settings

from logrepair.format.batch_builder import build_batch
from logrepair.format.batch_layout import Record
from simulator.disk import PersistenceModel, SimDisk
from simulator.faults import CRASH_FAULTS, crash_states, fault_rng

from .test_simdisk import _ops, run_ops

LOG = "/d/00000000000000000000.log"


def appended_disk(model: PersistenceModel | None = None, durable: bytes = b"D" * 700) -> SimDisk:
    """A segment with `durable` fsynced and named durably, then two unsynced appends."""
    disk = SimDisk(model)
    disk.make_dirs("/d")
    with disk.open(LOG, create=True) as f:
        f.append(durable)
        f.fsync()
    disk.fsync_dir("/d")
    disk.fsync_dir("/")
    with disk.open(LOG, write=True) as f:
        f.append(b"a" * 300)
        f.append(b"b" * 1500)
    return disk


def variants(disk: SimDisk, fault: str, seed: int = 1):
    return CRASH_FAULTS[fault](disk, fault_rng(seed, len(disk.trace) - 1, fault))


def test_lose_unsynced_is_the_durable_image() -> None:
    disk = appended_disk()
    [(image, damage)] = variants(disk, "lose_unsynced")
    assert image.files[LOG] == b"D" * 700
    assert [(d.position, d.length) for d in damage] == [(700, 300), (1000, 1500)]


def test_process_crash_keeps_the_page_cache() -> None:
    disk = appended_disk()
    [(image, damage)] = variants(disk, "process_crash")
    assert image.files[LOG] == disk.read_file(LOG) and damage == []


def test_torn_write_keeps_a_prefix_cut_at_sectors_and_at_a_byte() -> None:
    disk = appended_disk()
    full = disk.read_file(LOG)
    out = variants(disk, "torn_write")
    cuts = [len(image.files[LOG]) for image, _ in out]
    assert 1024 in cuts and 2048 in cuts  # first and last 512-byte sector boundary in the write
    assert any(c % 512 for c in cuts)  # and one cut at a byte
    for image, [damage] in out:
        data = image.files[LOG]
        assert full.startswith(data) and 1000 < len(data) < len(full)
        assert damage.fault == "torn_write" and damage.position == len(data)
        assert damage.position + damage.length == len(full)


def test_torn_write_at_4k_sectors() -> None:
    disk = appended_disk(PersistenceModel(sector_size=4096), durable=b"D" * 3000)
    cuts = {len(image.files[LOG]) for image, _ in variants(disk, "torn_write")}
    assert 4096 in cuts


def test_garbage_block_persists_the_size_not_the_data() -> None:
    disk = appended_disk()
    (zeros, [dz]), (junk, [dj]) = variants(disk, "garbage_block")
    assert zeros.files[LOG] == b"D" * 700 + bytes(1800)
    assert (dz.position, dz.length) == (700, 1800)
    data = junk.files[LOG]
    assert data[:1000] == b"D" * 700 + b"a" * 300 and len(data) == 2500
    assert data[1000:] != b"b" * 1500 and (dj.position, dj.length) == (1000, 1500)
    assert variants(appended_disk(PersistenceModel(size_before_data=False)), "garbage_block") == []


def test_reorder_persists_a_later_sector_before_an_earlier_one() -> None:
    disk = appended_disk()
    full = disk.read_file(LOG)
    [(image, damage)] = variants(disk, "reorder")
    data = image.files[LOG]
    assert len(data) == len(full) and data[-100:] == full[-100:]
    assert damage and all(d.position + d.length < len(full) for d in damage)
    for d in damage:
        lost = data[d.position : d.position + d.length]
        assert lost != full[d.position : d.position + d.length]
        old = (b"D" * 700)[d.position : d.position + d.length]
        assert lost == old + bytes(d.length - len(old))
    assert variants(appended_disk(PersistenceModel(reorder=False)), "reorder") == []


def test_lost_dir_op_undoes_an_unsynced_rename_over_a_checkpoint() -> None:
    disk = SimDisk()
    disk.make_dirs("/d")
    disk.write_file_atomic("/d/cp", b"old")
    disk.fsync_dir("/")
    with disk.open("/d/cp.tmp", create=True) as f:
        f.write_at(0, b"new")
        f.fsync()
    disk.rename("/d/cp.tmp", "/d/cp")
    images = [image for image, _ in variants(disk, "lost_dir_op")]
    assert any(i.files.get("/d/cp") == b"old" for i in images)
    assert all("/d/cp" in i.files for i in images)


def test_non_atomic_rename_may_leave_both_names() -> None:
    disk = SimDisk(PersistenceModel(atomic_rename=False))
    disk.make_dirs("/d")
    with disk.open("/d/a.swap", create=True) as f:
        f.write_at(0, b"x")
        f.fsync()
    disk.fsync_dir("/d")
    disk.fsync_dir("/")
    disk.rename("/d/a.swap", "/d/a")
    out = variants(disk, "lost_dir_op")
    both = [image for image, _ in out if {"/d/a", "/d/a.swap"} <= set(image.files)]
    assert both and "half done" in out[-1][1][0].detail


def test_lost_mkdir_loses_the_subtree() -> None:
    disk = SimDisk()
    disk.make_dirs("/d/t-0")
    with disk.open("/d/t-0/f", create=True) as f:
        f.append(b"x")
        f.fsync()
    disk.fsync_dir("/d/t-0")
    [(image, _)] = variants(disk, "lose_unsynced")
    assert image.files == {} and image.dirs == set()


def test_bit_rot_flips_one_checksummed_bit_of_a_durable_batch() -> None:
    batches = [build_batch([Record(i, 1000 + i, None, b"v" * 50)], base_offset=i) for i in range(5)]
    durable = b"".join(batches)
    disk = appended_disk(durable=durable)
    full = disk.read_file(LOG)
    for seed in range(20):
        [(image, [damage])] = variants(disk, "bit_rot", seed)
        data = image.files[LOG]
        diff = [i for i in range(len(full)) if full[i] != data[i]]
        assert diff == [damage.position] and damage.position < len(durable)
        assert bin(full[damage.position] ^ data[damage.position]).count("1") == 1
        within = damage.position % len(batches[0])
        assert not (within < 8 or 12 <= within < 16)  # never the unprotected offset or epoch


def test_faults_without_material_produce_no_state() -> None:
    disk = SimDisk()
    disk.make_dirs("/d")
    disk.fsync_dir("/")
    for fault in ("torn_write", "garbage_block", "reorder", "lost_dir_op", "bit_rot"):
        assert variants(disk, fault) == [], fault


def test_crash_states_are_deterministic_and_labelled() -> None:
    faults = list(CRASH_FAULTS)
    durable = b"".join(build_batch([Record(i, 0, None, b"x")], base_offset=i) for i in range(9))
    a = list(crash_states(appended_disk(durable=durable), 5, faults, seed=7))
    b = list(crash_states(appended_disk(durable=durable), 5, faults, seed=7))
    assert [(s.fault, s.variant, s.image) for s in a] == [(s.fault, s.variant, s.image) for s in b]
    assert {s.fault for s in a} == set(faults) - {"lost_dir_op"}
    assert a[0].label == "op 5, fault process_crash#0, seed 7"
    assert [s.destroyed_durable for s in a if s.fault == "bit_rot"] == [True]
    other = list(crash_states(appended_disk(durable=durable), 5, ["torn_write"], seed=8))
    assert [s.image for s in other] != [s.image for s in a if s.fault == "torn_write"]


@settings(max_examples=100, deadline=None)
@given(_ops)
def test_every_fault_yields_names_the_program_made(ops) -> None:
    """Whatever a fault does, a file in the image had that name at some point of the program."""
    disk = SimDisk(PersistenceModel(atomic_rename=False))
    run_ops(disk, ops)
    named = {op.path for op in disk.trace} | {op.dst for op in disk.trace if op.dst}
    for state in crash_states(disk, len(disk.trace) - 1, list(CRASH_FAULTS), seed=3):
        assert set(state.image.files) <= named
        for d in state.damage:
            assert d.length >= 0 and d.position >= 0


def test_a_lost_atomic_rename_across_directories_is_lost_in_both() -> None:
    disk = SimDisk()
    disk.make_dirs("/a")
    disk.make_dirs("/b")
    with disk.open("/a/f", create=True) as f:
        f.write_at(0, b"x")
        f.fsync()
    for d in ("/a", "/b", "/"):
        disk.fsync_dir(d)
    disk.rename("/a/f", "/b/f")
    disk.fsync_dir("/a")  # the source side is durable, the destination side is not
    for image, _ in variants(disk, "lost_dir_op"):
        assert ("/a/f" in image.files) != ("/b/f" in image.files)  # never both, never neither
