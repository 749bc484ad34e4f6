"""The segment walker: each defect kind, resync, and scanning through a bounded window."""

from __future__ import annotations

import struct
import zlib

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from logrepair.format.batch import RecordBatch
from logrepair.format.batch_builder import build_batch
from logrepair.format.batch_layout import Record
from logrepair.format.crc import crc32c
from logrepair.format.damaged_regions import _candidate_patterns
from logrepair.format.errors import Defect
from logrepair.format.walker import CRC_VALID_KINDS, Walker


def make_segment(n: int = 6, base: int = 0, value_size: int = 30) -> tuple[bytes, list[int]]:
    """n batches of 1-3 records with continuing offsets; returns (bytes, batch start positions)."""
    out = bytearray()
    starts = []
    offset = base
    for i in range(n):
        records = [
            Record(offset + j, 1000 + i, b"k%d" % j, bytes([i]) * value_size)
            for j in range(1 + i % 3)
        ]
        starts.append(len(out))
        out += build_batch(records, base_offset=offset)
        offset += len(records)
    return bytes(out), starts


def summary(items) -> list[tuple]:
    return [
        (d.kind, d.position, d.length) if isinstance(d, Defect) else ("batch", d.position, d.size)
        for d in items
    ]


def exact(items) -> list:
    """Defects as they are (every field), batches by where they lie."""
    return [d if isinstance(d, Defect) else ("batch", d.position, d.size) for d in items]


def assert_accounted(items, start: int, end: int) -> None:
    """Items tile [start, end) exactly: every byte is in one batch or one defect."""
    pos = start
    for item in items:
        assert item.position == pos, summary(items)
        pos += item.length if isinstance(item, Defect) else item.size
    assert pos == end


def with_crc(data: bytearray, at: int) -> None:
    length = struct.unpack_from(">i", data, at + 8)[0]
    struct.pack_into(">I", data, at + 17, crc32c(memoryview(data)[at + 21 : at + 12 + length]))


def test_clean_segment() -> None:
    data, starts = make_segment()
    walker = Walker(data)
    items = list(walker)
    assert [b.position for b in items] == starts
    assert all(isinstance(b, RecordBatch) and b.crc_valid for b in items)
    assert walker.done and walker.position == len(data) and walker.batches == 6
    assert walker.expected_offset == items[-1].last_offset + 1
    validator = Walker(data)
    assert list(validator.validate()) == [] and validator.batches == 6 and validator.done


def test_empty_buffer() -> None:
    walker = Walker(b"")
    assert list(walker) == [] and walker.done


@pytest.mark.parametrize("resync", [False, True])
def test_torn_tail(resync: bool) -> None:
    data, starts = make_segment()
    cut = data[:-10]
    items = list(Walker(cut, resync=resync))
    assert summary(items)[-1] == ("torn_tail", starts[-1], len(cut) - starts[-1])
    assert_accounted(items, 0, len(cut))


@pytest.mark.parametrize("resync", [False, True])
@pytest.mark.parametrize("magic", [0, 1, 2])
def test_a_cut_header_is_a_torn_tail_only_at_an_offset_that_could_be_next(resync, magic) -> None:
    """Junk whose magic byte happens to be 0-2 (1 in 85 random tails) is not a write cut short:
    a torn batch holds records (a repair that removes it loses them), junk holds none."""
    data, _ = make_segment()  # next offset 12
    for base, kind in [
        (12, "torn_tail"),
        (40, "torn_tail"),
        (11, "garbage_tail"),
        (-5, "garbage_tail"),
    ]:
        head = struct.pack(">qib", base, 5000, magic) + bytes(60)
        items = list(Walker(data + head, resync=resync))
        assert summary(items)[-1] == (kind, len(data), len(head)), (base, items[-1].detail)
        if kind == "garbage_tail":
            assert "where the next offset is 12" in items[-1].detail


@pytest.mark.parametrize("resync", [False, True])
def test_zero_filled_tail(resync: bool) -> None:
    data, _ = make_segment()
    items = list(Walker(data + bytes(4096), resync=resync))
    assert summary(items)[-1] == ("garbage_tail", len(data), 4096)


@pytest.mark.parametrize("tail", [b"\x00" * 17, b"\x01", b"junk junk junk!!!"])
def test_up_to_17_trailing_bytes_are_garbage(tail: bytes) -> None:
    data, _ = make_segment()
    items = list(Walker(data + tail))
    assert summary(items)[-1] == ("garbage_tail", len(data), len(tail))
    assert "trailing bytes" in items[-1].detail


def test_a_short_prefix_of_the_next_header_is_a_torn_tail() -> None:
    data, _ = make_segment()
    nxt = build_batch([Record(100, 0, None, b"x")], base_offset=100)
    # The segment's next offset is 12: a header for offset 100 is not its continuation.
    assert summary(list(Walker(data + nxt[:12])))[-1][0] == "garbage_tail"
    torn = data + build_batch([Record(12, 0, None, b"x")], base_offset=12)[:12]
    assert summary(list(Walker(torn)))[-1] == ("torn_tail", len(data), 12)


@pytest.mark.parametrize("resync", [False, True])
def test_crc_mismatch(resync: bool) -> None:
    data, starts = make_segment()
    bad = bytearray(data)
    bad[starts[2] + 70] ^= 0x40
    items = list(Walker(bytes(bad), resync=resync))
    assert_accounted(items, 0, len(bad))
    defect = items[2]
    assert defect.kind == "crc_mismatch" and defect.position == starts[2]
    assert defect.detail.startswith("Record is corrupt (stored crc = ")
    assert defect.offset == items[1].last_offset + 1
    if resync:
        assert defect.length == starts[3] - starts[2]
        assert [i.position for i in items[3:]] == starts[3:]
    else:
        assert defect.length == len(bad) - starts[2] and len(items) == 3


@pytest.mark.parametrize(
    ("size", "message"),
    [
        (0, "smaller than minimum record overhead (14)"),
        (30, "smaller than the minimum allowed overhead 61"),
    ],
)
def test_bad_length(size: int, message: str) -> None:
    data, starts = make_segment()
    bad = bytearray(data)
    struct.pack_into(">i", bad, starts[3] + 8, size)
    items = list(Walker(bytes(bad), resync=True))
    assert_accounted(items, 0, len(bad))
    assert summary(items)[3] == ("bad_length", starts[3], starts[4] - starts[3])
    assert message in items[3].detail
    assert [i.position for i in items[4:]] == starts[4:]


def test_length_past_the_end_with_valid_batches_after_is_bad_length() -> None:
    data, starts = make_segment()
    bad = bytearray(data)
    struct.pack_into(">i", bad, starts[1] + 8, 10**6)
    items = list(Walker(bytes(bad), resync=True))
    assert summary(items)[1] == ("bad_length", starts[1], starts[2] - starts[1])
    # Without resync the walk stops there, and names the damage from its own bytes only.
    without_resync = list(Walker(bytes(bad)))
    assert summary(without_resync)[1] == ("torn_tail", starts[1], len(bad) - starts[1])


def test_max_batch_size() -> None:
    data, starts = make_segment()
    items = list(Walker(data, max_batch_size=100))
    assert isinstance(items[0], RecordBatch) and items[0].size <= 100
    assert (
        items[1].kind == "bad_length"
        and "exceeds the largest allowable message size (100)" in items[1].detail
    )


@pytest.mark.parametrize("magic", [3, 0x7F, 0x80 | 5])
def test_bad_magic_resyncs_to_the_next_batch(magic: int) -> None:
    data, starts = make_segment()
    bad = bytearray(data)
    bad[starts[4] + 16] = magic
    items = list(Walker(bytes(bad), resync=True))
    assert summary(items)[4] == ("bad_magic", starts[4], starts[5] - starts[4])
    assert "Invalid magic found in record" in items[4].detail


def test_junk_after_the_last_batch_is_garbage() -> None:
    data, _ = make_segment()
    junk = bytes(range(7, 250))
    for resync in (False, True):
        items = list(Walker(data + junk, resync=resync))
        assert summary(items)[-1] == ("garbage_tail", len(data), len(junk))


def test_resync_over_an_inserted_region() -> None:
    data, starts = make_segment()
    hole = bytes(5000) + bytes(range(256)) * 3
    damaged = data[: starts[3]] + hole + data[starts[3] :]
    items = list(Walker(damaged, resync=True))
    assert_accounted(items, 0, len(damaged))
    assert summary(items)[3] == ("bad_length", starts[3], len(hole))
    assert "zero-filled" in items[3].detail and f"{len(hole)} bytes skipped" in items[3].detail
    assert sum(isinstance(i, RecordBatch) for i in items) == 6


def test_resync_skips_a_stale_batch_whose_offsets_do_not_continue() -> None:
    data, starts = make_segment()
    stale = data[starts[0] : starts[1]]
    junk = b"\xff" * 40
    damaged = data[: starts[3]] + junk + stale + data[starts[3] :]
    items = list(Walker(damaged, resync=True))
    assert items[3].position == starts[3] and items[3].length == len(junk) + len(stale)
    assert isinstance(items[4], RecordBatch) and items[4].position == starts[3] + len(junk) + len(
        stale
    )


def test_offset_regression_replaces_the_batch() -> None:
    data, starts = make_segment()
    dup = data[starts[1] : starts[2]]
    damaged = data[: starts[3]] + dup + data[starts[3] :]
    items = list(Walker(damaged))
    assert summary(items)[3] == ("offset_regression", starts[3], len(dup))
    assert "offset_regression" in CRC_VALID_KINDS
    assert [i.kind for i in items if isinstance(i, Defect)] == ["offset_regression"]
    assert [i for i in Walker(damaged, check_offsets=False) if isinstance(i, Defect)] == []


def test_expected_offset_from_a_previous_segment() -> None:
    data, _ = make_segment(base=100)
    assert isinstance(next(iter(Walker(data, expected_offset=100))), RecordBatch)
    assert next(iter(Walker(data, expected_offset=101))).kind == "offset_regression"


def test_record_count_beyond_the_offset_range() -> None:
    data = bytearray(build_batch([Record(0, 0, None, b"x")], base_offset=0))
    struct.pack_into(">i", data, 57, 5)
    with_crc(data, 0)
    (item,) = Walker(bytes(data))
    assert item.kind == "record_count_mismatch" and item.length == len(data)


def test_deep_walk_reports_invalid_records() -> None:
    data, starts = make_segment()
    bad = bytearray(data)
    bad[starts[2] + 61] = 0x7E  # first record's length: 63, past its batch
    with_crc(bad, starts[2])
    shallow = list(Walker(bytes(bad)))
    assert all(isinstance(i, RecordBatch) for i in shallow)
    deep = list(Walker(bytes(bad), deep=True))
    assert summary(deep)[2] == ("invalid_records", starts[2], starts[3] - starts[2])
    assert "Invalid record size" in deep[2].detail
    assert all(isinstance(i, RecordBatch) for i in deep[3:])
    assert [d.kind for d in Walker(bytes(bad), deep=True).validate()] == ["invalid_records"]


def test_file_size_shorter_than_the_buffer() -> None:
    data, starts = make_segment()
    walker = Walker(data, file_size=starts[2])
    assert [i.position for i in walker] == starts[:2] and walker.done


def scan(data: bytes, window: int, **kw) -> list:
    """A storage-style scan: a bounded window slid along the file, grown only when a batch needs it,
    carrying the expected offset (and, with `carry_damage`, an open damaged region) across."""
    items: list = []
    pos = 0
    expected = None
    open_damage = None
    while pos < len(data):
        size = window
        while True:
            walker = Walker(
                memoryview(data)[pos : pos + size],
                file_position=pos,
                file_size=len(data),
                expected_offset=expected,
                open_damage=open_damage,
                **kw,
            )
            items += list(walker)
            open_damage = walker.open_damage
            if walker.position > pos or walker.done:
                break
            assert walker.needed > min(size, len(data) - pos)  # stopped only for lack of bytes
            size = max(size * 2, walker.needed)
        expected = walker.expected_offset
        pos = walker.position
    assert open_damage is None
    return items


@pytest.mark.parametrize("window", [17, 61, 100, 333, 4096])
def test_window_scan_matches_a_whole_buffer_walk(window: int) -> None:
    data, starts = make_segment(12)
    items = scan(data, window)
    assert [i.position for i in items] == starts and all(isinstance(i, RecordBatch) for i in items)


def test_window_stops_before_a_batch_that_does_not_fit() -> None:
    data, starts = make_segment()
    walker = Walker(memoryview(data)[: starts[2] + 30], file_size=len(data))
    assert [i.position for i in walker] == starts[:2]
    assert walker.position == starts[2] and not walker.done
    assert walker.needed == starts[3] - starts[2]


def test_window_scan_with_damage_accounts_for_every_byte() -> None:
    data, starts = make_segment(10)
    damaged = (
        data[: starts[4]] + b"\x00" * 700 + bytes(range(256)) + data[starts[4] :] + b"\x00" * 50
    )
    items = scan(damaged, 256, resync=True)
    assert_accounted(items, 0, len(damaged))
    assert [i.position for i in items if isinstance(i, RecordBatch)] == starts[:4] + [
        s + 956 for s in starts[4:]
    ]


def legacy_then_v2() -> bytes:
    """A log that went through the magic upgrades: v0, v1 (plain and compressed), then v2."""
    from logrepair.format.legacy import build_legacy_batch

    parts = [
        build_legacy_batch(
            [Record(0, -1, b"a", b"0"), Record(1, -1, None, b"1")], magic=0, base_offset=0
        ),
        build_legacy_batch([Record(2, 50, b"b", b"2")], magic=1, base_offset=2),
        build_legacy_batch(
            [Record(3, 60, b"c", b"3"), Record(4, 61, b"d", b"4")], magic=1, base_offset=3, codec=1
        ),
        build_batch([Record(5, 70, b"e", b"5"), Record(6, 71, None, None)], base_offset=5),
    ]
    return b"".join(parts)


def test_legacy_entries_and_v2_batches_in_one_log() -> None:
    data = legacy_then_v2()
    items = list(Walker(data, deep=True))
    assert [i.magic for i in items] == [0, 0, 1, 1, 2]
    assert [r.offset for i in items for r in i.records()] == list(range(7))
    assert_accounted(items, 0, len(data))
    assert Walker(data).expected_offset is None
    walker = Walker(data)
    assert list(walker.validate()) == [] and walker.expected_offset == 7


def test_legacy_crc_mismatch_resyncs() -> None:
    data = legacy_then_v2()
    items = list(Walker(data))
    second = items[1]
    bad = bytearray(data)
    bad[second.position + 20] ^= 1
    damaged = list(Walker(bytes(bad), resync=True))
    assert summary(damaged)[1] == ("crc_mismatch", second.position, second.size)
    assert [i.position for i in damaged[2:]] == [i.position for i in items[2:]]


def test_carried_damage_is_one_defect_across_windows() -> None:
    data, starts = make_segment(10)
    hole = bytes(3000) + bytes(range(256)) * 4
    damaged = data[: starts[4]] + hole + data[starts[4] :] + bytes(2000)
    whole = list(Walker(damaged, resync=True))
    assert summary(whole)[4] == ("bad_length", starts[4], len(hole))
    assert exact(scan(damaged, 512, resync=True, carry_damage=True)) == exact(whole)
    pieces = scan(damaged, 512, resync=True)
    assert len(pieces) > len(whole)  # without carrying, each window reports its part
    assert_accounted(pieces, 0, len(damaged))


def test_open_damage_must_continue_at_the_buffer() -> None:
    with pytest.raises(ValueError):
        Walker(b"", file_position=10, open_damage=Defect("bad_length", 0, 5, ""))


def test_legacy_crc_mismatch_names_both_crcs() -> None:
    data = legacy_then_v2()
    second = list(Walker(data))[1]
    bad = bytearray(data)
    bad[second.position + 20] ^= 1
    defect = next(i for i in Walker(bytes(bad)) if isinstance(i, Defect))
    computed = zlib.crc32(bytes(bad[second.position + 16 : second.position + second.size]))
    assert defect.detail == (
        f"Record is corrupt (stored crc = {second.crc}, computed crc = {computed})"
    )


@given(
    st.integers(0, 2**31 - 1),
    st.integers(0, 2),
    st.sampled_from([100, 1 << 20, (16 << 20) + 5, 64 << 20, 2**31]),
    st.binary(min_size=17, max_size=17),
)
def test_the_resync_search_finds_every_position_an_entry_could_start(
    length: int, magic: int, max_batch_size: int, noise: bytes
) -> None:
    max_length = max_batch_size - 12
    assume(14 <= length <= max_length)
    head = bytearray(noise)
    struct.pack_into(">i", head, 8, length)
    head[16] = magic
    buf = bytes(3) + bytes(head)
    assert any(p.match(buf, 3 + 8) for p in _candidate_patterns(max_length))


def test_a_resync_point_is_laid_out_as_writers_lay_it_out() -> None:
    """In step, a CRC-valid batch with an unused attribute bit set is a batch; after damage,
    resync does not stop at one (nor at a legacy message no writer would write, below)."""
    data, starts = make_segment(3)
    odd = bytearray(data)
    odd[starts[1] + 21] |= 0x80  # attributes, high byte: unused
    with_crc(odd, starts[1])
    assert summary(Walker(bytes(odd))) == summary(Walker(data))
    damaged = bytes(odd[: starts[1]]) + b"\xff" * 40 + bytes(odd[starts[1] :])
    assert summary(Walker(damaged, resync=True))[1:] == [
        ("bad_length", starts[1], 40 + starts[2] - starts[1]),
        ("batch", starts[2] + 40, len(data) - starts[2]),
    ]


@pytest.mark.parametrize(
    "at,field",
    [
        (-5, struct.pack(">i", 0)),  # value length 0: one byte left over
        (17, b"\x10"),  # an unused attribute bit
        (17, b"\x04"),  # codec 4 (zstd), which legacy messages cannot have
        (18, struct.pack(">q", -2)),  # a timestamp below -1
    ],
)
def test_a_legacy_resync_point_is_laid_out_as_writers_lay_it_out(at: int, field: bytes) -> None:
    from logrepair.format.legacy import build_legacy_batch

    v1 = bytearray(build_legacy_batch([Record(0, 5, b"k", b"v")], magic=1, base_offset=0))
    v1[at : at + len(field) if at + len(field) else None] = field
    v1[12:16] = struct.pack(">I", zlib.crc32(bytes(v1[16:])))
    assert summary(Walker(bytes(v1))) == [("batch", 0, len(v1))]
    assert summary(Walker(b"\xff" * 20 + bytes(v1), resync=True)) == [
        ("garbage_tail", 0, 20 + len(v1))
    ]
