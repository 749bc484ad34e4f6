"""Options and output of one `logrepair dump` run, shared by the per-file dumpers."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TextIO

from ..format.errors import Defect
from .lines import defect_line
from .scala_order import hash_map_order

DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024
DEFAULT_MAX_BYTES = 2**31 - 1
# JSON lines are held until this many bytes are pending, then written at once.
WRITE_BYTES = 64 * 1024


@dataclass(frozen=True)
class DumpOptions:
    """kafka-dump-log's options (spec fmt §10.1) after its implications: a decoder prints data,
    printing data iterates records."""

    deep: bool = False
    print_data: bool = False
    skip_record_metadata: bool = False
    verify_index_only: bool = False
    index_sanity_check: bool = False
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    max_bytes: int = DEFAULT_MAX_BYTES
    decoder: str | None = None  # "offsets" | "transaction-log"
    json: bool = False

    def __post_init__(self) -> None:
        if self.decoder is not None:
            object.__setattr__(self, "print_data", True)
        if self.print_data:
            object.__setattr__(self, "deep", True)


@dataclass
class DumpReport:
    """Where lines go, and what kafka-dump-log prints on stderr only after the last file."""

    out: TextIO
    err: TextIO
    defects: int = 0
    # per absolute path: ((previous offset, next offset) in discovery order, pairs not kept)
    non_consecutive: dict[str, tuple[list[tuple[int, int]], int]] = field(default_factory=dict)
    index_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_out_of_order: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_not_found: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    _pending: list[bytes] = field(default_factory=list, repr=False)
    _pending_bytes: int = 0

    def line(self, text: str) -> None:
        self.flush()
        self.out.write(text)
        self.out.write("\n")

    def error(self, text: str) -> None:
        self.err.write(text)
        self.err.write("\n")

    def json(self, obj: dict) -> None:
        self.json_lines(json.dumps(obj, separators=(",", ":")).encode("ascii") + b"\n")

    def json_lines(self, data: bytes) -> None:
        """Whole JSON lines (ASCII, as `json.dumps` writes them), written many at a time: a deep
        dump has a line per batch, and one `write` each cost more than formatting them."""
        self._pending.append(data)
        self._pending_bytes += len(data)
        if self._pending_bytes >= WRITE_BYTES:
            self.flush()

    def flush(self) -> None:
        """Writes the pending JSON lines to `out` (not flushing `out` itself)."""
        if self._pending:
            self.out.write(b"".join(self._pending).decode("ascii"))
            self._pending.clear()
            self._pending_bytes = 0

    def defect(self, path: str, defect: Defect, json_mode: bool) -> None:
        """An unreadable region: a JSON object in place of a batch, or a text line."""
        self.defects += 1
        if json_mode:
            self.json(
                {
                    "file": path,
                    "defect": {
                        "kind": defect.kind,
                        "position": defect.position,
                        "length": defect.length,
                        "detail": defect.detail,
                    },
                }
            )
        else:
            self.line(defect_line(defect))

    def finish(self) -> None:
        """The end-of-run stderr sections, in kafka-dump-log's order and wording (§10.3-10.5);
        the files of each section in the order Kafka's hash maps iterate them."""
        self.flush()
        for path in _kafka_order(self.index_mismatches, len):
            pairs = self.index_mismatches[path]
            self.error(f"Mismatches in :{path}")
            for index_offset, log_offset in reversed(pairs):  # Kafka prepends to a list
                self.error(f"  Index offset: {index_offset}, log offset: {log_offset}")
        for path in _kafka_order(self.time_mismatches):
            pairs = self.time_mismatches[path]
            self.error(f"Found timestamp mismatch in :{path}")
            for index_ts, log_ts in pairs:
                self.error(f"  Index timestamp: {index_ts}, log timestamp: {log_ts}")
        for path in _kafka_order(self.time_out_of_order):
            pairs = self.time_out_of_order[path]
            self.error(f"Found out of order timestamp in :{path}")
            for index_ts, prev_ts in pairs:
                self.error(
                    f"  Index timestamp: {index_ts}, Previously indexed timestamp: {prev_ts}"
                )
        for path in _kafka_order(self.time_not_found):
            pairs = self.time_not_found[path]
            self.error("The following indexed offsets are not found in the log.")
            for indexed, found in pairs:
                self.error(f"Indexed offset: {indexed}, found log offset: {found}")
        for path in _kafka_order(self.non_consecutive, lambda v: len(v[0]) + v[1]):
            pairs, dropped = self.non_consecutive[path]
            self.error(f"Non-consecutive offsets in {path}")
            if dropped:
                self.error(f"  ({dropped} later pairs not shown)")
            for prev, nxt in reversed(pairs):
                self.error(f"  {prev} is followed by {nxt}")


def _kafka_order(by_path: dict, puts=None) -> list[str]:
    """The paths of one section in Kafka's order; `puts` says how often Kafka put a path's entry
    (once per pair for the maps it updates pair by pair, else once)."""
    return hash_map_order([(path, puts(v) if puts else 1) for path, v in by_path.items()])
