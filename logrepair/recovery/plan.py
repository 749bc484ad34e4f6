"""A repair plan: the list of file actions a mode decided on, printable as a dry run.

Actions name files relative to the repaired PATH, so a plan reads the same wherever the log dir is
mounted. Every action is idempotent when applied from its journal entry (apply.py), which is what
lets a crashed repair be finished by simply running it again.

Actions:
- `truncate`: cut a `.log` (or other file) to `size`; the tail goes to quarantine.
- `split`: copy `[position, position + length)` of `file` (bytes that a `truncate` of the same file
  cuts) into the new segment `to`; salvage uses it to keep valid batches after a damaged range.
  Splits come before that truncate, which then saves only the bytes no split moved, so a 1 GiB
  tail is copied once, not twice (a split back into the same file is the exception: it follows
  the truncate and copies from the saved tail).
- `delete`: move a file into quarantine (later segments Kafka drops, leftovers, orphans).
- `rename`: finish an interrupted swap (`x.swap` → `x`).
- `rebuild_indexes`: write the offset and time index of a `.log` from its final bytes, as Kafka's
  recovery builds them (spec fmt §6.4(a)).
- `write_file`: replace a small file (checkpoint, transaction index) with `content`; or, with
  `pieces` (heal), write a `.log` from byte ranges of the log dir's own files and of replicas'.
- `create_segment`: an empty `.log` where Kafka starts a new segment (log start beyond the end).
- `flush`: fsync a segment's `.log` and indexes (Kafka's `flush`, spec rec §3.2), so that the
  recovery point can be checkpointed past it (modes/flush.py).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..json_out import Prerendered, Rendered
from . import notation

if TYPE_CHECKING:
    from .loss import PartitionLoss
    from .symlinks import FollowedLink


@dataclass(slots=True)
class Action(Prerendered):
    action: str
    file: str
    reason: str
    size: int | None = None
    to: str | None = None
    position: int | None = None
    length: int | None = None
    content: bytes | None = None
    removed_bytes: int = 0
    removed_offsets: tuple[int, int] | None = None
    keeps_offsets: tuple[int, int] | None = None
    """For a truncate: the offsets the file keeps (None: no batch)."""
    index_interval_bytes: int | None = None
    moved: list[tuple[int, int, str]] | None = None
    """For a truncate: the `(position, length, new segment)` ranges of the cut tail that splits
    before it copied out; only the rest of the tail is saved in quarantine."""
    pieces: list[tuple[str, int, int]] | None = None
    """For a write_file: the new content as `(file, position, length)` ranges, in order; `file`
    is relative to the plan's root (this log dir) or absolute (a replica's, only read). The bytes
    are copied into the quarantine before any action runs, so later actions cannot change them."""
    rendered: Rendered | None = field(default=None, compare=False, repr=False)
    """`to_json()`'s text, rendered beside the partition's scan for `--json` (`Plan.render`)."""
    line: str | None = field(default=None, compare=False, repr=False)
    """`describe()`'s text, made beside the partition's scan for the text output (`Plan.render`)."""

    def to_json(self) -> dict:
        out: dict = {"action": self.action, "file": self.file}
        for key in ("size", "to", "position", "length", "index_interval_bytes"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.content is not None:
            out["bytes"] = len(self.content)
        if self.pieces is not None:
            out["bytes"] = sum(length for _, _, length in self.pieces)
            out["pieces"] = [list(p) for p in self.pieces]
        if self.removed_bytes:
            out["removed_bytes"] = self.removed_bytes
        if self.removed_offsets is not None:
            out["removed_offsets"] = list(self.removed_offsets)
        if self.keeps_offsets is not None:
            out["keeps_offsets"] = list(self.keeps_offsets)
        out["reason"] = self.reason
        return out

    def to_journal(self) -> dict:
        out = self.to_json()
        out.pop("bytes", None)
        if self.moved is not None:
            out["moved"] = [list(m) for m in self.moved]
        if self.content is not None:
            out["content"] = base64.b64encode(self.content).decode("ascii")
        return out

    @classmethod
    def from_journal(cls, data: dict) -> Action:
        content = data.get("content")
        removed = data.get("removed_offsets")
        keeps = data.get("keeps_offsets")
        return cls(
            action=data["action"],
            file=data["file"],
            reason=data.get("reason", ""),
            size=data.get("size"),
            to=data.get("to"),
            position=data.get("position"),
            length=data.get("length"),
            content=None if content is None else base64.b64decode(content),
            removed_bytes=data.get("removed_bytes", 0),
            removed_offsets=None if removed is None else (removed[0], removed[1]),
            keeps_offsets=None if keeps is None else (keeps[0], keeps[1]),
            index_interval_bytes=data.get("index_interval_bytes"),
            moved=None if data.get("moved") is None else [tuple(m) for m in data["moved"]],
            pieces=None if data.get("pieces") is None else [tuple(p) for p in data["pieces"]],
        )

    def describe(self) -> str:
        """One line of the dry-run listing (byte ranges and offsets in notation.py's notation)."""
        where = {
            "truncate": f"truncate {self.file} to {self.size} bytes",
            "split": f"copy {self.file} {notation.at(self.position or 0, self.length)} to new "
            f"segment {self.to}",
            "delete": f"move {self.file} to quarantine",
            "rename": f"rename {self.file} to {self.to}",
            "rebuild_indexes": f"rebuild offset and time index of {self.file}",
            "write_file": f"rewrite {self.file}",
            "create_segment": f"create empty segment {self.file}",
            "flush": f"fsync {self.file} and its indexes",
        }[self.action]
        if self.action == "truncate":
            where += (
                f", keeping offsets {notation.offsets(*self.keeps_offsets)}"
                if self.keeps_offsets is not None
                else ", keeping no batch"
            )
        loss = ""
        if self.removed_bytes:
            loss = f"; removes {self.removed_bytes} bytes"
            if self.removed_offsets is not None:
                loss += f", offsets {notation.offsets(*self.removed_offsets)}"
        return f"{where} ({self.reason}{loss})"


@dataclass(slots=True)
class Plan:
    """What a mode decided for one PATH: the actions, plus what it leaves and why."""

    mode: str
    root: str
    actions: list[Action] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    left: list[dict] = field(default_factory=list)
    """Defects the mode does not fix: each finding's JSON plus `fixed_by`."""
    partitions: list[PartitionLoss] = field(default_factory=list)
    """What the plan costs each partition it touches (loss.py), in partition order."""
    links: list[FollowedLink] = field(default_factory=list)
    """The symbolic links followed (`--follow-symlinks`): what the plan does to such a name it
    does to the link's target, which apply first checks is still the file the scan read."""

    @property
    def removed_bytes(self) -> int:
        return sum(a.removed_bytes for a in self.actions)

    def render(self, as_json: bool) -> None:
        """Each action's output made now: its JSON (`Action.rendered`) for `--json`, else its line
        (`Action.line`); beside a partition's scan, in the process that scanned it."""
        for a in self.actions:
            a.prerender(as_json)

    @property
    def removed_offsets(self) -> list[tuple[int, int]]:
        """Every touched partition's removed ranges, partition by partition (never merged across
        partitions: `partitions` says whose each is)."""
        return [r for p in self.partitions for r in p.removed_offsets]

    @property
    def gaps(self) -> list[tuple[int, int]]:
        """Offset ranges left between kept batches, partition by partition."""
        return [g for p in self.partitions for g in p.gaps]

    @property
    def lost(self) -> list[PartitionLoss]:
        """The partitions that lose records or acknowledged offsets."""
        return [p for p in self.partitions if p.lost]
