"""Every batch of a partition's log, read through `Log.read` (the broker's own read path)."""

from __future__ import annotations

from collections.abc import Iterator

from logrepair.format.batch import RecordBatch
from logrepair.format.walker import Walker
from logrepair.storage.log import Log

READ_BYTES = 4 << 20


def log_batches(log: Log, start: int | None = None) -> Iterator[RecordBatch]:
    """The batches from the one holding `start` (default: the log start) to the log end. Stops at
    anything that is not a whole batch (a served log holds none) rather than loop on it."""
    offset = log.log_start_offset if start is None else max(start, log.log_start_offset)
    while offset < log.log_end_offset:
        data = log.read(offset, READ_BYTES).data
        moved = False
        for item in Walker(data, file_size=len(data)):
            if not isinstance(item, RecordBatch):
                return
            offset, moved = item.next_offset, True
            yield item
        if not moved:
            return
