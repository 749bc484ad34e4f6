"""A fetch's aborted transactions include those whose ABORT marker lies in a later segment (Kafka's
`collectAbortedTransactions` goes on through later segments until an entry's last stable offset
reaches the upper bound). Found by the Kafka differential test of `logsim serve`."""

from __future__ import annotations

from logrepair.storage.log import Log, ProducerRecord
from logrepair.storage.txn_index import AbortedTxn
from simulator.disk import SimDisk


def test_an_abort_indexed_in_the_next_segment_is_collected() -> None:
    log = Log.open(SimDisk(), "/d/t-0")
    log.append([ProducerRecord(None, b"plain")])  # offset 0
    log.append([ProducerRecord(None, b"t")] * 2, producer_id=4, producer_epoch=0, base_sequence=0,
               is_transactional=True)  # fmt: skip  # offsets 1-2
    log.roll()  # the marker lands in the segment at 3
    log.append_end_txn(4, 0, commit=False)  # offset 3
    log.append([ProducerRecord(None, b"after")])  # offset 4
    assert [s.base_offset for s in log.segments] == [0, 3]
    # a fetch that read segment 0 only ([0, 3)) must still learn that 1-2 were aborted
    assert log.collect_aborted_transactions(0, 3) == [AbortedTxn(4, 1, 3, 4)]
    assert log.collect_aborted_transactions(4, 5) == []
    log.close()
