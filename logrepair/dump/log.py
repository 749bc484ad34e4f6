"""The `.log` dump (spec fmt §10.3): every batch as kafka-dump-log prints it, and every damaged
region as a defect, after which the dump goes on.

The file is read through `storage.scan.LogScan` (a bounded window, so memory stays flat whatever
the file's size) with resync, so one corrupt batch does not hide the rest of the segment. Where
kafka-dump-log still shows a batch whose CRC fails (`isvalid: false`), so does this dump, followed
by the defect line; with `--json` such a region is one defect object, as the dump contract says.
"""

from __future__ import annotations

import os.path
import struct
from collections.abc import Iterable, Iterator
from dataclasses import replace

from ..decoders import format_offsets_record, format_transaction_record
from ..format.batch import HEADER, RECORD_BATCH_OVERHEAD, RecordBatch
from ..format.compression import decompress
from ..format.crc import crc32
from ..format.errors import Defect, FormatError
from ..format.legacy import LegacyBatch
from ..storage.disk import Disk, DiskFile
from ..storage.scan import LogScan
from . import lines
from .report import DEFAULT_MAX_BYTES, DumpOptions, DumpReport

# A damaged region is re-read to show the batch kafka-dump-log would show only up to this size.
_MAX_REREAD = 64 << 20
_OVERHEAD = struct.Struct(">qi")
MAX_PAIRS = 100_000
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")

_PARSERS: dict[str | None, lines.Parser] = {
    None: lines.string_parser,
    "offsets": format_offsets_record,
    "transaction-log": format_transaction_record,
}


def dump_log(disk: Disk, path: str, preamble: str, opts: DumpOptions, report: DumpReport) -> None:
    """Dumps one `.log` (or KRaft `.checkpoint`) file."""
    if not opts.json:
        report.line(preamble)
    file_size = disk.size(path)
    limit = min(file_size, opts.max_bytes)
    view = disk if limit == file_size else _PrefixDisk(disk, limit)
    dumper = _LogDumper(path, opts, report)
    scan = LogScan(view, path, resync=True, check_offsets=False)
    with disk.open(path) as reread:
        last: Defect | None = None
        for item in _whole_regions(scan):
            if isinstance(item, Defect):
                if item.position + item.length >= limit and limit < file_size:
                    continue  # the --max-bytes cut, not damage: kafka-dump-log is silent here
                dumper.defect(item, reread)
                last = item
            else:
                dumper.batch(item, crc_valid=True)
                last = None
    if dumper.pairs:
        report.non_consecutive[os.path.abspath(path)] = (dumper.pairs, dumper.pairs_dropped)
    if (
        not opts.json
        and last is not None
        and last.kind in ("torn_tail", "garbage_tail")
        and last.position + last.length == file_size
        and opts.max_bytes == DEFAULT_MAX_BYTES
    ):
        report.line(f"Found {last.length} invalid bytes at the end of {path.rsplit('/', 1)[-1]}")


# The walker ends a damaged region at its window's end with this note and goes on in the next one.
_CONTINUED = "; the search goes on in the next window"


def _whole_regions(items: Iterable) -> Iterator:
    """The scan's items with a damaged region that spans windows as one defect, not one per
    window (a zero-filled gigabyte is one region to an operator)."""
    pending: Defect | None = None
    continued = False  # whether the last piece of `pending` says the region goes on
    for item in items:
        if isinstance(item, Defect):
            if (
                pending is not None
                and continued
                and pending.position + pending.length == item.position
            ):
                # One region, named for where it starts: the walker's later notes ("to the end of
                # the file", "N bytes skipped") describe only their own window's part of it.
                pending = replace(pending, length=pending.length + item.length)
            else:
                if pending is not None:
                    yield _settled(pending)
                pending = item
            continued = item.detail.endswith(_CONTINUED)
            continue
        if pending is not None:
            yield _settled(pending)
            pending = None
        yield item
    if pending is not None:
        yield _settled(pending)


def _settled(defect: Defect) -> Defect:
    return replace(defect, detail=defect.detail.removesuffix(_CONTINUED))


class _LogDumper:
    def __init__(self, path: str, opts: DumpOptions, report: DumpReport) -> None:
        self.path = path
        self.opts = opts
        self.report = report
        self.parser = _PARSERS[opts.decoder] if opts.print_data else None
        self.last_offset = -1
        self.pairs: list[tuple[int, int]] = []
        self.pairs_dropped = 0

    def batch(self, batch, *, crc_valid: bool) -> None:
        """Prints one batch and, in a deep iteration, its records."""
        opts, report = self.opts, self.report
        if opts.json:
            try:
                obj = {"file": self.path, **batch.to_json(opts.deep)}
            except FormatError as e:
                report.defect(self.path, _records_defect(batch, e), True)
                return
            if opts.deep and self.parser is not None:
                for rec_obj, record in zip(obj["records"], batch.records(), strict=True):
                    if not batch.is_control:
                        key_text, payload = self.parser(
                            _bytes(record.key), _bytes(record.value), record.offset
                        )
                        rec_obj["decoded"] = {"key": key_text, "payload": payload}
            for record in batch.records() if opts.deep else ():
                self._track(record.offset)
            report.json(obj)
            return
        report.line(lines.batch_line(batch, crc_valid))
        if not opts.deep:
            return
        try:
            records = _records(batch)
            legacy = _legacy_checksums(batch)
        except FormatError as e:
            if crc_valid:  # a CRC-failed batch gets its own defect line next: one is enough
                report.defect(self.path, _records_defect(batch, e), False)
            return
        for record in records:
            self._track(record.offset)
        write = report.line
        for line in lines.record_lines(
            batch,
            records,
            metadata=not opts.skip_record_metadata,
            parser=self.parser,
            legacy_crcs=legacy,
        ):
            write(line)

    def defect(self, defect: Defect, reread: DiskFile) -> None:
        """A damaged region; in text, the batch kafka-dump-log would print there comes first."""
        if not self.opts.json:
            batch = _entry_at(reread, defect)
            if batch is not None:
                self.batch(batch, crc_valid=batch.crc_valid)
        self.report.defect(self.path, defect, self.opts.json)

    def _track(self, offset: int) -> None:
        """kafka-dump-log's non-consecutive offset pairs (gaps are normal after compaction).

        Kafka keeps every pair; a compacted log can have millions, so past `MAX_PAIRS` only a
        count is kept and reported."""
        if self.last_offset != -1 and offset != self.last_offset + 1:
            if len(self.pairs) < MAX_PAIRS:
                self.pairs.append((self.last_offset, offset))
            else:
                self.pairs_dropped += 1
        self.last_offset = offset


def _records_defect(batch, e: FormatError) -> Defect:
    return Defect(e.kind, batch.position, batch.size, e.detail, batch.base_offset)


def _bytes(data) -> bytes | None:
    return None if data is None else bytes(data)


def _records(batch) -> list:
    """Records as kafka-dump-log iterates them: a legacy wrapper's inner CRCs are shown, not
    enforced (each record line says `isValid`)."""
    return batch.records() if batch.magic >= 2 else batch.records(check_crcs=False)


def _legacy_checksums(batch) -> list[tuple[bool, int]] | None:
    """(isValid, crc) of each record of a magic 0/1 entry, which kafka-dump-log prints.

    `format.legacy` does not expose its inner messages, so a wrapper's value is decompressed again
    here and its inner entries walked for their stored CRCs (only after `records()` accepted it).
    """
    if batch.magic >= 2:
        return None
    if not batch.codec:
        return [(batch.crc_valid, batch.crc)]
    msg = batch.raw[12:]
    p = 6 if batch.magic == 0 else 14
    key_length = _INT32.unpack_from(msg, p)[0]
    p += 4 + max(0, key_length)
    value_length = _INT32.unpack_from(msg, p)[0]
    value = msg[p + 4 : p + 4 + value_length]
    data = memoryview(decompress(batch.codec, value, magic=batch.magic))
    out: list[tuple[bool, int]] = []
    pos = 0
    while len(data) - pos >= 12:
        size = _OVERHEAD.unpack_from(data, pos)[1]
        inner = data[pos + 12 : pos + 12 + size]
        if len(inner) < size:
            break
        stored = _UINT32.unpack_from(inner)[0]
        out.append((crc32(inner[4:]) == stored, stored))
        pos += 12 + size
    return out


def _entry_at(f: DiskFile, defect: Defect):
    """The whole entry a damaged region starts with, if its declared size fits in the region:
    what kafka-dump-log would have printed there."""
    if defect.length < 26:  # the smallest legacy entry
        return None
    head = f.read_at(defect.position, 12)
    size = _OVERHEAD.unpack_from(head)[1] + 12 if len(head) == 12 else 0
    if not 26 <= size <= min(defect.length, _MAX_REREAD):
        return None
    raw = memoryview(f.read_at(defect.position, size))
    if len(raw) != size:
        return None
    magic = raw[16]
    try:
        if magic == 2:
            if size < RECORD_BATCH_OVERHEAD:
                return None
            return RecordBatch(raw, defect.position, HEADER.unpack_from(raw))
        if magic in (0, 1):
            entry = LegacyBatch.parse(raw, 0)
            entry.position = defect.position
            return entry
    except FormatError:
        return None
    return None


class _PrefixDisk:
    """The first `limit` bytes of a file, as kafka-dump-log's `--max-bytes` slice shows it.

    `LogScan` only opens the file it scans, so this shim needs only `open`."""

    def __init__(self, disk: Disk, limit: int) -> None:
        self.disk = disk
        self.limit = limit

    def open(self, path: str) -> _PrefixFile:
        return _PrefixFile(self.disk.open(path), self.limit)


class _PrefixFile:
    def __init__(self, f: DiskFile, limit: int) -> None:
        self.f = f
        self.limit = limit

    def size(self) -> int:
        return min(self.f.size(), self.limit)

    def read_into(self, position: int, buffer) -> int:
        room = max(0, self.limit - position)
        view = memoryview(buffer)[:room]
        return self.f.read_into(position, view) if room else 0

    def __enter__(self) -> _PrefixFile:
        return self

    def __exit__(self, *exc) -> None:
        self.f.close()
