"""The group and transaction coordinator of the one broker: committed offsets, group membership,
producer ids and transactions.

Offsets are written to `__consumer_offsets` (see `offsets_topic`) and read back from it at every
reboot, so what a consumer finds after a power cut is what the disk kept. A transaction's markers
are real control batches appended to each of its partitions (and to the offsets partition when it
committed offsets), so `read_committed` consumers and the `.txnindex` see what Kafka's would.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from logrepair.protocol.errors import ErrorCode
from logrepair.storage.layout import TopicPartition
from logrepair.storage.log import Log, LogStorageError, ProducerRecord

from .groups import GroupMembership
from .offsets_topic import (
    OFFSETS_TOPIC,
    Committed,
    commit_key,
    commit_value,
    load_commits,
    partition_for,
)
from .producers import TransactionCoordinator

if TYPE_CHECKING:
    from .broker import Broker

GROUP_KEY, TRANSACTION_KEY = 0, 1


class Coordinator:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.commits: dict[tuple[str, str, int], Committed] = {}
        self.pending_txn_commits: dict[int, dict[tuple[str, str, int], Committed]] = {}
        self.membership = GroupMembership()
        self.transactions = TransactionCoordinator()

    def handlers(self) -> dict[int, Callable]:
        return {
            8: self.offset_commit,
            9: self.offset_fetch,
            10: self.find_coordinator,
            11: self.join_group,
            12: self.heartbeat,
            13: self.leave_group,
            14: self.sync_group,
            22: self.init_producer_id,
            24: self.add_partitions_to_txn,
            25: self.add_offsets_to_txn,
            26: self.end_txn,
            28: self.txn_offset_commit,
        }

    # --- state across reboots -------------------------------------------------------------------

    def load(self) -> None:
        """Committed offsets from `__consumer_offsets`; producer ids above every one in the logs."""
        self.commits = {}
        for tp, lg in self.broker.storage.logs.items():
            if tp.topic == OFFSETS_TOPIC:
                self.commits.update(load_commits(lg))
            for e in lg.producer_state.entries:
                self.transactions.next_producer_id = max(
                    self.transactions.next_producer_id, e.producer_id + 1
                )

    def after_reboot(self) -> None:
        """Group members are forgotten; transactions left open in the partitions are aborted with
        a bumped epoch (the producer is fenced, as by Kafka's timeout abort); offsets reloaded."""
        self.membership.reset()
        self.pending_txn_commits.clear()
        by_pid = {t.producer_id: t for t in self.transactions.by_id.values()}
        bumped: dict[int, int] = {}
        for lg in self.broker.storage.logs.values():
            for e in lg.producer_state.entries:
                if e.current_txn_first_offset < 0:
                    continue
                if e.producer_id not in bumped:
                    txn = by_pid.get(e.producer_id)
                    bumped[e.producer_id] = e.epoch + 1 if txn is None else txn.epoch + 1
                    if txn is not None:
                        txn.epoch, txn.partitions, txn.groups = bumped[e.producer_id], set(), set()
                self._marker(lg, e.producer_id, bumped[e.producer_id], commit=False)
        for txn in self.transactions.by_id.values():
            if txn.producer_id not in bumped and txn.partitions:
                txn.epoch += 1  # its partitions lost the open data: the producer is fenced too
                txn.partitions, txn.groups = set(), set()
        self.load()

    def offsets_beyond_end(self) -> list[dict]:
        out = []
        for (group, topic, partition), c in sorted(self.commits.items()):
            lg = self.broker.log_of(topic, partition)
            if lg is not None and c.offset > lg.log_end_offset:
                out.append({"group": group, "partition": f"{topic}-{partition}",
                            "offset": c.offset, "log_end": lg.log_end_offset})  # fmt: skip
        return out

    def offsets_log(self, group: str) -> Log:
        topics = self.broker.topics()
        if OFFSETS_TOPIC not in topics:
            self.broker.create_topic(OFFSETS_TOPIC, self.broker.options.offsets_partitions)
            topics[OFFSETS_TOPIC] = self.broker.options.offsets_partitions
        lg = self.broker.log_of(OFFSETS_TOPIC, partition_for(group, topics[OFFSETS_TOPIC]))
        assert lg is not None
        return lg

    def _marker(self, lg: Log, pid: int, epoch: int, *, commit: bool) -> int:
        """Appends a COMMIT/ABORT control batch; returns its offset."""
        info = lg.append_end_txn(pid, epoch, commit=commit, leader_epoch=self.broker.leader_epoch)
        self.broker.sequence_checks(lg.topic_partition, lg).fence(pid, epoch)
        return info.first_offset

    # --- FindCoordinator ------------------------------------------------------------------------

    def find_coordinator(self, body: dict, version: int) -> dict:
        if body.get("key_type", GROUP_KEY) == GROUP_KEY:
            self.offsets_log(body["key"])
        o = self.broker.options
        return {"error_code": 0, "error_message": "NONE", "node_id": 0, "host": o.host,
                "port": o.port}  # fmt: skip

    # --- offsets --------------------------------------------------------------------------------

    def offset_commit(self, body: dict, version: int) -> dict:
        group = body["group_id"]
        allowed = self.membership.commit_allowed(
            group, body.get("generation_id_or_member_epoch", -1), body.get("member_id", "")
        )
        return {"topics": self._commit(group, body["topics"], allowed, None)}

    def txn_offset_commit(self, body: dict, version: int) -> dict:
        txn, error = self.transactions.get(
            body["transactional_id"], body["producer_id"], body["producer_epoch"]
        )
        if txn is not None and body["group_id"] not in txn.groups:
            error = ErrorCode.INVALID_TXN_STATE
        return {"topics": self._commit(body["group_id"], body["topics"], error, txn)}

    def _commit(self, group: str, topics: list, error: ErrorCode, txn) -> list:
        now = self.broker.now_ms()
        records, commits, out = [], {}, []
        for t in topics:
            parts = []
            for p in t["partitions"]:
                code = error
                if (
                    code == ErrorCode.NONE
                    and self.broker.log_of(t["name"], p["partition_index"]) is None
                ):
                    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                if code == ErrorCode.NONE:
                    key = (group, t["name"], p["partition_index"])
                    epoch = p.get("committed_leader_epoch", -1)
                    meta = p["committed_metadata"] or ""
                    records.append(ProducerRecord(commit_key(*key), commit_value(
                        p["committed_offset"], epoch, meta, now)))  # fmt: skip
                    commits[key] = Committed(p["committed_offset"], epoch, meta)
                parts.append({"partition_index": p["partition_index"], "error_code": int(code)})
            out.append({"name": t["name"], "partitions": parts})
        if records:
            lg = self.offsets_log(group)
            try:
                if txn is None:
                    lg.append(records, leader_epoch=self.broker.leader_epoch)
                    self.commits.update(commits)
                else:
                    lg.append(records, leader_epoch=self.broker.leader_epoch,
                              producer_id=txn.producer_id, producer_epoch=txn.epoch,
                              base_sequence=0, is_transactional=True)  # fmt: skip
                    self.pending_txn_commits.setdefault(txn.producer_id, {}).update(commits)
            except LogStorageError:
                for t in out:
                    for p in t["partitions"]:
                        p["error_code"] = int(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        return out

    def offset_fetch(self, body: dict, version: int) -> dict:
        group = body["group_id"]
        wanted = body["topics"]
        if wanted is None:
            by_topic: dict[str, list[int]] = {}
            for g, topic, partition in sorted(self.commits):
                if g == group:
                    by_topic.setdefault(topic, []).append(partition)
            wanted = [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()]
        topics = []
        unstable = set()
        if body.get("require_stable"):  # KIP-447: a commit of an open transaction is not final
            unstable = {k for pending in self.pending_txn_commits.values() for k in pending}
        for t in wanted:
            parts = []
            for index in t["partition_indexes"]:
                key = (group, t["name"], index)
                c = self.commits.get(key)
                parts.append(
                    {
                        "partition_index": index,
                        "committed_offset": -1 if c is None else c.offset,
                        "committed_leader_epoch": -1 if c is None else c.leader_epoch,
                        "metadata": "" if c is None else c.metadata,
                        "error_code": int(
                            ErrorCode.UNSTABLE_OFFSET_COMMIT if key in unstable else ErrorCode.NONE
                        ),
                    }
                )
            topics.append({"name": t["name"], "partitions": parts})
        return {"topics": topics, "error_code": 0}

    # --- group membership -----------------------------------------------------------------------

    async def join_group(self, body: dict, version: int) -> dict:
        return await self.membership.join(body, version, "consumer")

    async def sync_group(self, body: dict, version: int) -> dict:
        return await self.membership.sync(body)

    def heartbeat(self, body: dict, version: int) -> dict:
        return {"error_code": int(self.membership.heartbeat(body))}

    def leave_group(self, body: dict, version: int) -> dict:
        if version < 3:
            codes = self.membership.leave(body["group_id"], [body["member_id"]])
            return {"error_code": int(codes[0])}
        members = body["members"]
        codes = self.membership.leave(body["group_id"], [m["member_id"] for m in members])
        return {
            "error_code": 0,
            "members": [
                {
                    "member_id": m["member_id"],
                    "group_instance_id": m.get("group_instance_id"),
                    "error_code": int(c),
                }
                for m, c in zip(members, codes, strict=True)
            ],  # fmt: skip
        }

    # --- producers and transactions -------------------------------------------------------------

    def init_producer_id(self, body: dict, version: int) -> dict:
        tid = body["transactional_id"]
        pid, epoch = body.get("producer_id", -1), body.get("producer_epoch", -1)
        if tid is None:
            if pid >= 0 and 0 <= epoch < 32766:  # KIP-360: an idempotent producer's epoch bump
                return {"error_code": 0, "producer_id": pid, "producer_epoch": epoch + 1}
            return {
                "error_code": 0,
                "producer_id": self.transactions.allocate(),
                "producer_epoch": 0,
            }
        known = self.transactions.by_id.get(tid)
        if pid >= 0 and known is not None and (pid, epoch) != (known.producer_id, known.epoch):
            return {"error_code": int(ErrorCode.PRODUCER_FENCED), "producer_id": -1}
        txn, to_abort = self.transactions.init(tid, body["transaction_timeout_ms"])
        try:
            for tp in to_abort:
                lg = self.broker.storage.logs.get(tp)
                if lg is not None:
                    self._marker(lg, txn.producer_id, txn.epoch, commit=False)
        except LogStorageError:
            return {"error_code": int(ErrorCode.COORDINATOR_NOT_AVAILABLE), "producer_id": -1}
        self.pending_txn_commits.pop(txn.producer_id, None)
        return {"error_code": 0, "producer_id": txn.producer_id, "producer_epoch": txn.epoch}

    def add_partitions_to_txn(self, body: dict, version: int) -> dict:
        txn, error = self.transactions.get(
            body["transactional_id"], body["producer_id"], body["producer_epoch"]
        )
        results = []
        for t in body["topics"]:
            parts = []
            for index in t["partitions"]:
                code = error
                if code == ErrorCode.NONE:
                    if self.broker.log_of(t["name"], index) is None:
                        code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    else:
                        txn.partitions.add(TopicPartition(t["name"], index))
                parts.append({"partition_index": index, "partition_error_code": int(code)})
            results.append({"name": t["name"], "results_by_partition": parts})
        return {"results_by_topic": results}

    def add_offsets_to_txn(self, body: dict, version: int) -> dict:
        txn, error = self.transactions.get(
            body["transactional_id"], body["producer_id"], body["producer_epoch"]
        )
        if txn is not None:
            txn.groups.add(body["group_id"])
            txn.partitions.add(self.offsets_log(body["group_id"]).topic_partition)
        return {"error_code": int(error)}

    def end_txn(self, body: dict, version: int) -> dict:
        txn, error = self.transactions.get(
            body["transactional_id"], body["producer_id"], body["producer_epoch"]
        )
        if txn is None:
            return {"error_code": int(error)}
        commit = body["committed"]
        markers = []
        try:
            for tp in sorted(txn.partitions, key=lambda tp: (tp.topic, tp.partition)):
                lg = self.broker.storage.logs.get(tp)
                if lg is not None:
                    markers.append(
                        (lg, self._marker(lg, txn.producer_id, txn.epoch, commit=commit))
                    )
        except LogStorageError:
            return {"error_code": int(ErrorCode.COORDINATOR_NOT_AVAILABLE)}
        if commit:  # an acknowledged commit: the verdict looks for its markers after each cut
            for lg, offset in markers:
                crc = int.from_bytes(lg.read(offset, 1).data[17:21], "big")
                self.broker.ledger.ack(lg.topic_partition, offset, offset, crc, marker=True)
        pending = self.pending_txn_commits.pop(txn.producer_id, {})
        if commit:
            self.commits.update(pending)
        txn.partitions, txn.groups = set(), set()
        self.broker.notify_fetchers()
        return {"error_code": 0}
