"""Mutation tests: byte flips, truncations and insertions in valid segments never raise, and every
byte of the input is accounted for, whole-buffer or through a sliding window, shallow or deep."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from logrepair.format.batch import RecordBatch
from logrepair.format.compression import Codec
from logrepair.format.errors import Defect
from logrepair.format.walker import CRC_VALID_KINDS, Walker

from .strategies import segments
from .test_walker import assert_accounted, exact, legacy_then_v2, scan

ALL_CODECS = tuple(int(c) for c in Codec)


@st.composite
def mutated(draw):
    data, _ = draw(segments(codecs=ALL_CODECS))
    buf = bytearray(legacy_then_v2() + data if draw(st.booleans()) else data)
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        op = draw(st.sampled_from(["flip", "truncate", "insert", "zero", "overwrite"]))
        at = draw(st.integers(min_value=0, max_value=len(buf)))
        if op == "flip" and at < len(buf):
            buf[at] ^= draw(st.integers(min_value=1, max_value=255))
        elif op == "truncate":
            del buf[at:]
        elif op == "insert":
            buf[at:at] = draw(st.binary(min_size=1, max_size=200))
        elif op == "zero":
            n = draw(st.integers(min_value=1, max_value=300))
            buf[at : at + n] = bytes(len(buf[at : at + n]))
        elif op == "overwrite":
            junk = draw(st.binary(min_size=1, max_size=64))
            buf[at : at + len(junk)] = junk
    return bytes(buf)


@settings(max_examples=150)
@given(mutated(), st.booleans(), st.booleans())
def test_mutations_give_defects_never_exceptions(data: bytes, resync: bool, deep: bool) -> None:
    walker = Walker(data, resync=resync, deep=deep, max_output=1 << 20)
    items = list(walker)
    assert_accounted(items, 0, len(data))
    assert walker.done
    if not resync:  # the walk stops at the first framing defect, as broker recovery does
        framing = [
            n
            for n, d in enumerate(items)
            if isinstance(d, Defect) and d.kind not in CRC_VALID_KINDS
        ]
        assert framing in ([], [len(items) - 1])
    defects = [i for i in items if isinstance(i, Defect)]
    assert list(Walker(data, resync=resync, deep=deep, max_output=1 << 20).validate()) == defects


@settings(max_examples=80)
@given(mutated(), st.integers(min_value=17, max_value=600), st.booleans())
def test_window_scans_of_mutated_segments_account_for_every_byte(
    data: bytes, window: int, resync: bool
) -> None:
    items = scan(data, window, resync=resync)
    assert_accounted(items, 0, len(data))
    whole = [i.position for i in Walker(data, resync=resync) if isinstance(i, RecordBatch)]
    assert [i.position for i in items if isinstance(i, RecordBatch)] == whole


@settings(max_examples=100)
@given(segments(min_batches=2, codecs=ALL_CODECS), st.data())
def test_a_flip_under_the_crc_costs_exactly_that_batch(segment, data) -> None:
    raw, _ = segment
    batches = list(Walker(raw))
    victim = data.draw(st.sampled_from(batches))
    at = victim.position + data.draw(st.integers(min_value=21, max_value=victim.size - 1))
    buf = bytearray(raw)
    buf[at] ^= data.draw(st.integers(min_value=1, max_value=255))
    items = list(Walker(bytes(buf), resync=True))
    assert [(d.kind, d.position, d.length) for d in items if isinstance(d, Defect)] == [
        ("crc_mismatch", victim.position, victim.size)
    ]
    assert [b.position for b in items if isinstance(b, RecordBatch)] == [
        b.position for b in batches if b is not victim
    ]


@settings(max_examples=80)
@given(mutated(), st.integers(min_value=17, max_value=600))
def test_carried_damage_makes_window_scans_equal_one_walk(data: bytes, window: int) -> None:
    carried = scan(data, window, resync=True, carry_damage=True)
    assert exact(carried) == exact(Walker(data, resync=True))
