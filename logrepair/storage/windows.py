"""The windows a scan walks, each read ahead while the one before it is checked.

A file no larger than the scan's window is read in one go into one buffer. A larger one has two
buffers of half the window each: while the walker checks the window in one (in C, with the
interpreter's lock released), `DiskFile.read_ahead` reads the bytes after it into the end of the
other (on `OsFile`'s reader thread). The walker stops before the first batch that does not fit,
so the next window starts there: those carried bytes are copied in front of the bytes read ahead,
into the room the read left at the start of the buffer, and the two buffers swap.

A batch that does not fit that room (a quarter of a buffer), or one the walker needs more of than
was read, is read again from where the walk stopped, into the larger buffer, grown to the batch's
size where it is smaller and kept (the scan's peak memory is that batch either way); the spare
buffer then gets room for such a batch, up to half a window. Every read, ahead or not, goes
through the Disk: the simulator sees and faults each, and an error of a read ahead is raised when
the scan takes that window.
"""

from __future__ import annotations

from concurrent.futures import Future

from .disk import DiskFile


class Windows:
    """The windows of `f` from `position` to `file_size` (lowered where a read comes back short:
    the file shrank under the scan, and what is gone is its end)."""

    def __init__(self, f: DiskFile, position: int, file_size: int, window_size: int) -> None:
        self.file = f
        self.file_size = file_size
        half = max(1, window_size // 2)
        self._half = half
        self._read = max(1, half - half // 4)  # (the rest of a buffer is room for the carry)
        self._whole = file_size - position <= window_size
        self._buf = bytearray(max(0, file_size - position) if self._whole else half)
        self._spare: bytearray | None = None
        self._ahead: Future[int] | None = None
        self._ahead_at = 0  # where in the spare buffer the bytes read ahead begin
        self._ahead_want = 0
        self.start = position
        self.length = 0
        self._at = 0  # where in `_buf` the window begins

    def first(self) -> memoryview:
        """The first window (empty at the end of the file)."""
        want = len(self._buf) if self._whole else min(self._read, len(self._buf))
        got = self.file.read_into(self.start, memoryview(self._buf)[:want])
        if got < want:
            self.file_size = self.start + got
        self.length = got
        self._read_ahead()
        return memoryview(self._buf)[:got]

    def next(self, position: int, least: int) -> memoryview:
        """The window from `position` (where the walk stopped, in the current window or at its
        end), holding at least `least` bytes where the file has them. The caller holds no view of
        the current window any more (a buffer that must grow is freed first)."""
        end = self.start + self.length
        carry = end - position
        got = self._take_ahead(end)
        size = max(carry + got, min(least, self.file_size - position))
        spare, at = self._spare, self._ahead_at
        if got and spare is not None and carry <= at and at - carry + size <= len(spare):
            # The usual case: the carry goes into the room before the bytes read ahead.
            start = self._at + self.length - carry
            spare[at - carry : at] = memoryview(self._buf)[start : start + carry]
            self._buf, self._spare, self._at = spare, self._buf, at - carry
            filled = carry + got
        else:
            # A batch larger than that room, or one the walker needs more of than was read: this
            # window is read again, in one buffer that holds it (as a scan without read ahead
            # reads), and the spare gets room for such a batch next time, up to half a window.
            if spare is not None and len(spare) > len(self._buf):
                self._buf, self._spare = spare, self._buf  # (the larger of the two)
            if self._spare is not None and carry > at and carry <= self._half:
                self._spare = bytearray(carry + self._read)
            if len(self._buf) < size:
                self._buf = bytearray()
                self._buf = bytearray(size)
            self._at = filled = 0
        if filled < size:  # (what was not read ahead, now)
            view = memoryview(self._buf)[self._at + filled : self._at + size]
            n = self.file.read_into(position + filled, view)
            if n < size - filled:
                self.file_size = position + filled + n
                size = filled + n
        self.start, self.length = position, size
        self._read_ahead()
        return memoryview(self._buf)[self._at : self._at + size]

    def close(self) -> None:
        """Drops a read ahead the scan will not take (it ended early): its error, if any, is of
        bytes nobody asked for."""
        ahead, self._ahead = self._ahead, None
        if ahead is not None and not ahead.cancel():
            ahead.exception()  # (waited for: the buffer is not freed under a read)

    def _read_ahead(self) -> None:
        """Begins reading the bytes after the window into the end of the spare buffer."""
        end = self.start + self.length
        want = min(self._read, self.file_size - end)
        if self._whole or want <= 0:
            return
        if self._spare is None:
            self._spare = bytearray(self._half)
        at = len(self._spare) - want
        self._ahead = self.file.read_ahead(end, memoryview(self._spare)[at : at + want])
        self._ahead_at, self._ahead_want = at, want

    def _take_ahead(self, end: int) -> int:
        """The count read ahead at `end` (0 when nothing was), once the read is done."""
        ahead, self._ahead = self._ahead, None
        if ahead is None:
            return 0
        got = ahead.result()
        if got < self._ahead_want:
            self.file_size = end + got
        return got
