"""Log against a plain in-memory model: append, roll, flush, retention, delete-records, truncation,
close and reopen, in any order hypothesis finds."""

from __future__ import annotations

import shutil
import tempfile

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from logrepair.format.batch_builder import build_batch
from logrepair.format.batch_layout import Record
from logrepair.format.walker import Walker
from logrepair.storage.clock import ManualClock
from logrepair.storage.log import Log, ProducerRecord
from logrepair.storage.log_config import LogConfig
from logrepair.storage.osdisk import OsDisk

CONFIG = LogConfig(
    segment_bytes=600,
    index_interval_bytes=128,
    segment_index_bytes=256,
    retention_ms=5_000,
    retention_bytes=2_000,
    file_delete_delay_ms=1_000,
)


class LogModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = tempfile.mkdtemp()
        self.path = f"{self.root}/model-0"
        self.clock = ManualClock(1_000_000)
        self.disk = OsDisk()
        self.log = Log.open(self.disk, self.path, CONFIG, clock=self.clock)
        # The model: every batch still in the log, as (first offset, last offset, [(offset, value)]).
        self.batches: list[tuple[int, int, list[tuple[int, bytes]]]] = []
        self.lso = 0
        self.leo = 0
        self.hw = 0

    def teardown(self) -> None:
        self.log.close()
        shutil.rmtree(self.root, ignore_errors=True)

    @rule(
        values=st.lists(st.binary(min_size=0, max_size=120), min_size=1, max_size=4),
        codec=st.sampled_from([0, 1, 3]),
    )
    def append(self, values: list[bytes], codec: int) -> None:
        info = self.log.append([ProducerRecord(None, v) for v in values], codec=codec)
        assert info.first_offset == self.leo
        records = [(self.leo + i, v) for i, v in enumerate(values)]
        self.batches.append((self.leo, self.leo + len(values) - 1, records))
        self.leo += len(values)
        self.hw = self.leo

    @rule(
        gap=st.integers(0, 3),
        values=st.lists(st.binary(max_size=80), min_size=1, max_size=3),
        epoch=st.integers(0, 3),
    )
    def follower_append(self, gap: int, values: list[bytes], epoch: int) -> None:
        base = self.leo + gap
        records = [
            Record(base + i, self.clock.milliseconds(), None, v) for i, v in enumerate(values)
        ]
        info = self.log.append_batches(
            build_batch(records, base_offset=base, partition_leader_epoch=epoch)
        )
        assert (info.first_offset, info.last_offset) == (base, base + len(values) - 1)
        self.batches.append((base, base + len(values) - 1, [(r.offset, r.value) for r in records]))
        self.leo = base + len(values)

    @rule()
    def roll(self) -> None:
        self.log.roll()

    @rule()
    def flush(self) -> None:
        self.log.flush()
        assert self.log.recovery_point == self.leo

    @rule(ms=st.integers(0, 4_000))
    def advance_clock(self, ms: int) -> None:
        self.clock.advance(ms)

    @rule()
    def run_pending(self) -> None:
        self.log.run_pending()

    @rule()
    def retention(self) -> None:
        bases = {s.base_offset for s in self.log.segments}
        self.log.delete_old_segments()
        new_lso = self.log.log_start_offset
        assert self.lso <= new_lso <= self.hw
        if new_lso != self.lso:
            assert new_lso in bases or new_lso == self.leo
        self.lso = new_lso
        self.batches = [b for b in self.batches if b[1] >= new_lso]

    @rule(data=st.data())
    def delete_records(self, data) -> None:
        target = data.draw(st.integers(self.lso, self.hw))
        self.log.increment_log_start_offset(target)
        self.lso = max(self.lso, target)

    @precondition(lambda self: self.leo > 0)
    @rule(data=st.data())
    def truncate(self, data) -> None:
        target = data.draw(st.integers(0, self.leo + 1))
        first_base = self.log.segments[0].base_offset
        changed = self.log.truncate_to(target)
        assert changed == (target < self.leo)
        if not changed:
            return
        if target < first_base:
            self.batches = []
            self.lso = target
        else:
            self.batches = [b for b in self.batches if b[1] < target]
            self.lso = min(self.lso, target)
        self.leo = target
        self.hw = min(self.hw, target)

    @rule()
    def reopen(self) -> None:
        active_base = self.log.segments[-1].base_offset
        self.log.close()
        self.log = Log.open(
            self.disk,
            self.path,
            CONFIG,
            clock=self.clock,
            log_start_offset=self.lso,
            high_watermark=self.hw,
        )
        # After a reload the log end is where the data ends, or the active segment's base when
        # it is empty (Kafka's in-memory LEO after a mid-batch truncation can be above both);
        # below the log start offset, the log starts over there.
        data_end = self.batches[-1][1] + 1 if self.batches else 0
        expected = max(data_end, active_base, self.lso)
        assert self.log.log_end_offset == expected
        self.leo = expected
        self.lso = max(self.lso, self.log.segments[0].base_offset)
        self.hw = min(max(self.hw, self.lso), self.leo)

    @invariant()
    def offsets_agree(self) -> None:
        lg = self.log
        assert lg.log_end_offset == self.leo
        assert lg.log_start_offset == self.lso
        assert lg.high_watermark == self.hw
        assert lg.log_start_offset <= lg.high_watermark <= lg.log_end_offset
        assert lg.recovery_point <= lg.log_end_offset
        bases = [s.base_offset for s in lg.segments]
        assert bases == sorted(set(bases))

    @invariant()
    def data_agrees(self) -> None:
        expected = [(o, v) for b in self.batches for o, v in b[2] if o >= self.lso]
        got: list[tuple[int, bytes]] = []
        offset = self.lso
        while offset < self.leo:
            fetched = self.log.read(offset, 700)
            if not fetched.data:
                break
            batches = list(Walker(fetched.data))
            got.extend(
                (r.offset, r.value or b"")
                for b in batches
                for r in b.records()
                if r.offset >= offset
            )
            offset = batches[-1].last_offset + 1
        assert got == expected


LogModel.TestCase.settings = settings(
    max_examples=60,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestLogModel = LogModel.TestCase
