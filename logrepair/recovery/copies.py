"""Byte copies a repair and its undo make: sparse over runs of zeros, chunked, fsynced.

A garbage tail is often zeros (a preallocated or sparse segment end), and can be gigabytes: the
copy into the quarantine skips every all-zero block it would write and sets the length at the end,
so on a filesystem with holes a zero run costs no space in the quarantine, and reads back as the
same zeros. The batches a segment keeps (a split, a cut of a linked file, healed pieces) are copied
whole. Either way the bytes written go by `DiskFile.copy_to`: a reflink, else, from 1 MiB up, whole
blocks written with O_DIRECT (a copy through the page cache costs three times the CPU), else
`copy_file_range`.
"""

from __future__ import annotations

import errno

from ..format.crc import crc32c
from ..storage.disk import Disk, DiskFile, parent_of
from ..storage.layout import LOG_SUFFIX

COPY_CHUNK = 8 * 1024 * 1024
KERNEL_CHUNK = 64 * 1024 * 1024
"""A kernel copy asks again where the source's data is after this many bytes."""


def copy_range(
    disk: Disk, src: str, position: int, length: int, dst: str, *, sparse: bool = True
) -> None:
    """Copies `[position, position + length)` of `src` into a new file `dst`, fsynced."""
    copy_ranges(disk, src, [(position, length)], dst, sparse=sparse)


def copy_ranges(
    disk: Disk, src: str, ranges: list[tuple[int, int]], dst: str, *, sparse: bool = True
) -> None:
    """The `(position, length)` ranges of `src`, one after another, in a new file `dst`, fsynced."""
    copy_pieces(disk, [(src, position, length) for position, length in ranges], dst, sparse=sparse)


def copy_pieces(
    disk: Disk, pieces: list[tuple[str, int, int]], dst: str, *, sparse: bool = True
) -> None:
    """The `(file, position, length)` ranges, one after another, in a new file `dst`, fsynced.

    `sparse`: what the quarantine keeps (a removed tail, a replaced file), with its whole zero
    blocks left as holes. Otherwise the bytes are batches a segment keeps, copied whole. Holes in
    a source stay holes either way."""
    total = sum(length for _, _, length in pieces)
    with disk.open(dst, create=True) as fout:
        fout.truncate(0)
        out = 0
        for src, position, length in pieces:
            with disk.open(src) as fin:
                if copy_span(fin, position, length, fout, out, sparse) < length:
                    raise OSError(errno.EIO, f"{src} ended at {fin.size()} while copying")
            out += length
        fout.truncate(total)  # the length, with any trailing zero run as a hole
        fout.fsync()


def copy_span(
    fin: DiskFile, position: int, length: int, fout: DiskFile, out: int, sparse: bool
) -> int:
    """Copies `length` bytes of `fin` from `position` to `fout` at `out` by `DiskFile.copy_to`,
    leaving the source's holes unwritten, and with `sparse` its whole zero blocks too (the caller
    makes sure they read as zeros: a new file, or a range past the end, set by a final
    `truncate`). Returns the count covered, short only where `fin` ends."""
    done = 0
    while done < length:
        hole = min(length, fin.data_from(position + done) - position) - done
        if hole > 0:  # a hole in the source stays one
            done += hole
            continue
        n = fin.copy_to(
            position + done, min(KERNEL_CHUNK, length - done), fout, out + done, sparse=sparse
        )
        if n <= 0:
            break
        done += n
    return done


def move_file(disk: Disk, src: str, dst: str) -> None:
    """Renames `src` to `dst`; across filesystems copies, fsyncs, then unlinks."""
    try:
        disk.rename(src, dst)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        part = dst + ".part"
        copy_range(disk, src, 0, disk.size(src), part)
        disk.rename(part, dst)
        disk.fsync_dir(parent_of(dst))
        disk.unlink(src)


def file_state(disk: Disk, path: str) -> list[int] | None:
    """`[size, CRC-32C]` of a file, `[size]` for a `.log` (appends and truncations change its size;
    reading gigabytes back is not worth it), None when it does not exist."""
    if not disk.exists(path) or disk.file_type(path, follow=True) == "missing":
        return None  # (a dangling link: a followed link whose target a delete moved away)
    size = disk.size(path)
    if path.endswith(LOG_SUFFIX):
        return [size]
    crc = 0
    buf = bytearray(min(COPY_CHUNK, max(size, 1)))
    with disk.open(path) as f:
        position = 0
        while position < size:
            n = f.read_into(position, buf)
            if n <= 0:
                break
            crc = crc32c(memoryview(buf)[:n], crc)
            position += n
    return [size, crc]
