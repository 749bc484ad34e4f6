"""What the broker tests write to a real broker, and how they read it back.

One history exercises every shape of data a broker leaves on disk: idempotent producers with every
codec (kafka-python and aiokafka), transactions committed and aborted (both clients, one of them
also committing consumer offsets inside its transactions), a compacted topic with tombstones that
the log cleaner compacts, consumer-group commits, and, after a restart, a burst of writes and an
open transaction cut short by SIGKILL. `broker_dirs` makes the two log dirs that history leaves
(stopped cleanly, and killed) once per harness and workload version, cached under `build/`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import CorruptRecordError, KafkaTimeoutError
from kafka.structs import OffsetAndMetadata

from logrepair.decoders import decode_transaction_record

from . import harness
from .broker import Broker

EVENTS = "events"  # 3 partitions, plain deletion policy: every codec, idempotent and plain
TXN = "txn"  # 2 partitions: transactions committed and aborted
COMPACTED = "compacted"  # 1 partition, cleanup.policy=compact
USER_TOPICS = (EVENTS, TXN, COMPACTED)
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state")
CODECS = (None, "gzip", "snappy", "lz4", "zstd")
GROUPS = ("g-kafka-python", "g-aiokafka", "g-txn")
# Small segments (Kafka 4 allows this only as the internal topic config) so that every topic rolls
# several and the cleaner has closed segments to compact.
SEGMENT = 16384
TXN_TIMEOUT_MS = 4000


def _topics() -> list[NewTopic]:
    small = {"internal.segment.bytes": str(SEGMENT)}
    return [
        NewTopic(EVENTS, 3, 1, topic_configs=small),
        NewTopic(TXN, 2, 1, topic_configs=small),
        NewTopic(
            COMPACTED,
            1,
            1,
            topic_configs={
                **small,
                "cleanup.policy": "compact",
                "min.cleanable.dirty.ratio": "0.01",
                "min.compaction.lag.ms": "0",
            },
        ),
    ]


def _value(tag: str, i: int) -> bytes:
    return f"{tag}-{i:05d}-".encode() + b"x" * (40 + i % 50)


def write_history(bootstrap: str) -> None:
    """The first life of the broker: every producer kind, the cleaner, group commits."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics(_topics())
    finally:
        admin.close()
    for codec in CODECS:
        producer = KafkaProducer(
            bootstrap_servers=bootstrap,
            compression_type=codec,
            enable_idempotence=True,
            acks="all",
            linger_ms=2,
        )
        sent = [
            producer.send(
                EVENTS,
                key=f"k{i % 17}".encode(),
                value=_value(f"kp-{codec}", i),
                headers=[("codec", str(codec).encode()), ("n", str(i).encode())],
            )
            for i in range(240)
        ]
        producer.flush()
        _acked(sent)
        producer.close()
    _kafka_python_transactions(bootstrap)
    asyncio.run(_aiokafka_history(bootstrap))
    _compacted_history(bootstrap)
    _commit_groups(bootstrap)


def _kafka_python_transactions(bootstrap: str) -> None:
    """Transactions that also commit a group's offsets (the consume-transform-produce shape)."""
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        transactional_id="tx-kafka-python",
        compression_type="lz4",
        linger_ms=2,
    )
    producer.init_transactions()
    for n in range(6):
        producer.begin_transaction()
        sent = [
            producer.send(TXN, key=f"t{i % 5}".encode(), value=_value(f"kptx{n}", i))
            for i in range(30)
        ]
        producer.send_offsets_to_transaction(
            {TopicPartition(EVENTS, 0): OffsetAndMetadata(10 * (n + 1), "", -1)}, "g-txn"
        )
        if n % 3 == 1:
            producer.abort_transaction()
        else:
            producer.commit_transaction()
            _acked(sent)
    producer.close()


async def _aiokafka_history(bootstrap: str) -> None:
    for codec in ("gzip", "zstd"):
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap, enable_idempotence=True, compression_type=codec
        )
        await producer.start()
        try:
            sent = [
                await producer.send(
                    EVENTS, key=f"a{i % 7}".encode(), value=_value(f"aio-{codec}", i)
                )
                for i in range(150)
            ]
            await asyncio.gather(*sent)
        finally:
            await producer.stop()
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, transactional_id="tx-aiokafka", compression_type="snappy"
    )
    await producer.start()
    try:
        for n in range(5):
            await producer.begin_transaction()
            sent = []
            for i in range(25):
                tx_value, c_value = _value(f"aiotx{n}", i), _value(f"ctx{n}", i)
                sent.append(await producer.send(TXN, key=f"u{i % 3}".encode(), value=tx_value))
                sent.append(await producer.send(COMPACTED, key=f"c{i % 9}".encode(), value=c_value))
            await asyncio.gather(*sent)
            if n % 2:
                await producer.abort_transaction()
            else:
                await producer.commit_transaction()
    finally:
        await producer.stop()


def _compacted_history(bootstrap: str) -> None:
    """Updates to few keys, then tombstones, until the cleaner has run on closed segments."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, compression_type="zstd", linger_ms=2)
    sent = []
    for i in range(1500):
        key = f"c{i % 23}".encode()
        value = None if i > 1200 and i % 23 in (3, 5) else _value("compact", i)
        sent.append(producer.send(COMPACTED, key=key, value=value))
    producer.flush()
    _acked(sent)
    producer.close()


def _commit_groups(bootstrap: str) -> None:
    consumer = KafkaConsumer(
        EVENTS,
        bootstrap_servers=bootstrap,
        group_id="g-kafka-python",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        max_poll_records=100,
    )
    try:
        polls = 0
        deadline = time.monotonic() + 60
        while polls < 8 and time.monotonic() < deadline:
            if consumer.poll(500):
                consumer.commit()
                polls += 1
        if not polls:
            raise TimeoutError("the g-kafka-python consumer got no records to commit in 60s")
    finally:
        consumer.close()
    asyncio.run(_aiokafka_commit(bootstrap))


async def _aiokafka_commit(bootstrap: str) -> None:
    consumer = AIOKafkaConsumer(
        TXN,
        bootstrap_servers=bootstrap,
        group_id="g-aiokafka",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
    )
    await consumer.start()
    try:
        got = 0
        deadline = time.monotonic() + 60
        while got < 100 and time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=500)
            got += sum(len(r) for r in batch.values())
        await consumer.commit()
    finally:
        await consumer.stop()


def _acked(sent: list) -> None:
    """Every send of a kafka-python producer was written (a failed one raises here)."""
    for future in sent:
        future.get(timeout=30)


def wait_for_cleaner(log_dir: Path, topic: str = COMPACTED, timeout: float = 60) -> None:
    """Until the cleaner has checkpointed a cleaned offset for the topic's partition 0."""
    checkpoint = log_dir / "cleaner-offset-checkpoint"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if checkpoint.exists() and any(
            line.startswith(f"{topic} 0 ") for line in checkpoint.read_text().splitlines()
        ):
            return
        time.sleep(0.5)
    raise TimeoutError(f"the log cleaner did not clean {topic}-0 within {timeout:.0f}s")


def write_until_killed(broker: Broker) -> None:
    """The second life: a burst of writes and an open transaction, ended by SIGKILL mid-produce."""
    bootstrap = broker.bootstrap
    txn = KafkaProducer(
        bootstrap_servers=bootstrap,
        transactional_id="tx-open",
        transaction_timeout_ms=TXN_TIMEOUT_MS,
        **_SHORT_LIVED,
    )
    txn.init_transactions()
    txn.begin_transaction()
    for i in range(40):
        txn.send(TXN, key=b"open", value=_value("open", i))
    txn.flush()  # written, never committed: the restarted broker's coordinator aborts it
    stop = threading.Event()
    written = threading.Event()

    def burst() -> None:
        producer = KafkaProducer(
            bootstrap_servers=bootstrap,
            acks=1,
            linger_ms=1,
            retries=0,
            compression_type="lz4",
            **_SHORT_LIVED,
        )
        try:
            i = 0
            while not stop.is_set():
                producer.send(EVENTS, key=f"late{i % 5}".encode(), value=_value("late", i))
                i += 1
                if i == 300:
                    producer.flush()
                    written.set()
                if i % 50 == 0:
                    time.sleep(0.01)
        finally:
            _close_after_kill(producer)

    thread = threading.Thread(target=burst, daemon=True)
    thread.start()
    written.wait(30)
    broker.kill()
    stop.set()
    thread.join(30)
    _close_after_kill(txn)


# Producers that outlive the broker: what they still hold fails fast instead of blocking close().
_SHORT_LIVED = {"request_timeout_ms": 1000, "delivery_timeout_ms": 1500, "max_block_ms": 3000}


def _close_after_kill(producer: KafkaProducer) -> None:
    try:
        producer.close(timeout=10)
    except KafkaTimeoutError:
        pass  # batches the killed broker never answered


def source_key() -> str:
    """The cache key: the harness build and the code that writes the history."""
    digest = hashlib.sha256(harness.source_hash().encode())
    here = Path(__file__).resolve().parent
    for name in ("broker.py", "broker_workload.py"):
        digest.update((here / name).read_bytes())
    return digest.hexdigest()[:16]


def _cache() -> Path:
    return harness.REPO / "build" / "kafka-broker-dirs"


def broker_dirs(root: Path | None = None) -> dict[str, Path]:
    """`{"clean": ..., "killed": ...}`: the log dirs of the history above, made once and cached,
    and `"facts"`: a JSON file of what the broker said just before its clean shutdown (`end_offsets`
    per partition, `committed` offsets per group, and the `ports` a restart on either dir must use).
    Tests must copy a dir before changing it."""
    root = root or _cache() / source_key()
    done = root / "done"
    dirs = {"clean": root / "clean", "killed": root / "killed", "facts": root / "facts.json"}
    if done.exists():
        return dirs
    # this key's leftovers, and in the cache the dirs of other (stale) keys
    cached = root == _cache() / source_key() and _cache().is_dir()
    for old in list(_cache().iterdir()) if cached else [root]:
        if old.is_dir():
            shutil.rmtree(old)
    root.mkdir(parents=True)
    work = root / "work"
    with Broker(work) as broker:
        ports = broker.ports
        write_history(broker.bootstrap)
        wait_for_cleaner(work)
        facts = {
            "end_offsets": end_offsets(broker.bootstrap, (*USER_TOPICS, *INTERNAL_TOPICS)),
            "committed": [[*k, v] for k, v in sorted(committed_offsets(broker.bootstrap).items())],
            "ports": ports,
        }
        broker.stop()
    dirs["facts"].write_text(json.dumps(facts))
    shutil.copytree(work, dirs["clean"])
    with Broker(work, ports=ports) as broker:
        write_until_killed(broker)
    shutil.move(work, dirs["killed"])
    done.write_text("ok\n")
    return dirs


# --- reading back -----------------------------------------------------------------------------

Record = tuple[str, int, int, bytes | None, bytes | None]  # topic, partition, offset, key, value
_CORRUPT = re.compile(r"TopicPartition\(topic='([^']+)', partition=(\d+)\) at offset (\d+)")


@dataclass
class Consumed:
    """What a consumer got: the records, and per "topic-partition" the offset of a batch that failed
    its CRC check on the client (the broker served it; the consumer can go no further there)."""

    records: list[Record]
    corrupt_at: dict[str, int]


def _partitions(consumer: KafkaConsumer, topics: tuple[str, ...]) -> list[TopicPartition]:
    return [TopicPartition(t, p) for t in topics for p in sorted(consumer.partitions_for_topic(t))]


def consume_all(
    bootstrap: str, topics: tuple[str, ...], isolation: str, timeout: float = 60
) -> Consumed:
    """Every record the broker serves on `topics`, from the log start to the log end (or the last
    stable offset under read_committed), with kafka-python, no group."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        isolation_level=isolation,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=100,
    )
    try:
        parts = _partitions(consumer, topics)
        consumer.assign(parts)
        consumer.seek_to_beginning()
        ends = consumer.end_offsets(parts)
        out: list[Record] = []
        corrupt: dict[str, int] = {}
        deadline = time.monotonic() + timeout
        while True:
            pending = [
                tp
                for tp in parts
                if f"{tp.topic}-{tp.partition}" not in corrupt and consumer.position(tp) < ends[tp]
            ]
            if not pending:
                break
            if time.monotonic() > deadline:
                stuck = {str(tp): (consumer.position(tp), ends[tp]) for tp in pending}
                raise TimeoutError(f"not all records consumed: {stuck}")
            try:
                polled = consumer.poll(200)
            except CorruptRecordError as e:
                m = _CORRUPT.search(str(e))
                if m is None:
                    raise
                corrupt[f"{m[1]}-{m[2]}"] = int(m[3])
                consumer.pause(TopicPartition(m[1], int(m[2])))
                continue
            for tp, records in polled.items():
                out += [(tp.topic, tp.partition, r.offset, r.key, r.value) for r in records]
        return Consumed(sorted(out, key=lambda r: (r[0], r[1], r[2])), corrupt)
    finally:
        consumer.close()


def wait_for_stable(bootstrap: str, topics: tuple[str, ...], timeout: float = 30) -> None:
    """Until no transaction is open on `topics` (the last stable offset reaches the high watermark):
    a transaction the crash left open is aborted by the coordinator after its timeout."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed")
    other = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        parts = _partitions(consumer, topics)
        deadline = time.monotonic() + timeout
        while consumer.end_offsets(parts) != other.end_offsets(parts):
            if time.monotonic() > deadline:
                raise TimeoutError(f"a transaction stayed open on {topics} for {timeout:.0f}s")
            time.sleep(0.5)
    finally:
        consumer.close()
        other.close()


def transaction_states(bootstrap: str) -> dict[str, str]:
    """{transactional id: its state} as the coordinators' `__transaction_state` log says last."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        parts = _partitions(consumer, ("__transaction_state",))
        consumer.assign(parts)
        consumer.seek_to_beginning()
        ends = consumer.end_offsets(parts)
        states: dict[str, str] = {}
        deadline = time.monotonic() + 30
        while any(consumer.position(tp) < ends[tp] for tp in parts):
            if time.monotonic() > deadline:
                raise TimeoutError("__transaction_state not read to its end in 30s")
            for records in consumer.poll(200).values():
                for r in records:
                    txn = decode_transaction_record(r.key, r.value)
                    states[txn.transactional_id] = txn.value.state if txn.value else "expired"
        return states
    finally:
        consumer.close()


def end_offsets(bootstrap: str, topics: tuple[str, ...]) -> dict[str, int]:
    """{"topic-partition": the offset after the last record the broker serves} (its high watermark,
    which a one-node cluster keeps at its log end)."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        parts = _partitions(consumer, topics)
        return {f"{tp.topic}-{tp.partition}": o for tp, o in consumer.end_offsets(parts).items()}
    finally:
        consumer.close()


def committed_offsets(bootstrap: str, groups: tuple[str, ...] = GROUPS) -> dict:
    """{(group, topic, partition): offset} as the broker's group coordinator answers."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        out = {}
        for group, offsets in admin.list_group_offsets(list(groups)).items():
            for tp, meta in offsets.items():
                out[(group, tp.topic, tp.partition)] = meta.offset
        return out
    finally:
        admin.close()
