"""Kafka's checkpoint text files (spec fmt §8.1-8.2, rec §7.4).

Line 1 a version, line 2 an entry count, then one entry per line. Reading is as strict as Kafka's
`CheckpointFile` and says more: every rejection is a `CheckpointError` naming the file, the line
number and the line, never a crash. Writing is Kafka's: `<file>.tmp`, fsync, rename, directory fsync.

The four offset checkpoints at a log dir's root (recovery points, log start offsets, high
watermarks, cleaner offsets) share one entry format, `<topic> <partition> <offset>`.
"""

from __future__ import annotations

import codecs
import itertools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TypeVar

from . import java_text
from .decoded_memo import DecodedMemo
from .disk import Disk, DiskFile, FileTooLarge
from .layout import TopicPartition

_WHITE_SPACE = re.compile(r"\s")

OFFSET_CHECKPOINT_VERSION = 0
# Far beyond any real line (a topic name is at most 249 characters) or file of this kind.
MAX_LINE_LENGTH = 1 << 16
MAX_SMALL_FILE_SIZE = 1 << 20
MAX_CHECKPOINT_BYTES = 64 * 1024 * 1024
"""A checkpoint larger than this is reported unread, not loaded (the `limit` of a whole read)."""
_READ_CHUNK = 1 << 16
_LINE_BREAK = re.compile(r"\r\n|\r|\n")

T = TypeVar("T")


class CheckpointError(ValueError):
    """A malformed checkpoint or metadata file.

    `structural` is True where Kafka raises an IOException (the broker marks the whole log dir
    offline) and False where it raises NumberFormatException or IllegalArgumentException, which
    escapes loading instead. `line_number` is 1-based, None when the error concerns the file."""

    def __init__(
        self,
        path: str,
        message: str,
        *,
        line_number: int | None = None,
        structural: bool = True,
    ) -> None:
        where = f" (line {line_number})" if line_number is not None else ""
        super().__init__(message + where)
        self.path = path
        self.message = message
        self.line_number = line_number
        self.structural = structural


class EntryFormatError(ValueError):
    """Raised by an entry parser for a line it rejects; `structural` as in CheckpointError."""

    def __init__(self, structural: bool, detail: str = "") -> None:
        super().__init__(detail)
        self.structural = structural


def iter_lines(disk: Disk, path: str, *, limit: int | None = None) -> Iterator[str]:
    """The lines of a text file as Java's `BufferedReader.readLine` gives them (`\n`, `\r` or
    `\r\n` end a line), read in chunks: a garbage file costs one chunk and one line of memory,
    and a line longer than any checkpoint holds is malformed.

    With `limit`, the file is read whole in one call (a partition's small state files, thousands
    of them in a log dir) and one larger than `limit` is malformed."""
    if limit is None:
        with disk.open(path) as f:
            yield from _lines(_chunks(f), path)
        return
    yield from _lines_of(_read_whole(disk, path, limit), path)


def _read_whole(disk: Disk, path: str, limit: int) -> bytes:
    try:
        return disk.read_small(path, limit)
    except FileTooLarge as e:
        raise CheckpointError(
            path, f"{e.size} bytes is not a checkpoint file Kafka wrote"
        ) from None


def _lines_of(data: bytes, path: str) -> Iterator[str]:
    """The lines of a file read whole, as `iter_lines` gives them."""
    if len(data) <= _READ_CHUNK:  # one chunk: no line can pass the limit
        try:
            lines = _LINE_BREAK.split(data.decode("utf-8"))
        except UnicodeDecodeError:
            pass  # (the chunked reading says at which line)
        else:
            last = lines.pop()
            yield from lines
            if last:
                yield last
            return
    yield from _lines((data[i : i + _READ_CHUNK] for i in range(0, len(data), _READ_CHUNK)), path)


def _chunks(f: DiskFile) -> Iterator[bytes]:
    """The file in chunks, up to the first short one (a read is short only at the end)."""
    position = 0
    while True:
        chunk = f.read_at(position, _READ_CHUNK)
        if chunk:
            yield chunk
        if len(chunk) < _READ_CHUNK:
            return
        position += len(chunk)


def _lines(chunks: Iterable[bytes], path: str) -> Iterator[str]:
    decoder = codecs.getincrementaldecoder("utf-8")()
    number = 0
    pending = ""
    for chunk in itertools.chain(chunks, (b"",)):
        final = not chunk
        try:
            pending += decoder.decode(chunk, final=final)
        except UnicodeDecodeError as e:
            raise CheckpointError(
                path, f"Checkpoint file [{path}] is not UTF-8 text: {e}", line_number=number + 1
            ) from None
        held = "" if final or not pending.endswith("\r") else "\r"  # may be half a \r\n
        lines = _LINE_BREAK.split(pending[: len(pending) - len(held)])
        pending = lines.pop() + held
        for line in lines:
            number += 1
            yield line
        if len(pending) > MAX_LINE_LENGTH:
            raise CheckpointError(
                path,
                f"Malformed line in checkpoint file [{path}]: {pending[:80]}... (a line of "
                f"more than {MAX_LINE_LENGTH} characters)",
                line_number=number + 1,
            )
    if pending:
        yield pending


def read_checkpoint(
    disk: Disk,
    path: str,
    version: int,
    parse_entry: Callable[[str], T],
    *,
    limit: int | None = None,
) -> list[T]:
    """Kafka's `CheckpointReadBuffer.read`, entry by entry, in file order (`limit` as for
    `iter_lines`). The entries of a small file are remembered by its bytes (they must be
    immutable): the leader-epoch checkpoints of thousands of partitions are a few texts."""
    if limit is None:
        return _entries(iter_lines(disk, path), path, version, parse_entry)
    data = _read_whole(disk, path, limit)
    if len(data) > _remembered.largest:
        return _entries(_lines_of(data, path), path, version, parse_entry)
    return _remembered.entries(
        (bytes(data), version, parse_entry),
        lambda: _entries(_lines_of(data, path), path, version, parse_entry),
    )


_remembered: DecodedMemo = DecodedMemo()


def _entries(
    lines: Iterator[str], path: str, version: int, parse_entry: Callable[[str], T]
) -> list[T]:
    """The entries of a checkpoint's lines (see `read_checkpoint`)."""

    def malformed(n: int, line: str, structural: bool = True) -> CheckpointError:
        return CheckpointError(
            path,
            f"Malformed line in checkpoint file [{path}]: {line}",
            line_number=n,
            structural=structural,
        )

    def header(n: int) -> int | None:
        """Line `n` (version, then entry count) as a number; None when the file ends before it."""
        line = next(lines, None)
        if line is None:
            return None
        try:
            return java_text.parse_int(line)
        except ValueError:
            raise malformed(n, line) from None

    read_version = header(1)
    if read_version is None:
        return []
    if read_version != version:
        raise CheckpointError(
            path,
            f"Unrecognised version:{read_version}, expected version: {version} in checkpoint "
            f"file at: {path}",
            line_number=1,
        )
    expected = header(2)
    if expected is None:
        return []
    entries: list[T] = []
    for n, line in enumerate(lines, start=3):
        try:
            entries.append(parse_entry(line))
        except EntryFormatError as e:
            raise malformed(n, line, e.structural) from None
    if len(entries) != expected:
        raise CheckpointError(
            path,
            f"Expected [{expected}] entries in checkpoint file [{path}], but found only "
            f"[{len(entries)}]",
        )
    return entries


def read_small_file(disk: Disk, path: str, limit: int = MAX_SMALL_FILE_SIZE) -> bytes:
    """A whole metadata file, refused past `limit` bytes: no real one comes near it."""
    try:
        return disk.read_small(path, limit)
    except FileTooLarge as e:
        raise CheckpointError(
            path, f"{path} has {e.size} bytes, more than a {limit}-byte limit"
        ) from None


def format_checkpoint(version: int, lines: list[str]) -> bytes:
    return "".join(f"{line}\n" for line in [str(version), str(len(lines)), *lines]).encode()


def parse_offset_entry(line: str) -> tuple[TopicPartition, int]:
    """`OffsetCheckpointFile.Formatter.fromString`: `<topic> <partition> <offset>`."""
    parts = java_text.split_whitespace(line)
    if len(parts) != 3:
        raise EntryFormatError(True, "expected 3 fields")
    try:
        partition = java_text.parse_int(parts[1])
        offset = java_text.parse_int(parts[2], bits=64)
    except ValueError as e:
        raise EntryFormatError(False, str(e)) from None
    return TopicPartition(parts[0], partition), offset


def read_offset_entries(
    disk: Disk, path: str, *, limit: int | None = None
) -> list[tuple[TopicPartition, int]]:
    """Entries in file order, duplicates included (a verifier reports them)."""
    return read_checkpoint(disk, path, OFFSET_CHECKPOINT_VERSION, parse_offset_entry, limit=limit)


def read_offsets(disk: Disk, path: str, *, limit: int | None = None) -> dict[TopicPartition, int]:
    """The map Kafka builds: a later duplicate wins.

    A missing file is FileNotFoundError: Kafka would create it empty, which a read-only tool must not;
    the caller decides what a missing file means (rec §7.4)."""
    return dict(read_offset_entries(disk, path, limit=limit))


def format_offsets(offsets: Mapping[TopicPartition, int]) -> bytes:
    """Entries sorted by topic and partition (Kafka's order is a hash map's, unspecified).

    A topic whose name would not read back as one field (empty, or holding white space: a
    partition dir Kafka could not have made) is refused: its line would make the whole file
    unreadable. Callers never pass one (layout.is_legal)."""
    bad = [tp for tp in offsets if not tp.topic or _WHITE_SPACE.search(tp.topic)]
    if bad:
        raise ValueError(f"not a Kafka topic-partition, never a checkpoint entry: {bad[0]!r}")
    return format_checkpoint(
        OFFSET_CHECKPOINT_VERSION,
        [f"{tp.topic} {tp.partition} {offset}" for tp, offset in sorted(offsets.items())],
    )


def write_offsets(disk: Disk, path: str, offsets: Mapping[TopicPartition, int]) -> None:
    disk.write_file_atomic(path, format_offsets(offsets))
