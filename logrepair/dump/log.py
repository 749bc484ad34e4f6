"""The `.log` dump (spec fmt §10.3): every batch as kafka-dump-log prints it, and every damaged
region as a defect, after which the dump goes on.

The file is read through `storage.scan.LogScan` (a bounded window, so memory stays flat whatever
the file's size) with resync, so one corrupt batch does not hide the rest of the segment, and a
damaged region is one defect however many windows it spans; `--max-bytes` is the scan's end. Where
kafka-dump-log still shows a batch whose CRC fails (`isvalid: false`), so does this dump, followed
by the defect line; with `--json` such a region is one defect object, as the dump contract says.
"""

from __future__ import annotations

import os.path
import struct

from ..decoders import format_offsets_record, format_transaction_record
from ..format.batch import RecordBatch
from ..format.batch_layout import HEADER, RECORD_BATCH_OVERHEAD
from ..format.errors import Defect, FormatError
from ..format.legacy import LegacyBatch
from ..storage.disk import Disk, DiskFile
from ..storage.scan import DEFAULT_MAX_BATCH_SIZE, LogScan
from . import json_lines, lines
from .report import DEFAULT_MAX_BYTES, DumpOptions, DumpReport

_OVERHEAD = struct.Struct(">qi")
MAX_PAIRS = 100_000

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
    dumper = _LogDumper(path, opts, report)
    scan = LogScan(disk, path, end=limit, resync=True, check_offsets=False)
    with disk.open(path) as reread:
        last: Defect | None = None
        for item in scan:
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


class _LogDumper:
    def __init__(self, path: str, opts: DumpOptions, report: DumpReport) -> None:
        self.path = path
        self.opts = opts
        self.report = report
        self.parser = _PARSERS[opts.decoder] if opts.print_data else None
        self.json_lines = json_lines.BatchLines(path, opts.deep, self.parser)
        self.last_offset = -1
        self.pairs: list[tuple[int, int]] = []
        self.pairs_dropped = 0

    def batch(self, batch, *, crc_valid: bool) -> None:
        """Prints one batch and, in a deep iteration, its records."""
        opts, report = self.opts, self.report
        if opts.json:
            try:
                line = self.json_lines.line(batch)
            except FormatError as e:
                report.defect(self.path, _records_defect(batch, e), True)
                return
            if opts.deep:
                self._track(batch.records())
            report.json_lines(line)
            return
        report.line(lines.batch_line(batch, crc_valid))
        if not opts.deep:
            return
        try:
            records = _records(batch)
            legacy = batch.record_crcs() if batch.magic < 2 else None
        except FormatError as e:
            if crc_valid:  # a CRC-failed batch gets its own defect line next: one is enough
                report.defect(self.path, _records_defect(batch, e), False)
            return
        self._track(records)
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

    def _track(self, records: list) -> None:
        """kafka-dump-log's non-consecutive offset pairs (gaps are normal after compaction).

        Kafka keeps every pair; a compacted log can have millions, so past `MAX_PAIRS` only a
        count is kept and reported."""
        last = self.last_offset
        for record in records:
            offset = record[0]
            if offset != last + 1 and last != -1:
                if len(self.pairs) < MAX_PAIRS:
                    self.pairs.append((last, offset))
                else:
                    self.pairs_dropped += 1
            last = offset
        self.last_offset = last


def _records_defect(batch, e: FormatError) -> Defect:
    return Defect(e.kind, batch.position, batch.size, e.detail, batch.base_offset)


def _records(batch) -> list:
    """Records as kafka-dump-log iterates them: a legacy wrapper's inner CRCs are shown, not
    enforced (each record line says `isValid`)."""
    return batch.records() if batch.magic >= 2 else batch.records(check_crcs=False)


def _entry_at(f: DiskFile, defect: Defect):
    """The whole entry a damaged region starts with, if its declared size fits in the region:
    what kafka-dump-log would have printed there."""
    if defect.length < 26:  # the smallest legacy entry
        return None
    head = f.read_at(defect.position, 12)
    size = _OVERHEAD.unpack_from(head)[1] + 12 if len(head) == 12 else 0
    if not 26 <= size <= min(defect.length, DEFAULT_MAX_BATCH_SIZE):
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
