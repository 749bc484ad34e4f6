"""SimDisk: the Disk contract it shares with OsDisk, and the crash semantics only it has."""

from __future__ import annotations

import errno

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logrepair.storage.disk import LockHeld
from simulator.disk import IoFault, PersistenceModel, SimDisk


@pytest.fixture
def disk() -> SimDisk:
    d = SimDisk()
    d.make_dirs("/data/t-0")
    return d


def test_volatile_until_fsync_then_durable(disk: SimDisk) -> None:
    with disk.open("/data/t-0/a.log", create=True) as f:
        f.append(b"hello")
        assert disk.read_file("/data/t-0/a.log") == b"hello"
        assert "/data/t-0/a.log" not in disk.durable_image().files
        disk.fsync_dir("/data/t-0")
        disk.fsync_dir("/data")
        disk.fsync_dir("/")
        assert disk.durable_image().files["/data/t-0/a.log"] == b""
        f.fsync()
        assert disk.durable_image().files["/data/t-0/a.log"] == b"hello"
        f.append(b" world")
        assert disk.durable_image().files["/data/t-0/a.log"] == b"hello"
        assert disk.volatile_image().files["/data/t-0/a.log"] == b"hello world"


def test_fsync_of_file_does_not_make_its_name_durable(disk: SimDisk) -> None:
    with disk.open("/data/t-0/x", create=True) as f:
        f.write_at(0, b"abc")
        f.fsync()
    assert "/data/t-0/x" not in disk.durable_image().files
    for d in ("/", "/data", "/data/t-0"):
        disk.fsync_dir(d)
    assert disk.durable_image().files["/data/t-0/x"] == b"abc"


def test_rename_and_unlink_durable_only_after_fsync_dir(disk: SimDisk) -> None:
    for d in ("/", "/data"):
        disk.fsync_dir(d)
    disk.write_file_atomic("/data/t-0/cp", b"v1")
    disk.write_file_atomic("/data/t-0/cp", b"v2")
    assert disk.durable_image().files["/data/t-0/cp"] == b"v2"
    disk.unlink("/data/t-0/cp")
    assert disk.durable_image().files["/data/t-0/cp"] == b"v2"
    disk.fsync_dir("/data/t-0")
    assert "/data/t-0/cp" not in disk.durable_image().files


def test_trace_records_every_state_change(disk: SimDisk) -> None:
    start = len(disk.trace)
    with disk.open("/data/t-0/f", create=True) as f:
        f.append(b"12")
        f.truncate(1)
        f.read_at(0, 1)
        f.fsync()
    disk.rename("/data/t-0/f", "/data/t-0/g")
    disk.fsync_dir("/data/t-0")
    kinds = [op.kind for op in disk.trace[start:]]
    assert kinds == ["create", "write", "truncate", "fsync", "rename", "fsync_dir"]
    assert [op.index for op in disk.trace] == list(range(len(disk.trace)))
    assert disk.trace[-2].dst == "/data/t-0/g"


def test_errors_match_the_os(disk: SimDisk) -> None:
    with pytest.raises(FileNotFoundError):
        disk.open("/data/t-0/missing")
    with pytest.raises(FileNotFoundError):
        disk.open("/nope/x", create=True)
    with pytest.raises(IsADirectoryError):
        disk.open("/data/t-0")
    with pytest.raises(FileNotFoundError):
        disk.unlink("/data/t-0/missing")
    with pytest.raises(FileNotFoundError):
        disk.rename("/data/t-0/missing", "/data/t-0/y")
    with pytest.raises(NotADirectoryError):
        disk.list_dir(disk.open("/data/t-0/f", create=True).path)
    with pytest.raises(OSError) as e:
        disk.remove_dir("/data")
    assert e.value.errno == errno.ENOTEMPTY
    with pytest.raises(FileExistsError):
        disk.make_dirs("/data/t-0/f/sub")
    ro = disk.open("/data/t-0/f")
    with pytest.raises(OSError) as e:
        ro.append(b"x")
    assert e.value.errno == errno.EBADF
    ro.close()
    with pytest.raises(ValueError):
        ro.read_at(0, 1)


def test_reads_clamp_at_end_and_fill_buffers(disk: SimDisk) -> None:
    with disk.open("/data/t-0/f", create=True) as f:
        f.write_at(4, b"xy")
        assert f.read_at(0, 100) == b"\0\0\0\0xy"
        buf = bytearray(4)
        assert f.read_into(3, buf) == 3
        assert bytes(buf[:3]) == b"\0xy"
        assert f.read_into(10, buf) == 0
        f.truncate(8)
        assert f.size() == 8 and disk.size("/data/t-0/f") == 8


def test_open_handle_survives_unlink(disk: SimDisk) -> None:
    f = disk.open("/data/t-0/f", create=True)
    f.append(b"abc")
    disk.unlink("/data/t-0/f")
    assert not disk.exists("/data/t-0/f")
    assert f.read_at(0, 3) == b"abc"


def test_lock_is_exclusive_until_released(disk: SimDisk) -> None:
    lock = disk.lock("/data/.lock")
    with pytest.raises(LockHeld, match="Failed to acquire lock on file .lock in /data"):
        disk.lock("/data/.lock")
    lock.release()
    lock.release()
    disk.lock("/data/.lock").release()
    assert disk.exists("/data/.lock")


def test_mtime_follows_the_clock(disk: SimDisk) -> None:
    with disk.open("/data/t-0/f", create=True) as f:
        f.append(b"1")
    t0 = disk.mtime("/data/t-0/f")
    disk.clock.advance(60)
    with disk.open("/data/t-0/f", write=True) as f:
        f.append(b"2")
    assert disk.mtime("/data/t-0/f") == t0 + 60


def test_eio_on_chosen_write_changes_nothing(disk: SimDisk) -> None:
    disk.io_faults.append(IoFault("eio_write", 1, path_contains=".log"))
    with disk.open("/data/t-0/0.log", create=True) as f:
        f.append(b"a")
        with pytest.raises(OSError) as e:
            f.append(b"b")
        assert e.value.errno == errno.EIO and e.value.filename == "/data/t-0/0.log"
        f.append(b"c")
    assert disk.read_file("/data/t-0/0.log") == b"ac"


def test_a_kernel_copy_is_a_write_like_any_other(disk: SimDisk) -> None:
    """`copy_to` (a segment split's copy) is traced, unsynced until fsync, and faulted like a
    write, so crash exploration covers repairs that copy kept bytes."""
    with disk.open("/data/t-0/a.log", create=True) as f:
        f.write_at(0, b"0123456789")
        f.fsync()
    disk.io_faults.append(IoFault("eio_write", 0, path_contains="b.log"))
    with disk.open("/data/t-0/a.log") as src, disk.open("/data/t-0/b.log", create=True) as dst:
        with pytest.raises(OSError) as e:
            src.copy_to(2, 5, dst, 0)
        assert e.value.errno == errno.EIO and disk.read_file("/data/t-0/b.log") == b""
        assert src.copy_to(2, 50, dst, 1) == 8
        op = disk.trace[-1]
        assert (op.kind, op.path, op.position, op.data) == ("write", dst.path, 1, b"23456789")
        assert disk.pending[-1].data == b"23456789"
        dst.fsync()
    assert disk.durable_content(disk.node_of("/data/t-0/b.log")) == b"\x0023456789"


def test_eio_on_fsync_leaves_data_unsynced(disk: SimDisk) -> None:
    disk.io_faults.append(IoFault("eio_fsync", 0))
    with disk.open("/data/t-0/f", create=True) as f:
        f.append(b"a")
        with pytest.raises(OSError):
            f.fsync()
        assert f._disk.pending  # the write is still not durable


def test_eio_on_chosen_read(disk: SimDisk) -> None:
    disk.io_faults.append(IoFault("eio_read", 0))
    with disk.open("/data/t-0/f", create=True) as f:
        with pytest.raises(OSError) as e:
            f.read_at(0, 1)
        assert e.value.errno == errno.EIO
        assert f.read_at(0, 1) == b""


def test_enospc_by_capacity_and_by_choice() -> None:
    disk = SimDisk(capacity=10)
    with disk.open("/f", create=True) as f:
        f.append(b"x" * 10)
        with pytest.raises(OSError) as e:
            f.append(b"y")
        assert e.value.errno == errno.ENOSPC
        f.write_at(0, b"z")  # overwriting needs no space
    disk.unlink("/f")
    with disk.open("/g", create=True) as g:
        g.append(b"y" * 10)
    chosen = SimDisk(io_faults=[IoFault("enospc", 0)])
    with chosen.open("/f", create=True) as f, pytest.raises(OSError):
        f.append(b"1")


def test_bad_model_and_fault_kinds_are_rejected() -> None:
    with pytest.raises(ValueError, match="sector size"):
        PersistenceModel(sector_size=1000)
    with pytest.raises(ValueError, match="unknown I/O fault"):
        IoFault("eio_everything", 0)


def test_from_image_is_all_durable(disk: SimDisk) -> None:
    with disk.open("/data/t-0/f", create=True) as f:
        f.append(b"abc")
    copy = SimDisk.from_image(disk.volatile_image())
    assert copy.trace == [] and copy.pending == []
    assert copy.durable_image().files == disk.volatile_image().files


def test_image_writes_to_a_real_dir(tmp_path, disk: SimDisk) -> None:
    with disk.open("/data/t-0/f", create=True) as f:
        f.append(b"abc")
    disk.volatile_image().write_to(str(tmp_path))
    assert (tmp_path / "data/t-0/f").read_bytes() == b"abc"


_names = st.sampled_from(["a", "b", "c"])
_ops = st.lists(
    st.one_of(
        st.tuples(
            st.just("write"), _names, st.integers(0, 700), st.binary(min_size=1, max_size=900)
        ),
        st.tuples(st.just("truncate"), _names, st.integers(0, 1500)),
        st.tuples(st.just("fsync"), _names),
        st.tuples(st.just("rename"), _names, _names),
        st.tuples(st.just("unlink"), _names),
        st.tuples(
            st.just("fsync_dir"),
        ),
    ),
    max_size=30,
)


def run_ops(disk: SimDisk, ops) -> None:
    """Applies a random program to /d, skipping steps that would fail (missing names)."""
    disk.make_dirs("/d")
    for op in ops:
        kind, *args = op
        if kind == "write":
            with disk.open(f"/d/{args[0]}", create=True) as f:
                f.write_at(args[1], args[2])
        elif kind == "truncate":
            with disk.open(f"/d/{args[0]}", create=True) as f:
                f.truncate(args[1])
        elif kind == "fsync" and disk.exists(f"/d/{args[0]}"):
            with disk.open(f"/d/{args[0]}") as f:
                f.fsync()
        elif kind == "rename" and disk.exists(f"/d/{args[0]}"):
            disk.rename(f"/d/{args[0]}", f"/d/{args[1]}")
        elif kind == "unlink" and disk.exists(f"/d/{args[0]}"):
            disk.unlink(f"/d/{args[0]}")
        elif kind == "fsync_dir":
            disk.fsync_dir("/d")


@settings(max_examples=150, deadline=None)
@given(_ops)
def test_applying_every_pending_change_gives_what_the_program_sees(ops) -> None:
    disk = SimDisk()
    run_ops(disk, ops)
    assert disk.crash_image(disk.pending) == disk.volatile_image()
    for name in disk.list_dir("/d"):
        assert disk.volatile_image().files[f"/d/{name}"] == disk.read_file(f"/d/{name}")


@settings(max_examples=150, deadline=None)
@given(_ops)
def test_syncing_everything_makes_the_durable_image_the_volatile_one(ops) -> None:
    disk = SimDisk()
    run_ops(disk, ops)
    for name in disk.list_dir("/d"):
        with disk.open(f"/d/{name}") as f:
            f.fsync()
    for d in ("/d", "/"):
        disk.fsync_dir(d)
    live = set(disk.volatile_image().nodes.values())
    assert not [c for c in disk.pending if getattr(c, "node", None) in live]
    assert disk.durable_image() == disk.volatile_image()


@pytest.mark.parametrize("atomic", [True, False])
def test_fsync_of_one_side_of_a_cross_directory_rename(atomic: bool) -> None:
    disk = SimDisk(PersistenceModel(atomic_rename=atomic))
    disk.make_dirs("/a")
    disk.make_dirs("/b")
    with disk.open("/a/f", create=True) as f:
        f.write_at(0, b"x")
        f.fsync()
    for d in ("/a", "/b", "/"):
        disk.fsync_dir(d)
    disk.rename("/a/f", "/b/f")
    disk.fsync_dir("/a")
    files = set(disk.durable_image().files)
    # ext4-like journaling commits both halves; a non-atomic file system only the synced one.
    assert files == ({"/b/f"} if atomic else set())
