"""Real Kafka clients against `logsim serve` (in-process, on the simulated disk): kafka-python,
aiokafka and confluent-kafka (librdkafka) produce with every codec, idempotently and in
transactions, consume by assignment and by subscription, commit offsets, and live through power
cuts. What they wrote is read back by `logrepair verify` and `dump --offsets-decoder`."""

from __future__ import annotations

import asyncio
import logging
import random
import socket
import struct
import time

import pytest
from hypothesis import given, settings

from logrepair.cli import main as logrepair_main
from logrepair.format.batch_builder import build_batch
from logrepair.format.batch_layout import Record
from logrepair.protocol.codec import decode_response, encode_request
from logrepair.protocol.schema import APIS
from simulator.serve.testing import ServeThread
from tests.serve.test_protocol import bodies

kafka = pytest.importorskip("kafka")
aiokafka = pytest.importorskip("aiokafka")
confluent_kafka = pytest.importorskip("confluent_kafka")

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


@pytest.fixture
def serve():
    started: list[ServeThread] = []

    def start(*argv: str, save: str | None = None) -> ServeThread:
        broker = ServeThread(list(argv), save=save)
        started.append(broker)
        return broker.start()

    yield start
    for broker in started:
        broker.stop()


def _consume_assigned(bootstrap: str, topic: str, n: int, **kw) -> list:
    c = kafka.KafkaConsumer(
        bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False,
        consumer_timeout_ms=3000, **kw,
    )  # fmt: skip
    c.assign([kafka.TopicPartition(topic, 0)])
    out = []
    for m in c:
        out.append(m)
        if len(out) >= n:
            break
    c.close()
    return out


def test_kafka_python_every_codec_and_the_bytes_verify_clean(serve, tmp_path, capsys) -> None:
    saved = tmp_path / "logs"
    broker = serve(save=str(saved))
    for codec in CODECS:
        p = kafka.KafkaProducer(
            bootstrap_servers=broker.bootstrap, acks="all" if codec == "lz4" else 1,
            compression_type=None if codec == "none" else codec, linger_ms=5,
        )  # fmt: skip
        futures = [p.send(f"t-{codec}", key=b"k%d" % i, value=b"%s-%d" % (codec.encode(), i),
                          headers=[("h", b"x")]) for i in range(30)]  # fmt: skip
        p.flush()
        assert sorted(f.get(5).offset for f in futures) == list(range(30))
        p.close()
        got = _consume_assigned(broker.bootstrap, f"t-{codec}", 30)
        assert [m.value for m in got] == [b"%s-%d" % (codec.encode(), i) for i in range(30)]
        assert got[0].headers == [("h", b"x")] and got[0].key == b"k0"
    served = broker.status()["requests"]  # kafka-python negotiates the flexible versions
    assert {"Produce v9", "Fetch v12", "Metadata v9", "ListOffsets v7"} <= set(served), served
    summary = broker.stop()
    assert summary["ok"] and summary["partitions"]["t-lz4-0"]["acknowledged"] == 30
    assert logrepair_main(["verify", str(saved)]) == 0
    capsys.readouterr()


def test_aiokafka_and_confluent_kafka_every_codec(serve) -> None:
    broker = serve()
    tps = [(f"a-{codec}", codec) for codec in CODECS]

    async def aio() -> list[bytes]:
        for topic, codec in tps:
            p = aiokafka.AIOKafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=5,
                                          compression_type=None if codec == "none" else codec)  # fmt: skip
            await p.start()
            await asyncio.gather(
                *[await p.send(topic, b"%s %d" % (codec.encode(), i)) for i in range(10)]
            )
            await p.stop()
        c = aiokafka.AIOKafkaConsumer(
            bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest"
        )
        await c.start()
        c.assign([aiokafka.TopicPartition(t, 0) for t, _ in tps])
        got: list[bytes] = []
        async with asyncio.timeout(20):
            while len(got) < 50:
                for msgs in (await c.getmany(timeout_ms=200)).values():
                    got += [m.value for m in msgs]
        await c.stop()
        return got

    assert sorted(asyncio.run(aio())) == sorted(
        b"%s %d" % (c.encode(), i) for _, c in tps for i in range(10)
    )
    conf = {"bootstrap.servers": broker.bootstrap}
    for codec in CODECS:
        p = confluent_kafka.Producer({**conf, "compression.type": codec, "linger.ms": 5})
        for i in range(10):
            p.produce(f"c-{codec}", b"%s %d" % (codec.encode(), i))
        assert p.flush(10) == 0
    c = confluent_kafka.Consumer({**conf, "group.id": "x", "enable.auto.commit": False})
    c.assign([confluent_kafka.TopicPartition(f"c-{codec}", 0, 0) for codec in CODECS])
    got, deadline = [], time.monotonic() + 20
    while len(got) < 50 and time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is not None and not m.error():
            got.append(m.value())
    c.close()
    assert sorted(got) == sorted(b"%s %d" % (c.encode(), i) for c in CODECS for i in range(10))


def test_aiokafka_idempotent_producer_group_consumer_and_transactions(
    serve, tmp_path, capsys
) -> None:
    saved = tmp_path / "logs"
    broker = serve("--flush-messages", "1", save=str(saved))

    async def run() -> tuple[list, int, list]:
        p = aiokafka.AIOKafkaProducer(bootstrap_servers=broker.bootstrap, enable_idempotence=True,
                                      compression_type="zstd")  # fmt: skip
        await p.start()
        offsets = [(await p.send_and_wait("ak", b"v%d" % i, key=b"k")).offset for i in range(20)]
        await p.stop()
        c = aiokafka.AIOKafkaConsumer("ak", bootstrap_servers=broker.bootstrap, group_id="ag",
                                      auto_offset_reset="earliest", enable_auto_commit=False)  # fmt: skip
        await c.start()
        got: list = []
        async with asyncio.timeout(20):
            while len(got) < 20:
                for msgs in (await c.getmany(timeout_ms=300)).values():
                    got += msgs
        await c.commit()
        committed = await c.committed(aiokafka.TopicPartition("ak", 0))
        await c.stop()
        t = aiokafka.AIOKafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id="tx")
        await t.start()
        async with t.transaction():
            await t.send_and_wait("ak", b"committed")
        with pytest.raises(RuntimeError):
            async with t.transaction():
                await t.send_and_wait("ak", b"aborted")
                raise RuntimeError("abort it")
        await t.stop()
        rc = aiokafka.AIOKafkaConsumer("ak", bootstrap_servers=broker.bootstrap,
                                       auto_offset_reset="earliest",
                                       isolation_level="read_committed")  # fmt: skip
        await rc.start()
        seen: list = []
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and b"committed" not in seen:
            for msgs in (await rc.getmany(timeout_ms=300)).values():
                seen += [m.value for m in msgs]
        for msgs in (await rc.getmany(timeout_ms=300)).values():  # nothing after it
            seen += [m.value for m in msgs]
        await rc.stop()
        return offsets, committed, seen

    offsets, committed, seen = asyncio.run(run())
    assert offsets == list(range(20)) and committed == 20
    assert seen[-1] == b"committed" and b"aborted" not in seen and len(seen) == 21
    broker.stop()
    assert logrepair_main(["verify", str(saved)]) == 0
    capsys.readouterr()
    assert logrepair_main(["dump", str(saved / "__consumer_offsets-0" / "00000000000000000000.log"),
                           "--offsets-decoder"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert '"group":"ag","topic":"ak","partition":0' in out and '"offset":20' in out
    assert list(saved.glob("ak-0/*.txnindex"))  # the aborted transaction is indexed


def test_confluent_kafka_idempotent_subscribe_commit_and_transaction(serve) -> None:
    broker = serve()
    conf = {"bootstrap.servers": broker.bootstrap}
    p = confluent_kafka.Producer({**conf, "enable.idempotence": True, "compression.type": "snappy",
                                  "linger.ms": 2})  # fmt: skip
    acked: list[int] = []
    for i in range(40):
        p.produce("ck", key=b"k%d" % i, value=b"v%d" % i,
                  on_delivery=lambda err, msg: acked.append(-1 if err else msg.offset()))  # fmt: skip
    assert p.flush(15) == 0 and sorted(acked) == list(range(40))
    t = confluent_kafka.Producer({**conf, "transactional.id": "ck-tx"})
    t.init_transactions(10)
    t.begin_transaction()
    for i in range(5):
        t.produce("ck", b"t%d" % i)
    t.commit_transaction(10)
    del p, t
    c = confluent_kafka.Consumer({**conf, "group.id": "cg", "auto.offset.reset": "earliest",
                                  "enable.auto.commit": False,
                                  "isolation.level": "read_committed"})  # fmt: skip
    c.subscribe(["ck"])
    values: list[bytes] = []
    deadline = time.monotonic() + 20
    while len(values) < 45 and time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is not None and not m.error():
            values.append(m.value())
    c.commit(asynchronous=False)
    committed = c.committed([confluent_kafka.TopicPartition("ck", 0)], 10)
    c.close()
    served = broker.status()["requests"]  # librdkafka too, for produce, fetch and offsets
    assert {
        "Produce v9",
        "Fetch v12",
        "OffsetCommit v8",
        "OffsetFetch v7",
        "InitProducerId v4",
    } <= set(served), served
    assert values == [b"v%d" % i for i in range(40)] + [b"t%d" % i for i in range(5)]
    assert committed[0].offset == 45  # the next offset after the last record consumed


def test_two_members_of_a_group_share_the_partitions(serve) -> None:
    broker = serve("--partitions", "2")
    p = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=0)
    for i in range(20):
        p.send("shared", b"%d" % i, partition=i % 2).get(5)
    p.close()
    conf = {"bootstrap.servers": broker.bootstrap, "group.id": "pair",
            "auto.offset.reset": "earliest", "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 200}  # fmt: skip
    members = [confluent_kafka.Consumer(conf) for _ in range(2)]
    for m in members:
        m.subscribe(["shared"])
    got: list[list[bytes]] = [[], []]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (
        sum(map(len, got)) >= 20 and all(len(m.assignment()) == 1 for m in members)
    ):
        for i, m in enumerate(members):
            msg = m.poll(0.05)
            if msg is not None and not msg.error():
                got[i].append(msg.value())
    assignments = sorted(tp.partition for m in members for tp in m.assignment())
    for m in members:
        m.close()
    assert assignments == [0, 1]  # one partition each, after the rebalance
    assert sorted(v for g in got for v in set(g)) == sorted(b"%d" % i for i in range(20))


def test_an_acknowledged_commit_lost_with_its_unflushed_marker(serve) -> None:
    """flush.messages=2: the two records are flushed, the COMMIT marker after them is not. A power
    cut takes the marker, the reboot aborts the transaction: an acknowledged commit undone, which
    the policy allows (the marker was unflushed) and the verdict reports."""
    broker = serve("--topic-config", "pay:flush.messages=2")
    t = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "t",
                                  "linger.ms": 50})  # fmt: skip
    t.init_transactions(10)
    t.begin_transaction()
    t.produce("pay", b"a")
    t.produce("pay", b"b")
    t.commit_transaction(10)
    del t
    outcome = broker.cut("lose_unsynced")["partitions"]["pay-0"]
    assert outcome["present"] == 2 and outcome["commits_lost"] == [{"offset": 2, "allowed": True}]
    c = confluent_kafka.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "r",
                                  "isolation.level": "read_committed",
                                  "auto.offset.reset": "earliest"})  # fmt: skip
    c.assign([confluent_kafka.TopicPartition("pay", 0, 0)])
    seen = [m for m in (c.poll(0.3) for _ in range(4)) if m is not None and not m.error()]
    c.close()
    assert seen == []  # aborted at reboot
    summary = broker.stop()
    assert summary["ok"] and summary["partitions"]["pay-0"]["commits_lost"][0]["allowed"]


@pytest.mark.parametrize("flush", [None, "1"], ids=["default-flush", "flush-messages-1"])
def test_power_cut_loses_only_what_the_flush_policy_allows(serve, flush) -> None:
    broker = serve(*(["--flush-messages", flush] if flush else []))
    p = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap, acks=1, linger_ms=0,
                            reconnect_backoff_ms=20, retries=5)  # fmt: skip
    for i in range(25):
        p.send("orders", b"before-%d" % i).get(5)
    line = broker.cut("lose_unsynced")
    outcome = line["partitions"]["orders-0"]
    assert outcome["lost_beyond_policy"] == []
    if flush:
        assert outcome["present"] == 25 and outcome["lost_allowed"] == []
    else:
        assert outcome["present"] == 0 and outcome["lost_allowed"] == [[0, 24]]
    # The same producer reconnects to the rebooted broker and goes on.
    after = [p.send("orders", b"after-%d" % i).get(10) for i in range(5)]
    p.close()
    first = 25 if flush else 0
    assert [m.offset for m in after] == list(range(first, first + 5))
    got = _consume_assigned(broker.bootstrap, "orders", 30)
    assert got[-1].value == b"after-4"
    summary = broker.stop()
    assert summary["ok"] and summary["cuts"] == 1


def test_flush_ms_bounds_the_loss_to_the_last_interval(serve) -> None:
    broker = serve("--flush-ms", "100")
    p = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap, acks=1, linger_ms=0)
    for i in range(20):
        p.send("timely", b"%d" % i).get(5)
    deadline = time.monotonic() + 5  # the flusher runs every 50 ms; flush.ms is 100
    while broker.status()["partitions"]["timely-0"]["recovery_point"] < 20:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    p.close()
    outcome = broker.cut("lose_unsynced")["partitions"]["timely-0"]
    assert outcome["present"] == 20 and outcome["lost_allowed"] == []


def test_a_cut_in_the_middle_of_an_append_reboots_and_is_accounted(serve) -> None:
    broker = serve("--flush-messages", "3", "--segment-bytes", "2048")
    p = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap, acks=1, linger_ms=0, retries=10,
                            reconnect_backoff_ms=20, max_in_flight_requests_per_connection=1)  # fmt: skip
    for _ in range(20):
        p.send("mid", b"x" * 100).get(5)
    broker.arm(7, "torn_write")  # seven disk operations into whatever runs next
    sent = []
    for i in range(20):
        try:
            sent.append(p.send("mid", b"y%d" % i).get(10).offset)
        except kafka.errors.KafkaError:
            pass
    p.close()
    summary = broker.stop()
    assert summary["cuts"] == 1 and summary["ok"], summary
    lost = summary["partitions"]["mid-0"]["lost_allowed"]
    assert all(first >= 18 for first, _ in lost)  # flushed every 3 messages: only the tail


def test_list_offsets_by_timestamp_and_log_append_time(serve) -> None:
    broker = serve("--topic-config", "stamped:message.timestamp.type=LogAppendTime")
    p = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=0)
    base = 1_700_000_000_000
    for i in range(10):
        p.send("timed", b"%d" % i, timestamp_ms=base + 1000 * i).get(5)
    before = int(time.time() * 1000)
    meta = p.send("stamped", b"x", timestamp_ms=base).get(5)
    p.close()
    assert meta.timestamp >= before  # the broker's clock, not the producer's
    c = kafka.KafkaConsumer(bootstrap_servers=broker.bootstrap)
    tp = kafka.TopicPartition("timed", 0)
    found = c.offsets_for_times({tp: base + 3500})[tp]
    assert (found.offset, found.timestamp) == (4, base + 4000)
    assert c.offsets_for_times({tp: base + 99_000})[tp] is None
    assert c.beginning_offsets([tp])[tp] == 0 and c.end_offsets([tp])[tp] == 10
    c.close()
    got = _consume_assigned(broker.bootstrap, "stamped", 1)
    assert got[0].timestamp_type == 1 and got[0].timestamp == meta.timestamp


def _call(sock: socket.socket, api_key: int, version: int, body: dict, cid: int = 1) -> dict:
    api = APIS[api_key]
    sock.sendall(encode_request(api, version, cid, "raw", body))
    size = struct.unpack(">i", _recv(sock, 4))[0]
    got_cid, response = decode_response(api, version, _recv(sock, size))
    assert got_cid == cid
    return response


def _recv(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed")
        out += chunk
    return out


def test_raw_protocol_duplicates_unsupported_versions_and_malformed_frames(serve) -> None:
    broker = serve()
    with socket.create_connection(("127.0.0.1", broker.port), timeout=5) as s:
        md = _call(s, 3, 8, {"topics": [{"name": "raw"}], "allow_auto_topic_creation": True})
        assert md["topics"][0]["partitions"][0]["leader_id"] == 0
        batch = build_batch([Record(0, 1, b"k", b"v", ())], base_offset=0, producer_id=3,
                            producer_epoch=0, base_sequence=0)  # fmt: skip
        produce = {"acks": -1, "timeout_ms": 1000, "topic_data": [
            {"name": "raw", "partition_data": [{"index": 0, "records": batch}]}]}  # fmt: skip
        for _ in range(2):  # the retry of the same batch is a duplicate: same offset
            part = _call(s, 0, 8, produce)["responses"][0]["partition_responses"][0]
            assert (part["error_code"], part["base_offset"]) == (0, 0)
        bad = dict(produce, acks=2)
        assert _call(s, 0, 8, bad)["responses"][0]["partition_responses"][0]["error_code"] == 21
        # ApiVersions at a version the broker does not know: UNSUPPORTED_VERSION, in v0.
        s.sendall(struct.pack(">ihhih", 10, 18, 99, 7, 0) + b"\x00\x00")
        size = struct.unpack(">i", _recv(s, 4))[0]
        cid, body = decode_response(APIS[18], 0, _recv(s, size))
        assert cid == 7 and body["error_code"] == 35 and body["api_keys"]
    for garbage in (b"\x00\x00\x00\x05\xff\xff\xff\xff\xff", b"\x7f\xff\xff\xff",
                    struct.pack(">ihhih", 8, 0, 1, 1, -1)):  # fmt: skip
        with socket.create_connection(("127.0.0.1", broker.port), timeout=5) as s:
            s.sendall(garbage)
            assert s.recv(10) == b""  # closed, one log line
    rng = random.Random(7)
    for _ in range(40):  # random frames of every API: each is answered or closes its connection
        api = rng.choice(list(APIS.values()))
        head = struct.pack(">hhih", api.key, rng.randint(api.min_version, api.max_version), 1, -1)
        body = head + rng.randbytes(rng.randint(0, 40))
        with socket.create_connection(("127.0.0.1", broker.port), timeout=5) as s:
            s.sendall(struct.pack(">i", len(body)) + body)
            s.shutdown(socket.SHUT_WR)
            while s.recv(65536):
                pass
    with socket.create_connection(("127.0.0.1", broker.port), timeout=5) as s:
        versions = _call(s, 18, 3, {"client_software_name": "t", "client_software_version": "1"})
        assert versions["error_code"] == 0


@settings(max_examples=30)
@given(case=bodies("request"))
def test_no_well_formed_request_makes_a_handler_fail(serve_once, case) -> None:
    """Any body of any served API and version is answered (or, for acks=0, not) and never ends
    in an internal error; JoinGroup/SyncGroup are left out (they wait for other members)."""
    api, version, body = case
    if api.key in (11, 14):
        return
    if api.key == 1:
        body["max_wait_ms"] = min(body["max_wait_ms"], 10)
    broker, errors = serve_once
    with socket.create_connection(("127.0.0.1", broker.port), timeout=5) as s:
        s.sendall(encode_request(api, version, 1, "fuzz", body))
        s.shutdown(socket.SHUT_WR)
        while s.recv(65536):
            pass
    assert not errors, errors


@pytest.fixture(scope="module")
def serve_once():
    errors: list[str] = []

    class Errors(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.levelno >= logging.ERROR:
                errors.append(record.getMessage())

    handler = Errors()
    logging.getLogger("simulator.serve").addHandler(handler)
    broker = ServeThread([]).start()
    try:
        yield broker, errors
    finally:
        broker.stop()
        logging.getLogger("simulator.serve").removeHandler(handler)
