"""The index rebuild: byte-identical to storage.index_builder, on checked and header-only reads."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from logrepair.format.batch import Record, build_batch
from logrepair.recovery import indexes
from logrepair.recovery.indexes import RecoveryIndexes, rebuild
from logrepair.storage.index_builder import build_indexes

from .builders import DISK


class _B:
    def __init__(self, size: int, last_offset: int, max_timestamp: int) -> None:
        self.size, self.last_offset, self.max_timestamp = size, last_offset, max_timestamp


@settings(max_examples=150, deadline=None)
@given(
    base=st.integers(0, 2**40),
    interval=st.integers(0, 5000),
    batches=st.lists(
        st.tuples(st.integers(61, 9000), st.integers(1, 20), st.integers(-1, 10**6)), max_size=60
    ),
)
def test_same_bytes_as_the_storage_index_builder(base, interval, batches):
    offset = base
    parsed = []
    for size, count, ts in batches:
        offset += count
        parsed.append(_B(size, offset - 1, ts))
    fast = RecoveryIndexes(base, interval)
    for b in parsed:
        fast.add(b.size, b.last_offset, b.max_timestamp)
    assert fast.finish() == build_indexes(parsed, base, interval, 2**31 - 8)


@settings(max_examples=30, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 40_000), min_size=1, max_size=40), interval=st.integers(0, 9000)
)
def test_header_only_rebuild_equals_the_checked_one(tmp_path_factory, sizes, interval):
    """Batches larger than the read window included: only headers have to fit in it."""
    path = tmp_path_factory.mktemp("idx") / "00000000000000000100.log"
    offset, data = 100, bytearray()
    for n, size in enumerate(sizes):
        data += build_batch([Record(offset, 1000 + n, b"k", bytes(size), ())], base_offset=offset)
        offset += 1
    path.write_bytes(bytes(data))
    checked = rebuild(DISK, str(path), interval, verify_crc=True)
    window = indexes._WINDOW
    indexes._WINDOW = 1000  # most batches run past the window
    try:
        assert rebuild(DISK, str(path), interval, verify_crc=False) == checked
    finally:
        indexes._WINDOW = window
