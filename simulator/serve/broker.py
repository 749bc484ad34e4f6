"""The broker: one node, the leader of every partition, answering requests from its storage.

Handlers take a decoded request body and return the response body (None for `acks=0`, which Kafka
never answers). Everything runs on the event loop's thread, one request at a time per connection,
so a produce reads the log end and appends without a race, and a power cut falls between two
storage operations, never inside the bookkeeping around them.
"""

from __future__ import annotations

import asyncio
import logging
import re
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass

from logrepair.format.batch_layout import LOG_OVERHEAD, RECORD_BATCH_OVERHEAD
from logrepair.protocol.connection import Request
from logrepair.protocol.errors import ErrorCode
from logrepair.protocol.schema import APIS
from logrepair.storage.layout import TopicPartition
from logrepair.storage.log import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    InvalidRecordsError,
    Log,
    LogStorageError,
    OffsetOutOfRangeError,
)

from .coordinator import Coordinator
from .ledger import Ledger
from .log_validator import InvalidBatch, assign_offsets, validate
from .producers import SequenceChecks
from .storage import BrokerStorage, CutReport

log = logging.getLogger(__name__)

NODE_ID = 0
CLUSTER_ID = "logsim-serve-cluster"
READ_COMMITTED = 1
_BASE_AND_LENGTH = struct.Struct(">qi")
_LAST_OFFSET_DELTA = struct.Struct(">i")
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")


@dataclass
class BrokerOptions:
    host: str = "127.0.0.1"
    port: int = 9092
    partitions: int = 1
    """`num.partitions`: partitions of an auto-created topic."""
    auto_create: bool = True
    offsets_partitions: int = 1
    """`offsets.topic.num.partitions` (Kafka's default is 50; one keeps a test log dir small)."""


class Broker:
    def __init__(self, storage: BrokerStorage, options: BrokerOptions, ledger: Ledger) -> None:
        self.storage = storage
        self.options = options
        self.ledger = ledger
        self.leader_epoch = 0
        self.sequences: dict[TopicPartition, SequenceChecks] = {}
        self.coordinator = Coordinator(self)
        self._waiters: set[asyncio.Future] = set()
        self.handlers: dict[int, Callable] = {
            0: self.produce,
            1: self.fetch,
            2: self.list_offsets,
            3: self.metadata,
            18: self.api_versions,
            **self.coordinator.handlers(),
        }
        self.become_leader()
        self.coordinator.load()

    def become_leader(self) -> None:
        """At start and after each reboot the broker is elected leader of every partition; with
        itself the only in-sync replica, the high watermark moves to the log end at once."""
        for lg in self.storage.logs.values():
            lg.update_high_watermark(lg.log_end_offset)

    # --- topics ---------------------------------------------------------------------------------

    def topics(self) -> dict[str, int]:
        """Topic → partition count, from the partitions the log dir holds."""
        out: dict[str, int] = {}
        for tp in self.storage.logs:
            out[tp.topic] = max(out.get(tp.topic, 0), tp.partition + 1)
        return out

    def create_topic(self, name: str, partitions: int) -> None:
        for i in range(partitions):
            self.storage.create_log(TopicPartition(name, i))
        log.info("created topic %s with %d partitions", name, partitions)

    def log_of(self, topic: str, partition: int) -> Log | None:
        return self.storage.logs.get(TopicPartition(topic, partition))

    def now_ms(self) -> int:
        return int(time.time() * 1000)

    # --- dispatch -------------------------------------------------------------------------------

    def dispatch(self, request: Request):
        """The response body (None: no response), or a coroutine giving it for the requests that
        may wait (Fetch's long poll, JoinGroup, SyncGroup)."""
        return self.handlers[request.api.key](request.body, request.version)

    def api_versions_body(self, error: ErrorCode = ErrorCode.NONE) -> dict:
        return {
            "error_code": int(error),
            "api_keys": [
                {"api_key": a.key, "min_version": a.min_version, "max_version": a.max_version}
                for a in APIS.values()
            ],
        }

    def api_versions(self, body: dict, version: int) -> dict:
        return self.api_versions_body()

    # --- Metadata -------------------------------------------------------------------------------

    def metadata(self, body: dict, version: int) -> dict:
        topics = self.topics()
        requested = body["topics"]
        if requested is None or (version == 0 and not requested):
            names = sorted(topics)
        else:
            names = [t["name"] for t in requested]
        auto = body.get("allow_auto_topic_creation", True) and self.options.auto_create
        out = []
        for name in names:
            error = ErrorCode.NONE
            if name not in topics:
                if not _LEGAL_TOPIC.fullmatch(name) or name in (".", ".."):
                    error = ErrorCode.INVALID_TOPIC_EXCEPTION
                elif auto and not name.startswith("__"):
                    self.create_topic(name, self.options.partitions)
                    topics[name] = self.options.partitions
                else:
                    error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            out.append(
                {
                    "error_code": int(error),
                    "name": name,
                    "is_internal": name.startswith("__"),
                    "partitions": [
                        {
                            "error_code": 0,
                            "partition_index": i,
                            "leader_id": NODE_ID,
                            "leader_epoch": self.leader_epoch,
                            "replica_nodes": [NODE_ID],
                            "isr_nodes": [NODE_ID],
                            "offline_replicas": [],
                        }
                        for i in range(topics.get(name, 0))
                    ],
                }
            )
        return {
            "brokers": [{"node_id": NODE_ID, "host": self.options.host, "port": self.options.port}],
            "cluster_id": CLUSTER_ID,
            "controller_id": NODE_ID,
            "topics": out,
        }

    # --- Produce --------------------------------------------------------------------------------

    def produce(self, body: dict, version: int) -> dict | None:
        acks = body["acks"]
        responses = []
        for topic in body["topic_data"]:
            parts = []
            for pd in topic["partition_data"]:
                if acks not in (0, 1, -1):
                    parts.append(_produce_error(pd["index"], ErrorCode.INVALID_REQUIRED_ACKS))
                else:
                    parts.append(self._produce_partition(topic["name"], pd, acks))
            responses.append({"name": topic["name"], "partition_responses": parts})
        self.notify_fetchers()
        return None if acks == 0 else {"responses": responses}

    def sequence_checks(self, tp: TopicPartition, lg: Log) -> SequenceChecks:
        checks = self.sequences.get(tp)
        if checks is None:
            checks = self.sequences[tp] = SequenceChecks(lg.producer_state)
        return checks

    def _produce_partition(self, topic: str, pd: dict, acks: int) -> dict:
        index = pd["index"]
        lg = self.log_of(topic, index)
        if lg is None:
            return _produce_error(index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if pd["records"] is None:
            return _produce_error(index, ErrorCode.INVALID_RECORD)
        tp = lg.topic_partition
        try:
            batch = validate(pd["records"], lg.config.max_message_bytes)
        except InvalidBatch as e:
            log.info("produce to %s refused: %s", tp, e.message)
            return _produce_error(index, e.error)
        try:
            checks = self.sequence_checks(tp, lg)
            duplicate = checks.check(batch)
            if duplicate is not None:  # answered as Kafka answers it: the original offsets
                return {"index": index, "base_offset": duplicate.first_offset,
                        "log_append_time_ms": batch.max_timestamp,
                        "log_start_offset": lg.log_start_offset}  # fmt: skip
            now = self.now_ms()
            append_time = now if lg.config.message_timestamp_type == "LogAppendTime" else None
            base = lg.log_end_offset
            data = assign_offsets(batch, base, self.leader_epoch, append_time)
            info = lg.append_batches(data)
            lg.update_high_watermark(lg.log_end_offset)
            checks.appended(batch, base)
        except InvalidBatch as e:  # the producer state's refusals (Kafka's log append phase)
            log.info("produce to %s refused: %s", tp, e.message)
            return _produce_error(index, e.error, lg.log_start_offset)
        except InvalidRecordsError as e:
            log.info("produce to %s refused: %s", tp, e)
            return _produce_error(index, ErrorCode.INVALID_TXN_STATE, lg.log_start_offset)
        except LogStorageError as e:
            log.warning("produce to %s failed: %s", tp, e)
            return _produce_error(index, ErrorCode.KAFKA_STORAGE_ERROR)
        if acks != 0:
            self.ledger.ack(tp, base, info.last_offset, int.from_bytes(data[17:21], "big"))
        return {
            "index": index,
            "base_offset": base,
            "log_append_time_ms": -1 if append_time is None else append_time,
            "log_start_offset": lg.log_start_offset,
        }

    # --- Fetch ----------------------------------------------------------------------------------

    def notify_fetchers(self) -> None:
        for fut in self._waiters:
            if not fut.done():
                fut.set_result(None)
        self._waiters.clear()

    async def fetch(self, body: dict, version: int) -> dict:
        deadline = time.monotonic() + max(0, body["max_wait_ms"]) / 1000
        while True:
            response, size, errors = self._fetch_once(body)
            left = deadline - time.monotonic()
            if size >= body["min_bytes"] or errors or left <= 0:
                return response
            fut = asyncio.get_running_loop().create_future()
            self._waiters.add(fut)
            try:
                await asyncio.wait_for(fut, left)
            except TimeoutError:
                pass

    def last_stable_offset(self, lg: Log) -> int:
        firsts = [
            e.current_txn_first_offset
            for e in lg.producer_state.entries
            if e.current_txn_first_offset >= 0
        ]
        return min([lg.high_watermark, *firsts])

    def _fetch_once(self, body: dict) -> tuple[dict, int, bool]:
        remaining = body["max_bytes"]
        read_committed = body.get("isolation_level", 0) == READ_COMMITTED
        total, errors = 0, False
        responses = []
        for topic in body["topics"]:
            parts = []
            for p in topic["partitions"]:
                part = self._fetch_partition(topic["topic"], p, remaining, read_committed, total)
                size = len(part["records"] or b"")
                total += size
                remaining = max(0, remaining - size)
                errors = errors or part["error_code"] != 0
                parts.append(part)
            responses.append({"topic": topic["topic"], "partitions": parts})
        return {"error_code": 0, "session_id": 0, "responses": responses}, total, errors

    def _fetch_partition(
        self, topic: str, p: dict, remaining: int, read_committed: bool, fetched: int
    ) -> dict:
        index = p["partition"]
        lg = self.log_of(topic, index)
        out = {"partition_index": index, "error_code": 0, "records": b""}
        if lg is None:
            return {**out, "error_code": int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
                    "high_watermark": -1}  # fmt: skip
        epoch = p.get("current_leader_epoch", -1)
        if epoch >= 0 and epoch != self.leader_epoch:
            error = (
                ErrorCode.FENCED_LEADER_EPOCH
                if epoch < self.leader_epoch
                else ErrorCode.UNKNOWN_LEADER_EPOCH
            )
            return {**out, "error_code": int(error), "high_watermark": -1}
        hw, lso = lg.high_watermark, self.last_stable_offset(lg)
        out.update(high_watermark=hw, last_stable_offset=lso, log_start_offset=lg.log_start_offset)
        upper = lso if read_committed else hw
        offset = p["fetch_offset"]
        if read_committed:
            out["aborted_transactions"] = []
        if offset >= upper and offset <= lg.log_end_offset:
            return out
        limit = min(p["partition_max_bytes"], remaining)
        try:
            data = lg.read(offset, limit, min_one_message=fetched == 0).data
        except OffsetOutOfRangeError:
            return {**out, "error_code": int(ErrorCode.OFFSET_OUT_OF_RANGE)}
        data, end = _below(data, upper)
        out["records"] = data
        if read_committed and data:
            out["aborted_transactions"] = [
                {"producer_id": t.producer_id, "first_offset": t.first_offset}
                for t in lg.collect_aborted_transactions(offset, end)
            ]
        return out

    # --- ListOffsets ----------------------------------------------------------------------------

    def list_offsets(self, body: dict, version: int) -> dict:
        read_committed = body.get("isolation_level", 0) == READ_COMMITTED
        topics = []
        for topic in body["topics"]:
            parts = []
            for p in topic["partitions"]:
                index = p["partition_index"]
                lg = self.log_of(topic["name"], index)
                if lg is None:
                    parts.append({"partition_index": index,
                                  "error_code": int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)})  # fmt: skip
                    continue
                ts, offset = self._offset_for(lg, p["timestamp"], read_committed)
                parts.append(
                    {
                        "partition_index": index,
                        "error_code": 0,
                        "old_style_offsets": [] if offset < 0 else [offset],
                        "timestamp": ts,
                        "offset": offset,
                        "leader_epoch": self.leader_epoch if offset >= 0 else -1,
                    }
                )
            topics.append({"name": topic["name"], "partitions": parts})
        return {"topics": topics}

    def _offset_for(self, lg: Log, timestamp: int, read_committed: bool) -> tuple[int, int]:
        if timestamp == LATEST_TIMESTAMP:
            return -1, self.last_stable_offset(lg) if read_committed else lg.high_watermark
        if timestamp == EARLIEST_TIMESTAMP:
            return -1, lg.log_start_offset
        if timestamp < 0 and timestamp != MAX_TIMESTAMP:
            return -1, -1
        found = lg.offset_for_timestamp(timestamp)
        if found is None:
            return -1, -1
        return found.timestamp, found.offset

    # --- power ----------------------------------------------------------------------------------

    def cut(self, fault: str) -> dict:
        """A power cut now, the reboot, and the ledger's account of what survived."""
        report: CutReport = self.storage.cut_and_reboot(fault)
        self.leader_epoch += 1
        self.become_leader()
        self.sequences.clear()
        self.coordinator.after_reboot()
        line = self.ledger.after_reboot(
            report, self.storage.logs, self.coordinator.offsets_beyond_end()
        )
        self.notify_fetchers()
        return line


def _produce_error(index: int, error: ErrorCode, log_start_offset: int = -1) -> dict:
    """Kafka leaves the error message out; the broker's log has the reason."""
    return {"index": index, "error_code": int(error), "base_offset": -1,
            "log_start_offset": log_start_offset}  # fmt: skip


def _below(data: bytes, upper: int) -> tuple[bytes, int]:
    """The whole batches of `data` (as `Log.read` returns them: whole, valid) that start below
    `upper`, and the offset after the last; only their headers are read."""
    pos, next_offset = 0, upper
    while pos + RECORD_BATCH_OVERHEAD <= len(data):
        base, length = _BASE_AND_LENGTH.unpack_from(data, pos)
        if base >= upper:
            break
        next_offset = base + _LAST_OFFSET_DELTA.unpack_from(data, pos + 23)[0] + 1
        pos += LOG_OVERHEAD + length
    return (data if pos == len(data) else data[:pos]), next_offset
