"""Random damage, every mode: the invariants of design.md hold after each repair (checks.py)."""

from __future__ import annotations

import shutil

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from logrepair.storage import layout

from .builders import batches, write_offsets, write_segment
from .checks import repair_checked

damage = st.lists(
    st.tuples(
        st.integers(0, 2),  # segment
        st.sampled_from(["flip", "cut", "insert", "zero", "drop_index"]),
        st.integers(0, 10**6),
        st.binary(min_size=1, max_size=300),
    ),
    min_size=1,
    max_size=4,
)


# Each example is several repairs: 25 per mode by default; HYPOTHESIS_PROFILE=thorough hunts with
# its own count.
EXAMPLES = 25 if settings.default.max_examples <= 100 else settings.default.max_examples


@pytest.mark.parametrize("mode", ["kafka", "point-in-time", "salvage"])
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    sizes=st.lists(st.integers(0, 8), min_size=1, max_size=3), damage=damage, rp=st.integers(0, 30)
)
# A base offset flipped far out of the segment's range, and back in range after it: Kafka cannot
# split the segment, and the scan must not pack the flipped offset into an index.
@example(
    sizes=[0, 6, 5],
    damage=[
        (1, "flip", 1419, b"\x00"),
        (0, "drop_index", 0, b"\x00"),
        (1, "flip", 252819, b"\x00"),
    ],
    rp=15,
)
# A leader epoch flipped high (outside the CRC) and a damaged batch before it: salvage moves the
# epoch regression, which no mode fixes, into a segment of its own and must say so.
@example(sizes=[5], damage=[(1, "flip", 1430, b"\x00"), (1, "zero", 1293, bytes(27))], rp=11)
# Kafka's overflow split renames the segment holding the recovery point (its base offset, outside
# the CRC, is flipped) past the segment below it: the recovery point must move to the log end (the
# repair flushed), or the next run recovers the segment below, with its inserted byte.
@example(
    sizes=[4, 7, 1], damage=[(1, "insert", 1291, b"\x00"), (2, "flip", 340516, b"\x00")], rp=17
)
# A leader epoch flipped high early in segment 0: salvage cuts and splits, and the epoch
# regressions it leaves must be among those reported before (measured over the whole partition).
@example(
    sizes=[8, 3],
    damage=[
        (0, "zero", 175, bytes(13)),
        (
            0,
            "insert",
            53,
            bytes.fromhex("c66e8b167a2fb6da2b73e3a14e6bfafb712dc74c80a09440d13560b80dc69f57ede493"),
        ),
        (0, "flip", 191, b"\x00"),
        (0, "flip", 578, b"\x00"),
    ],
    rp=27,
)
# Both segments' first base offsets flipped high (bit 58): the offset-overflow split of segment 0
# must be what Kafka's splitOverflowedSegment leaves, and a second repair must plan nothing.
@example(sizes=[1, 1], damage=[(0, "flip", 0, b"\x00"), (1, "flip", 0, b"\x00")], rp=0)
def test_invariants_hold_after_repairing_random_damage(tmp_path, mode, sizes, damage, rp):
    log_dir = tmp_path / "kafka-logs"
    shutil.rmtree(log_dir, ignore_errors=True)
    shutil.rmtree(str(log_dir) + ".logrepair-quarantine", ignore_errors=True)
    pdir = log_dir / "t-0"
    base = 0
    bases = []
    for n in sizes:
        write_segment(pdir, base, batches(base, n), interval=300)
        bases.append(base)
        base += n
    write_offsets(log_dir, layout.RECOVERY_POINT_CHECKPOINT, {("t", 0): rp})
    for segment, op, where, data in damage:
        b = bases[segment % len(bases)]
        log = pdir / layout.log_file_name(b)
        raw = bytearray(log.read_bytes())
        at = where % (len(raw) + 1)
        if op == "flip" and raw:
            raw[at % len(raw)] ^= 0x04
        elif op == "cut":
            del raw[at:]
        elif op == "insert":
            raw[at:at] = data
        elif op == "zero":
            raw[at : at + len(data)] = bytes(len(data))
        else:
            (pdir / layout.index_file_name(b)).unlink(missing_ok=True)
        log.write_bytes(bytes(raw))
    repair_checked(log_dir, mode)
