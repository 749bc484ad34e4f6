"""A defect located in a file of the scanned PATH: what verify prints and repair acts on."""

from __future__ import annotations

from dataclasses import dataclass

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
    """For a finding about a stretch of batches (from `offset`): its last offset (not in the
    JSON)."""

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "file": self.file,
            "position": self.position,
            "length": self.length,
            "offset": self.offset,
            "detail": self.detail,
            "severity": severity(self.kind),
        }
