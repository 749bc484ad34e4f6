"""A windowed scan of one `.log` file through a Disk: memory flat in the file's size.

A window of the file (8 MiB by default, or two buffers of half that each for a larger file, the
next window read ahead while one is walked: `windows.Windows`) is handed to the format layer's
`Walker`, which stops before the first batch that does not fit; the next window starts at
`walker.position`. A buffer grows only for a single batch larger than it, never beyond what is
left of the file (a length field pointing past the end is the walker's `torn_tail`/`bad_length`,
not an allocation) nor beyond `max_batch_size`.

With resync, a damaged region that runs past a window is carried into the next one
(`Walker(carry_damage=True)`), so it is one defect whatever the window size: a scan yields what one
walk over the whole file would.

Every batch and Defect carries its absolute file position. A yielded batch is a view into the
window: its `raw` (and anything read from it lazily) is valid only until the next item is requested.
Copy what must outlive that (`bytes(batch.raw)`).
"""

from __future__ import annotations

from collections.abc import Iterator

from ..format.batch import RecordBatch
from ..format.errors import Defect
from ..format.walker import QuietRuns, Walker
from .disk import Disk
from .windows import Windows

DEFAULT_WINDOW_SIZE = 8 << 20

# The largest batch a scan reads into memory; one that claims more is a `bad_length` defect. Kafka's
# own file scan has no maximum, so a junk length field would otherwise make a scan allocate and read
# up to 2 GiB. 64 MiB is 64 times Kafka's default `message.max.bytes` (1 MiB + 12) and above what
# deployments raise it to in practice; a log with larger batches needs `max_batch_size` raised.
DEFAULT_MAX_BATCH_SIZE = 64 << 20


class LogScan:
    """Iterate for batches and defects, or call `validate()` for defects only (the fast path).

    The scan covers `[start, end)` of the file (`end` None: to its end); a file cut at `end` is seen
    as one that ends there. `max_batch_size` None lifts the cap on batch sizes (as Kafka's file scan
    has none).

    After the iteration, `batches` counts the valid batches, `position` is where the walk ended
    (the end of the scanned range when every byte was accounted for) and `expected_offset` is the
    offset the next batch would have had.

    `quiet_runs` goes to the walker: batches it takes are counted, not yielded."""

    def __init__(
        self,
        disk: Disk,
        path: str,
        *,
        window_size: int = DEFAULT_WINDOW_SIZE,
        start: int = 0,
        end: int | None = None,
        resync: bool = False,
        check_offsets: bool = True,
        expected_offset: int | None = None,
        max_batch_size: int | None = DEFAULT_MAX_BATCH_SIZE,
        deep: bool = False,
        max_output: int | None = None,
        quiet_runs: QuietRuns | None = None,
    ) -> None:
        if window_size < 1:
            raise ValueError(f"window_size must be positive: {window_size}")
        if end is not None and end < 0:
            raise ValueError(f"end must not be negative: {end}")
        self.disk = disk
        self.path = path
        self.window_size = window_size
        self.position = start
        self.end = end
        self.expected_offset = expected_offset
        self.batches = 0
        self.file_size: int | None = None
        self._walker_options = {
            "resync": resync,
            "check_offsets": check_offsets,
            "max_batch_size": max_batch_size,
            "deep": deep,
            "max_output": max_output,
            "carry_damage": resync,
            "quiet_runs": quiet_runs,
        }

    def __iter__(self) -> Iterator[RecordBatch | Defect]:
        return self._scan(emit_batches=True)

    def validate(self) -> Iterator[Defect]:
        return self._scan(emit_batches=False)

    def _scan(self, emit_batches: bool) -> Iterator:
        with self.disk.open(self.path) as f:
            file_size = f.size() if self.end is None else min(f.size(), self.end)
            windows = Windows(f, self.position, file_size, self.window_size)
            try:
                yield from self._walk(windows, emit_batches)
            finally:
                windows.close()

    def _walk(self, windows: Windows, emit_batches: bool) -> Iterator:
        """Walks each window; the next is read while this one is walked (`Windows`)."""
        self.file_size = windows.file_size
        if self.position >= self.file_size:
            return
        view = windows.first()
        open_damage: Defect | None = None
        while True:
            self.file_size = windows.file_size
            walker = Walker(
                view,
                file_position=self.position,
                file_size=windows.file_size,
                expected_offset=self.expected_offset,
                open_damage=open_damage,
                **self._walker_options,
            )
            yield from walker if emit_batches else walker.validate()
            self.batches += walker.batches
            self.expected_offset = walker.expected_offset
            self.position = walker.position
            open_damage = walker.open_damage
            if walker.done:
                break
            least = self._least(walker, windows)
            del walker, view  # (a buffer that grows for a big batch is freed first)
            view = windows.next(self.position, least)

    def _least(self, walker: Walker, windows: Windows) -> int:
        """The bytes from where the walk stopped that the next window must hold: what the walker
        asked for, or twice the window when it made no progress though it had what it asked."""
        got = windows.length
        needed = max(walker.needed, 1)
        if self.position == windows.start and needed <= got:
            if got >= windows.file_size - self.position:
                raise RuntimeError(f"scan of {self.path} made no progress at {self.position}")
            needed = 2 * got
        return needed
