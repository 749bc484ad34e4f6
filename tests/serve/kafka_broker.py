"""A real Kafka 4.1.1 broker (KRaft, one node) on loopback: the oracle `logsim serve` is compared to.

The classpath comes from `tests/serve/kafka/pom.xml` through Maven (offline first, from the local
repository; cached under build/serve-kafka/ by the pom's hash); the log dir is formatted with
Kafka's StorageTool and the broker started with `kafka.Kafka`. `KafkaUnavailable` says, in one
line, what is missing (Java, Maven, the jars).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
POM = Path(__file__).resolve().parent / "kafka" / "pom.xml"
START_TIMEOUT_S = 120


class KafkaUnavailable(RuntimeError):
    pass


def _tool(name: str, env_var: str) -> str:
    found = os.environ.get(env_var) or shutil.which(name)
    if not found:
        raise KafkaUnavailable(f"{name} not found (set {env_var} or put it on PATH)")
    return found


def classpath() -> str:
    cache = (
        ROOT / "build" / "serve-kafka" / (hashlib.sha256(POM.read_bytes()).hexdigest()[:16] + ".cp")
    )
    if cache.exists() and all(os.path.exists(j) for j in cache.read_text().strip().split(":")):
        return cache.read_text().strip()
    mvn = _tool("mvn", "MVN")
    cache.parent.mkdir(parents=True, exist_ok=True)
    for offline in (["-o"], []):
        r = subprocess.run(
            [mvn, *offline, "-q", "-f", str(POM), "dependency:build-classpath",
             f"-Dmdep.outputFile={cache}"],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        if r.returncode == 0 and cache.exists():
            return cache.read_text().strip()
    raise KafkaUnavailable(
        f"Maven could not resolve Kafka's jars: {r.stdout[-300:]}{r.stderr[-300:]}"
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class KafkaBroker:
    def __init__(self, work: Path) -> None:
        java = _tool("java", "JAVA")
        cp = classpath()
        self.port, controller = _free_port(), _free_port()
        work.mkdir(parents=True, exist_ok=True)
        props = work / "server.properties"
        props.write_text(
            "process.roles=broker,controller\nnode.id=1\n"
            f"controller.quorum.voters=1@127.0.0.1:{controller}\n"
            f"listeners=PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{controller}\n"
            "controller.listener.names=CONTROLLER\n"
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n"
            f"log.dirs={work / 'data'}\nnum.partitions=1\noffsets.topic.num.partitions=1\n"
            "offsets.topic.replication.factor=1\ntransaction.state.log.replication.factor=1\n"
            "transaction.state.log.min.isr=1\ngroup.initial.rebalance.delay.ms=0\n"
        )
        base = [java, "-Xmx512m", "-cp", cp]
        r = subprocess.run(
            [*base, "kafka.tools.StorageTool", "format", "-t", "MkU3OEVBNTcwNTJENDM2Qg",
             "-c", str(props)], capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        if r.returncode != 0:
            raise KafkaUnavailable(f"kafka-storage format failed: {r.stderr[-300:]}")
        self.log = open(work / "broker.log", "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen([*base, "kafka.Kafka", str(props)], stdout=self.log,
                                     stderr=subprocess.STDOUT)  # fmt: skip
        deadline = time.monotonic() + START_TIMEOUT_S
        while "Kafka Server started" not in (work / "broker.log").read_text(errors="replace"):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise KafkaUnavailable("the Kafka broker did not start (see its broker.log)")
            time.sleep(0.2)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)
        self.log.close()
