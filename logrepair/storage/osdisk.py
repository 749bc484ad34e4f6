"""The Disk on the real operating system: with os_copy.py (how a copy between two files goes), the
only module of storage that touches the filesystem.

Reads use `os.pread`/`os.preadv` into the caller's buffer (no mmap: a file truncated under a
mapping kills the process with SIGBUS, and a repair tool truncates files). Every OSError carries
the path it concerns, so one line on stderr says what failed where.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import struct
import threading
from concurrent.futures import Future, ThreadPoolExecutor

from . import os_copy
from .disk import Disk, DiskFile, FileIdentity, FileTooLarge, LockHeld, parent_of

# `struct flock` on Linux (short l_type, short l_whence, off_t l_start, off_t l_len, pid_t l_pid).
_FLOCK = "hhqqi4x"

# Reads larger than this are split: os.pread allocates the whole length up front.
_MAX_READ_CHUNK = 1 << 26
_UNCLAMPED_READ = 1 << 20
# `read_small` reads this much before it asks the size: most small files are whole in one read.
_SMALL_READ = 1 << 16
_READ_ONLY = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK
_NOWAIT = getattr(os, "RWF_NOWAIT", None)


class _PathErrors:
    """Re-raises an OSError with `path` as its file name: calls on a descriptor name no file (or,
    under some emulations, a bare base name), and a path call's own name is kept.

    A class, not a generator context manager: a scan of thousands of partitions enters it a few
    times per file, and this costs a fifth as much."""

    __slots__ = ("path", "descriptor")

    def __init__(self, path: str, *, descriptor: bool = False) -> None:
        self.path = path
        self.descriptor = descriptor

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, e, tb) -> bool:
        if (
            kind is not None
            and issubclass(kind, OSError)
            and e.errno is not None
            and (e.filename is None or (self.descriptor and e.filename != self.path))
        ):
            raise type(e)(e.errno, e.strerror, self.path) from e
        return False


class OsFile(DiskFile):
    def __init__(self, path: str, fd: int, writable: bool) -> None:
        self.path = path
        self._fd = fd
        self._writable = writable
        self._reader: ThreadPoolExecutor | None = None

    def size(self) -> int:
        with _PathErrors(self.path, descriptor=True):
            return os.fstat(self._fd).st_size

    def read_at(self, position: int, length: int) -> bytes:
        _check_position(position, self.path)
        if length < 0:
            raise ValueError(f"negative read length {length} for {self.path}")
        # Clamp to the file so a bogus length never allocates more than the file holds (a small
        # read is bounded anyway: pread returns what there is, without the fstat).
        if length > _UNCLAMPED_READ:
            length = min(length, max(0, self.size() - position))
        if length <= _MAX_READ_CHUNK:
            with _PathErrors(self.path, descriptor=True):
                return os.pread(self._fd, length, position)
        out = bytearray(length)
        n = self.read_into(position, out)
        del out[n:]
        return bytes(out)

    def read_into(self, position: int, buffer: bytearray | memoryview) -> int:
        _check_position(position, self.path)
        view = memoryview(buffer).cast("B")
        total = 0
        with _PathErrors(self.path, descriptor=True):
            while total < len(view):
                n = os.preadv(self._fd, [view[total:]], position + total)
                if n == 0:
                    break
                total += n
        return total

    def read_ahead(self, position: int, buffer: memoryview) -> Future[int]:
        """What the page cache holds now is read at once (`RWF_NOWAIT`: a warm file, or one the
        kernel's own read ahead keeps up with, costs no thread and no hand-over); the rest on a
        reader thread of this file's own, started when first needed: `os.preadv` releases the
        interpreter's lock, so the disk works while the caller checks the window before this.
        (Handing every read to the thread from the first miss on cost more CPU and, under load,
        more wall time: each hand-over waits for the scheduler twice.)"""
        _check_position(position, self.path)
        view = memoryview(buffer).cast("B")
        cached = self._read_cached(position, view)
        if cached == len(view):
            done: Future[int] = Future()
            done.set_result(cached)
            return done
        if self._reader is None:
            self._reader = ThreadPoolExecutor(1, thread_name_prefix="logrepair-read-ahead")
        return self._reader.submit(self._read_rest, position, view, cached)

    def _read_cached(self, position: int, view: memoryview) -> int:
        """Bytes of `view` read from the page cache without waiting for the disk (0 where the
        kernel cannot say: the reader thread reads them)."""
        if _NOWAIT is None:
            return 0
        try:
            return os.preadv(self._fd, [view], position, _NOWAIT)
        except OSError:  # (EAGAIN: not cached; EOPNOTSUPP: not here; a real error: the thread's)
            return 0

    def _read_rest(self, position: int, view: memoryview, done: int) -> int:
        return done + self.read_into(position + done, view[done:])

    def write_at(self, position: int, data) -> None:
        _check_position(position, self.path)
        self._require_writable()
        view = memoryview(data).cast("B")
        with _PathErrors(self.path, descriptor=True):
            while view:
                n = os.pwrite(self._fd, view, position)
                view = view[n:]
                position += n

    def append(self, data) -> int:
        # The end is read once: a Disk file has one writer (the lock), as a Kafka segment does.
        position = self.size()
        self.write_at(position, data)
        return position

    def truncate(self, size: int) -> None:
        if size < 0:
            raise ValueError(f"negative size {size} for {self.path}")
        self._require_writable()
        with _PathErrors(self.path, descriptor=True):
            os.ftruncate(self._fd, size)

    def fsync(self) -> None:
        with _PathErrors(self.path, descriptor=True):
            os.fsync(self._fd)

    def copy_to(
        self, position: int, length: int, dest: DiskFile, dest_position: int, *, sparse=False
    ) -> int:
        """A reflink where the file system shares blocks, large copies written around the page
        cache, the rest in the kernel (`os_copy.copy`); through a buffer to another kind of file."""
        _check_position(position, self.path)
        _check_position(dest_position, dest.path)
        if not isinstance(dest, OsFile):
            return super().copy_to(position, length, dest, dest_position, sparse=sparse)
        dest._require_writable()
        return os_copy.copy(self, position, length, dest, dest_position, sparse)

    def data_from(self, position: int) -> int:
        _check_position(position, self.path)
        try:
            return os.lseek(self._fd, position, os.SEEK_DATA)
        except OSError as e:
            if e.errno == errno.ENXIO:  # no data after `position`: a hole to the end
                return max(position, self.size())
            return position  # holes not reported by this filesystem

    def close(self) -> None:
        reader, self._reader = self._reader, None
        if reader is not None:
            # (a read in flight ends before its descriptor is closed, or reused by another open)
            reader.shutdown(wait=True, cancel_futures=True)
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)

    def _require_writable(self) -> None:
        if not self._writable:
            raise OSError(errno.EBADF, "file not opened for writing", self.path)


def _check_position(position: int, path: str) -> None:
    if position < 0:
        raise ValueError(f"negative position {position} for {path}")


class _FcntlLock:
    def __init__(self, key: tuple[int, int], fd: int) -> None:
        self._key = key
        self._fd = fd

    def release(self) -> None:
        """Unlocks and closes before the registry forgets the file, so no other lock of this
        process can open it in between and lose its lock to our close."""
        with _held_locks_guard:
            if self._fd < 0:
                return
            fd, self._fd = self._fd, -1
            try:
                fcntl.lockf(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
                _held_locks.discard(self._key)


# POSIX record locks belong to the process, so a second lock by this process would succeed and a
# close of any descriptor of the file would drop the lock. The JDK refuses an overlapping lock within
# the JVM (OverlappingFileLockException); this registry does the same within this process.
_held_locks: set[tuple[int, int]] = set()
_held_locks_guard = threading.Lock()


_TYPES = (
    (stat.S_ISREG, "file"),
    (stat.S_ISDIR, "dir"),
    (stat.S_ISLNK, "symlink"),
    (stat.S_ISFIFO, "fifo"),
    (stat.S_ISSOCK, "socket"),
    (stat.S_ISCHR, "char_device"),
    (stat.S_ISBLK, "block_device"),
)


def _entry_type(entry: os.DirEntry) -> str:
    """The type of an entry that is not a regular file (`list_dir_types` files those itself)."""
    if entry.is_dir(follow_symlinks=False):
        return "dir"
    if entry.is_symlink():
        return "symlink"
    try:
        mode = entry.stat(follow_symlinks=False).st_mode
    except FileNotFoundError:
        return "missing"
    return next((name for test, name in _TYPES if test(mode)), "file")


class OsDisk(Disk):
    def open(self, path: str, *, write: bool = False, create: bool = False) -> OsFile:
        writable = write or create
        # O_NONBLOCK: a FIFO under a segment's name must never hang the tool (it has no effect on
        # regular files)
        flags = (os.O_RDWR if writable else os.O_RDONLY) | os.O_CLOEXEC | os.O_NONBLOCK
        if create:
            flags |= os.O_CREAT
        with _PathErrors(path):
            fd = os.open(path, flags, 0o644)
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            os.close(fd)
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        return OsFile(path, fd, writable)

    def read_small(self, path: str, limit: int) -> bytes:
        """Open, one `pread`, close: no fstat unless the file fills the first read (a directory
        fails the read with EISDIR, as `open` would refuse it)."""
        try:
            fd = os.open(path, _READ_ONLY)
        except OSError as e:
            raise type(e)(e.errno, e.strerror, path) from None
        try:
            data = os.pread(fd, _SMALL_READ, 0)
            size = len(data) if len(data) < _SMALL_READ else os.fstat(fd).st_size
            if size > limit:
                raise FileTooLarge(path, size)
            while len(data) < size:  # (the rare small file of more than one read)
                more = os.pread(fd, min(size - len(data), _MAX_READ_CHUNK), len(data))
                if not more:
                    break
                data += more
            return data
        except FileTooLarge:
            raise
        except OSError as e:
            raise type(e)(e.errno, e.strerror, path) from None
        finally:
            os.close(fd)

    def exists(self, path: str) -> bool:
        return os.path.lexists(path)

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(path)

    def is_symlink(self, path: str) -> bool:
        return os.path.islink(path)

    def file_type(self, path: str, *, follow: bool = False) -> str:
        try:
            mode = (os.stat if follow else os.lstat)(path).st_mode
        except FileNotFoundError:
            return "missing"
        except OSError as e:
            raise type(e)(e.errno, e.strerror, path) from None
        for test, name in _TYPES:
            if test(mode):
                return name
        return "file"

    def read_link(self, path: str) -> str:
        with _PathErrors(path):
            return os.readlink(path)

    def identity(self, path: str) -> FileIdentity:
        with _PathErrors(path):
            st = os.stat(path)
        return FileIdentity(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)

    def make_symlink(self, text: str, path: str) -> None:
        with _PathErrors(path):
            os.symlink(text, path)

    def list_dir(self, path: str) -> list[str]:
        with _PathErrors(path):
            return sorted(os.listdir(path))

    def list_dir_types(self, path: str) -> list[tuple[str, str]]:
        """The directory's entry types as `readdir` gives them; an lstat only for the rest."""
        with _PathErrors(path), os.scandir(path) as entries:
            # (most entries are regular files, as readdir says: one call, no function of ours)
            typed = [
                (entry.name, "file" if entry.is_file(follow_symlinks=False) else _entry_type(entry))
                for entry in entries
            ]
        return sorted(typed)

    def make_dirs(self, path: str) -> None:
        with _PathErrors(path):
            os.makedirs(path, exist_ok=True)

    def size(self, path: str) -> int:
        with _PathErrors(path):
            return os.stat(path).st_size

    def mtime(self, path: str) -> float:
        with _PathErrors(path):
            return os.stat(path).st_mtime

    def rename(self, src: str, dst: str) -> None:
        with _PathErrors(src):
            os.replace(src, dst)

    def unlink(self, path: str) -> None:
        with _PathErrors(path):
            os.unlink(path)

    def remove_dir(self, path: str) -> None:
        with _PathErrors(path):
            os.rmdir(path)

    def fsync_dir(self, path: str) -> None:
        with _PathErrors(path):
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            with _PathErrors(path, descriptor=True):
                os.fsync(fd)
        finally:
            os.close(fd)

    def lock(self, path: str) -> _FcntlLock:
        """`FileChannel.tryLock()` as Kafka takes it on `.lock`: exclusive, non-blocking, whole file.

        Closing any descriptor of a POSIX-locked file drops the lock, so a file this process holds
        is refused before it is opened again; never open a held `.lock` any other way."""
        with _held_locks_guard:
            try:
                st = os.stat(path)
            except FileNotFoundError:
                pass
            else:
                if (st.st_dev, st.st_ino) in _held_locks:
                    raise _lock_held(path)
            with _PathErrors(path):
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                st = os.fstat(fd)
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                os.close(fd)
                if e.errno in (errno.EACCES, errno.EAGAIN):
                    raise _lock_held(path) from None
                raise type(e)(e.errno, e.strerror, path) from None
            try:
                now = os.stat(path)
            except FileNotFoundError:
                now = None
            if now is None or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
                # Unlinked (or replaced) by its holder's release between our open and our lock:
                # this lock guards a name no one else can find, so it guards nothing.
                fcntl.lockf(fd, fcntl.LOCK_UN)
                os.close(fd)
                raise _lock_held(path)
            key = (st.st_dev, st.st_ino)
            _held_locks.add(key)
            return _FcntlLock(key, fd)

    def lock_owner(self, path: str) -> int | None:
        """`F_GETLK` on `path`: the pid of a process whose POSIX lock (a JVM's `FileChannel.lock`
        is one) conflicts with an exclusive lock; this process's own locks never conflict."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError:
            return None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            query = struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
            answer = fcntl.fcntl(fd, fcntl.F_GETLK, query)
        finally:
            os.close(fd)
        kind, _, _, _, pid = struct.unpack(_FLOCK, answer)
        return None if kind == fcntl.F_UNLCK else pid

    def links(self, path: str) -> int:
        with _PathErrors(path):
            return os.lstat(path).st_nlink

    def real_path(self, path: str) -> str:
        return os.path.realpath(path)


def _lock_held(path: str) -> LockHeld:
    name = path.rstrip("/").rpartition("/")[2]
    return LockHeld(
        f"Failed to acquire lock on file {name} in {parent_of(path)}. A Kafka instance in "
        "another process or thread is using this directory."
    )
