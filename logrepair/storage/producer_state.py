"""Producer state of one partition: idempotent producers and open transactions (spec fmt §7.2, §7.1).

A much smaller `ProducerStateManager`: it keeps, per producer, what a snapshot file stores, and the
open transactions ordered by first offset, which is what an aborted transaction's last stable
offset — and therefore the `.txnindex` — is computed from. The snapshot file format belongs to
`producer_snapshot`; this module only decides the entries.
"""

from __future__ import annotations

from ..format.batch_layout import increment_sequence
from ..format.control import ControlType
from .producer_snapshot import ProducerSnapshotEntry as ProducerEntry
from .txn_index import AbortedTxn

NO_PRODUCER_ID = -1
NO_SEQUENCE = -1


class ProducerStateError(ValueError):
    """A batch that breaks the producer's transaction state (Kafka's InvalidTxnStateException)."""


def last_sequence(base_sequence: int, last_offset_delta: int) -> int:
    """A batch's last sequence; sequences wrap past Integer.MAX_VALUE."""
    if base_sequence == NO_SEQUENCE:
        return NO_SEQUENCE
    return increment_sequence(base_sequence, last_offset_delta)


class ProducerState:
    def __init__(self, map_end_offset: int = 0, entries: tuple[ProducerEntry, ...] = ()) -> None:
        self.map_end_offset = map_end_offset
        self._producers: dict[int, ProducerEntry] = {e.producer_id: e for e in entries}
        # first offset → producer id of every open transaction, the key of Kafka's ongoingTxns.
        self._ongoing: dict[int, int] = {
            e.current_txn_first_offset: e.producer_id
            for e in entries
            if e.current_txn_first_offset >= 0
        }

    @property
    def entries(self) -> tuple[ProducerEntry, ...]:
        return tuple(self._producers[pid] for pid in sorted(self._producers))

    def in_transaction(self, producer_id: int) -> bool:
        """Whether the producer has an open transaction (a data batch must then be transactional)."""
        entry = self._producers.get(producer_id)
        return entry is not None and entry.current_txn_first_offset >= 0

    def ongoing(self) -> list[tuple[int, int]]:
        """(first offset, producer id) of every open transaction, by first offset."""
        return sorted(self._ongoing.items())

    def append_batch(self, batch) -> AbortedTxn | None:
        """Feeds one batch (format's Batch) to the state; returns the `.txnindex` entry of an abort.

        Legacy batches and batches without a producer id change nothing."""
        if batch.magic < 2 or batch.producer_id < 0:
            return None
        if batch.is_control:
            if batch.control_type() not in (ControlType.COMMIT, ControlType.ABORT):
                return None
            marker = batch.end_txn_marker()
            return self.append_end_txn(
                batch.producer_id,
                batch.producer_epoch,
                batch.base_offset,
                batch.max_timestamp,
                marker.control_type is ControlType.ABORT,
                marker.coordinator_epoch,
            )
        self.append_data(
            batch.producer_id,
            batch.producer_epoch,
            batch.base_sequence,
            batch.base_offset,
            batch.last_offset,
            batch.max_timestamp,
            batch.is_transactional,
        )
        return None

    def append_data(
        self,
        producer_id: int,
        epoch: int,
        base_sequence: int,
        base_offset: int,
        last_offset: int,
        max_timestamp: int,
        is_transactional: bool,
    ) -> None:
        """Records a data batch of an idempotent or transactional producer."""
        if producer_id == NO_PRODUCER_ID:
            return
        old = self._producers.get(producer_id)
        # Kafka's `ProducerStateEntry.addBatch` bumps the epoch and keeps an open transaction's
        # first offset (only its batch metadata is cleared): the abort that ends it spans both
        txn_first = old.current_txn_first_offset if old else -1
        if old is not None and old.current_txn_first_offset >= 0 and not is_transactional:
            raise ProducerStateError(
                f"Expected transactional write from producer {producer_id} at offset {base_offset} "
                "because it has an open transaction"
            )
        if is_transactional and txn_first < 0:
            txn_first = base_offset
            self._ongoing[base_offset] = producer_id
        self._producers[producer_id] = ProducerEntry(
            producer_id,
            epoch,
            last_sequence(base_sequence, last_offset - base_offset),
            last_offset,
            last_offset - base_offset,
            max_timestamp,
            old.coordinator_epoch if old else -1,
            txn_first,
        )
        self.map_end_offset = last_offset + 1

    def append_end_txn(
        self,
        producer_id: int,
        epoch: int,
        offset: int,
        timestamp: int,
        is_abort: bool,
        coordinator_epoch: int,
    ) -> AbortedTxn | None:
        """Applies a COMMIT/ABORT marker at `offset`; returns the `.txnindex` entry of an abort.

        A marker that closes no data writes no entry: it changes no last stable offset."""
        old = self._producers.get(producer_id)
        first = old.current_txn_first_offset if old else -1
        self._producers[producer_id] = ProducerEntry(
            producer_id,
            epoch,
            old.last_sequence if old else NO_SEQUENCE,
            old.last_offset if old else -1,
            old.offset_delta if old else 0,
            timestamp,
            coordinator_epoch,
            -1,
        )
        self.map_end_offset = offset + 1
        if first < 0:
            return None
        others = [o for o, pid in self._ongoing.items() if pid != producer_id]
        lso = min(others) if others else offset + 1
        del self._ongoing[first]
        if not is_abort:
            return None
        return AbortedTxn(producer_id, first, offset, lso)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self._producers.clear()
        self._ongoing.clear()
        self.map_end_offset = offset

    def on_log_start_offset_incremented(self, log_start_offset: int) -> None:
        """Bumps the map end offset as Kafka does; producers are kept (spec rec §4.4)."""
        if self.map_end_offset < log_start_offset:
            self.map_end_offset = log_start_offset
