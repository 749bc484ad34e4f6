"""The test-only Kafka oracle: a small Java program over Apache Kafka's own jars (`tests/kafka/`).

Built by Maven once into `build/kafka-harness/<hash of the pom and the Java sources>/` (compiled
classes plus `classpath.txt`, the resolved jars in Maven's local repository), rebuilt only when the
pom or a source changes, and run as `java -cp ... logrepair.oracle.Main SUB ...` with JSON on stdout.
`RecoverServer` keeps one JVM answering many `recover` requests, so thousands of differential cases
pay the JVM's start-up once.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
MAIN = "logrepair.oracle.Main"
# Kafka's loggers go to stderr (slf4j-simple); stdout carries only the JSON answers.
JVM_OPTIONS = ("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-XX:+UseSerialGC")


class HarnessUnavailable(Exception):
    """Java, Maven or the Kafka jars cannot be had here; the message is one line saying which."""


def kafka_version() -> str:
    """The Kafka release the pom pins (its `kafka.version` property)."""
    text = (HERE / "pom.xml").read_text()
    return text.split("<kafka.version>", 1)[1].split("</kafka.version>", 1)[0]


def source_hash() -> str:
    """Hash of everything the build depends on: the pom and every Java source."""
    digest = hashlib.sha256()
    files = [HERE / "pom.xml", *sorted((HERE / "src").rglob("*.java"))]
    for path in files:
        digest.update(str(path.relative_to(HERE)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def build_dir() -> Path:
    """Where this source's build lives (overridable with LOGREPAIR_KAFKA_HARNESS_BUILD)."""
    root = Path(os.environ.get("LOGREPAIR_KAFKA_HARNESS_BUILD", REPO / "build" / "kafka-harness"))
    return root / source_hash()


def _tool(name: str, env_var: str) -> str:
    found = shutil.which(os.environ.get(env_var) or name)
    if not found:
        raise HarnessUnavailable(f"Kafka oracle tests need {name} on PATH (or {env_var})")
    return found


def ensure_built() -> Path:
    """Build the harness unless this source's build is already cached; return its build dir."""
    target = build_dir()
    done = target / "built"
    if done.exists():
        return target
    java = _tool("java", "JAVA")
    mvn = _tool("mvn", "MVN")
    target.mkdir(parents=True, exist_ok=True)
    with open(target / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another test process may be building the same source
        if done.exists():
            return target
        env = dict(os.environ, JAVA_HOME=os.environ.get("JAVA_HOME") or _java_home(java))
        result = subprocess.run(
            [
                mvn,
                "-q",
                "-B",
                "-f",
                str(HERE / "pom.xml"),
                f"-Dharness.build.dir={target}",
                "compile",
            ],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        if result.returncode != 0:
            tail = (result.stdout + result.stderr).strip().splitlines()[-1:] or ["no output"]
            raise HarnessUnavailable(
                f"Maven could not build the Kafka harness (exit {result.returncode}): {tail[0]}"
            )
        done.write_text(kafka_version() + "\n")
    return target


def _java_home(java: str) -> str:
    return str(Path(os.path.realpath(java)).parent.parent)


def command(sub: str, *args: str) -> list[str]:
    """The command line running harness subcommand SUB (building the harness first if needed)."""
    return java_command(MAIN, sub, *args)


def java_command(main_class: str, *args: str) -> list[str]:
    """The command line running any main class on the harness's classpath (Kafka's own tools)."""
    target = ensure_built()
    classpath = f"{target / 'classes'}:{(target / 'classpath.txt').read_text().strip()}"
    return [_tool("java", "JAVA"), *JVM_OPTIONS, "-cp", classpath, main_class, *args]


def run(sub: str, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run one harness subcommand to completion."""
    return subprocess.run(
        command(sub, *args), capture_output=True, text=True, timeout=timeout, check=False
    )


def run_json(sub: str, *args: str, timeout: float = 600) -> Any:
    """Run one harness subcommand and parse its stdout as one JSON document."""
    result = run(sub, *args, timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError(
            f"harness {sub} exited {result.returncode}: {result.stderr.strip()[-2000:]}"
        )
    return json.loads(result.stdout)


class RecoverServer:
    """One long-lived JVM running `recover --batch`: a request per line in, an answer per line out."""

    def __init__(self) -> None:
        self._stderr: IO[bytes] = tempfile.TemporaryFile()
        self._proc = subprocess.Popen(
            command("recover", "--batch"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
        )

    def recover(
        self,
        directory: str | os.PathLike[str],
        *,
        recovery_point: int = 0,
        log_start: int = 0,
        clean_shutdown: bool = False,
        config: Mapping[str, object] | None = None,
        close: str = "handlers",
        from_log_dir: bool = False,
    ) -> dict[str, Any]:
        """Kafka's start-up recovery of one partition dir (see Recover.java for the answer's keys).
        `from_log_dir` reads the recovery point, log start and clean-shutdown marker from the parent
        log dir as LogManager does, instead of the values given."""
        request = {
            "from_log_dir": from_log_dir,
            "dir": str(directory),
            "recovery_point": recovery_point,
            "log_start": log_start,
            "clean_shutdown": clean_shutdown,
            "config": {k: str(v) for k, v in (config or {}).items()},
            "close": close,
        }
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(json.dumps(request) + "\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the recover server died: {self.stderr_tail()}")
        answer = json.loads(line)
        if "harness_error" in answer:
            raise RuntimeError(f"recover harness error: {answer['harness_error']}")
        return answer

    def stderr_tail(self, limit: int = 4000) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")[-limit:]

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        if self._proc.stdout is not None:
            self._proc.stdout.close()
        self._stderr.close()


@contextmanager
def recover_server() -> Iterator[RecoverServer]:
    server = RecoverServer()
    try:
        yield server
    finally:
        server.close()
