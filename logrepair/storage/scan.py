"""A windowed scan of one `.log` file through a Disk: memory flat in the file's size.

One buffer (8 MiB by default) is filled with `DiskFile.read_into` and handed to the format layer's
`Walker`, which stops before the first batch that does not fit; the window then slides to
`walker.position`. The buffer grows only for a single batch larger than it, never beyond what is
left of the file (a length field pointing past the end is the walker's `torn_tail`/`bad_length`,
not an allocation), and shrinks back after it.

Every batch and Defect carries its absolute file position. A yielded batch is a view into the
window: its `raw` (and anything read from it lazily) is valid only until the next item is requested.
Copy what must outlive that (`bytes(batch.raw)`).
"""

from __future__ import annotations

from collections.abc import Iterator

from ..format.batch import RecordBatch
from ..format.errors import Defect
from ..format.walker import Walker
from .disk import Disk

DEFAULT_WINDOW_SIZE = 8 << 20


class LogScan:
    """Iterate for batches and defects, or call `validate()` for defects only (the fast path).

    After the iteration, `batches` counts the valid batches, `position` is where the walk ended
    (the file size when every byte was accounted for) and `expected_offset` is the offset the next
    batch would have had."""

    def __init__(
        self,
        disk: Disk,
        path: str,
        *,
        window_size: int = DEFAULT_WINDOW_SIZE,
        start: int = 0,
        resync: bool = False,
        check_offsets: bool = True,
        expected_offset: int | None = None,
        max_batch_size: int | None = None,
        deep: bool = False,
        max_output: int | None = None,
    ) -> None:
        if window_size < 1:
            raise ValueError(f"window_size must be positive: {window_size}")
        self.disk = disk
        self.path = path
        self.window_size = window_size
        self.position = start
        self.expected_offset = expected_offset
        self.batches = 0
        self.file_size: int | None = None
        self._walker_options = {
            "resync": resync,
            "check_offsets": check_offsets,
            "max_batch_size": max_batch_size,
            "deep": deep,
            "max_output": max_output,
        }

    def __iter__(self) -> Iterator[RecordBatch | Defect]:
        return self._scan(emit_batches=True)

    def validate(self) -> Iterator[Defect]:
        return self._scan(emit_batches=False)

    def _scan(self, emit_batches: bool) -> Iterator:
        with self.disk.open(self.path) as f:
            file_size = f.size()
            self.file_size = file_size
            buf = bytearray(min(self.window_size, max(0, file_size - self.position)))
            while self.position < file_size:
                want = min(len(buf), file_size - self.position)
                got = f.read_into(self.position, memoryview(buf)[:want])
                if got < want:  # the file shrank under the scan: what is gone is its end
                    file_size = self.file_size = self.position + got
                walker = Walker(
                    memoryview(buf)[:got],
                    file_position=self.position,
                    file_size=file_size,
                    expected_offset=self.expected_offset,
                    **self._walker_options,
                )
                start = self.position
                yield from walker if emit_batches else walker.validate()
                self.batches += walker.batches
                self.expected_offset = walker.expected_offset
                self.position = walker.position
                if walker.done:
                    break
                buf = self._next_buffer(buf, walker, start, file_size)

    def _next_buffer(self, buf: bytearray, walker: Walker, start: int, file_size: int) -> bytearray:
        """The buffer for the next window: grown for one big batch, else back to the window size."""
        remaining = file_size - self.position
        needed = max(walker.needed, 1)
        if self.position == start and needed <= len(buf):
            # No progress, though the walker had what it asked for: give it twice the bytes.
            if len(buf) >= remaining:
                raise RuntimeError(f"scan of {self.path} made no progress at {self.position}")
            needed = 2 * len(buf)
        size = min(max(needed, self.window_size), remaining)
        return buf if size == len(buf) else bytearray(size)
