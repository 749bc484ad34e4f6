"""The index rebuild: byte-identical to storage.index_builder, on checked and header-only reads."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from logrepair.format.batch import RecordBatch
from logrepair.format.batch_builder import build_batch
from logrepair.format.batch_layout import Record
from logrepair.recovery import indexes
from logrepair.recovery.indexes import rebuild
from logrepair.recovery.scan import scan_path
from logrepair.recovery.settings import Settings
from logrepair.storage.index_builder import build_indexes

from .builders import DISK


@settings(max_examples=60, deadline=None)
@given(
    interval=st.integers(0, 3000),
    batches=st.lists(
        st.tuples(st.integers(0, 3000), st.integers(1, 5), st.integers(-1, 10**6)), max_size=30
    ),
)
def test_the_scan_computes_the_bytes_of_the_storage_index_builder(
    tmp_path_factory, interval, batches
):
    """The indexes kafka mode writes from its scan pass, byte for byte those of `build_indexes`."""
    pdir = tmp_path_factory.mktemp("scan") / "t-0"
    pdir.mkdir()
    offset, raw = 100, []
    for size, count, ts in batches:
        records = [Record(offset + i, max(ts, 0), b"k", bytes(size), ()) for i in range(count)]
        raw.append(build_batch(records, base_offset=offset))
        offset += count
    log = pdir / "00000000000000000100.log"
    log.write_bytes(b"".join(raw) + bytes(7))  # a garbage tail: kafka mode rewrites the indexes
    seg = scan_path(DISK, str(pdir), Settings(index_interval_bytes=interval)).partitions[0]
    parsed = [RecordBatch.parse(b) for b in raw]
    expected = build_indexes(parsed, 100, interval, 2**31 - 8)
    assert seg.segments[0].kafka_indexes == expected
    assert rebuild(DISK, str(log), interval) == [
        (str(pdir / "00000000000000000100.index"), expected[0]),
        (str(pdir / "00000000000000000100.timeindex"), expected[1]),
    ]


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


def test_a_kept_batch_with_timestamp_zero_is_indexed_at_zero(tmp_path):
    """A batch Kafka keeps though the walker flags it (its CRC holds) is indexed from its header:
    a max timestamp of 0 is a timestamp, not "none"."""
    from logrepair.format.crc import crc32c

    first = bytearray(
        build_batch([Record(0, 0, b"k", b"v", ()), Record(1, 0, b"k", b"v", ())], base_offset=0)
    )
    first[57:61] = (3).to_bytes(4, "big")  # record count disagrees with the records
    first[17:21] = crc32c(bytes(first[21:])).to_bytes(4, "big")
    second = build_batch([Record(2, 0, b"k", bytes(200), ())], base_offset=2)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(bytes(first) + second)
    (_, offsets), (_, times) = rebuild(DISK, str(path), 0, verify_crc=True)
    assert times == (0).to_bytes(8, "big") + (1).to_bytes(4, "big")
