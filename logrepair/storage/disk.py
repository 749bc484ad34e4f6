"""The Disk seam: every file operation that storage and recovery perform.

`OsDisk` (osdisk.py) maps it to the operating system; the simulator's `SimDisk` implements it with
power-loss semantics. Nothing in `logrepair.storage` or `logrepair.recovery` may touch the
filesystem any other way (a test scans for it), which is what lets the simulator crash real code.

Semantics every implementation keeps, because SimDisk's crash states are defined by them:
- Writes change what readers see at once; they are durable only after `DiskFile.fsync`. A copy
  (`DiskFile.copy_to`, in the kernel or around the page cache on the real OS) is a write to its
  destination like any other.
- Creating, renaming or unlinking a name is durable only after `fsync_dir` of its directory.
- `rename` replaces an existing destination atomically (POSIX rename).
- Paths are plain strings; a Disk never resolves symlinks on the caller's behalf except where a
  method says so.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Protocol

_COPY_BUFFER = 8 * 1024 * 1024
ZERO_BLOCK = 64 * 1024
"""A sparse copy leaves the whole zero blocks of this size, aligned in the destination, unwritten."""
_ZEROS = bytes(ZERO_BLOCK)


class DiskLock(Protocol):
    def release(self) -> None: ...


class DiskFile(ABC):
    """An open file. Positions are absolute byte offsets; there is no implicit file pointer."""

    path: str

    @abstractmethod
    def size(self) -> int: ...

    @abstractmethod
    def read_at(self, position: int, length: int) -> bytes:
        """Up to `length` bytes from `position`; fewer only at end of file."""

    @abstractmethod
    def read_into(self, position: int, buffer: bytearray | memoryview) -> int:
        """Fills `buffer` from `position`, returns the count read (fewer only at end of file).

        Scans use this with one reused buffer, so memory stays flat however large the file."""

    def read_ahead(self, position: int, buffer: memoryview) -> Future[int]:
        """`read_into(position, buffer)` begun now and taken later: the future's `result()` is the
        count read, or raises what the read raised. The caller leaves `buffer` alone until then.

        A scan checks one window while the next is read: `OsFile` reads on a thread of its own.
        This default reads at once, in the caller's order, so the simulator's SimDisk sees (and
        faults) each read where the program makes it, and its error still comes when the scan
        takes the window."""
        done: Future[int] = Future()
        try:
            done.set_result(self.read_into(position, buffer))
        except Exception as e:  # (the read's own error, raised by `result()`)
            done.set_exception(e)
        return done

    @abstractmethod
    def write_at(self, position: int, data) -> None: ...

    @abstractmethod
    def append(self, data) -> int:
        """Writes at the end of the file; returns the position the data starts at."""

    @abstractmethod
    def truncate(self, size: int) -> None:
        """Sets the length: shrinks, or extends with zeros (sparse where the OS can)."""

    @abstractmethod
    def fsync(self) -> None:
        """Makes this file's data and size durable (not its directory entry)."""

    @abstractmethod
    def close(self) -> None: ...

    def copy_to(
        self, position: int, length: int, dest: DiskFile, dest_position: int, *, sparse=False
    ) -> int:
        """Copies `[position, position + length)` of this file to `dest` at `dest_position`;
        returns the count copied (fewer only where this file ends). A write to `dest` like any
        other: seen at once, durable after `dest.fsync()`. With `sparse`, the whole zero blocks
        (`ZERO_BLOCK`, aligned in `dest`) are left unwritten: the caller makes sure they read as
        zeros (a new file, or a range past its end, set by a final `truncate`).

        For a file's kept bytes (a segment split or cut, healed pieces) and a quarantine's saved
        tails: `OsFile` shares blocks where it can, writes large copies around the page cache
        and copies the rest in the kernel. This default goes through one bounded buffer."""
        buf = bytearray(min(_COPY_BUFFER, max(length, 1)))
        view = memoryview(buf)
        done = 0
        while done < length:
            n = self.read_into(position + done, view[: min(len(buf), length - done)])
            if n <= 0:
                break
            runs = nonzero_runs(dest_position + done, view[:n]) if sparse else [(0, n)]
            for start, end in runs:
                dest.write_at(dest_position + done + start, view[start:end])
            done += n
        return done

    def data_from(self, position: int) -> int:
        """The first position at or after `position` that may hold data (`SEEK_DATA`): everything
        between reads as zeros, a hole a copy can skip. This default knows of no holes."""
        return position

    def __enter__(self) -> DiskFile:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Disk(ABC):
    @abstractmethod
    def open(self, path: str, *, write: bool = False, create: bool = False) -> DiskFile:
        """Opens `path`; `create` makes it if missing (implies `write`). Missing → FileNotFoundError."""

    @abstractmethod
    def exists(self, path: str) -> bool: ...

    @abstractmethod
    def is_dir(self, path: str) -> bool: ...

    @abstractmethod
    def is_symlink(self, path: str) -> bool: ...

    @abstractmethod
    def list_dir(self, path: str) -> list[str]:
        """Names (not paths) in `path`, sorted."""

    @abstractmethod
    def make_dirs(self, path: str) -> None:
        """Creates `path` and missing parents; an existing directory is fine."""

    @abstractmethod
    def size(self, path: str) -> int: ...

    @abstractmethod
    def mtime(self, path: str) -> float:
        """Last modification time, seconds since the epoch (time-based retention uses it)."""

    @abstractmethod
    def rename(self, src: str, dst: str) -> None:
        """Atomically renames, replacing `dst` if it exists."""

    @abstractmethod
    def unlink(self, path: str) -> None: ...

    @abstractmethod
    def remove_dir(self, path: str) -> None:
        """Removes an empty directory."""

    @abstractmethod
    def fsync_dir(self, path: str) -> None:
        """Makes the entries of directory `path` (creates, renames, unlinks) durable."""

    @abstractmethod
    def lock(self, path: str) -> DiskLock:
        """Takes an exclusive lock on `path` (created if missing) as Kafka takes `.lock`.

        Raises `LockHeld` when another process holds it."""

    @abstractmethod
    def lock_owner(self, path: str) -> int | None:
        """The process id of another process holding the lock on `path` (as `lock` takes it),
        None when no other process does or `path` does not exist. Takes no lock itself."""

    @abstractmethod
    def links(self, path: str) -> int:
        """How many directory entries name the file at `path` (hard links; 1 for most files)."""

    @abstractmethod
    def real_path(self, path: str) -> str:
        """`path` absolute, with `.`, `..` and symbolic links resolved: one name per directory,
        whatever path named it."""

    # What a name is, without opening it: a FIFO where a segment should be would block an open
    # for reading forever, so scans check the type first. Implementations without such objects
    # (the simulator's) keep these defaults.

    def file_type(self, path: str, *, follow: bool = False) -> str:
        """`path`'s type: 'file', 'dir', 'symlink' (unless `follow`), 'missing', or one of
        `SPECIAL_TYPES`."""
        if not self.exists(path):
            return "missing"
        if not follow and self.is_symlink(path):
            return "symlink"
        return "dir" if self.is_dir(path) else "file"

    def list_dir_types(self, path: str) -> list[tuple[str, str]]:
        """`list_dir` with each name's `file_type` (not following links), in one listing where
        the implementation can: a scan of thousands of partition dirs asks this per dir."""
        return [(name, self.file_type(join(path, name))) for name in self.list_dir(path)]

    def read_link(self, path: str) -> str:
        """Where the symbolic link `path` points (as stored, not resolved)."""
        raise OSError(f"{path}: not a symbolic link")

    def identity(self, path: str) -> FileIdentity:
        """Which file `path` names (links followed) and its size and modification time: what a
        repair through a symbolic link checks, so it never writes to a file other than the one it
        planned for."""
        raise OSError(f"{path}: this disk has no symbolic links to follow")

    def make_symlink(self, text: str, path: str) -> None:
        """A symbolic link at `path` holding `text` (undo puts back a link a repair removed)."""
        raise OSError(f"{path}: this disk has no symbolic links")

    # Conveniences built on the primitives above, shared by every implementation.

    def read_file(self, path: str) -> bytes:
        with self.open(path) as f:
            return f.read_at(0, f.size())

    def read_small(self, path: str, limit: int) -> bytes:
        """The whole of a file expected to be small (an index, a checkpoint, a snapshot);
        `FileTooLarge`, carrying the size, past `limit` bytes. A scan of thousands of partitions
        reads several per partition, so an implementation does it in as few calls as it can."""
        with self.open(path) as f:
            size = f.size()
            if size > limit:
                raise FileTooLarge(path, size)
            return f.read_at(0, size)

    def write_file_atomic(self, path: str, data: bytes, *, tmp: str | None = None) -> None:
        """Kafka's checkpoint write: `<path>.tmp` (or `tmp`), fsync, rename over `path`, fsync the
        directory."""
        tmp = tmp or path + ".tmp"
        with self.open(tmp, create=True) as f:
            f.truncate(0)
            f.write_at(0, data)
            f.fsync()
        self.rename(tmp, path)
        self.fsync_dir(parent_of(path))


SPECIAL_TYPES = {
    "fifo": "a FIFO (named pipe)",
    "socket": "a unix socket",
    "char_device": "a character device",
    "block_device": "a block device",
}
"""File-system objects that are neither regular files, directories nor symlinks, described."""


class FileTooLarge(OSError):
    """`Disk.read_small` of a file larger than the caller's limit: `size` says how large."""

    def __init__(self, path: str, size: int) -> None:
        super().__init__(f"{path}: {size} bytes")
        self.path = path
        self.size = size


@dataclass(frozen=True, slots=True)
class FileIdentity:
    """A file's device and inode (which file it is), size and modification time (ns)."""

    device: int
    inode: int
    size: int
    mtime_ns: int


class LockHeld(OSError):
    """The lock file is held by another process (a running broker, or another logrepair)."""


def parent_of(path: str) -> str:
    head, _, _ = path.rstrip("/").rpartition("/")
    return head or ("/" if path.startswith("/") else ".")


def join(*parts: str) -> str:
    """Joins path parts with '/', as every Disk expects."""
    if len(parts) == 2:  # (most calls: a dir and a name in it)
        head, name = parts
        return name if name.startswith("/") else head.rstrip("/") + "/" + name
    out = parts[0]
    for p in parts[1:]:
        out = p if p.startswith("/") else (out.rstrip("/") + "/" + p)
    return out


def nonzero_runs(position: int, data: memoryview) -> list[tuple[int, int]]:
    """The `[start, end)` ranges of `data` to write at `position` of a file: everything but the
    whole zero blocks (`ZERO_BLOCK`, aligned in the file) it holds, which a sparse copy leaves
    unwritten (a block cut by either end of `data` counts whole if what `data` holds of it is
    zeros)."""
    runs = []
    at = 0
    end = len(data)
    while at < end:
        block_end = min(end, at + ZERO_BLOCK - (position + at) % ZERO_BLOCK)
        run_end = at
        while run_end < end:
            nxt = min(end, run_end + ZERO_BLOCK - (position + run_end) % ZERO_BLOCK)
            if _is_zero(data[run_end:nxt]):
                break
            run_end = nxt
        if run_end > at:
            runs.append((at, run_end))
            at = run_end
        else:
            at = block_end
    return runs


def _is_zero(block: memoryview) -> bool:
    # One byte in 509 first (a batch of mostly zero values has a non-zero byte among them); then
    # the whole block as bytes, which compare with memcmp (a memoryview compares element by
    # element, 25x slower).
    return not any(block[::509]) and block.tobytes() == _ZEROS[: len(block)]
