"""A real single-node KRaft broker (the harness's `broker`, Kafka's own server) as a subprocess.

Tests start it on a log dir, produce to it with real clients, stop it cleanly or SIGKILL it, and start
it again on the same dir. Its stderr (Kafka's WARN and ERROR lines) goes to a file beside nothing the
broker owns, so that a test can say why a start failed or whether a log dir was taken offline.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import IO, Any

from . import harness

START_TIMEOUT = 120.0
# What Kafka logs when it takes a log dir offline, or cannot load one (LogManager, LogDirFailureChannel).
OFFLINE_MARKERS = ("offline", "Error while loading log dir", "KafkaStorageException", "has failed")


class BrokerError(RuntimeError):
    """The broker did not start, or stopped in a way the test did not ask for."""


class Broker:
    """One broker process on `log_dir`; `start()` blocks until Kafka says it is serving."""

    def __init__(
        self,
        log_dir: str | os.PathLike[str],
        *,
        segment_bytes: int | None = None,
        roll_ms: int | None = None,
        flush_messages: int | None = None,
        flush_ms: int | None = None,
        settings: dict[str, object] | None = None,
        ports: tuple[int, int] | None = None,
    ) -> None:
        self.log_dir = Path(log_dir)
        self.args = ["--log-dir", str(self.log_dir)]
        for flag, value in (
            ("--segment-bytes", segment_bytes),
            ("--roll-ms", roll_ms),
            ("--flush-messages", flush_messages),
            ("--flush-ms", flush_ms),
        ):
            if value is not None:
                self.args += [flag, str(value)]
        if ports is not None:
            self.args += ["--port", str(ports[0]), "--controller-port", str(ports[1])]
        for key, value in (settings or {}).items():
            self.args += ["--set", f"{key}={value}"]
        self.proc: subprocess.Popen[str] | None = None
        self.ready: dict[str, Any] = {}
        self._stderr: IO[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return self.ready["bootstrap"]

    @property
    def ports(self) -> tuple[int, int]:
        """(listener, controller): pass them to a restart on this dir or a copy of it."""
        return self.ready["port"], self.ready["controller_port"]

    def start(self, timeout: float = START_TIMEOUT) -> dict[str, Any]:
        assert self.proc is None, "already running"
        self._stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            harness.command("broker", *self.args),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
        )
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.5)
            if ready:
                line = self.proc.stdout.readline()
                if line:
                    self.ready = json.loads(line)
                    return self.ready
            if self.proc.poll() is not None:
                break
        self.kill()
        raise BrokerError(f"the broker did not start on {self.log_dir}: {self.stderr_tail()}")

    def stop(self, timeout: float = 60.0) -> None:
        """A clean shutdown (Kafka writes `.kafka_cleanshutdown` and its checkpoints)."""
        if self.proc is None:
            return
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write("shutdown\n")
            self.proc.stdin.flush()
            self.proc.wait(timeout=timeout)
        except (BrokenPipeError, subprocess.TimeoutExpired) as e:
            self.kill()
            raise BrokerError(f"the broker did not shut down cleanly: {self.stderr_tail()}") from e
        self._reap()

    def kill(self) -> None:
        """SIGKILL: the unclean stop (the page cache survives, as with a process crash)."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self._reap()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stderr_text(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")

    def stderr_tail(self, limit: int = 4000) -> str:
        return self.stderr_text()[-limit:]

    def offline_lines(self) -> list[str]:
        """Kafka's log lines saying a log dir failed or went offline."""
        return [
            line
            for line in self.stderr_text().splitlines()
            if any(m in line for m in OFFLINE_MARKERS)
        ]

    def _reap(self) -> None:
        assert self.proc is not None
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()
        self.proc = None

    def __enter__(self) -> Broker:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
