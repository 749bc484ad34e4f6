"""`logsim serve` and `logsim verdict` as a team's CI runs them: a subprocess, a real client, power
cuts through the admin endpoint, the verdict's exit status."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

kafka = pytest.importorskip("kafka")

from simulator.cli import main as logsim_main  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def _logsim(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "simulator.cli", *args], capture_output=True,
                          text=True, env=_env(), timeout=60)  # fmt: skip


class _Serve:
    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "simulator.cli", "serve", "--port", "0", *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(),
        )  # fmt: skip
        line = self.proc.stdout.readline()  # "logsim serve: kafka HOST:PORT admin HOST:PORT ..."
        words = line.split()
        assert words[:3] == ["logsim", "serve:", "kafka"], line + self.proc.stderr.read()
        self.bootstrap, self.admin = words[3], words[5]

    def admin_call(self, path: str, method: str = "POST") -> dict:
        req = urllib.request.Request(f"http://{self.admin}{path}", method=method)
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read())

    def stop(self) -> tuple[int, str, str]:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        out, err = self.proc.communicate(timeout=30)
        return self.proc.returncode, out, err


@pytest.fixture
def serve_process():
    started: list[_Serve] = []

    def start(*args: str) -> _Serve:
        s = _Serve(*args)
        started.append(s)
        return s

    yield start
    for s in started:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.communicate(timeout=30)


def test_serve_cut_by_admin_and_by_signal_then_the_verdict(serve_process, tmp_path) -> None:
    record = tmp_path / "run.jsonl"
    s = serve_process("--record", str(record), "--topic-config", "safe:flush.messages=1")
    p = kafka.KafkaProducer(bootstrap_servers=s.bootstrap, acks=1, linger_ms=0, retries=10,
                            reconnect_backoff_ms=20)  # fmt: skip
    for i in range(10):
        p.send("risky", b"%d" % i).get(5)
        p.send("safe", b"%d" % i).get(5)
    cut = s.admin_call("/cut?fault=lose_unsynced")
    assert cut["partitions"]["risky-0"]["lost_allowed"] == [[0, 9]]
    assert cut["partitions"]["safe-0"]["present"] == 10
    p.send("risky", b"again").get(10)
    s.proc.send_signal(signal.SIGUSR1)  # the default fault, now
    deadline = time.monotonic() + 10
    while s.admin_call("/status", "GET")["cuts"] < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert s.admin_call("/status", "GET")["cuts"] == 2
    p.close()
    code, out, err = s.stop()
    assert code == 0, err
    assert "verdict: ok" in out and "risky-0" in out and "11 " in out
    again = _logsim("verdict", str(record), "--json")
    assert again.returncode == 0
    summary = json.loads(again.stdout)
    assert summary["cuts"] == 2 and summary["partitions"]["safe-0"]["lost_allowed"] == []


def test_verdict_exit_status_and_bad_input(tmp_path, capsys) -> None:
    record = tmp_path / "bad.jsonl"
    lines = [
        {"event": "start", "disk": "sim", "flush_messages": None, "flush_ms": None,
         "repair_mode": "kafka"},
        {"event": "ack", "partition": "t-0", "base_offset": 0, "last_offset": 9, "crc": 1},
        {"event": "cut", "partitions": {"t-0": {"acknowledged": 10, "present": 0,
                                                "lost_allowed": [], "lost_beyond_policy": [[0, 9]]}}},
    ]  # fmt: skip
    record.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    assert logsim_main(["verdict", str(record)]) == 1
    out = capsys.readouterr().out
    assert "LOSS BEYOND POLICY" in out and "10 [0..9]" in out
    record.write_text("not json\n")
    assert logsim_main(["verdict", str(record)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("logsim: error:") and "line 1" in err
    assert logsim_main(["serve", "--topic-config", "nonsense"]) == 2
    assert "TOPIC:KEY=VALUE" in capsys.readouterr().err
    assert logsim_main(["serve", "--disk", "os"]) == 2
    assert "--log-dir" in capsys.readouterr().err


def test_serve_on_the_real_disk_survives_a_process_crash(serve_process, tmp_path, capsys) -> None:
    logs = tmp_path / "kafka-logs"
    s = serve_process("--disk", "os", "--log-dir", str(logs), "--fault", "process_crash")
    p = kafka.KafkaProducer(bootstrap_servers=s.bootstrap, acks=1, linger_ms=0, retries=10,
                            reconnect_backoff_ms=20)  # fmt: skip
    for i in range(10):
        p.send("real", b"%d" % i).get(5)
    cut = s.admin_call("/cut")
    assert cut["partitions"]["real-0"]["present"] == 10  # the page cache survives a process crash
    with pytest.raises(urllib.error.HTTPError) as e:
        s.admin_call("/cut?fault=lose_unsynced")  # the real disk cannot lose its page cache
    assert "process_crash" in json.loads(e.value.read())["error"]
    p.close()
    code, out, _ = s.stop()
    assert code == 0 and "verdict: ok" in out
    from logrepair.cli import main as logrepair_main

    assert logrepair_main(["verify", str(logs)]) == 0
    capsys.readouterr()


def test_a_killed_broker_is_recovered_at_its_next_start(serve_process, tmp_path) -> None:
    """SIGKILL, a real process crash: the next `logsim serve` on the same log dir repairs it first."""
    logs = tmp_path / "kafka-logs"
    s = serve_process("--disk", "os", "--log-dir", str(logs))
    p = kafka.KafkaProducer(bootstrap_servers=s.bootstrap, acks=1, linger_ms=0)
    for i in range(10):
        p.send("kept", b"%d" % i).get(5)
    p.close()
    s.proc.kill()
    s.proc.communicate(timeout=30)
    assert not (logs / ".kafka_cleanshutdown").exists()
    again = serve_process("--disk", "os", "--log-dir", str(logs))
    c = kafka.KafkaConsumer(bootstrap_servers=again.bootstrap, auto_offset_reset="earliest",
                            consumer_timeout_ms=1500)  # fmt: skip
    c.assign([kafka.TopicPartition("kept", 0)])
    assert [m.value for m in c] == [b"%d" % i for i in range(10)]
    c.close()
    code, out, _ = again.stop()
    assert code == 0 and (logs / ".kafka_cleanshutdown").exists()
