"""Client chaos scenarios: a TOML file names the broker's settings, the clients' workload, the power
cuts, and the loss the verdict must find. `logsim run` runs them beside the storage scenarios.

    # Power loss under acks=1 with Kafka's default flush policy ...
    # Expected: every acknowledged record is lost, and the verdict says the policy allows it.
    description = "acks=1, default flush: acknowledged records lost on power loss"

    [serve]                       # `logsim serve` options, as the flags are named
    flush_messages = 1
    topic_config = ["__consumer_offsets:flush.messages=1"]

    [[steps]]                     # in order
    action = "produce"            # produce | consume | transaction | cut
    client = "kafka-python"       # kafka-python | aiokafka | confluent-kafka
    topic = "orders"
    count = 100
    acks = 1                      # 0, 1 or -1 (all)
    codec = "lz4"                 # none gzip snappy lz4 zstd
    idempotent = false
    cut_at = 50                   # cut the power after 50 records; the same producer goes on
    fault = "lose_unsynced"       # the crash fault of that cut (and of `action = "cut"`)

    [[steps]]
    action = "cut"                # now; with after_ops = N: N disk operations later, inside
    after_ops = 40                # whatever the next steps make the broker do (an append, a flush)

    [[steps]]
    action = "consume"            # group = "g" subscribes and (commit = true) commits
    client = "confluent-kafka"
    topic = "orders"
    expect_count = 100            # the step fails unless it reads exactly this many

    [expect]
    lost_allowed = [1, 100]       # acknowledged records lost within the policy: [min, max]
    lost_beyond_policy = 0        # a number or [min, max] (any: the verdict's exit status is 1)
    offsets_beyond_end = true     # a committed offset past a partition's log end after a cut
    log_records = { orders = 100 }   # records in the partition at the end, values distinct
    transaction = "error: ..."    # how the last transaction step ended (a prefix)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from simulator.faults import CRASH_FAULTS

from . import clients
from .reading import log_batches
from .testing import ServeThread

_STEP_KEYS = {
    "produce": {
        "client",
        "topic",
        "count",
        "acks",
        "codec",
        "idempotent",
        "cut_at",
        "fault",
        "first",
    },
    "consume": {"client", "topic", "group", "commit", "read_committed", "expect_count"},
    "transaction": {"transactional_id", "topic", "count", "end", "fault"},
    "cut": {"fault", "after_ops"},
}
_EXPECT = {"lost_allowed", "lost_beyond_policy", "offsets_beyond_end", "log_records", "transaction"}
_SERVE_FLAGS = {
    "flush_messages", "flush_ms", "segment_bytes", "partitions", "topic_config", "repair_mode",
    "checkpoint_interval_ms", "disk", "seed",
}  # fmt: skip


class ServeScenarioError(ValueError):
    pass


@dataclass
class _Options:
    seed: int = 0


@dataclass
class ServeScenario:
    name: str
    path: str
    description: str
    argv: list[str]
    steps: list[dict]
    expect: dict
    options: _Options = field(default_factory=_Options)
    min_states: int = 0


@dataclass
class _Report:
    """The part of an exploration report `logsim run` prints: states are the power cuts."""

    states: int = 0
    elapsed: float = 0.0
    violations: list[str] = field(default_factory=list)

    @property
    def states_per_second(self) -> float:
        return self.states / self.elapsed if self.elapsed else 0.0


@dataclass
class ServeScenarioResult:
    scenario: ServeScenario
    report: _Report
    summary: dict
    observed: dict
    missing: list[str] = field(default_factory=list)
    too_few_states: bool = False
    reproducer: None = None

    @property
    def unexpected(self) -> list[str]:
        return self.report.violations

    @property
    def ok(self) -> bool:
        return not self.report.violations

    def to_json(self) -> dict:
        return {
            "name": self.scenario.name,
            "path": self.scenario.path,
            "description": self.scenario.description,
            "ok": self.ok,
            "crash_states": self.report.states,
            "seconds": round(self.report.elapsed, 3),
            "violations": self.report.violations,
            "observed": self.observed,
            "verdict": self.summary,
        }


def load_serve_scenario(path: str, name: str, data: dict) -> ServeScenario:
    unknown = sorted(set(data) - {"description", "serve", "steps", "expect"})
    if unknown:
        raise ServeScenarioError(f"{path}: unknown key {unknown[0]!r}")
    serve = data.get("serve", {})
    if not isinstance(serve, dict) or set(serve) - _SERVE_FLAGS:
        bad = sorted(set(serve) - _SERVE_FLAGS) if isinstance(serve, dict) else ["serve"]
        raise ServeScenarioError(f"{path}: unknown key {bad[0]!r} in [serve]")
    argv: list[str] = []
    for key, value in serve.items():
        flag = "--" + key.replace("_", "-")
        for v in value if isinstance(value, list) else [value]:
            argv += [flag, str(v)]
    steps = data.get("steps", [])
    if not isinstance(steps, list) or not steps:
        raise ServeScenarioError(f"{path}: a serve scenario needs [[steps]]")
    for i, step in enumerate(steps, 1):
        action = step.get("action") if isinstance(step, dict) else None
        if action not in _STEP_KEYS:
            raise ServeScenarioError(
                f"{path}: step {i}: action must be one of {', '.join(_STEP_KEYS)}"
            )
        extra = sorted(set(step) - _STEP_KEYS[action] - {"action"})
        if extra:
            raise ServeScenarioError(f"{path}: step {i}: unknown key {extra[0]!r} for {action}")
        if step.get("client", "kafka-python") not in clients.CLIENTS:
            raise ServeScenarioError(
                f"{path}: step {i}: client must be one of {', '.join(clients.CLIENTS)}"
            )
        if step.get("fault", "lose_unsynced") not in CRASH_FAULTS:
            raise ServeScenarioError(f"{path}: step {i}: unknown fault {step['fault']!r}")
    expect = data.get("expect", {})
    if not isinstance(expect, dict) or set(expect) - _EXPECT:
        raise ServeScenarioError(f"{path}: [expect] keys are {', '.join(sorted(_EXPECT))}")
    return ServeScenario(name, path, str(data.get("description", "")), argv, steps, expect)


def run_serve_scenario(sc: ServeScenario) -> ServeScenarioResult:
    started = time.monotonic()
    observed: dict = {"consumed": [], "transaction": None, "producer_errors": []}
    argv = [*sc.argv, "--seed", str(sc.options.seed)]
    with ServeThread(argv) as broker:
        for step in sc.steps:
            _run_step(broker, step, observed)
        observed["log_records"] = _log_records(broker)
    summary = broker.stop()
    report = _Report(summary["cuts"], time.monotonic() - started)
    report.violations = _check(sc, summary, observed)
    return ServeScenarioResult(sc, report, summary, observed)


def _run_step(broker: ServeThread, step: dict, observed: dict) -> None:
    action = step["action"]
    fault = step.get("fault", "lose_unsynced")
    cut = lambda: broker.cut(fault)  # noqa: E731
    if action == "cut" and "after_ops" in step:
        broker.arm(step["after_ops"], fault)  # the cut happens inside the next steps' storage calls
    elif action == "cut":
        cut()
    elif action == "produce":
        out = clients.produce(
            step.get("client", "kafka-python"), broker.bootstrap, step["topic"], step["count"],
            acks=step.get("acks", 1), codec=step.get("codec", "none"),
            idempotent=step.get("idempotent", False), first=step.get("first", 0),
            cut_at=step.get("cut_at"), cut=cut,
        )  # fmt: skip
        observed["producer_errors"] += out.errors
    elif action == "consume":
        values = clients.consume(
            step.get("client", "kafka-python"), broker.bootstrap, step["topic"],
            group=step.get("group"), read_committed=step.get("read_committed", False),
            commit=step.get("commit", False),
        )  # fmt: skip
        observed["consumed"].append({"topic": step["topic"], "count": len(values),
                                     "expect_count": step.get("expect_count")})  # fmt: skip
    elif action == "transaction":
        observed["transaction"] = clients.transaction(
            broker.bootstrap, step.get("transactional_id", "logsim-tx"), step["topic"],
            step["count"], step.get("end", "commit"), cut,
        )  # fmt: skip


def _log_records(broker: ServeThread) -> dict[str, dict]:
    """Per topic (partition 0): data records in the log and how many distinct values."""

    def read() -> dict[str, dict]:
        out = {}
        for tp, lg in broker.storage.logs.items():
            if tp.topic.startswith("__") or tp.partition != 0:
                continue
            values = [r.value for b in log_batches(lg) if not b.is_control for r in b.records()]
            out[tp.topic] = {"records": len(values), "distinct": len(set(values))}
        return out

    return broker.run(read)


def _check(sc: ServeScenario, summary: dict, observed: dict) -> list[str]:
    e, bad = sc.expect, []
    parts = summary["partitions"].values()
    allowed = sum(b - a + 1 for p in parts for a, b in p["lost_allowed"])
    beyond = sum(b - a + 1 for p in parts for a, b in p["lost_beyond_policy"])
    if "lost_allowed" in e:
        low, high = e["lost_allowed"]
        if not low <= allowed <= high:
            bad.append(
                f"acknowledged records lost within the policy: {allowed}, expected {low}..{high}"
            )
    want = e.get("lost_beyond_policy", 0)
    low, high = want if isinstance(want, list) else (want, want)
    if not low <= beyond <= high:
        bad.append(f"acknowledged records lost beyond the policy: {beyond}, expected {low}..{high}")
    if "offsets_beyond_end" in e and bool(summary["offsets_beyond_end"]) != e["offsets_beyond_end"]:
        bad.append(f"committed offsets past the log end: {summary['offsets_beyond_end']}")
    for topic, count in e.get("log_records", {}).items():
        got = observed["log_records"].get(topic, {"records": 0, "distinct": 0})
        if got["records"] != count or got["distinct"] != count:
            bad.append(f"{topic}: {got['records']} records ({got['distinct']} distinct) in the log, "
                       f"expected {count}, all distinct")  # fmt: skip
    if "transaction" in e and not str(observed["transaction"]).startswith(e["transaction"]):
        bad.append(f"transaction ended {observed['transaction']!r}, expected {e['transaction']!r}")
    for c in observed["consumed"]:
        if c["expect_count"] is not None and c["count"] != c["expect_count"]:
            bad.append(
                f"consumer of {c['topic']} read {c['count']} records, expected {c['expect_count']}"
            )
    return bad
