"""The invariant checks: each catches what it names, at the first differing offset."""

from __future__ import annotations

from logrepair.format.batch_builder import build_batch
from logrepair.format.batch_layout import Record
from simulator.disk import DiskImage
from simulator.invariants import (
    DURABLE,
    MINIMAL_LOSS,
    NO_INVENTION,
    WELL_FORMED,
    Expectation,
    all_valid_batches,
    check_result,
    kafka_oracle,
    point_in_time_oracle,
    segments,
)

LOG_DIR = "/kl"
PART = "/kl/t-0"


def batch(offset: int, size: int = 40) -> bytes:
    return build_batch(
        [Record(offset, 1000, None, bytes([offset % 256]) * size)], base_offset=offset
    )


def image(segs: dict[int, bytes], rp: int | None = None, extra: dict | None = None) -> DiskImage:
    files = {f"{PART}/{base:020d}.log": data for base, data in segs.items()}
    if rp is not None:
        files[f"{LOG_DIR}/recovery-point-offset-checkpoint"] = f"0\n1\nt 0 {rp}\n".encode()
    files.update(extra or {})
    return DiskImage(files, {LOG_DIR, PART})


def test_segments_walk_batches_and_stop_at_damage() -> None:
    data = batch(0) + batch(1) + bytes(30)
    [seg] = segments(image({0: data}), PART)
    assert [b.base for b in seg.batches] == [0, 1]
    assert seg.defect == (len(batch(0)) * 2, "garbage_tail")


def test_kafka_oracle_recovers_from_the_recovery_point_and_drops_later_segments() -> None:
    first = batch(0) + batch(1)
    torn = batch(2) + batch(3)[:20]
    later = batch(4)
    crash = image({0: first, 2: torn, 4: later}, rp=2)
    assert [b.base for b in kafka_oracle(crash, LOG_DIR, PART)] == [0, 1, 2]
    # A segment below the recovery point is trusted whatever it holds.
    damaged_below = image({0: batch(0) + b"junk" * 10, 2: batch(2)}, rp=3)
    assert [b.base for b in kafka_oracle(damaged_below, LOG_DIR, PART)] == [0, 2]
    # No checkpoint: everything is recovered from offset 0.
    assert [
        b.base for b in kafka_oracle(image({0: first + b"x" * 30, 2: batch(2)}), LOG_DIR, PART)
    ] == [0, 1]


def test_kafka_oracle_declines_an_interrupted_swap() -> None:
    crash = image({0: batch(0)}, extra={f"{PART}/{0:020d}.log.swap": batch(0)})
    assert kafka_oracle(crash, LOG_DIR, PART) is None


def test_point_in_time_and_salvage_oracles() -> None:
    crash = image({0: batch(0) + b"\xff" * 70 + batch(5), 6: batch(6)})
    assert [b.base for b in point_in_time_oracle(crash, PART)] == [0]
    assert [b.base for b in all_valid_batches(crash, PART)] == [0, 5, 6]


def expectation(durable: list, destroyed=None) -> Expectation:
    e = Expectation(LOG_DIR, "op 7, fault torn_write#0, seed 1", {PART: durable})
    e.destroyed = destroyed or {}
    return e


def test_a_faithful_kafka_repair_passes() -> None:
    crash = image({0: batch(0) + batch(1) + batch(2)[:30]}, rp=0)
    result = image({0: batch(0) + batch(1)}, rp=0)
    durable = segments(result, PART)[0].batches
    written = {batch(i) for i in range(3)}
    assert check_result(result, crash, expectation(durable), written, "kafka") == []


def test_each_invariant_names_itself_and_the_first_offset() -> None:
    crash = image({0: batch(0) + batch(1) + batch(2)[:30]}, rp=0)
    durable = segments(image({0: batch(0) + batch(1)}), PART)[0].batches
    written = {batch(i) for i in range(3)}
    # Dropped a durable batch.
    lost = check_result(image({0: batch(0)}), crash, expectation(durable), written, "kafka")
    assert {(v.invariant, v.offset) for v in lost} >= {(DURABLE, 1), (MINIMAL_LOSS, 1)}
    assert all(v.state == "op 7, fault torn_write#0, seed 1" for v in lost)
    # Invented a batch (same offset, other bytes).
    forged = batch(1, size=41)
    invented = check_result(
        image({0: batch(0) + forged}), crash, expectation(durable), written, "kafka"
    )
    assert (NO_INVENTION, 1) in {(v.invariant, v.offset) for v in invented}
    # Left the torn tail in place.
    left = check_result(crash, crash, expectation(durable), written, "kafka")
    assert [(v.invariant, v.position) for v in left if v.invariant == WELL_FORMED] == [
        (WELL_FORMED, 2 * len(batch(0)))
    ]


def test_destroyed_batches_are_excused_per_mode() -> None:
    b0, b1, b2 = batch(0), batch(1), batch(2)
    rotten = bytearray(b1)
    rotten[30] ^= 1
    crash = image({0: b0 + bytes(rotten) + b2})
    durable = segments(image({0: b0 + b1 + b2}), PART)[0].batches
    destroyed = {PART: [(f"{PART}/{0:020d}.log", len(b0) + 30)]}
    written = {b0, b1, b2}
    salvaged = image({0: b0, 2: b2})
    assert check_result(salvaged, crash, expectation(durable, destroyed), written, "salvage") == []
    prefix = image({0: b0})
    assert (
        check_result(prefix, crash, expectation(durable, destroyed), written, "point-in-time") == []
    )
    # Salvage must keep the batch after the rot.
    lossy = check_result(prefix, crash, expectation(durable, destroyed), written, "salvage")
    assert {v.invariant for v in lossy} == {DURABLE, MINIMAL_LOSS}


def test_checkpoint_past_the_log_end_is_not_well_formed() -> None:
    result = image({0: batch(0)}, rp=5)
    [v] = check_result(result, result, expectation([]), {batch(0)}, "kafka")
    assert v.invariant == WELL_FORMED and "beyond log end 1" in v.detail


def test_salvage_oracle_ignores_a_batch_whose_unprotected_offset_was_zeroed() -> None:
    # A lost first sector zeroes the base offset, which the CRC does not cover: the batch still
    # checks, at offset 0, inside a segment based at 70. Salvage cannot keep it; neither may the oracle.
    good = batch(71)
    hit = bytes(10) + good[10:]
    crash = image({0: batch(0), 70: batch(70) + hit + batch(72)})
    assert [b.base for b in all_valid_batches(crash, PART)] == [0, 70, 72]


def test_point_in_time_oracle_cuts_the_stale_tail_of_a_lost_truncation() -> None:
    # A truncation whose fsync was lost: segment 0 still holds offset 2, segment 2 holds it anew
    # (it was created when the log ended at 2), so segment 0's offset 2 is the stale one.
    crash = image({0: batch(0) + batch(1) + batch(2), 2: batch(2, size=41) + batch(3)})
    assert [b.base for b in point_in_time_oracle(crash, PART)] == [0, 1, 2, 3]
    assert [b.data for b in point_in_time_oracle(crash, PART)][2] == batch(2, size=41)
