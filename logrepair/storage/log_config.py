"""Per-partition log configuration with Kafka's defaults (`LogConfig`, `ServerLogConfigs`).

Names follow Kafka's topic configs with dots turned into underscores, so an operator can map a
broker's `server.properties` or topic overrides onto this one to one.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class LogConfig:
    segment_bytes: int = 1024 * 1024 * 1024
    segment_ms: int = 7 * 24 * 60 * 60 * 1000
    segment_jitter_ms: int = 0
    segment_index_bytes: int = 10 * 1024 * 1024
    index_interval_bytes: int = 4096
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    retention_ms: int = 7 * 24 * 60 * 60 * 1000
    retention_bytes: int = -1
    file_delete_delay_ms: int = 60_000
    preallocate: bool = False
    message_timestamp_type: str = "CreateTime"
    max_message_bytes: int = 1024 * 1024 + 12
    cleanup_policy: tuple[str, ...] = ("delete",)
    max_compaction_lag_ms: int = LONG_MAX
    # Kafka draws the roll jitter from a process-wide Random; tests pass a seeded one.
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.segment_bytes < 14:
            raise ValueError(f"segment.bytes must be at least 14, got {self.segment_bytes}")
        if self.segment_index_bytes < 4:
            raise ValueError(
                f"segment.index.bytes must be at least 4, got {self.segment_index_bytes}"
            )
        if self.index_interval_bytes < 0:
            raise ValueError(f"index.interval.bytes must be >= 0, got {self.index_interval_bytes}")
        if self.message_timestamp_type not in ("CreateTime", "LogAppendTime"):
            raise ValueError(
                f"message.timestamp.type must be CreateTime or LogAppendTime, "
                f"got {self.message_timestamp_type!r}"
            )
        if self.flush_messages < 1:
            raise ValueError(f"flush.messages must be >= 1, got {self.flush_messages}")
        if self.segment_ms < 1:
            raise ValueError(f"segment.ms must be >= 1, got {self.segment_ms}")

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    @property
    def max_segment_ms(self) -> int:
        """`LogConfig.maxSegmentMs`: a compacted topic also rolls on max.compaction.lag.ms."""
        if self.compact and self.max_compaction_lag_ms > 0:
            return min(self.max_compaction_lag_ms, self.segment_ms)
        return self.segment_ms

    def random_segment_jitter(self) -> int:
        """`LogConfig.randomSegmentJitter`, drawn once per opened segment."""
        if self.segment_jitter_ms == 0:
            return 0
        return self.rng.randrange(INT_MAX) % min(self.segment_jitter_ms, self.segment_ms)

    def with_(self, **changes) -> LogConfig:
        return replace(self, **changes)
