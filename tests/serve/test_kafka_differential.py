"""`logsim serve` against a real Kafka 4.1.1 broker: the same requests, the same answers.

One script of raw requests (our codec, versions both serve: the flexible ones kafka-python and
librdkafka negotiate) runs against each broker; the answers are compared field by field, and the
batches a fetch returns byte for byte, once the two things that differ by design are set aside:
the node id, and the producer ids each broker hands out (compared by position instead). Skipped
when Java or Maven or Kafka's jars are missing; required under CI, as the other Kafka oracles.
"""

from __future__ import annotations

import os
import socket
import struct
import time

import pytest

from logrepair.format.batch import RecordBatch
from logrepair.format.batch_builder import build_batch
from logrepair.format.batch_layout import Record
from logrepair.format.walker import Walker
from logrepair.protocol.codec import decode_response, encode_request
from logrepair.protocol.schema import APIS
from simulator.serve.testing import ServeThread
from tests.kafka import harness
from tests.kafka.broker import Broker, BrokerError

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def kafka(tmp_path_factory):
    """The harness's real broker (tests/kafka), configured as `logsim serve`'s defaults are."""
    try:
        harness.ensure_built()
        broker = Broker(
            tmp_path_factory.mktemp("kafka") / "data",
            settings={
                "auto.create.topics.enable": "true",
                "offsets.topic.num.partitions": 1,
                "transaction.state.log.num.partitions": 50,
            },
        )
        broker.start()
    except (harness.HarnessUnavailable, BrokerError) as e:
        if os.environ.get("CI"):
            pytest.fail(f"Kafka oracle required under CI: {e}", pytrace=False)
        pytest.skip(str(e))
    yield broker
    broker.stop()


class _Client:
    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.file = self.sock.makefile("rb")
        self.cid = 0

    def __call__(self, key: int, version: int, body: dict) -> dict:
        self.cid += 1
        self.sock.sendall(encode_request(APIS[key], version, self.cid, "differential", body))
        size = struct.unpack(">i", self.file.read(4))[0]
        cid, response = decode_response(APIS[key], version, self.file.read(size))
        assert cid == self.cid
        return response

    def close(self) -> None:
        self.file.close()
        self.sock.close()


T0 = 1_700_000_000_000


def _batch(n: int, ts: int, **kw) -> bytes:
    return build_batch([Record(i, ts + 1000 * i, b"k%d" % i, b"v%d" % i, ()) for i in range(n)],
                       base_offset=0, **kw)  # fmt: skip


def _script(port: int) -> dict:
    """The requests, in order; what each answered (normalized where the brokers differ by design)."""
    call, out, topic = _Client(port), {}, "differential"

    def produce(records: bytes, acks: int = -1, name: str = topic, tid: str | None = None) -> dict:
        body = {"transactional_id": tid, "acks": acks, "timeout_ms": 10000, "topic_data": [
            {"name": name, "partition_data": [{"index": 0, "records": records}]}]}  # fmt: skip
        return call(0, 9, body)["responses"][0]["partition_responses"][0]

    def fetch(offset: int, isolation: int = 0, name: str = topic) -> dict:
        body = {"max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": isolation,
                "topics": [{"topic": name, "partitions": [
                    {"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20}]}]}  # fmt: skip
        return call(1, 12, body)["responses"][0]["partitions"][0]

    def list_offset(ts: int, isolation: int = 0) -> dict:
        body = {"replica_id": -1, "isolation_level": isolation, "topics": [
            {"name": topic, "partitions": [{"partition_index": 0, "timestamp": ts}]}]}  # fmt: skip
        return call(2, 7, body)["topics"][0]["partitions"][0]

    for _ in range(50):  # Kafka creates the topic asynchronously
        md = call(3, 9, {"topics": [{"name": topic}], "allow_auto_topic_creation": True})
        if md["topics"][0]["error_code"] == 0 and md["topics"][0]["partitions"]:
            break
        time.sleep(0.2)
    for _ in range(100):  # and makes its leader ready a little later
        if list_offset(-1)["error_code"] == 0:
            break
        time.sleep(0.2)
    part = md["topics"][0]["partitions"][0]
    out["metadata"] = {**md["topics"][0], "partitions": [{**part, "leader_id": "node",
                       "replica_nodes": ["node"], "isr_nodes": ["node"]}]}  # fmt: skip
    out["metadata_invalid_name"] = call(3, 9, {"topics": [{"name": "no spaces!"}]})["topics"][0][
        "error_code"
    ]
    first = _batch(3, T0)
    out["produce"] = produce(first)
    out["produce_retry_without_producer_id"] = produce(first)  # not idempotent: appended again
    out["produce_bad_crc"] = produce(first[:30] + bytes([first[30] ^ 1]) + first[31:])
    out["produce_two_batches"] = produce(first + first)
    out["produce_bad_acks"] = produce(first, acks=2)
    out["produce_unknown_topic"] = produce(first, name="nowhere")
    for _ in range(100):  # Kafka's coordinator may still be loading: retried, as clients do
        pid = call(22, 4, {"transactional_id": None, "transaction_timeout_ms": 60000})
        if pid["error_code"] == 0:
            break
        time.sleep(0.2)
    idem = _batch(2, T0 + 10_000, producer_id=pid["producer_id"], producer_epoch=0, base_sequence=0)
    out["idempotent"] = produce(idem)
    out["idempotent_duplicate"] = produce(idem)
    gap = _batch(1, T0 + 20_000, producer_id=pid["producer_id"], producer_epoch=0, base_sequence=7)
    out["idempotent_out_of_order"] = produce(gap)
    # a transaction aborted, then one committed
    for _ in range(100):  # Kafka creates __transaction_state at the first FindCoordinator
        found = call(10, 3, {"key": "t1", "key_type": 1})
        txn = call(22, 4, {"transactional_id": "t1", "transaction_timeout_ms": 60000})
        if found["error_code"] == txn["error_code"] == 0:
            break
        time.sleep(0.2)
    out["init_transactional"] = {**txn, "producer_id": "pid"}
    add = {"transactional_id": "t1", "producer_id": txn["producer_id"], "producer_epoch":
           txn["producer_epoch"], "topics": [{"name": topic, "partitions": [0]}]}  # fmt: skip
    for commit in (False, True):
        for _ in range(100):  # CONCURRENT_TRANSACTIONS while Kafka still writes the last markers
            out[f"add_partitions_{commit}"] = call(24, 3, add)
            if (
                out[f"add_partitions_{commit}"]["results_by_topic"][0]["results_by_partition"][0][
                    "partition_error_code"
                ]
                != 51
            ):
                break
            time.sleep(0.1)
        tb = _batch(2, T0 + 30_000, producer_id=txn["producer_id"], producer_epoch=txn["producer_epoch"],
                    base_sequence=2 * commit, is_transactional=True)  # fmt: skip
        out[f"produce_transactional_{commit}"] = produce(tb, tid="t1")
        out[f"end_txn_{commit}"] = call(26, 3, {"transactional_id": "t1", "producer_id":
                                      txn["producer_id"], "producer_epoch": txn["producer_epoch"],
                                      "committed": commit})  # fmt: skip
    for _ in range(100):  # Kafka writes the markers asynchronously
        p = fetch(0, isolation=1)
        if p["last_stable_offset"] == p["high_watermark"] == 14:
            break
        time.sleep(0.1)
    out["fetch_read_committed"] = {k: v for k, v in p.items() if k != "records"}
    for t in out["fetch_read_committed"]["aborted_transactions"]:
        t["producer_id"] = "the transactional producer"
    out["fetch_read_committed_batches"] = _batches(p["records"])
    whole = fetch(0)
    out["fetch"] = {k: v for k, v in whole.items() if k != "records"}
    out["fetch_batches"] = _batches(whole["records"])
    out["fetch_middle_of_a_batch"] = _batches(fetch(1)["records"])[:1]
    out["fetch_out_of_range"] = fetch(99)["error_code"]
    out["fetch_unknown_topic"] = fetch(0, name="nowhere")["error_code"]
    for name, ts in [("earliest", -2), ("latest", -1), ("max", -3), ("by_time", T0 + 1500),
                     ("after_all", T0 + 10**9)]:  # fmt: skip
        answer = list_offset(ts)
        if answer["timestamp"] > T0 + 10**9:  # a control batch's: the wall clock of each broker
            answer["timestamp"] = "now"
        out[f"list_offsets_{name}"] = answer
    out["list_offsets_latest_read_committed"] = list_offset(-1, isolation=1)
    for _ in range(100):  # and __consumer_offsets on the first FindCoordinator
        found = call(10, 3, {"key": "g1", "key_type": 0})
        if found["error_code"] == 0:
            break
        time.sleep(0.2)
    out["find_coordinator"] = {**found, "node_id": "node", "port": "port"}
    commit = {"group_id": "g1", "generation_id_or_member_epoch": -1, "member_id": "",
              "topics": [{"name": topic, "partitions": [
                  {"partition_index": 0, "committed_offset": 7, "committed_metadata": "m"}]},
                  {"name": "nowhere", "partitions": [
                      {"partition_index": 0, "committed_offset": 1, "committed_metadata": None}]}]}  # fmt: skip
    for _ in range(100):  # COORDINATOR_LOAD_IN_PROGRESS while Kafka loads its offsets topic
        topics = sorted(call(8, 8, commit)["topics"], key=lambda t: t["name"])
        if all(p["error_code"] not in (14, 15, 16) for t in topics for p in t["partitions"]):
            break
        time.sleep(0.2)
    out["offset_commit"] = topics
    fetch_offsets = {"group_id": "g1", "require_stable": True,
                     "topics": [{"name": topic, "partition_indexes": [0, 3]}]}  # fmt: skip
    out["offset_fetch"] = call(9, 7, fetch_offsets)
    out["offset_fetch_all"] = call(9, 7, {"group_id": "g1", "topics": None})
    call.close()
    return out


def _batches(data: bytes) -> list[dict]:
    """Each batch's JSON (producer ids by order of appearance) and, without a producer, its bytes."""
    pids: dict[int, int] = {}
    out = []
    for b in Walker(data, file_size=len(data)):
        assert isinstance(b, RecordBatch), b
        j = b.to_json(deep=True)
        j.pop("position")
        if b.producer_id >= 0:
            j["producer_id"] = pids.setdefault(b.producer_id, len(pids))
            j.pop("crc")  # covers the producer id
        else:
            j["bytes"] = bytes(b.raw).hex()
        out.append(j)
    return out


def test_logsim_serve_answers_as_kafka_does(kafka) -> None:
    theirs = _script(kafka.ports[0])
    with ServeThread([]) as ours_broker:
        ours = _script(ours_broker.port)
    differences = {k: (ours[k], theirs[k]) for k in theirs if ours[k] != theirs[k]}
    assert not differences, "\n".join(
        f"{k}:\n  logsim serve: {a}\n  Kafka 4.1.1:  {b}" for k, (a, b) in differences.items()
    )
