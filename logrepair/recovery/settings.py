"""The Kafka settings that shape a repair's result, with Kafka's defaults.

`index.interval.bytes` decides which index entries a rebuild writes, `segment.index.bytes` how
many fit (Kafka fails to start if a rebuilt index overflows it), and `message.max.bytes` is the
size above which verify reports a (valid) batch as `batch_too_large`. Broker-wide values come from the broker's own
`server.properties` (`log.index.interval.bytes`, `log.index.size.max.bytes`, `message.max.bytes`);
per-topic overrides use the topic config names (`index.interval.bytes`, `segment.index.bytes`,
`max.message.bytes`). `cleanup.policy` (`log.cleanup.policy` broker-wide) says whether offset gaps
between segments can be compaction's; unset, the scan looks for evidence of compaction instead.

Two options shape the scan itself rather than Kafka's result: `deep_iteration` decodes every
record (kafka-dump-log's name), and `follow_symlinks` treats a symlinked segment or index as the
file it points at instead of leaving its partition alone (symlinks.py; a repair only where
`symlink_roots` allows).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..storage import scan as storage_scan

DEFAULT_INDEX_INTERVAL_BYTES = 4096
DEFAULT_SEGMENT_INDEX_BYTES = 10 * 1024 * 1024
DEFAULT_MESSAGE_MAX_BYTES = 1024 * 1024 + 12

_BROKER_KEYS = {
    "log.index.interval.bytes": "index_interval_bytes",
    "log.index.size.max.bytes": "segment_index_bytes",
    "message.max.bytes": "message_max_bytes",
    "log.cleanup.policy": "cleanup_policy",
}
_TOPIC_KEYS = {
    "index.interval.bytes": "index_interval_bytes",
    "segment.index.bytes": "segment_index_bytes",
    "max.message.bytes": "message_max_bytes",
    "cleanup.policy": "cleanup_policy",
}
_MINIMUM = {"index_interval_bytes": 0, "segment_index_bytes": 4, "message_max_bytes": 0}


class SettingsError(ValueError):
    """A setting that is not a valid number, or a --topic-config that does not parse."""


@dataclass(frozen=True, slots=True)
class Settings:
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
    segment_index_bytes: int = DEFAULT_SEGMENT_INDEX_BYTES
    message_max_bytes: int = DEFAULT_MESSAGE_MAX_BYTES
    cleanup_policy: str | None = None
    """`cleanup.policy` as configured (e.g. `delete`, `compact`, `compact,delete`); None: not
    given."""
    deep_iteration: bool = False
    follow_symlinks: bool = False
    symlink_roots: tuple[str, ...] | None = None
    """Where a followed link's target may lie (resolved dirs; the first is the log dir, whose
    own Kafka files a link may not stand for); None: anywhere (verify, which only reads)."""
    topic_overrides: dict[str, dict[str, int | str]] = field(default_factory=dict, compare=False)

    @property
    def max_batch_size(self) -> int:
        """The largest batch a scan reads. Kafka's recovery has no cap, so a batch the broker could
        have accepted (up to `message.max.bytes`) is never called `bad_length`."""
        return max(storage_scan.DEFAULT_MAX_BATCH_SIZE, self.message_max_bytes)

    def for_topic(self, topic: str) -> Settings:
        overrides = self.topic_overrides.get(topic)
        return replace(self, **overrides) if overrides else self

    def with_broker_properties(self, text: str, source: str) -> Settings:
        """Applies the relevant keys of a `server.properties` text (Java properties syntax)."""
        changes = {}
        for key, value in _parse_properties(text).items():
            attr = _BROKER_KEYS.get(key)
            if attr is not None:
                changes[attr] = _value(attr, value, f"{source}: {key}")
        return replace(self, **changes)

    def with_topic_override(self, spec: str) -> Settings:
        """`TOPIC:key=value` as given on the command line."""
        topic, sep, assignment = spec.partition(":")
        key, eq, value = assignment.partition("=")
        if not sep or not eq or not topic:
            raise SettingsError(f"--topic-config {spec!r}: expected TOPIC:key=value")
        attr = _TOPIC_KEYS.get(key.strip())
        if attr is None:
            raise SettingsError(
                f"--topic-config {spec!r}: {key!r} is not one of {', '.join(sorted(_TOPIC_KEYS))}"
            )
        overrides = {t: dict(o) for t, o in self.topic_overrides.items()}
        overrides.setdefault(topic, {})[attr] = _value(attr, value, f"--topic-config {spec!r}")
        return replace(self, topic_overrides=overrides)

    @property
    def compacted(self) -> bool | None:
        """Whether the log cleaner compacts the topic (None: `cleanup.policy` not given)."""
        if self.cleanup_policy is None:
            return None
        return "compact" in self.cleanup_policy


_POLICIES = {"delete", "compact"}


def _value(attr: str, value: str, where: str) -> int | str:
    if attr != "cleanup_policy":
        return _number(attr, value, where)
    policies = [v.strip() for v in value.strip().strip("[]").split(",") if v.strip()]
    if not policies or not set(policies) <= _POLICIES:
        raise SettingsError(f"{where}: {value.strip()!r} is not delete, compact or both")
    return ",".join(policies)


def _number(attr: str, value: str, where: str) -> int:
    try:
        n = int(value.strip())
    except ValueError:
        raise SettingsError(f"{where}: {value.strip()!r} is not a number") from None
    if n < _MINIMUM[attr]:
        raise SettingsError(f"{where}: {n} is below the minimum {_MINIMUM[attr]}")
    return n


def _parse_properties(text: str) -> dict[str, str]:
    """The subset of `java.util.Properties` syntax broker files use: `key=value` or `key: value`,
    `#`/`!` comments, backslash line continuations."""
    out: dict[str, str] = {}
    logical = ""
    for raw in text.splitlines():
        line = raw.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            logical += line[:-1]
            continue
        logical += line
        key, value = _split_property(logical)
        out[key] = value
        logical = ""
    if logical:
        key, value = _split_property(logical)
        out[key] = value
    return out


def _split_property(line: str) -> tuple[str, str]:
    for i, ch in enumerate(line):
        if ch in "=:" or ch.isspace():
            key = line[:i]
            rest = line[i:].lstrip()
            if rest and rest[0] in "=:" and ch not in "=:":
                rest = rest[1:]
            elif ch in "=:":
                rest = line[i + 1 :]
            return key, rest.strip()
    return line, ""
