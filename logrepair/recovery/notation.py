"""The one notation every command prints byte ranges and offsets in (README, "Notation").

- `FILE @P+N`: the N bytes of FILE starting at byte P (bytes P to P+N-1) — where a defect or a change
  lies in the file as it is now (for a file the change removed: as it was). A torn tail is the torn
  batch's start and the bytes of it that are left, in verify, in a repair's plan, in `logsim inject`
  and in the demo alike.
- `A..B`: the offsets A to B, both included (`A` alone when A = B).

verify, repair, rebuild-index, the demo and `logsim inject` print through these functions only, so
the meaning cannot drift between them.
"""

from __future__ import annotations

from collections.abc import Iterable


def at(position: int, length: int | None = None) -> str:
    """`@P+N` (`@P` when the length is unknown or zero)."""
    return f"@{position}+{length}" if length else f"@{position}"


def offsets(first: int, last: int) -> str:
    """`A..B`, or `A` for a single offset."""
    return str(first) if first == last else f"{first}..{last}"


def offset_ranges(ranges: Iterable[tuple[int, int]] | Iterable[list[int]]) -> str:
    """`A..B, C..D`; `none` for no range."""
    text = ", ".join(offsets(first, last) for first, last in ranges)
    return text or "none"


def named(ranges: Iterable[tuple[int, int]] | Iterable[list[int]]) -> str:
    """`offset A`, or `offsets A..B, C (n)` with their number."""
    ranges = list(ranges)
    n = count(ranges)
    return f"offset {offset_ranges(ranges)}" if n == 1 else f"offsets {offset_ranges(ranges)} ({n})"


def count(ranges: Iterable[tuple[int, int]] | Iterable[list[int]]) -> int:
    """The number of offsets the ranges hold."""
    return sum(last - first + 1 for first, last in ranges)


def merge(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, overlapping or adjacent ranges joined (of one partition only: offsets of different
    partitions never merge)."""
    out: list[tuple[int, int]] = []
    for first, last in sorted(ranges):
        if out and first <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], last))
        else:
            out.append((first, last))
    return out


def clip(ranges: Iterable[tuple[int, int]], low: int, high: int) -> list[tuple[int, int]]:
    """The parts of `ranges` within `[low, high]`."""
    out = []
    for first, last in ranges:
        first, last = max(first, low), min(last, high)
        if first <= last:
            out.append((first, last))
    return merge(out)


def subtract(
    ranges: Iterable[tuple[int, int]], minus: Iterable[tuple[int, int]]
) -> list[tuple[int, int]]:
    """The parts of `ranges` outside every range of `minus`."""
    out = merge(ranges)
    for low, high in merge(minus):
        cut: list[tuple[int, int]] = []
        for first, last in out:
            if last < low or first > high:
                cut.append((first, last))
                continue
            if first < low:
                cut.append((first, low - 1))
            if last > high:
                cut.append((high + 1, last))
        out = cut
    return out
