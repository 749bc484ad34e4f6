"""OsDisk on real temporary directories: the Disk contract, plus what only the real OS can show."""

from __future__ import annotations

import errno
import fcntl
import os
import subprocess
import sys
import textwrap

import pytest

from logrepair.storage.disk import LockHeld, join
from logrepair.storage.osdisk import OsDisk, OsFile

from .disk_contract import DiskContract


@pytest.fixture
def root(tmp_path) -> str:
    return str(tmp_path)


class TestOsDiskContract(DiskContract):
    pass


def test_extending_truncate_is_sparse(disk: OsDisk, root: str) -> None:
    path = join(root, "00000000000000000000.index")
    with disk.open(path, create=True) as f:
        f.truncate(10485760)
    st = os.stat(path)
    assert st.st_size == 10485760
    assert st.st_blocks * 512 < 1 << 20


def test_read_at_never_allocates_past_the_file(disk: OsDisk, root: str) -> None:
    path = join(root, "f")
    with disk.open(path, create=True) as f:
        f.write_at(0, b"abc")
        # A bogus length field must not become a 2 GiB allocation.
        assert f.read_at(1, 2**31) == b"bc"


def test_large_read_is_split_but_whole(disk: OsDisk, root: str, monkeypatch) -> None:
    monkeypatch.setattr("logrepair.storage.osdisk._MAX_READ_CHUNK", 1000)
    data = os.urandom(5000)
    path = join(root, "f")
    with disk.open(path, create=True) as f:
        f.write_at(0, data)
        assert f.read_at(7, 4000) == data[7:4007]


def _copied(disk: OsDisk, src: str, dst: str, position: int, length: int, at: int) -> int:
    with disk.open(src) as fin, disk.open(dst, create=True) as fout:
        return fin.copy_to(position, length, fout, at)


def test_copy_to_stays_in_the_kernel(disk: OsDisk, root: str, monkeypatch) -> None:
    """Below 1 MiB a segment's kept bytes never pass through the process: reading them would fail
    here. The block-aligned range tries a reflink first (ext4 and tmpfs refuse it; XFS and btrfs
    share the blocks) and the unaligned one has none to share."""
    data = os.urandom(3 * 4096 + 100)
    src, dst = join(root, "src"), join(root, "dst")
    with open(src, "wb") as f:
        f.write(data)

    def no_reads(*_):
        raise AssertionError("copied through the process")

    monkeypatch.setattr(OsFile, "read_into", no_reads)
    monkeypatch.setattr(OsFile, "read_at", no_reads)
    assert _copied(disk, src, dst, 4096 + 7, 2 * 4096, 7) == 2 * 4096
    assert _copied(disk, src, dst, 13, len(data), 0) == len(data) - 13
    with open(dst, "rb") as f:
        assert f.read() == data[13:]


def _has_o_direct(root: str) -> bool:
    try:
        os.close(os.open(join(root, "probe"), os.O_RDWR | os.O_CREAT | os.O_DIRECT))
    except OSError:
        return False
    os.unlink(join(root, "probe"))
    return True


def _evicts_pages(root: str) -> bool:
    """Whether `POSIX_FADV_DONTNEED` drops a file's pages here (a file system on a device), as
    a cold source needs: tmpfs keeps them, its pages being the file."""
    path = join(root, "evict-probe")
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        os.write(fd, bytes(1 << 20))
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.preadv(fd, [bytearray(4096)], 1 << 19, os.RWF_NOWAIT)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
        os.unlink(path)
    return False


def _spy_copies(monkeypatch) -> dict[str, int]:
    """Counts the bytes each way writes: the kernel copy, and `pwrite` with O_DIRECT set or not."""
    seen = {"kernel": 0, "direct": 0, "buffered": 0}
    real_copy, real_pwrite = os.copy_file_range, os.pwrite

    def copy_file_range(src, dst, count, *args):
        n = real_copy(src, dst, count, *args)
        seen["kernel"] += n
        return n

    def pwrite(fd, data, position):
        n = real_pwrite(fd, data, position)
        seen["direct" if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_DIRECT else "buffered"] += n
        return n

    monkeypatch.setattr(os, "copy_file_range", copy_file_range)
    monkeypatch.setattr(os, "pwrite", pwrite)
    return seen


def test_large_copy_writes_its_whole_blocks_around_the_page_cache(
    disk: OsDisk, root: str, monkeypatch
) -> None:
    """From 1 MiB up, the whole blocks of the destination are written with O_DIRECT (the page
    cache would cost three times the CPU: README, "Performance"), the edge blocks in the
    kernel, and the bytes around the range, the file's flags and its length stay as they were."""
    if not _has_o_direct(root):
        pytest.skip("this file system refuses O_DIRECT")
    monkeypatch.setattr("logrepair.storage.os_copy._DIRECT_CHUNK", 1 << 20)
    data = os.urandom(3 * 1024 * 1024 + 123)
    src, dst = join(root, "src"), join(root, "dst")
    with open(src, "wb") as f:
        f.write(data)
    before = os.urandom(len(data) + 9000)
    with open(dst, "wb") as f:
        f.write(before)
    seen = _spy_copies(monkeypatch)
    with disk.open(src) as fin, disk.open(dst, write=True) as fout:
        flags = fcntl.fcntl(fout._fd, fcntl.F_GETFL)
        assert fin.copy_to(5, len(data) - 10, fout, 7) == len(data) - 10
        assert fcntl.fcntl(fout._fd, fcntl.F_GETFL) == flags
        # a source that ends mid-block: the count copied, its last partial block in the kernel
        assert fin.copy_to(4096, len(data), fout, 8192) == len(data) - 4096
    with open(dst, "rb") as f:
        assert f.read() == (
            before[:7] + data[5 : 5 + 8185] + data[4096:] + before[8192 + len(data) - 4096 :]
        )
    # the kernel copied the edges only: the head of the first copy up to a block, the tails
    assert seen["kernel"] + seen["direct"] == 2 * len(data) - 10 - 4096
    assert seen["kernel"] == 4089 + (len(data) - 10 - 4089) % 4096 + (len(data) - 4096) % 4096
    assert seen["buffered"] == 0


def test_large_sparse_copy_leaves_its_zero_blocks_as_holes(disk: OsDisk, root: str) -> None:
    """A quarantine's saved tail: written around the cache, its zero blocks unwritten."""
    data = os.urandom(1 << 20) + bytes(2 << 20) + os.urandom(5000) + bytes(1 << 20)
    src, dst = join(root, "src"), join(root, "dst")
    with open(src, "wb") as f:
        f.write(data)
    with disk.open(src) as fin, disk.open(dst, create=True) as fout:
        assert fin.copy_to(1, len(data) - 1, fout, 0, sparse=True) == len(data) - 1
        fout.truncate(len(data) - 1)
    with open(dst, "rb") as f:
        assert f.read() == data[1:]
    assert os.stat(dst).st_blocks * 512 < (1 << 20) + 5000 + 3 * 65_536


@pytest.mark.parametrize("cached", ["none", "half"])
def test_large_copy_reads_what_the_cache_lacks_around_it(
    disk: OsDisk, root: str, monkeypatch, cached: str
) -> None:
    """A source the page cache does not hold (an undo's, written around it) is read with O_DIRECT
    too, at any position; what the cache holds is taken from it."""
    if not _has_o_direct(root):
        pytest.skip("this file system refuses O_DIRECT")
    if not _evicts_pages(root):
        pytest.skip("this file system keeps every page (tmpfs): no source is cold")
    data = os.urandom(3 * 1024 * 1024 + 77)
    src, dst = join(root, "src"), join(root, "dst")
    with open(src, "wb") as f:
        f.write(data)
        os.fsync(f.fileno())
        # (the first half, page-aligned, left in the cache or not)
        half = len(data) // 2 // 4096 * 4096 if cached == "half" else 0
        os.posix_fadvise(f.fileno(), half, 0, os.POSIX_FADV_DONTNEED)
    real_preadv = os.preadv
    reads = {"cache": 0, "direct": 0}

    def preadv(fd, buffers, position, flags=0):
        n = real_preadv(fd, buffers, position, flags)
        if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_DIRECT:
            reads["direct"] += n
        elif flags & os.RWF_NOWAIT:
            reads["cache"] += n
        return n

    monkeypatch.setattr(os, "preadv", preadv)
    with disk.open(src) as fin, disk.open(dst, create=True) as fout:
        flags = fcntl.fcntl(fin._fd, fcntl.F_GETFL)
        assert fin.copy_to(3, len(data), fout, 0) == len(data) - 3
        assert fcntl.fcntl(fin._fd, fcntl.F_GETFL) == flags
    with open(dst, "rb") as f:
        assert f.read() == data[3:]
    # (the cache drops whole folios, which may be larger than a page: "half" is roughly half)
    assert reads["cache"] + reads["direct"] >= len(data) - 3
    assert reads["direct"] >= 1 << 20
    assert (reads["cache"] > 0) == (cached == "half")


@pytest.mark.parametrize("refused", ["fcntl", "pwrite"])
def test_large_copy_where_o_direct_is_refused_stays_in_the_kernel(
    disk: OsDisk, root: str, monkeypatch, refused: str
) -> None:
    """A file system that refuses O_DIRECT (EINVAL), on the descriptor or at a write (after one
    chunk went through), gets the rest in the kernel, and the descriptor its flags back."""
    monkeypatch.setattr("logrepair.storage.os_copy._DIRECT_CHUNK", 1 << 20)
    data = os.urandom(3 * 1024 * 1024 + 5)
    src, dst = join(root, "src"), join(root, "dst")
    with open(src, "wb") as f:
        f.write(data)
    real_fcntl, real_pwrite = fcntl.fcntl, os.pwrite
    writes = []

    def fcntl_(fd, cmd, arg=0):
        if refused == "fcntl" and cmd == fcntl.F_SETFL and arg & os.O_DIRECT:
            raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
        return real_fcntl(fd, cmd, arg)

    def pwrite(fd, data, position):
        writes.append(len(data))
        if refused == "pwrite" and len(writes) > 1:
            raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
        return real_pwrite(fd, data, position)

    monkeypatch.setattr(fcntl, "fcntl", fcntl_)
    monkeypatch.setattr(os, "pwrite", pwrite)
    with disk.open(src) as fin, disk.open(dst, create=True) as fout:
        flags = real_fcntl(fout._fd, fcntl.F_GETFL)
        assert fin.copy_to(0, len(data), fout, 0) == len(data)
        assert real_fcntl(fout._fd, fcntl.F_GETFL) == flags
    with open(dst, "rb") as f:
        assert f.read() == data
    assert writes == ([] if refused == "fcntl" else [1 << 20, 1 << 20])


def test_copy_to_another_file_system_falls_back_to_sendfile(disk: OsDisk, root: str) -> None:
    """`copy_file_range` and the reflink refuse two file systems (EXDEV): `sendfile` copies."""
    other = "/dev/shm"
    if not os.path.isdir(other) or os.stat(other).st_dev == os.stat(root).st_dev:
        pytest.skip("no second file system to copy to")
    data = os.urandom(2 * 4096 + 5)
    src = join(root, "src")
    with open(src, "wb") as f:
        f.write(data)
    dst = join(other, f"logrepair-copy-{os.getpid()}")
    try:
        assert _copied(disk, src, dst, 0, len(data), 0) == len(data)
        assert _copied(disk, src, dst, 4096, 10, len(data)) == 10
        with open(dst, "rb") as f:
            assert f.read() == data + data[4096:4106]
    finally:
        os.unlink(dst)


def test_copy_to_falls_back_to_the_buffer(disk: OsDisk, root: str, monkeypatch) -> None:
    """Where the kernel has neither (ENOSYS: an old kernel, a sandbox), one buffer copies."""

    def enosys(*_):
        raise OSError(errno.ENOSYS, os.strerror(errno.ENOSYS))

    monkeypatch.setattr(os, "copy_file_range", enosys)
    monkeypatch.setattr(os, "sendfile", enosys)
    data = os.urandom(10_000)
    src = join(root, "src")
    with open(src, "wb") as f:
        f.write(data)
    assert _copied(disk, src, join(root, "dst"), 1, 20_000, 0) == len(data) - 1
    with open(join(root, "dst"), "rb") as f:
        assert f.read() == data[1:]


def test_copy_error_names_both_files(disk: OsDisk, root: str) -> None:
    src = join(root, "src")
    with open(src, "wb") as f:
        f.write(b"x" * 100)
    with disk.open(src) as fin, disk.open(join(root, "dst"), create=True) as fout:
        fout.close()  # its descriptor is gone: EBADF is no reason to try another way
        fout._fd = os.open(src, os.O_RDONLY)
        try:
            with pytest.raises(OSError) as e:
                fin.copy_to(0, 100, fout, 0)
        finally:
            os.close(fout._fd)
            fout._fd = -1
    assert (e.value.filename, e.value.filename2) == (src, join(root, "dst"))


def test_list_dir_types_is_one_listing_of_file_type(disk: OsDisk, root: str) -> None:
    """The scan's one listing per partition dir says what `file_type` says of each name."""
    open(join(root, "b.log"), "wb").close()
    os.mkdir(join(root, "a-0"))
    os.symlink(join(root, "b.log"), join(root, "c.index"))
    os.symlink(join(root, "nowhere"), join(root, "d.index"))
    os.mkfifo(join(root, "e.log"))
    expected = [(n, disk.file_type(join(root, n))) for n in disk.list_dir(root)]
    assert [t for _, t in expected] == ["dir", "file", "symlink", "symlink", "fifo"]
    assert disk.list_dir_types(root) == expected


def test_negative_positions_are_value_errors(disk: OsDisk, root: str) -> None:
    with disk.open(join(root, "f"), create=True) as f:
        with pytest.raises(ValueError):
            f.read_at(-1, 4)
        with pytest.raises(ValueError):
            f.write_at(-1, b"x")
        with pytest.raises(ValueError):
            f.truncate(-1)


def test_errors_name_the_path(disk: OsDisk, root: str) -> None:
    missing = join(root, "no", "such")
    for call in (
        lambda: disk.open(missing),
        lambda: disk.list_dir(missing),
        lambda: disk.list_dir_types(missing),
        lambda: disk.size(missing),
        lambda: disk.unlink(missing),
        lambda: disk.fsync_dir(missing),
        lambda: disk.rename(missing, join(root, "x")),
    ):
        with pytest.raises(FileNotFoundError) as info:
            call()
        assert missing in str(info.value)


def test_write_on_read_only_handle_names_the_path(disk: OsDisk, root: str) -> None:
    path = join(root, "f")
    disk.write_file_atomic(path, b"x")
    with disk.open(path) as f, pytest.raises(OSError) as info:
        f.write_at(0, b"y")
    assert path in str(info.value)


def test_symlink_is_reported_and_not_followed_by_exists(disk: OsDisk, root: str) -> None:
    target = join(root, "target")
    link = join(root, "link")
    os.symlink(target, link)  # dangling
    assert disk.is_symlink(link)
    assert disk.exists(link)
    assert not disk.is_dir(link)


def test_write_past_file_size_limit_names_the_path(tmp_path) -> None:
    """A write the OS refuses half way (here RLIMIT_FSIZE: EFBIG) is an OSError naming the file."""
    script = textwrap.dedent(
        f"""
        import resource, signal
        from logrepair.storage.osdisk import OsDisk, OsFile
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        path = {str(tmp_path / "big.log")!r}
        with OsDisk().open(path, create=True) as f:
            try:
                f.write_at(0, bytes(8192))
            except OSError as e:
                print(e.errno, e)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert out.startswith(f"{errno.EFBIG} ")
    assert str(tmp_path / "big.log") in out


_HOLDER = textwrap.dedent(
    """
    import fcntl, os, sys
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    print("locked", flush=True)
    sys.stdin.read()
    """
)


def test_lock_held_by_another_process_is_refused_and_named(disk: OsDisk, root: str) -> None:
    path = join(root, ".lock")
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, path],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(LockHeld) as info:
            disk.lock(path)
        assert str(info.value) == (
            f"Failed to acquire lock on file .lock in {root}. A Kafka instance in another "
            "process or thread is using this directory."
        )
        assert disk.lock_owner(path) == holder.pid
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    assert disk.lock_owner(path) is None
    disk.lock(path).release()


def test_a_lock_on_a_name_unlinked_meanwhile_is_refused(disk: OsDisk, root: str, monkeypatch):
    """A holder that removes `.lock` as it releases (as a clean broker shutdown does) while
    another process has it open: that process's lock would guard a name no one can find."""
    path = join(root, ".lock")
    real_lockf = fcntl.lockf

    def lockf_after_unlink(fd, op, *args):
        if op & fcntl.LOCK_EX and os.path.exists(path):
            os.unlink(path)
        return real_lockf(fd, op, *args)

    monkeypatch.setattr(fcntl, "lockf", lockf_after_unlink)
    with pytest.raises(LockHeld):
        disk.lock(path)
    monkeypatch.undo()
    disk.lock(path).release()


def test_hard_links_real_paths_and_holes(disk: OsDisk, root: str, tmp_path) -> None:
    path = join(root, "f")
    with disk.open(path, create=True) as f:
        f.truncate(1 << 22)
        f.write_at((1 << 22) - 1, b"z")
        assert f.data_from(0) >= 1 << 20  # a hole the filesystem reports
    os.link(path, join(root, "g"))
    assert disk.links(path) == 2
    os.symlink(root, str(tmp_path / "alias"))
    assert disk.real_path(str(tmp_path / "alias" / "f")) == os.path.realpath(path)


def _probe_lock(path: str) -> str:
    """Whether another process can take the lock now: 'refused' or 'taken'."""
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys\n"
            "fd = os.open(sys.argv[1], os.O_RDWR)\n"
            "try:\n"
            "    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
            "    print('taken')\n"
            "except OSError:\n"
            "    print('refused')\n",
            path,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return probe.stdout.strip()


def test_lock_excludes_another_process(disk: OsDisk, root: str) -> None:
    path = join(root, ".lock")
    lock = disk.lock(path)
    try:
        assert _probe_lock(path) == "refused"
    finally:
        lock.release()
    assert _probe_lock(path) == "taken"
    lock.release()  # a second release is harmless


def test_a_second_lock_in_this_process_is_refused_and_keeps_the_first(root: str) -> None:
    """POSIX drops a process's lock when any descriptor of the file closes: the refusal must not
    open (and close) the file again."""
    path = join(root, ".lock")
    lock = OsDisk().lock(path)
    try:
        with pytest.raises(LockHeld):
            OsDisk().lock(path)
        assert _probe_lock(path) == "refused"
    finally:
        lock.release()
    OsDisk().lock(path).release()
