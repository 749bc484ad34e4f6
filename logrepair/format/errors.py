"""Errors and defects of the format layer.

Parsing code raises `FormatError`; the segment walker turns every such error into a `Defect` that
names where the bytes stopped being valid and why, so no exception escapes a scan.
"""

from __future__ import annotations

from dataclasses import dataclass


class FormatError(ValueError):
    """Bytes that are not a valid Kafka structure. `kind` is a stable snake_case defect name."""

    def __init__(self, kind: str, detail: str, position: int | None = None) -> None:
        super().__init__(detail if position is None else f"{detail} (at byte {position})")
        self.kind = kind
        self.detail = detail
        self.position = position


@dataclass(frozen=True, slots=True)
class Defect:
    """A byte range that is not a valid batch: `[position, position + length)` of the buffer or file.

    `offset` is the Kafka offset the region would have held next, when known.
    """

    kind: str
    position: int
    length: int
    detail: str
    offset: int | None = None

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "position": self.position,
            "length": self.length,
            "offset": self.offset,
            "detail": self.detail,
        }
