"""The Disk contract, as tests any Disk implementation can run.

Subclass `DiskContract` in a `Test...` class and provide two fixtures: `disk` (a fresh Disk) and
`root` (an existing, empty directory on it). tests/storage/test_osdisk.py runs it on OsDisk; the
simulator's tests can run it on SimDisk the same way.
"""

from __future__ import annotations

import pytest

from logrepair.storage.disk import Disk, FileTooLarge, LockHeld, join, parent_of


class DiskContract:
    # --- files -----------------------------------------------------------------------------------

    def test_open_missing_is_file_not_found(self, disk: Disk, root: str) -> None:
        with pytest.raises(FileNotFoundError):
            disk.open(join(root, "missing"))
        with pytest.raises(FileNotFoundError):
            disk.open(join(root, "missing"), write=True)
        assert not disk.exists(join(root, "missing"))

    def test_create_makes_an_empty_writable_file(self, disk: Disk, root: str) -> None:
        path = join(root, "a.log")
        with disk.open(path, create=True) as f:
            assert f.size() == 0
            assert f.path == path
            f.write_at(0, b"abc")
        assert disk.exists(path) and not disk.is_dir(path)
        assert disk.size(path) == 3

    def test_create_keeps_existing_content(self, disk: Disk, root: str) -> None:
        path = join(root, "a")
        disk.write_file_atomic(path, b"kept")
        with disk.open(path, create=True) as f:
            assert f.read_at(0, 10) == b"kept"

    def test_read_at_returns_fewer_bytes_only_at_end(self, disk: Disk, root: str) -> None:
        path = join(root, "f")
        with disk.open(path, create=True) as f:
            f.write_at(0, bytes(range(100)))
        with disk.open(path) as f:
            assert f.read_at(10, 5) == bytes(range(10, 15))
            assert f.read_at(95, 10) == bytes(range(95, 100))
            assert f.read_at(100, 10) == b""
            assert f.read_at(1000, 10) == b""
            assert f.read_at(0, 0) == b""

    def test_copy_to_writes_a_range_into_another_file(self, disk: Disk, root: str) -> None:
        data = bytes(range(256)) * 40
        src, dst = join(root, "src"), join(root, "dst")
        with disk.open(src, create=True) as f:
            f.write_at(0, data)
        with disk.open(dst, create=True) as f:
            f.write_at(0, b"head")
        with disk.open(src) as fin, disk.open(dst, write=True) as fout:
            assert fin.copy_to(100, 5000, fout, 4) == 5000
            # fewer only where the source ends; nothing past it
            assert fin.copy_to(len(data) - 10, 100, fout, 5004) == 10
            assert fin.copy_to(len(data), 100, fout, 0) == 0
        assert disk.read_file(dst) == b"head" + data[100:5100] + data[-10:]
        assert disk.read_file(src) == data

    def test_sparse_copy_to_leaves_zero_blocks_unwritten(self, disk: Disk, root: str) -> None:
        """The zero blocks (64 KiB, aligned in the destination) are not written: a new file reads
        them as zeros once its length is set, byte for byte what was copied."""
        data = b"a" * 70_000 + bytes(3 * 65_536) + b"b" * 10 + bytes(65_536)
        src, dst = join(root, "src"), join(root, "dst")
        with disk.open(src, create=True) as f:
            f.write_at(0, data)
        with disk.open(src) as fin, disk.open(dst, create=True) as fout:
            assert fin.copy_to(3, len(data) - 3, fout, 5, sparse=True) == len(data) - 3
            assert fout.size() < 5 + len(data) - 3  # the last zero block was never written
            fout.truncate(5 + len(data) - 3)
        assert disk.read_file(dst) == bytes(5) + data[3:]

    def test_read_into_fills_the_callers_buffer(self, disk: Disk, root: str) -> None:
        path = join(root, "f")
        with disk.open(path, create=True) as f:
            f.write_at(0, b"0123456789")
        buf = bytearray(b"x" * 8)
        with disk.open(path) as f:
            assert f.read_into(4, buf) == 6
            assert buf == b"456789xx"
            assert f.read_into(0, memoryview(buf)[2:5]) == 3
            assert buf == b"450129xx"
            assert f.read_into(10, buf) == 0

    def test_read_ahead_reads_as_read_into_when_taken(self, disk: Disk, root: str) -> None:
        path = join(root, "f")
        with disk.open(path, create=True) as f:
            f.write_at(0, b"0123456789")
        buf = bytearray(b"x" * 8)
        with disk.open(path) as f:
            first = f.read_ahead(4, memoryview(buf)[:4])
            second = f.read_ahead(8, memoryview(buf)[4:])
            assert (first.result(), second.result()) == (4, 2)
            assert buf == b"456789xx"
            assert f.read_ahead(10, memoryview(buf)).result() == 0

    def test_write_at_overwrites_and_extends(self, disk: Disk, root: str) -> None:
        path = join(root, "f")
        with disk.open(path, create=True) as f:
            f.write_at(0, b"aaaa")
            f.write_at(2, bytearray(b"bbbb"))
            f.write_at(10, memoryview(b"cc"))
            assert f.size() == 12
            assert f.read_at(0, 12) == b"aabbbb\0\0\0\0cc"

    def test_append_returns_start_position(self, disk: Disk, root: str) -> None:
        path = join(root, "f")
        with disk.open(path, create=True) as f:
            assert f.append(b"abc") == 0
            assert f.append(b"de") == 3
            assert f.read_at(0, 5) == b"abcde"

    def test_truncate_shrinks_and_extends_with_zeros(self, disk: Disk, root: str) -> None:
        path = join(root, "f")
        with disk.open(path, create=True) as f:
            f.write_at(0, b"abcdef")
            f.truncate(3)
            assert f.size() == 3 and f.read_at(0, 10) == b"abc"
            f.truncate(1 << 20)
            assert f.size() == 1 << 20
            assert f.read_at(0, 6) == b"abc\0\0\0"
            assert f.read_at((1 << 20) - 4, 8) == bytes(4)
        assert disk.size(path) == 1 << 20

    @pytest.mark.parametrize("size", [0, 12, (1 << 16) - 1, 1 << 16, (1 << 16) + 5, 3 << 17])
    def test_read_small_reads_the_whole_file_within_its_limit(
        self, disk: Disk, root: str, size: int
    ) -> None:
        path = join(root, "f")
        data = bytes(i % 251 for i in range(size))
        disk.write_file_atomic(path, data)
        assert disk.read_small(path, size) == data
        if size:
            with pytest.raises(FileTooLarge) as refused:
                disk.read_small(path, size - 1)
            assert refused.value.size == size

    def test_read_small_of_missing_or_a_directory_fails_as_open(
        self, disk: Disk, root: str
    ) -> None:
        with pytest.raises(FileNotFoundError):
            disk.read_small(join(root, "missing"), 100)
        disk.make_dirs(join(root, "d"))
        with pytest.raises(IsADirectoryError):
            disk.read_small(join(root, "d"), 100)

    def test_writes_are_visible_to_other_handles_at_once(self, disk: Disk, root: str) -> None:
        path = join(root, "f")
        with disk.open(path, create=True) as w, disk.open(path) as r:
            w.write_at(0, b"seen")
            assert r.read_at(0, 4) == b"seen"
            assert r.size() == 4

    def test_read_only_handle_refuses_writes(self, disk: Disk, root: str) -> None:
        path = join(root, "f")
        disk.write_file_atomic(path, b"data")
        with disk.open(path) as f:
            with pytest.raises(OSError):
                f.write_at(0, b"x")
            with pytest.raises(OSError):
                f.truncate(0)
        assert disk.read_file(path) == b"data"

    def test_fsync_keeps_content(self, disk: Disk, root: str) -> None:
        path = join(root, "f")
        with disk.open(path, create=True) as f:
            f.append(b"durable")
            f.fsync()
        disk.fsync_dir(root)
        assert disk.read_file(path) == b"durable"

    def test_opening_a_directory_is_an_error(self, disk: Disk, root: str) -> None:
        disk.make_dirs(join(root, "d"))
        with pytest.raises(IsADirectoryError):
            disk.open(join(root, "d"))

    # --- names -----------------------------------------------------------------------------------

    def test_list_dir_is_sorted_names(self, disk: Disk, root: str) -> None:
        for name in ("b", "a", ".lock", "c.log"):
            disk.write_file_atomic(join(root, name), b"")
        disk.make_dirs(join(root, "topic-0"))
        assert disk.list_dir(root) == sorted([".lock", "a", "b", "c.log", "topic-0"])

    def test_list_dir_missing_is_file_not_found(self, disk: Disk, root: str) -> None:
        with pytest.raises(FileNotFoundError):
            disk.list_dir(join(root, "nope"))

    def test_make_dirs_creates_parents_and_tolerates_existing(self, disk: Disk, root: str) -> None:
        deep = join(root, "a", "b", "c")
        disk.make_dirs(deep)
        disk.make_dirs(deep)
        assert disk.is_dir(deep) and disk.is_dir(join(root, "a"))
        assert disk.list_dir(deep) == []

    def test_rename_replaces_destination(self, disk: Disk, root: str) -> None:
        src, dst = join(root, "src"), join(root, "dst")
        disk.write_file_atomic(src, b"new")
        disk.write_file_atomic(dst, b"old")
        disk.rename(src, dst)
        disk.fsync_dir(root)
        assert not disk.exists(src)
        assert disk.read_file(dst) == b"new"

    def test_open_handle_survives_rename(self, disk: Disk, root: str) -> None:
        src, dst = join(root, "x.log"), join(root, "x.log.deleted")
        with disk.open(src, create=True) as f:
            f.write_at(0, b"before")
            disk.rename(src, dst)
            f.write_at(6, b"after")
        assert disk.read_file(dst) == b"beforeafter"

    def test_rename_missing_is_file_not_found(self, disk: Disk, root: str) -> None:
        with pytest.raises(FileNotFoundError):
            disk.rename(join(root, "none"), join(root, "other"))

    def test_unlink_and_remove_dir(self, disk: Disk, root: str) -> None:
        d = join(root, "d")
        disk.make_dirs(d)
        disk.write_file_atomic(join(d, "f"), b"x")
        with pytest.raises(OSError):
            disk.remove_dir(d)  # not empty
        disk.unlink(join(d, "f"))
        assert not disk.exists(join(d, "f"))
        disk.remove_dir(d)
        assert not disk.exists(d)
        with pytest.raises(FileNotFoundError):
            disk.unlink(join(root, "f"))

    def test_size_and_mtime_of_missing(self, disk: Disk, root: str) -> None:
        with pytest.raises(FileNotFoundError):
            disk.size(join(root, "none"))
        with pytest.raises(FileNotFoundError):
            disk.mtime(join(root, "none"))

    def test_mtime_is_seconds_since_epoch(self, disk: Disk, root: str) -> None:
        disk.write_file_atomic(join(root, "f"), b"x")
        assert disk.mtime(join(root, "f")) > 1_000_000_000

    def test_plain_files_are_not_symlinks(self, disk: Disk, root: str) -> None:
        disk.write_file_atomic(join(root, "f"), b"x")
        assert not disk.is_symlink(join(root, "f"))
        assert not disk.is_symlink(join(root, "none"))
        assert not disk.is_dir(join(root, "f"))

    def test_a_plain_file_has_one_link(self, disk: Disk, root: str) -> None:
        disk.write_file_atomic(join(root, "f"), b"x")
        assert disk.links(join(root, "f")) == 1

    def test_real_path_resolves_dots(self, disk: Disk, root: str) -> None:
        disk.make_dirs(join(root, "a", "b"))
        assert disk.real_path(join(root, "a", "b", "..", ".", "b")) == disk.real_path(
            join(root, "a", "b")
        )
        assert disk.real_path(join(root, "a")).startswith("/")

    def test_data_from_never_skips_data(self, disk: Disk, root: str) -> None:
        path = join(root, "f")
        with disk.open(path, create=True) as f:
            f.write_at(0, b"abc")
            f.truncate(1 << 20)
            f.write_at((1 << 20) - 1, b"z")
            assert f.data_from(0) == 0
            assert f.data_from(2) == 2
            hole_end = f.data_from(3)  # a Disk may know of the hole, or not
            assert 3 <= hole_end <= (1 << 20) - 1
            assert f.read_at(3, hole_end - 3) == bytes(hole_end - 3)

    # --- conveniences ----------------------------------------------------------------------------

    def test_write_file_atomic_leaves_no_tmp(self, disk: Disk, root: str) -> None:
        path = join(root, "recovery-point-offset-checkpoint")
        disk.write_file_atomic(path, b"0\n0\n")
        disk.write_file_atomic(path, b"0\n1\nt 0 5\n")
        assert disk.read_file(path) == b"0\n1\nt 0 5\n"
        assert disk.list_dir(root) == ["recovery-point-offset-checkpoint"]

    def test_write_file_atomic_replaces_a_longer_stale_tmp(self, disk: Disk, root: str) -> None:
        path = join(root, "cp")
        disk.write_file_atomic(path + ".tmp", b"a much longer leftover from a crash")
        disk.write_file_atomic(path, b"short")
        assert disk.read_file(path) == b"short"

    def test_paths(self, disk: Disk, root: str) -> None:
        assert parent_of(join(root, "a", "b")) == join(root, "a")
        assert parent_of("/x") == "/"
        assert parent_of("x") == "."

    # --- lock ------------------------------------------------------------------------------------

    def test_lock_is_exclusive_until_released(self, disk: Disk, root: str) -> None:
        path = join(root, ".lock")
        lock = disk.lock(path)
        assert disk.exists(path)
        with pytest.raises(LockHeld, match=r"Failed to acquire lock on file \.lock in "):
            disk.lock(path)
        lock.release()
        disk.lock(path).release()

    def test_own_lock_has_no_other_owner(self, disk: Disk, root: str) -> None:
        path = join(root, ".lock")
        assert disk.lock_owner(path) is None  # missing
        lock = disk.lock(path)
        assert disk.lock_owner(path) is None  # held by this process only
        lock.release()
        assert disk.lock_owner(path) is None

    def test_write_file_atomic_through_a_named_tmp(self, disk: Disk, root: str) -> None:
        path = join(root, "cp")
        disk.write_file_atomic(path + ".tmp", b"someone else's")
        disk.write_file_atomic(path, b"new", tmp=path + ".mine")
        assert disk.read_file(path) == b"new"
        assert disk.read_file(path + ".tmp") == b"someone else's"
        assert disk.list_dir(root) == ["cp", "cp.tmp"]

    def test_lock_held_is_an_os_error(self) -> None:
        assert issubclass(LockHeld, OSError)
