"""The transaction index (`.txnindex`): 34-byte aborted-transaction entries (spec fmt §7.1).

Kafka's `TransactionIndex` and `AbortedTxn`: no header, no preallocation, created on the first
append. Reading keeps Kafka's quirks: a partial trailing entry is ignored, and the version check
looks at the first byte only, as a signed byte.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from .abstract_index import CorruptIndexError, IndexFileError
from .disk import Disk, DiskFile

ENTRY_SIZE = 34
CURRENT_VERSION = 0
_ENTRY = struct.Struct(">hqqqq")
_ITER_CHUNK_ENTRIES = 2048


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    version: int = CURRENT_VERSION

    def encode(self) -> bytes:
        return _ENTRY.pack(
            self.version, self.producer_id, self.first_offset, self.last_offset,
            self.last_stable_offset,
        )  # fmt: skip

    @classmethod
    def decode(cls, raw) -> AbortedTxn:
        """`version` is the first byte as a signed byte: all Kafka's `AbortedTxn.version()` reads."""
        _, producer_id, first, last, lso = _ENTRY.unpack(raw)
        return cls(producer_id, first, last, lso, int.from_bytes(raw[:1], "big", signed=True))

    def __str__(self) -> str:
        return (
            f"AbortedTxn(version={self.version}, producerId={self.producer_id}, "
            f"firstOffset={self.first_offset}, lastOffset={self.last_offset}, "
            f"lastStableOffset={self.last_stable_offset})"
        )


class TransactionIndex:
    """The aborted transactions of one segment, whose base offset is `start_offset`."""

    def __init__(self, disk: Disk, path: str, start_offset: int) -> None:
        self.disk = disk
        self.path = path
        self.start_offset = start_offset
        self._file: DiskFile | None = None
        # Where the next entry goes and the last offset appended; read from the file on first use.
        self._tail: tuple[int, int | None] | None = None

    @property
    def last_offset(self) -> int | None:
        return self._read_tail()[1]

    def append(self, txn: AbortedTxn) -> None:
        """Appends after the last whole entry; `last_offset` must grow.

        Kafka forgets the last offset on reopen and appends at the byte end; this index recalls it
        from the file and writes over a torn trailing entry, so a reopened index stays sorted."""
        entries, last_offset = self._read_tail()
        if last_offset is not None and last_offset >= txn.last_offset:
            raise IndexFileError(
                "The last offset of appended transactions must increase sequentially, but "
                f"{txn.last_offset} is not greater than current last offset {last_offset} "
                f"of index {self.path}"
            )
        self._writable_file().write_at(entries * ENTRY_SIZE, txn.encode())
        self._tail = (entries + 1, txn.last_offset)

    def iter_entries(self) -> Iterator[AbortedTxn]:
        """Whole entries from the start; raises CorruptIndexError at an entry of an unknown version."""
        for _, txn in self._iter_with_positions():
            yield txn

    def sanity_check(self) -> None:
        for txn in self.iter_entries():
            if txn.last_offset < self.start_offset:
                raise CorruptIndexError(
                    f"Last offset of aborted transaction {txn} in index {self.path} is less than "
                    f"start offset {self.start_offset}"
                )

    def truncate_to(self, offset: int) -> None:
        """Cuts at the first entry with `last_offset ≥ offset`; nothing changes if there is none."""
        last: int | None = None
        for n, (position, txn) in enumerate(self._iter_with_positions()):
            if txn.last_offset >= offset:
                self._writable_file().truncate(position)
                self._tail = (n, last)
                return
            last = txn.last_offset

    def reset(self) -> None:
        """Empties the file if it exists (recovery does this before replaying the segment)."""
        if self._file is not None or self.disk.exists(self.path):
            self._writable_file().truncate(0)
        self._tail = (0, None)

    def flush(self) -> None:
        if self._file is not None:
            self._file.fsync()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def _read_tail(self) -> tuple[int, int | None]:
        if self._tail is None:
            entries, last_offset = 0, None
            if self._file is not None or self.disk.exists(self.path):
                with self.disk.open(self.path) as f:
                    entries = f.size() // ENTRY_SIZE
                    if entries:
                        raw = f.read_at((entries - 1) * ENTRY_SIZE, ENTRY_SIZE)
                        last_offset = AbortedTxn.decode(raw).last_offset
            self._tail = (entries, last_offset)
        return self._tail

    def _writable_file(self) -> DiskFile:
        if self._file is None:
            self._file = self.disk.open(self.path, create=True)
        return self._file

    def _iter_with_positions(self) -> Iterator[tuple[int, AbortedTxn]]:
        if self._file is None and not self.disk.exists(self.path):
            return
        with self.disk.open(self.path) as f:
            size = f.size()
            position = 0
            while size - position >= ENTRY_SIZE:
                count = min(_ITER_CHUNK_ENTRIES, (size - position) // ENTRY_SIZE)
                chunk = f.read_at(position, count * ENTRY_SIZE)
                for i in range(len(chunk) // ENTRY_SIZE):
                    txn = AbortedTxn.decode(chunk[i * ENTRY_SIZE : (i + 1) * ENTRY_SIZE])
                    if txn.version > CURRENT_VERSION:
                        raise CorruptIndexError(
                            f"Unexpected aborted transaction version {txn.version} in transaction "
                            f"index {self.path}, current version is {CURRENT_VERSION}"
                        )
                    yield position, txn
                    position += ENTRY_SIZE
                if len(chunk) < count * ENTRY_SIZE:
                    return
