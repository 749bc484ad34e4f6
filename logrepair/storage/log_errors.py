"""What the segment manager raises: each says why in Kafka's words where Kafka has them."""

from __future__ import annotations


class LogError(Exception):
    """A request the log cannot serve; the message says why in Kafka's words where Kafka has them."""


class LogNotCleanError(LogError):
    """The directory needs recovery before a Log can be opened on it."""


class OffsetOutOfRangeError(LogError):
    pass


class RecordTooLargeError(LogError):
    pass


class UnexpectedAppendOffsetError(LogError):
    pass


class InvalidRecordsError(LogError):
    """Bytes handed to `append_batches` that are not whole valid batches."""


class LogStorageError(LogError):
    """An I/O error while changing the log. The log goes offline, as Kafka takes its log dir offline:
    every later change is refused; what was acknowledged before stays on disk."""
