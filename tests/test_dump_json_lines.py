"""The dump's direct JSON Lines writer (`logrepair.dump.json_lines`) against the contract's
definition: `json.dumps` of the batch's `to_json` dict, byte for byte, on random batches and records;
its batched writes in order with the rest of the output; the batch-at-a-time offset tracking against
the record-at-a-time one."""

from __future__ import annotations

import io
import json
import struct
from contextlib import redirect_stderr, redirect_stdout

import pytest
from hypothesis import given
from hypothesis import strategies as st

from logrepair.cli import main
from logrepair.dump import json_lines, report
from logrepair.format.batch import RecordBatch, record_to_json
from logrepair.format.batch_builder import build_batch
from logrepair.format.batch_layout import ATTRIBUTES_OFFSET, CONTROL_MASK, CRC_OFFSET, Record
from logrepair.format.crc import crc32c
from logrepair.format.errors import FormatError
from logrepair.format.legacy import LegacyBatch, build_legacy_batch

INT64 = st.integers(-(2**63), 2**63 - 1)
# Text as file names and header keys can hold it: controls, DEL, non-BMP, lone surrogates.
TEXT = st.text(st.characters(codec=None), max_size=12) | st.sampled_from(["\x7f", "\ud800", "é/"])
NULLABLE_BYTES = st.none() | st.binary(max_size=40)
# A header key the batch builder can encode (it writes UTF-8), swapped for raw bytes afterwards.
BASE_TIMESTAMP_OFFSET = 27
MARK = "\x7fkey-to-replace\x7f"


def reference_line(path: str, batch, deep: bool, decoded: dict | None) -> bytes:
    """What the dump wrote before the direct writer: the contract's dicts and `json.dumps`."""
    obj = {"file": path, **batch.to_json(deep)}
    if deep and decoded is not None and not batch.is_control:
        for rec_obj, record in zip(obj["records"], batch.records(), strict=True):
            rec_obj["decoded"] = dict(zip(("key", "payload"), decoded[record.offset], strict=True))
    return json.dumps(obj, separators=(",", ":")).encode("ascii") + b"\n"


def outcome(fn):
    """The bytes `fn()` returns or the FormatError it raises, to compare two writers by."""
    try:
        return fn()
    except FormatError as e:
        return ("error", e.kind, e.detail)


@st.composite
def v2_batches(draw) -> bytes:
    n = draw(st.integers(1, 5))
    base_offset = draw(st.integers(0, 2**63 - 1 - 40 * n))
    base_ts = draw(st.integers(0, 2**63 - 1 - 1000 * n))
    offset, records = base_offset, []
    for _ in range(n):
        headers = draw(
            st.lists(st.tuples(TEXT.filter(str.isprintable) | st.just(MARK), NULLABLE_BYTES))
        )
        headers = [(k.encode("utf-8", "replace").decode("utf-8"), v) for k, v in headers]
        ts = base_ts + draw(st.integers(0, 1000))
        records.append(
            Record(offset, ts, draw(NULLABLE_BYTES), draw(NULLABLE_BYTES), tuple(headers))
        )
        offset += draw(st.integers(1, 40))
    producer_id = draw(st.sampled_from([-1, 0, 2**63 - 1]) | st.integers(0, 2**40))
    append = draw(st.booleans())
    raw = bytearray(
        build_batch(
            records,
            base_offset=base_offset,
            codec=draw(st.sampled_from([0, 0, 1, 2, 3, 4])),
            timestamp_type="append" if append else "create",
            log_append_time=draw(INT64) if append else None,
            producer_id=producer_id,
            producer_epoch=-1 if producer_id < 0 else draw(st.integers(0, 2**15 - 1)),
            base_sequence=-1 if producer_id < 0 else draw(st.integers(0, 2**31 - 1)),
            is_transactional=producer_id >= 0 and draw(st.booleans()),
            partition_leader_epoch=draw(st.integers(-1, 2**31 - 1)),
        )
    )
    mark = raw.find(MARK.encode())
    if mark >= 0:  # a header key that is not UTF-8 (the decoder replaces as Java does)
        raw[mark : mark + len(MARK)] = draw(st.binary(min_size=len(MARK), max_size=len(MARK)))
    if draw(st.booleans()):
        raw[ATTRIBUTES_OFFSET + 1] |= CONTROL_MASK
    if draw(st.booleans()):  # any base timestamp, negative too: records add their deltas to it
        struct.pack_into(">q", raw, BASE_TIMESTAMP_OFFSET, draw(INT64))
    if draw(st.booleans()):  # damage: a flipped bit anywhere after the CRC field
        bit = draw(st.integers(0, (len(raw) - ATTRIBUTES_OFFSET) * 8 - 1))
        raw[ATTRIBUTES_OFFSET + bit // 8] ^= 1 << bit % 8
    if draw(st.booleans()):
        struct.pack_into(">I", raw, CRC_OFFSET, crc32c(memoryview(raw)[ATTRIBUTES_OFFSET:]))
    return bytes(raw)


@given(
    v2_batches(),
    TEXT,
    st.integers(0, 2**63 - 1),
    st.booleans(),
    st.none() | st.lists(st.tuples(st.none() | TEXT, st.none() | TEXT), min_size=5, max_size=5),
)
def test_v2_line_is_json_dumps_of_the_contract(raw, path, position, deep, decoded_texts) -> None:
    batch = RecordBatch(memoryview(raw), position)
    decoded = parser = None
    if decoded_texts is not None:
        # a parser of random answers, one per record offset, as a decoder's text can be anything
        offsets = [r.offset for r in outcome(batch.records) if isinstance(r, Record)]
        decoded = dict(zip(offsets, decoded_texts, strict=False))

        def parser(key, value, offset):
            return decoded[offset]

    writer = json_lines.BatchLines(path, deep, parser)
    expected = outcome(
        lambda: reference_line(path, RecordBatch(memoryview(raw), position), deep, decoded)
    )
    assert outcome(lambda: writer.line(batch)) == expected


@given(
    offset=INT64,
    timestamp=st.none() | INT64,
    key=NULLABLE_BYTES,
    value=NULLABLE_BYTES,
    headers=st.lists(st.tuples(TEXT, NULLABLE_BYTES), max_size=4),
)
def test_record_object_is_json_dumps_of_record_to_json(
    offset, timestamp, key, value, headers
) -> None:
    record = Record(offset, timestamp, key, value, tuple(headers))
    expected = json.dumps(record_to_json(record), separators=(",", ":")).encode("ascii")
    assert json_lines.record_json(record) == expected


@given(
    st.lists(st.tuples(NULLABLE_BYTES, NULLABLE_BYTES), min_size=1, max_size=4),
    st.sampled_from([(0, 0), (1, 0), (1, 1), (0, 1)]),
    TEXT,
    st.booleans(),
)
def test_legacy_line_is_json_dumps_of_the_contract(kvs, magic_codec, path, deep) -> None:
    magic, codec = magic_codec
    records = [Record(10 + i, 1_700_000_000_000 + i, k, v) for i, (k, v) in enumerate(kvs)]
    raw = build_legacy_batch(records, magic=magic, base_offset=10, codec=codec)
    entry = LegacyBatch.parse(raw, 0)
    texts = {r.offset: ("k", f"p\x00{r.offset}é") for r in records}
    expected = reference_line(path, LegacyBatch.parse(raw, 0), deep, texts)
    writer = json_lines.BatchLines(path, deep, lambda k, v, o: texts[o])
    assert writer.line(entry) == expected


def _dump_json(path: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        status = main(["dump", path, "--json", "--deep-iteration"])
    return status, out.getvalue()


def test_batched_writes_keep_the_order_of_batches_and_defects(tmp_path, monkeypatch) -> None:
    """Batches between defects, in more than one write: the same lines whatever the write size."""
    batches = [
        build_batch(
            [Record(o * 10 + i, 1, b"k", b"v" * 300) for i in range(10)], base_offset=o * 10
        )
        for o in range(60)
    ]
    bad = bytearray(batches[30])
    bad[-1] ^= 1
    batches[30] = bytes(bad)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"".join(batches) + b"\0" * 7)
    status, whole = _dump_json(str(path))
    assert status == 1 and len(whole) > 2 * report.WRITE_BYTES  # flushed more than once
    monkeypatch.setattr(report, "WRITE_BYTES", 1)  # a write per line
    assert _dump_json(str(path)) == (status, whole)
    lines = [json.loads(line) for line in whole.splitlines()]
    assert [("defect" in obj) for obj in lines] == [False] * 30 + [True] + [False] * 29 + [True]


@pytest.mark.parametrize("deep", [False, True])
def test_cli_output_is_the_reference(tmp_path, deep) -> None:
    """The whole command on a file of v2, legacy and damaged entries: every line the reference's."""
    v2 = build_batch([Record(0, 5, b"k", None, (("h\u00e9", None),))], base_offset=0, codec=2)
    v0 = build_legacy_batch([Record(1, None, None, b"z")], magic=0, base_offset=1)
    v1 = build_legacy_batch([Record(2, 7, b"a", b"b")], magic=1, base_offset=2, codec=1)
    path = tmp_path / "d\u00e9j\u00e0" / "00000000000000000000.log"
    path.parent.mkdir()
    path.write_bytes(v2 + v0 + v1 + b"junk")
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        status = main(["dump", str(path), "--json", *(["--deep-iteration"] if deep else [])])
    assert status == 1
    entries = [
        RecordBatch(memoryview(v2), 0),
        LegacyBatch.parse(v0, 0),
        LegacyBatch.parse(v1, 0),
    ]
    for entry, position in zip(entries, (0, len(v2), len(v2) + len(v0)), strict=True):
        entry.position = position
    expected = b"".join(reference_line(str(path), e, deep, None) for e in entries)
    lines = out.getvalue().encode("ascii").splitlines(keepends=True)
    assert b"".join(lines[:3]) == expected
    assert json.loads(lines[3])["defect"]["kind"] in ("garbage_tail", "torn_tail")
