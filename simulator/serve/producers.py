"""Idempotent and transactional producers: the leader's sequence checks and a small coordinator.

`SequenceChecks` is Kafka's `ProducerAppendInfo` check for one partition: a batch whose sequence
range matches one of the producer's last five is a duplicate (answered with the original offsets),
an older epoch is fenced, and a sequence that does not follow the last one is out of order. It is
seeded from the partition's producer state after a reboot, which keeps only each producer's last
batch — as Kafka's snapshot does.

`TransactionCoordinator` keeps `transactional.id` → producer id/epoch and the partitions of each
open transaction in memory (no `__transaction_state` log): after a reboot the open transactions
found in the partitions are aborted, as Kafka's coordinator aborts them once they time out.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from logrepair.format.batch import RecordBatch
from logrepair.format.batch_layout import increment_sequence
from logrepair.protocol.errors import ErrorCode
from logrepair.storage.layout import TopicPartition
from logrepair.storage.producer_state import ProducerState

from .log_validator import InvalidBatch

NO_EPOCH = -1
NO_SEQUENCE = -1
CACHED_BATCHES = 5  # Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN
INT32_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int


@dataclass
class _Producer:
    epoch: int
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=CACHED_BATCHES))

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


class SequenceChecks:
    """The producers of one partition."""

    def __init__(self, state: ProducerState) -> None:
        self._producers: dict[int, _Producer] = {}
        for e in state.entries:
            p = _Producer(e.epoch)
            if e.last_sequence >= 0:
                first = increment_sequence(e.last_sequence, -e.offset_delta)
                p.batches.append(
                    BatchMetadata(
                        first, e.last_sequence, e.last_offset - e.offset_delta, e.last_offset
                    )
                )
            self._producers[e.producer_id] = p

    def check(self, batch: RecordBatch) -> BatchMetadata | None:
        """The duplicate's metadata, None for a batch to append; raises InvalidBatch to refuse."""
        pid = batch.producer_id
        if pid < 0:
            return None
        epoch, first_seq = batch.producer_epoch, batch.base_sequence
        current = self._producers.get(pid)
        if current is None:
            return None  # no state (new, or lost with the log): any sequence is accepted
        if epoch < current.epoch:
            raise InvalidBatch(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                f"Epoch of producer {pid} is {epoch}, which is smaller than the last seen epoch "
                f"{current.epoch}",
            )
        if epoch > current.epoch:
            if first_seq != 0:
                raise InvalidBatch(
                    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    f"Invalid sequence number for new epoch of producer {pid}: {epoch} (request "
                    f"epoch), {first_seq} (seq. number), {current.epoch} (current producer epoch)",
                )
            return None
        last_seq = batch.last_sequence
        for m in current.batches:
            if m.first_seq == first_seq and m.last_seq == last_seq:
                return m
        if current.batches and not _in_sequence(current.last_seq, first_seq):
            raise InvalidBatch(
                ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                f"Out of order sequence number for producer {pid}: {first_seq} (incoming seq. "
                f"number), {current.last_seq} (current end sequence number)",
            )
        return None

    def appended(self, batch: RecordBatch, first_offset: int) -> None:
        pid = batch.producer_id
        if pid < 0:
            return
        p = self._producers.get(pid)
        if p is None or p.epoch != batch.producer_epoch:
            p = self._producers[pid] = _Producer(batch.producer_epoch)
        p.batches.append(
            BatchMetadata(
                batch.base_sequence,
                batch.last_sequence,
                first_offset,
                first_offset + batch.last_offset_delta,
            )
        )

    def fence(self, producer_id: int, epoch: int) -> None:
        """A new epoch from InitProducerId or an end-transaction marker."""
        p = self._producers.get(producer_id)
        if p is None or p.epoch < epoch:
            self._producers[producer_id] = _Producer(epoch)


@dataclass
class Transaction:
    transactional_id: str
    producer_id: int
    epoch: int
    timeout_ms: int
    partitions: set[TopicPartition] = field(default_factory=set)
    groups: set[str] = field(default_factory=set)


class TransactionCoordinator:
    """Producer ids for idempotent producers, and the state of transactional ones."""

    def __init__(self, first_producer_id: int = 1000) -> None:
        self.next_producer_id = first_producer_id
        self.by_id: dict[str, Transaction] = {}

    def allocate(self) -> int:
        pid = self.next_producer_id
        self.next_producer_id += 1
        return pid

    def init(self, transactional_id: str, timeout_ms: int) -> tuple[Transaction, set]:
        """InitProducerId for a transactional id: a new epoch, and the partitions of the open
        transaction of the previous one (to abort)."""
        txn = self.by_id.get(transactional_id)
        if txn is None:
            txn = Transaction(transactional_id, self.allocate(), 0, timeout_ms)
            self.by_id[transactional_id] = txn
            return txn, set()
        to_abort = set(txn.partitions)
        if txn.epoch >= 32766:
            txn.producer_id, txn.epoch = self.allocate(), 0
        else:
            txn.epoch += 1
        txn.timeout_ms = timeout_ms
        txn.partitions = set()
        txn.groups = set()
        return txn, to_abort

    def get(
        self, transactional_id: str, producer_id: int, epoch: int
    ) -> tuple[Transaction | None, ErrorCode]:
        txn = self.by_id.get(transactional_id)
        if txn is None or txn.producer_id != producer_id:
            return None, ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if epoch != txn.epoch:
            return None, ErrorCode.PRODUCER_FENCED
        return txn, ErrorCode.NONE
