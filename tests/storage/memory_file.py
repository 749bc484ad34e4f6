"""A DiskFile in memory, for index tests that append thousands of entries."""

from __future__ import annotations

from logrepair.storage.disk import DiskFile


class MemoryFile(DiskFile):
    """Sparse past what was written: a preallocated 10 MiB index costs only its entries' bytes."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._data = bytearray()
        self._size = 0

    def getvalue(self) -> bytes:
        return bytes(self._data) + bytes(self._size - len(self._data))

    def size(self) -> int:
        return self._size

    def read_at(self, position: int, length: int) -> bytes:
        end = min(position + length, self._size)
        if end <= position:
            return b""
        stored = bytes(self._data[position:end])
        return stored + bytes(end - position - len(stored))

    def read_into(self, position: int, buffer: bytearray | memoryview) -> int:
        data = self.read_at(position, len(buffer))
        memoryview(buffer)[: len(data)] = data
        return len(data)

    def write_at(self, position: int, data) -> None:
        data = bytes(data)
        end = position + len(data)
        if len(self._data) < end:
            self._data.extend(bytes(end - len(self._data)))
        self._data[position:end] = data
        self._size = max(self._size, end)

    def append(self, data) -> int:
        position = self._size
        self.write_at(position, data)
        return position

    def truncate(self, size: int) -> None:
        del self._data[size:]
        self._size = size

    def fsync(self) -> None:
        """Nothing to make durable: the bytes live only as long as the test."""

    def close(self) -> None:
        """Keeps the bytes readable by `getvalue` after the index is closed."""
