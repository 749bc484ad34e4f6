"""The partition's producer state and its snapshot files (Kafka's `ProducerStateManager` and
`UnifiedLog.rebuildProducerState`): snapshots taken at rolls and at close, the state rebuilt from
the newest snapshot below a truncation point by replaying the log, all snapshots dropped when the
log starts over. Runs under `Log`'s lock, as the rest of the log's mutations.
"""

from __future__ import annotations

from . import layout
from .disk import Disk, join
from .local_log import LocalLog
from .log_loader import load_producer_state, snapshot_offsets
from .producer_snapshot import write_snapshot
from .producer_state import ProducerState


class ProducerStateManager:
    """`state` is the producer state after the log's last append; `last_snapshot_offset` the offset
    of the newest snapshot written or loaded (-1: none)."""

    def __init__(
        self, disk: Disk, dir: str, state: ProducerState, last_snapshot_offset: int = -1
    ) -> None:
        self.disk = disk
        self.dir = dir
        self.state = state
        self.last_snapshot_offset = last_snapshot_offset

    def advance_to(self, offset: int) -> None:
        """Moves the state's map end offset up to `offset` (a roll, a close): nothing between."""
        self.state.map_end_offset = max(self.state.map_end_offset, offset)

    def take_snapshot(self, *, sync: bool) -> str | None:
        """Writes `<map end offset>.snapshot` unless one at that offset was already written."""
        offset = self.state.map_end_offset
        if offset <= self.last_snapshot_offset:
            return None
        path = join(self.dir, layout.snapshot_file_name(offset))
        write_snapshot(self.disk, path, list(self.state.entries), sync=sync)
        self.last_snapshot_offset = offset
        return path

    def catch_up(self, local: LocalLog, end: int) -> None:
        """After loading: replays the log from where the state ends up to `end`, then snapshots."""
        if self.state.map_end_offset < end:
            replay_producer_state(local, self.state, self.state.map_end_offset, end)
            self.take_snapshot(sync=True)

    def rebuild(self, local: LocalLog, log_start_offset: int, target: int) -> None:
        """After truncation: drop snapshots past `target`, reload the newest one left, replay the
        batches after it up to `target`, snapshot at `target` (Kafka's `rebuildProducerState`)."""
        offsets = snapshot_offsets(self.disk, self.dir)
        for offset in offsets:
            if offset > target:
                self.disk.unlink(join(self.dir, layout.snapshot_file_name(offset)))
        kept = [o for o in offsets if o <= target]
        state, snapshot_offset = load_producer_state(
            self.disk, self.dir, kept, log_start_offset, target
        )
        if state.map_end_offset < target:
            replay_producer_state(local, state, state.map_end_offset, target)
        self.state = state
        self.last_snapshot_offset = snapshot_offset
        self.take_snapshot(sync=True)

    def truncate_fully_and_start_at(self, new_offset: int) -> None:
        """The log starts over at `new_offset`: an empty state there and no snapshot left."""
        self.state.truncate_fully_and_start_at(new_offset)
        for offset in snapshot_offsets(self.disk, self.dir):
            self.disk.unlink(join(self.dir, layout.snapshot_file_name(offset)))
        self.last_snapshot_offset = -1


def replay_producer_state(local: LocalLog, state: ProducerState, start: int, end: int) -> None:
    """Kafka's `rebuildProducerState` replay: the producer batches in [start, end) into `state`."""
    for segment in local.segments_in_range(start, end):
        position = segment.offset_index.lookup(start).position
        for entry in segment.entries(position):
            if entry.base_offset >= end:
                break
            if entry.last_offset < start:
                continue
            if entry.magic >= 2 and entry.producer_id >= 0:
                state.append_batch(segment.read_batch(entry))
    state.map_end_offset = end
