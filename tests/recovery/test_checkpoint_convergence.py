"""Every mode converges on any checkpoint content: after one repair, a second plans nothing.

The root checkpoints and each partition's leader-epoch-checkpoint hold whatever hypothesis draws
(absent, well-formed with any offsets, entries for partitions that do not exist, impossible epochs,
junk), beside a partition dir whose name Kafka could never have made. Real files, the real repair.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from logrepair.recovery.planner import MODES, make_plan
from logrepair.recovery.repair import repair
from logrepair.recovery.scan import scan_path
from logrepair.recovery.settings import Settings
from logrepair.storage import checkpoints, layout
from logrepair.storage.layout import TopicPartition

from .builders import DISK, batches, write_segment

SETTINGS = Settings()
PARTITIONS = {"orders-0": TopicPartition("orders", 0), "t-1": TopicPartition("t", 1)}
ROOT_FILES = layout.OFFSET_CHECKPOINTS

offsets = st.one_of(
    st.sampled_from([0, 1, 5, 9, 10, 14, 19, 20, 21, 2**31, 2**63 - 1, -1]),
    st.integers(-3, 40),
)
topic_partitions = st.sampled_from(
    [*PARTITIONS.values(), TopicPartition("ghost", 0), TopicPartition("orders", 7)]
)
junk = st.one_of(
    st.binary(max_size=40),
    st.sampled_from([b"1\n0\n", b"0\n2\norders 0 5\n", b"0\n1\norders 0 x\n", b"0\n-1\n"]),
)
root_file = st.one_of(
    st.none(),
    st.dictionaries(topic_partitions, offsets, max_size=4).map(checkpoints.format_offsets),
    junk,
)
epoch_entries = st.lists(
    st.tuples(st.sampled_from([-1, 0, 1, 2, 3, 4, 1000]), offsets), max_size=4
).map(lambda es: checkpoints.format_checkpoint(0, [f"{e} {s}" for e, s in es]))
epoch_file = st.one_of(st.none(), epoch_entries, junk)


def build(root: Path, roots: dict, epochs: dict, stray: bool) -> Path:
    d = root / "kafka-logs"
    # orders-0: epochs 0 then 1 in its first segment, 3 in its second; t-1: epoch 2
    write_segment(d / "orders-0", 0, batches(0, 5, epoch=0) + batches(5, 5, epoch=1))
    write_segment(d / "orders-0", 10, batches(10, 10, epoch=3))
    write_segment(d / "t-1", 0, batches(0, 6, epoch=2))
    if stray:
        write_segment(d / "bad topic-0", 0, batches(0, 2))
    for name, content in roots.items():
        if content is not None:
            (d / name).write_bytes(content)
    for pname, content in epochs.items():
        if content is not None:
            (d / pname / layout.LEADER_EPOCH_CHECKPOINT).write_bytes(content)
    return d


@settings(max_examples=400 if os.environ.get("HYPOTHESIS_PROFILE") == "thorough" else 20)
@given(
    roots=st.fixed_dictionaries({name: root_file for name in ROOT_FILES}),
    epochs=st.fixed_dictionaries({name: epoch_file for name in PARTITIONS}),
    stray=st.booleans(),
)
def test_every_mode_converges_on_any_checkpoint_content(roots, epochs, stray):
    for mode in MODES:
        with tempfile.TemporaryDirectory() as tmp:
            d = build(Path(tmp), roots, epochs, stray)
            first = repair(DISK, str(d), mode, SETTINGS)
            again = make_plan(scan_path(DISK, str(d), SETTINGS), mode)
            assert again.actions == [], (mode, first.plan.actions, again.actions)
            for name in ROOT_FILES:  # the stray never becomes a checkpoint line
                path = d / name
                assert not path.exists() or b"bad topic" not in path.read_bytes()
            if mode != "kafka":  # the data-keeping modes never move the log start past the end
                for p in scan_path(DISK, str(d), SETTINGS).partitions:
                    if p.tp in PARTITIONS.values() and p.log_start_checkpoint is not None:
                        assert p.log_start_checkpoint <= p.log_end_offset, (mode, p.tp)


def test_salvage_converges_when_the_log_itself_regresses_its_epoch(tmp_path):
    """Found by the fuzzer (tests/fuzz): a flipped leader epoch (outside the CRC) makes the log
    read epochs 0, 2097152, 1. Salvage rebuilt the checkpoint from the log — (0, 0), (2097152, 4) —
    and every next run called that a contradiction of the batch at offset 10 and rewrote it again
    (cut to the log start 2: the first run had not)."""
    from .builders import batch, write_offsets
    from .checks import repair_checked

    root = tmp_path / "logs"
    torn = bytearray(batch(0, n=2, epoch=0))
    torn[-1] ^= 0xFF  # offsets 0..1 fail their CRC: salvage removes them, the log starts at 2
    data = [bytes(torn)] + [batch(o, epoch=0) for o in range(2, 4)]
    data += [batch(o, epoch=2097152) for o in range(4, 10)]
    write_segment(root / "t-0", 0, data)
    write_segment(root / "t-0", 10, [batch(o, epoch=1) for o in range(10, 12)])
    write_offsets(root, "recovery-point-offset-checkpoint", {("t", 0): 12})
    (root / "t-0" / layout.LEADER_EPOCH_CHECKPOINT).write_text("0\n2\n0 0\n1 10\n")
    repair_checked(root, "salvage")
    again = make_plan(scan_path(DISK, str(root), Settings()), "salvage")
    assert not again.actions
