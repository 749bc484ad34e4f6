"""The invariants of a heal, as checks that return the violations they find (tests and the
simulator hold every heal to them, beside the common ones of invariants.py):

- from replicas: every batch after the heal was in the local copy before it, or is byte for byte a
  CRC-valid batch of a replica at the same offsets; nothing is invented;
- nothing diverged: no batch that only a diverged copy holds is imported;
- no loss where a replica had the data: at every offset below `committed`, the healed copy holds
  the same batches as the healthiest replica (the one given).
"""

from __future__ import annotations

from .invariants import BatchId


def from_replicas(
    before: dict[str, list[BatchId]],
    after: dict[str, list[BatchId]],
    replicas: list[dict[str, list[BatchId]]],
) -> list[str]:
    problems = []
    for name, batches in after.items():
        known = set(before.get(name, []))
        for r in replicas:
            known.update(r.get(name, []))
        for b in batches:
            if b not in known:
                problems.append(
                    f"from replicas: {name or 'the partition'} holds a batch at offsets "
                    f"{b.base_offset}..{b.last_offset} that no copy had"
                )
    return problems


def nothing_diverged(
    before: dict[str, list[BatchId]],
    after: dict[str, list[BatchId]],
    diverged: dict[str, list[BatchId]],
    others: list[dict[str, list[BatchId]]],
) -> list[str]:
    """`diverged`: the inventory of a copy whose history diverged; what only it holds must not
    appear in the healed copy unless the healed copy held it already."""
    problems = []
    for name, batches in after.items():
        shared = set(before.get(name, []))
        for r in others:
            shared.update(r.get(name, []))
        only_diverged = set(diverged.get(name, [])) - shared
        for b in batches:
            if b in only_diverged:
                problems.append(
                    f"nothing diverged: {name or 'the partition'} imported the batch at offsets "
                    f"{b.base_offset}..{b.last_offset} of a diverged replica"
                )
    return problems


def committed_equal(
    after: dict[str, list[BatchId]], healthiest: dict[str, list[BatchId]], committed: int
) -> list[str]:
    """Below `committed`, the healed copy's batches are the healthiest replica's."""
    problems = []
    for name, theirs in healthiest.items():
        mine = [b for b in after.get(name, []) if b.last_offset < committed]
        want = [b for b in theirs if b.last_offset < committed]
        if mine != want:
            missing = [b for b in want if b not in set(mine)]
            first = missing[0].base_offset if missing else None
            problems.append(
                f"no loss: below offset {committed}, {name or 'the partition'} holds "
                f"{len(mine)} batches, the healthiest replica {len(want)}"
                + (f" (first missing at offset {first})" if first is not None else "")
            )
    return problems
