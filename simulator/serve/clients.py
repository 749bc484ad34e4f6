"""The client workloads of serve scenarios, run by real clients: kafka-python, aiokafka and
confluent-kafka (librdkafka). Each function opens its client, does one thing, closes it, and
returns what the client saw. The clients are test dependencies, imported only here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

CLIENTS = ("kafka-python", "aiokafka", "confluent-kafka")
POLL_TIMEOUT_S = 15


class ClientError(RuntimeError):
    """A client library that is not installed, or a step it cannot do."""


@dataclass
class Produced:
    acknowledged: int = 0
    errors: list[str] = field(default_factory=list)


def _value(topic: str, i: int) -> bytes:
    return f"{topic}-{i}".encode()


def produce(
    client: str,
    bootstrap: str,
    topic: str,
    count: int,
    *,
    acks: int = 1,
    codec: str = "none",
    idempotent: bool = False,
    first: int = 0,
    cut_at: int | None = None,
    cut: Callable[[], object] | None = None,
) -> Produced:
    """`count` records `<topic>-<i>` one at a time (each waits for its ack); with `cut_at`, the
    power is cut after that many and the same producer goes on after the reboot."""
    out = Produced()

    def step(i: int, send: Callable[[bytes], None]) -> None:
        if cut_at is not None and i == cut_at and cut is not None:
            cut()
        try:
            send(_value(topic, first + i))
            out.acknowledged += 1
        except Exception as e:  # the client's own error: part of what the scenario observes
            out.errors.append(f"{type(e).__name__}: {e}")

    compression = None if codec == "none" else codec
    if client == "kafka-python":
        kafka = _import("kafka")
        p = kafka.KafkaProducer(
            bootstrap_servers=bootstrap, acks="all" if acks == -1 else acks,
            compression_type=compression, enable_idempotence=idempotent, linger_ms=0,
            retries=20, reconnect_backoff_ms=20, retry_backoff_ms=50, request_timeout_ms=5000,
            max_in_flight_requests_per_connection=1,
        )  # fmt: skip
        for i in range(count):
            step(i, lambda v: p.send(topic, v).get(15) if acks else p.send(topic, v))
        p.flush(15)
        p.close(5)
    elif client == "confluent-kafka":
        ck = _import("confluent_kafka")
        p = ck.Producer({"bootstrap.servers": bootstrap, "acks": str(acks),
                         "compression.type": codec, "enable.idempotence": idempotent,
                         "linger.ms": 0, "retry.backoff.ms": 50, "reconnect.backoff.ms": 20})  # fmt: skip

        def send(v: bytes) -> None:
            errors: list = []
            p.produce(topic, v, on_delivery=lambda err, msg: errors.append(err))
            p.flush(15)
            if not errors or errors[0] is not None:
                raise ClientError(str(errors[0] if errors else "no delivery report"))

        for i in range(count):
            step(i, send)
    elif client == "aiokafka":
        aiokafka = _import("aiokafka")

        async def run() -> None:
            p = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all" if acks == -1 else acks,
                                          compression_type=compression,
                                          enable_idempotence=idempotent, retry_backoff_ms=50)  # fmt: skip
            await p.start()
            loop = asyncio.get_running_loop()
            try:
                for i in range(count):
                    if cut_at is not None and i == cut_at and cut is not None:
                        await loop.run_in_executor(None, cut)
                    try:
                        await p.send_and_wait(topic, _value(topic, first + i))
                        out.acknowledged += 1
                    except Exception as e:
                        out.errors.append(f"{type(e).__name__}: {e}")
            finally:
                await p.stop()

        asyncio.run(run())
    else:
        raise ClientError(f"unknown client {client!r}; one of {', '.join(CLIENTS)}")
    return out


def consume(
    client: str,
    bootstrap: str,
    topic: str,
    *,
    group: str | None = None,
    read_committed: bool = False,
    commit: bool = False,
    idle_s: float = 1.5,
) -> list[bytes]:
    """Every value the client reads from partition 0 (assigned; subscribed with `group`) until
    nothing new came for `idle_s`; commits the position with `commit`."""
    if client == "kafka-python":
        kafka = _import("kafka")
        c = kafka.KafkaConsumer(
            bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
            enable_auto_commit=False, consumer_timeout_ms=int(idle_s * 1000),
            isolation_level="read_committed" if read_committed else "read_uncommitted",
        )  # fmt: skip
        if group:
            c.subscribe([topic])
        else:
            c.assign([kafka.TopicPartition(topic, 0)])
        values = [m.value for m in c]
        if commit and group:
            c.commit()
        c.close()
        return values
    if client == "confluent-kafka":
        ck = _import("confluent_kafka")
        c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": group or "logsim-assign",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "isolation.level": "read_committed" if read_committed else "read_uncommitted"})  # fmt: skip
        if group:
            c.subscribe([topic])
        else:
            c.assign([ck.TopicPartition(topic, 0, ck.OFFSET_BEGINNING)])
        values, last, started = [], time.monotonic(), time.monotonic()
        while time.monotonic() - last < idle_s and time.monotonic() - started < POLL_TIMEOUT_S:
            m = c.poll(0.1)
            if m is not None and not m.error():
                values.append(m.value())
                last = time.monotonic()
        if commit and group and values:
            c.commit(asynchronous=False)
        c.close()
        return values
    if client == "aiokafka":
        aiokafka = _import("aiokafka")

        async def run() -> list[bytes]:
            c = aiokafka.AIOKafkaConsumer(
                *([topic] if group else []), bootstrap_servers=bootstrap, group_id=group,
                auto_offset_reset="earliest", enable_auto_commit=False,
                isolation_level="read_committed" if read_committed else "read_uncommitted",
            )  # fmt: skip
            await c.start()
            if not group:
                c.assign([aiokafka.TopicPartition(topic, 0)])
            values: list[bytes] = []
            last = started = time.monotonic()
            try:
                while (
                    time.monotonic() - last < idle_s and time.monotonic() - started < POLL_TIMEOUT_S
                ):
                    for msgs in (await c.getmany(timeout_ms=100)).values():
                        values += [m.value for m in msgs]
                        last = time.monotonic()
                if commit and group and values:
                    await c.commit()
            finally:
                await c.stop()
            return values

        return asyncio.run(run())
    raise ClientError(f"unknown client {client!r}; one of {', '.join(CLIENTS)}")


def transaction(
    bootstrap: str,
    transactional_id: str,
    topic: str,
    count: int,
    end: str,
    cut: Callable[[], object],
) -> str:
    """confluent-kafka: a transaction of `count` records ended by `commit`, `abort`, or `cut`
    (the power is cut after the records were acknowledged and before the commit, which is tried
    after the reboot). Returns how the end went: `committed`, `aborted` or the client's error."""
    ck = _import("confluent_kafka")
    p = ck.Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                     "linger.ms": 0, "reconnect.backoff.ms": 20})  # fmt: skip
    p.init_transactions(15)
    p.begin_transaction()
    for i in range(count):
        p.produce(topic, _value(topic, i))
    p.flush(15)
    try:
        if end == "abort":
            p.abort_transaction(15)
            return "aborted"
        if end == "cut":
            cut()
        p.commit_transaction(15)
        return "committed"
    except ck.KafkaException as e:
        return f"error: {e.args[0].name()}"


def _import(name: str):
    try:
        return __import__(name)
    except ImportError:
        raise ClientError(
            f"the {name} client is not installed (pip install 'logrepair[test]')"
        ) from None
