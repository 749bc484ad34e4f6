"""How `OsFile.copy_to` copies between two files: a reflink, O_DIRECT writes, the kernel's copy.

The copies are a repair's (a split's moved batches, a tail saved into the quarantine, an undo
putting them back), of up to gigabytes, and they are most of a salvage's time once the scan is
done: the way each takes is the cheapest the file system has. Part of the OS disk (osdisk.py),
which alone, with this module, touches the filesystem. Its page-aligned buffers (`thread_buffer`)
serve the audit's whole-segment reads too.
"""

from __future__ import annotations

import errno
import fcntl
import mmap
import os
import struct
import threading
from typing import TYPE_CHECKING

from .disk import DiskFile, nonzero_runs

if TYPE_CHECKING:
    from .osdisk import OsFile


def copy(
    src: OsFile, position: int, length: int, dest: OsFile, dest_position: int, sparse: bool
) -> int:
    """A reflink (`FICLONERANGE`) of the block-aligned middle where the file system shares
    blocks between files and both ranges sit alike in their blocks; the rest, from 1 MiB up,
    written around the page cache (`_direct_write`) but for the edge blocks; those and any
    smaller copy in the kernel (`_kernel_copy`). `sparse` (`DiskFile.copy_to`): no reflink, and
    the edges and small copies through the buffered default, which leaves zero blocks unwritten."""
    edge = _sparse_copy if sparse else _kernel_copy
    done = 0
    middle = (
        None if sparse else _aligned_middle(position, length, dest_position, _block_size(dest._fd))
    )
    if middle is not None:
        start, end = middle
        done = _kernel_copy(src, position, start - position, dest, dest_position)
        if done == start - position and _clone(src, start, end - start, dest, dest_position + done):
            done = end - position
    if length - done >= _DIRECT_MIN:
        # the head up to a block boundary of `dest` through the page cache, then whole blocks
        head = -(dest_position + done) % _direct_alignment(dest._fd)
        n = edge(src, position + done, head, dest, dest_position + done)
        done += n
        if n == head:
            done += _direct_write(
                src, position + done, length - done, dest, dest_position + done, sparse
            )
    return done + edge(src, position + done, length - done, dest, dest_position + done)


def _sparse_copy(src: OsFile, position: int, length: int, dest: OsFile, dest_position: int) -> int:
    return DiskFile.copy_to(src, position, length, dest, dest_position, sparse=True)


def _kernel_copy(src: OsFile, position: int, length: int, dest: OsFile, dest_position: int) -> int:
    """`copy_file_range`, else `sendfile` where the kernel or the file systems refuse it
    (EXDEV across some file systems, ENOSYS, EINVAL), else the buffered default."""
    done = 0
    for way in (_copy_file_range, _sendfile):
        try:
            while done < length:
                n = way(src._fd, position + done, min(length - done, _KERNEL_CHUNK),
                        dest._fd, dest_position + done)  # fmt: skip
                if n == 0:
                    return done  # the end of this file
                done += n
            return done
        except OSError as e:
            if e.errno not in _NOT_THIS_WAY:
                raise type(e)(e.errno, e.strerror, src.path, None, dest.path) from None
    return done + DiskFile.copy_to(src, position + done, length - done, dest, dest_position + done)


# Errors that say a way of copying does not work between these two files (file system, kernel,
# sandbox), not that the device failed: the next way is tried.
_NOT_THIS_WAY = frozenset(
    {errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTTY, errno.EPERM}
)
_KERNEL_CHUNK = 1 << 30
# `_IOW(0x94, 13, struct file_clone_range)`: { s64 src_fd; u64 src_offset, src_length, dest_offset }
_FICLONERANGE = 0x4020940D
_CLONE_RANGE = struct.Struct("=qQQQ")


def _copy_file_range(src: int, position: int, length: int, dest: int, dest_position: int) -> int:
    return os.copy_file_range(src, dest, length, position, dest_position)


def _sendfile(src: int, position: int, length: int, dest: int, dest_position: int) -> int:
    os.lseek(dest, dest_position, os.SEEK_SET)  # sendfile writes at the file offset
    return os.sendfile(dest, src, position, length)


_DIRECT_MIN = 1 << 20
"""A copy from this size up writes its whole blocks with O_DIRECT (`_direct_write`)."""
_DIRECT_CHUNK = 4 << 20
# (Linux's; elsewhere a large copy is the kernel's, and a read that of the page cache)
_O_DIRECT = getattr(os, "O_DIRECT", 0)
_NOWAIT = getattr(os, "RWF_NOWAIT", 0)


def _direct_write(
    src: OsFile, position: int, length: int, dest: OsFile, dest_position: int, sparse: bool
) -> int:
    """Writes the whole blocks of `length` bytes of `src` (read through one aligned buffer,
    `_read_around_cache`) to `dest` at the block-aligned `dest_position` with O_DIRECT, set on
    `dest`'s own descriptor for the while; returns the count written (0 where the file system
    refuses O_DIRECT; short at the end of `src`: the last partial block is the caller's). With
    `sparse`, its whole zero blocks are left unwritten (`DiskFile.copy_to`).

    Why not the kernel copy: a segment's kept bytes are new pages for the page cache to allocate,
    dirty, write back at the fsync and keep, and on ext4 that costs three times the CPU of this
    copy (0.30 against 0.10 s per half GiB, fsync included), which costs the reading and the
    device's time, and leaves the cache to the broker's files."""
    align = _direct_alignment(dest._fd)
    length -= length % align
    if length <= 0 or not _O_DIRECT:
        return 0
    flags = fcntl.fcntl(dest._fd, fcntl.F_GETFL)
    try:
        fcntl.fcntl(dest._fd, fcntl.F_SETFL, flags | _O_DIRECT)
    except OSError as e:
        if e.errno in _NOT_THIS_WAY:
            return 0
        raise type(e)(e.errno, e.strerror, dest.path) from None
    view = thread_buffer("copy write", _DIRECT_CHUNK)[: min(_DIRECT_CHUNK, length)]
    done = 0
    try:
        while done < length:
            want = min(len(view), length - done)
            got = _read_around_cache(src, position + done, view[:want])
            whole = got - got % align
            runs = nonzero_runs(dest_position + done, view[:whole]) if sparse else [(0, whole)]
            written = _write_runs(dest, view, runs, dest_position + done, align)
            done += whole if written is None else written
            if written is not None or whole < want:
                break  # the end of `src`, or a refusal: the caller copies the rest another way
    finally:
        view.release()
        fcntl.fcntl(dest._fd, fcntl.F_SETFL, flags)
    return done


def _write_runs(
    dest: OsFile, view: memoryview, runs: list[tuple[int, int]], at: int, align: int
) -> int | None:
    """Writes the `[start, end)` runs of `view` at `at + start` of `dest` (O_DIRECT); None when
    all were written, else how far into `view` the writing got (a refusal: EINVAL and the like)."""
    for start, end in runs:
        written = start
        try:
            while written < end:
                n = os.pwrite(dest._fd, view[written:end], at + written)
                if n <= 0 or n % align:
                    return written + max(n, 0) - max(n, 0) % align
                written += n
        except OSError as e:
            if e.errno not in _NOT_THIS_WAY:
                raise type(e)(e.errno, e.strerror, dest.path) from None
            return written
    return None


_buffers = threading.local()
"""Page-aligned buffers, one per use and thread, kept from one call to the next (`thread_buffer`).

Thousands of small segments read whole, or a copy's 4 MiB chunks, would otherwise each pay for a
buffer allocated and zeroed (a page fault per page). Anonymous memory is page-aligned, which
O_DIRECT requires and the kernel's copy out of the page cache needs to run at full speed (a heap
buffer 16 bytes past a page boundary copies at about half the speed)."""


def thread_buffer(use: str, size: int) -> memoryview:
    """This thread's buffer for `use`, of at least `size` bytes (longer when an earlier call asked
    for more)."""
    buf = getattr(_buffers, use, None)
    if buf is None or len(buf) < size:
        setattr(_buffers, use, None)  # the old buffer goes before the new one comes
        buf = mmap.mmap(-1, max(size, mmap.PAGESIZE))
        setattr(_buffers, use, buf)
    return memoryview(buf)


def _read_around_cache(src: OsFile, position: int, view: memoryview) -> int:
    """Fills `view` from `src` at `position` (fewer bytes only at its end): what the page cache
    holds (`RWF_NOWAIT`), then the rest with O_DIRECT into a second aligned buffer and moved into
    place, so that bytes the cache does not hold (an undo's source, itself written around it) are
    not brought into it: a cold read through the cache costs its pages as a write does. Where
    the file system refuses either, as `read_into`.

    A read with `RWF_NOWAIT` that misses still starts the kernel's read-ahead of what it asked
    for (and, sequential, of more): so one byte asks first, with read-ahead off on the file
    (`POSIX_FADV_RANDOM`, for the while), and a miss costs the cache one page."""
    if not _NOWAIT:
        return src.read_into(position, view)
    try:
        os.posix_fadvise(src._fd, 0, 0, os.POSIX_FADV_RANDOM)
        try:
            got = os.preadv(src._fd, [view[:1]], position, _NOWAIT)
            if got:
                got = os.preadv(src._fd, [view], position, _NOWAIT)
        finally:
            os.posix_fadvise(src._fd, 0, 0, os.POSIX_FADV_NORMAL)
    except BlockingIOError:  # (EAGAIN: not one byte of it in the cache)
        got = 0
    except OSError as e:
        if e.errno not in _NOT_THIS_WAY:
            raise type(e)(e.errno, e.strerror, src.path) from None
        return src.read_into(position, view)
    if got == len(view):
        return got
    start, rest = position + got, view[got:]
    align = _direct_alignment(src._fd)
    lead = start % align
    end = -(-(lead + len(rest)) // align) * align
    scratch = thread_buffer("copy read", _DIRECT_CHUNK + 2 * align)[:end]
    flags = fcntl.fcntl(src._fd, fcntl.F_GETFL)
    n = 0
    try:
        fcntl.fcntl(src._fd, fcntl.F_SETFL, flags | _O_DIRECT)
        while n < end:
            k = os.preadv(src._fd, [scratch[n:]], start - lead + n)
            n += max(k, 0)
            if k <= 0 or k % align:
                break  # the end of the file
    except OSError as e:
        if e.errno not in _NOT_THIS_WAY:
            raise type(e)(e.errno, e.strerror, src.path) from None
        fcntl.fcntl(src._fd, fcntl.F_SETFL, flags)
        return got + src.read_into(start, rest)
    finally:
        fcntl.fcntl(src._fd, fcntl.F_SETFL, flags)
    k = max(0, min(len(rest), n - lead))
    rest[:k] = scratch[lead : lead + k]
    return got + k


def _direct_alignment(fd: int) -> int:
    """What O_DIRECT offsets, lengths and buffers are aligned to here: the file system's block,
    at least a page (so no page of the cache holds part of a block written around it)."""
    return max(_block_size(fd), mmap.PAGESIZE)


def _block_size(fd: int) -> int:
    return os.fstat(fd).st_blksize or 4096


def _aligned_middle(position: int, length: int, dest_position: int, block: int):
    """The source range `[start, end)` of whole blocks that would land on whole blocks of the
    destination too (a reflink shares blocks, so both ranges must sit alike in theirs); None when
    there is not one whole block of it."""
    if position % block != dest_position % block:
        return None
    start = -(-position // block) * block
    end = (position + length) // block * block
    return (start, end) if end > start else None


def _clone(src: OsFile, position: int, length: int, dest: OsFile, dest_position: int) -> bool:
    """Shares the blocks (a reflink); False where the file system cannot (ext4: EOPNOTSUPP)."""
    arg = _CLONE_RANGE.pack(src._fd, position, length, dest_position)
    try:
        fcntl.ioctl(dest._fd, _FICLONERANGE, arg)
    except OSError as e:
        if e.errno in _NOT_THIS_WAY or e.errno == errno.ETXTBSY:
            return False
        raise type(e)(e.errno, e.strerror, src.path, None, dest.path) from None
    return True
