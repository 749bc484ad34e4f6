"""A defect located in a file of the scanned PATH: what verify prints and repair acts on."""

from __future__ import annotations

from dataclasses import dataclass

from ..storage.layout import printable
from .defects import severity


@dataclass(slots=True)
class Finding:
    kind: str
    file: str
    """Path relative to the scanned PATH ('' for the PATH itself)."""
    position: int | None = None
    length: int | None = None
    offset: int | None = None
    detail: str = ""
    partition: str | None = None
    """For a checkpoint entry out of bounds: the partition dir it concerns (not in the JSON)."""
    last_offset: int | None = None
    """For a finding about a stretch of offsets (from `offset`): its last offset."""
    moved_from: tuple[str, int] | None = None
    """For a finding a repair's split moves with its batch: the file and position it was found
    at (a plan's `left` says so; not in verify's JSON)."""

    @property
    def severity(self) -> str:
        """`damage` or `notice` (defects.py)."""
        return severity(self.kind)

    def to_json(self) -> dict:
        """The verify contract's defect object; names that are not UTF-8 are escaped."""
        return {
            "kind": self.kind,
            "severity": self.severity,
            "file": printable(self.file),
            "position": self.position,
            "length": self.length,
            "offset": self.offset,
            "last_offset": self.last_offset,
            "detail": printable(self.detail),
        }
