"""`logsim serve` speed: produce and fetch throughput against the raw Log path, and power cut to serving.

- produce: `--size` bytes of ~`--batch-bytes` uncompressed v2 batches sent as Produce v8 requests
  (acks=1, one batch per request, `--inflight` requests pipelined on one connection) to
  `logsim serve --disk os` in a subprocess, MB/s of wall time; baseline: `Log.append_batches` of
  the same batches in this process on the real disk (what the broker calls per request).
  Goal: >= 0.3x (the broker adds a socket, the protocol codec, the leader's validation and offset
  assignment, in Python).
- fetch: the whole partition read back with Fetch v11 requests of `--fetch-bytes`; baseline: `Log.read`
  of the same sizes in this process. Goal: >= 0.3x.
- power cut to serving: a log dir of `--cut-size` bytes (default 1 GiB, one partition, recovery
  point 0 as after a crash before any checkpoint), a process-crash power cut through the admin
  endpoint, and the time until the broker answers Metadata again (the reboot: `repair --mode
  kafka` over every byte past the recovery point, then the log dir opened). Reported with the
  same repair run on its own (`logrepair repair --mode kafka`) for comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

from bench.format_walk import MiB, parse_size
from logrepair.format.batch_builder import build_batch
from logrepair.format.batch_layout import Record
from logrepair.protocol.codec import decode_response, encode_request
from logrepair.protocol.schema import APIS
from logrepair.storage.layout import TopicPartition
from logrepair.storage.log_config import LogConfig
from logrepair.storage.logdir import LogDir
from logrepair.storage.osdisk import OsDisk

TOPIC = "bench"


def _batch(batch_bytes: int, seq: int) -> bytes:
    n = max(1, batch_bytes // 220)
    return build_batch(
        [Record(i, 1_700_000_000_000 + seq, b"key-%d" % i, b"v" * 200, ()) for i in range(n)],
        base_offset=0,
    )


class Broker:
    """`logsim serve --disk os` in a subprocess."""

    def __init__(self, log_dir: str) -> None:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = {**os.environ, "PYTHONPATH": root}
        self.proc = subprocess.Popen(
            [sys.executable, *os.environ.get("BENCH_SERVE_PYTHON_ARGS", "").split(), "-m", "simulator.cli", "serve", "--port", "0", "--disk", "os",
             "--log-dir", log_dir, "--fault", "process_crash", "--segment-bytes", str(1 << 30)],
            stdout=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        words = self.proc.stdout.readline().split()
        self.host, port = words[3].split(":")
        self.port = int(port)
        self.admin = words[5]

    def connect(self) -> socket.socket:
        return socket.create_connection((self.host, self.port))

    def cut(self) -> dict:
        req = urllib.request.Request(f"http://{self.admin}/cut", method="POST")
        with urllib.request.urlopen(req, timeout=600) as r:
            return json.loads(r.read())

    def stop(self) -> None:
        urllib.request.urlopen(
            urllib.request.Request(f"http://{self.admin}/stop", method="POST"), timeout=600
        ).read()
        self.proc.communicate(timeout=600)


class Raw:
    """Pipelined requests over one connection, answers read in order."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.file = sock.makefile("rb")
        self.cid = 0
        self.pending: list[tuple[int, int, int]] = []

    def send(self, key: int, version: int, body: dict) -> None:
        self.cid += 1
        self.sock.sendall(encode_request(APIS[key], version, self.cid, "bench", body))
        self.pending.append((key, version, self.cid))

    def receive(self) -> dict:
        key, version, cid = self.pending.pop(0)
        size = struct.unpack(">i", self.file.read(4))[0]
        got, body = decode_response(APIS[key], version, self.file.read(size))
        assert got == cid
        return body


def _produce_body(batch: bytes) -> dict:
    return {"acks": 1, "timeout_ms": 30000, "topic_data": [
        {"name": TOPIC, "partition_data": [{"index": 0, "records": batch}]}]}  # fmt: skip


def bench_produce_fetch(args, tmp: str) -> None:
    batches = [_batch(args.batch_bytes, i) for i in range(max(1, args.size // args.batch_bytes))]
    total = sum(map(len, batches))
    # baseline: the storage path the broker takes, in-process
    base_dir = os.path.join(tmp, "raw")
    with LogDir.open(OsDisk(), base_dir, LogConfig(segment_bytes=1 << 30), create=True) as d:
        log = d.create_log(TopicPartition(TOPIC, 0))
        start = time.perf_counter()
        for b in batches:
            log.append_batches(struct.pack(">q", log.log_end_offset) + b[8:])
        raw_append = time.perf_counter() - start
        start = time.perf_counter()
        offset, read = 0, 0
        while offset < log.log_end_offset:
            data = log.read(offset, args.fetch_bytes).data
            read += len(data)
            offset = _next_offset(data)
        raw_read = time.perf_counter() - start
    broker = Broker(os.path.join(tmp, "served"))
    try:
        raw = Raw(broker.connect())
        raw.send(3, 8, {"topics": [{"name": TOPIC}], "allow_auto_topic_creation": True})
        raw.receive()
        start = time.perf_counter()
        for b in batches:
            raw.send(0, 8, _produce_body(b))
            if len(raw.pending) >= args.inflight:
                assert raw.receive()["responses"][0]["partition_responses"][0]["error_code"] == 0
        while raw.pending:
            raw.receive()
        served_append = time.perf_counter() - start
        start = time.perf_counter()
        offset, fetched = 0, 0
        while fetched < read:
            raw.send(1, 11, {"max_wait_ms": 0, "min_bytes": 0, "max_bytes": args.fetch_bytes,
                             "topics": [{"topic": TOPIC, "partitions": [
                                 {"partition": 0, "fetch_offset": offset,
                                  "partition_max_bytes": args.fetch_bytes}]}]})  # fmt: skip
            data = raw.receive()["responses"][0]["partitions"][0]["records"]
            fetched += len(data)
            offset = _next_offset(data)
        served_read = time.perf_counter() - start
    finally:
        broker.stop()
    mb = total / 1e6
    print(f"produce: {mb:.0f} MB in {len(batches)} batches of ~{args.batch_bytes // 1024} KiB")
    print(f"  Log.append_batches   {mb / raw_append:8.1f} MB/s")
    print(f"  logsim serve (acks=1, {args.inflight} in flight) {mb / served_append:8.1f} MB/s"
          f"  = {raw_append / served_append:.2f}x  (goal >= 0.3x)")  # fmt: skip
    print(f"fetch: {read / 1e6:.0f} MB in reads of {args.fetch_bytes // 1024} KiB")
    print(f"  Log.read             {read / 1e6 / raw_read:8.1f} MB/s")
    print(f"  logsim serve Fetch   {fetched / 1e6 / served_read:8.1f} MB/s"
          f"  = {raw_read / served_read:.2f}x  (goal >= 0.3x)")  # fmt: skip


def _next_offset(data: bytes) -> int:
    """The offset after the last whole batch of `data` (base offset + last offset delta + 1)."""
    pos, last = 0, -1
    while pos + 61 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        (delta,) = struct.unpack_from(">i", data, pos + 23)
        if pos + 12 + length > len(data):
            break
        last = base + delta
        pos += 12 + length
    return last + 1


def bench_cut(args, tmp: str) -> None:
    log_dir = os.path.join(tmp, "big")
    batch = _batch(256 * 1024, 0)
    with LogDir.open(OsDisk(), log_dir, LogConfig(), create=True) as d:
        log = d.create_log(TopicPartition(TOPIC, 0))
        while log.size < args.cut_size:
            log.append_batches(struct.pack(">q", log.log_end_offset) + batch[8:])
    size = os.path.getsize(os.path.join(log_dir, f"{TOPIC}-0", "00000000000000000000.log"))
    os.unlink(os.path.join(log_dir, ".kafka_cleanshutdown"))  # a crashed broker's log dir
    with open(os.path.join(log_dir, "recovery-point-offset-checkpoint"), "w") as f:
        f.write(f"0\n1\n{TOPIC} 0 0\n")
    copy = log_dir + "-copy"
    shutil.copytree(log_dir, copy)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "logrepair.cli", "repair", copy, "--mode", "kafka"],
                   check=False, capture_output=True,
                   env={**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(__file__))})  # fmt: skip
    repair_alone = time.perf_counter() - started
    broker = Broker(log_dir)
    try:
        raw = Raw(broker.connect())
        raw.send(3, 8, {"topics": [{"name": TOPIC}]})
        raw.receive()
        started = time.perf_counter()
        line = broker.cut()
        raw = Raw(broker.connect())
        raw.send(3, 8, {"topics": [{"name": TOPIC}]})
        raw.receive()
        to_serving = time.perf_counter() - started
    finally:
        broker.stop()
    print(f"power cut to serving, {size / (1 << 30):.2f} GiB log dir (recovery point 0):")
    print(
        f"  cut -> Metadata answered again  {to_serving:6.2f} s (reboot {line['reboot_seconds']:.2f} s)"
    )
    print(f"  logrepair repair --mode kafka alone (a subprocess) {repair_alone:6.2f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench serve", description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=parse_size, default=256 * MiB)
    parser.add_argument("--batch-bytes", type=parse_size, default=16 * 1024)
    parser.add_argument("--fetch-bytes", type=parse_size, default=1 * MiB)
    parser.add_argument("--inflight", type=int, default=5)
    parser.add_argument("--cut-size", type=parse_size, default=1 << 30)
    parser.add_argument("--skip-cut", action="store_true")
    parser.add_argument("--only-cut", action="store_true")
    args = parser.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="bench-serve-")
    try:
        if not args.only_cut:
            bench_produce_fetch(args, tmp)
        if not args.skip_cut:
            bench_cut(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
