"""`heal` mode: every damaged range filled from another broker's copy of the partition.

Followers copy the leader's batches byte for byte, so where one copy of a partition is damaged
another usually holds the very bytes that were lost. Heal plans one partition in four steps:

1. `_damaged_ranges`: where the local copy's valid batches are not joined (a corrupt or torn
   batch, garbage, a segment emptied or lost, an offset hole, a tail lost below the high
   watermark), as the local batches on either side of the range;
2. `_fill`: for each range, stretches of a replica's batches that take up exactly where the local
   batch before it ends (held byte for byte against it) and end where the local batch after it
   begins (held byte for byte too), with a consistent history: each batch's leader epoch the one
   both copies' leader-epoch checkpoints give its offsets (Kafka's OffsetsForLeaderEpoch rule: a
   copy whose history diverged at or before the range is never used), only offsets below a high
   watermark some copy checkpointed unless `--beyond-high-watermark` (then only where every
   replica holding them agrees). What no replica has is left to salvage;
3. `heal_layout.layout_partition`: the healed batches laid out by offset into segments (a replica's segment
   boundaries are its own): a damaged segment is rewritten whole, a lost one written anew, and
   where a range stays unfilled the batches after it continue in a segment of their own, as
   salvage does;
4. the common finish (indexes, transaction indexes, snapshots, leader epochs, checkpoints).

Every segment written is one `write_file` action whose `pieces` name the byte ranges of local and
replica files it is made of; the journal copies them into the quarantine before anything changes,
so the run has every other mode's guarantees (undo, crash-safe replay, idempotence).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ...storage.disk import Disk, join
from .. import notation
from ..replicas import BatchRef, PartitionCopy, Step, epoch_at, make_copy, open_replica
from . import salvage
from .heal_layout import Held, layout_partition, pieces_of
from .partition_plan import PartitionPlan

PAST_THE_END = ("producer_snapshot_stray", "leader_epoch_beyond_end")
"""Findings that hold only while the log ends early: a heal that refills the log resolves them."""


@dataclass(slots=True)
class Range:
    """One damaged range of a partition and what heal does with it (the report's unit)."""

    topic: str
    partition: int
    rel: str
    """The partition dir relative to the repaired PATH."""
    first: int
    last: int | None
    """None: the tail, open to what the replicas hold (up to the committed bound)."""
    filled: list[tuple[PartitionCopy, list[BatchRef]]] = field(default_factory=list)
    complete: bool = False
    lost: tuple[int, int] | None = None
    not_used: dict[str, str] = field(default_factory=dict)

    @property
    def restored(self) -> list[tuple[int, int]]:
        """The offsets the heal gives back (a whole range between two local batches once it is
        complete: any offset a replica lacks there was never written)."""
        if self.complete and self.last is not None:
            return [(self.first, self.last)] if self.first <= self.last else []
        return [(refs[0].base_offset, refs[-1].last_offset) for _, refs in self.filled]

    def to_json(self) -> dict:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "offsets": [self.first, self.last],
            "healed": self.complete,
            "from": [
                {
                    "replica": copy.label,
                    "offsets": [refs[0].base_offset, refs[-1].last_offset],
                    "batches": len(refs),
                    "pieces": [list(p) for p in pieces_of([Held(r, copy) for r in refs])],
                }
                for copy, refs in self.filled
            ],
            "lost": None if self.lost is None else list(self.lost),
            "not_used": [{"replica": k, "why": v} for k, v in self.not_used.items()],
        }

    def describe(self) -> list[str]:
        tp = f"{self.topic}-{self.partition}"
        if self.complete and not self.filled and self.last is None:
            state = "nothing committed lost"
        elif self.complete:
            state = "healed"
        elif self.filled:
            state = "partly healed"
        else:
            state = "not healed (salvage)"
        if self.last is not None and self.last < self.first:
            # damaged bytes between two batches whose offsets follow on: no offset was missing
            lines = [f"{tp} damaged bytes before offset {self.first}: {state}"]
        else:
            span = (
                f"{self.first}..end"
                if self.last is None
                else notation.offsets(self.first, self.last)
            )
            lines = [f"{tp} offsets {span}: {state}"]
        for copy, refs in self.filled:
            where = ", ".join(
                f"{f} {notation.at(pos, n)}"
                for f, pos, n in pieces_of([Held(r, copy) for r in refs])
            )
            lines.append(
                f"    offsets {notation.offsets(refs[0].base_offset, refs[-1].last_offset)} "
                f"({len(refs)} batches) from {copy.label}: {where}"
            )
        if self.lost is not None:
            lines.append(f"    offsets {notation.offsets(*self.lost)} lost: no replica has them")
        for label, why in self.not_used.items():
            lines.append(f"    not used: {label}: {why}")
        return lines


class HealSource:
    """The replicas a heal run reads, and what it did with them (`ranges`, `unusable`)."""

    def __init__(
        self,
        disk: Disk,
        replicas: list[str],
        *,
        beyond_high_watermark: bool = False,
        compacted: set | None = None,
    ) -> None:
        self.disk = disk
        self.replicas = replicas
        self.beyond_high_watermark = beyond_high_watermark
        self.compacted = compacted or set()
        """Topic-partitions the log dir's cleaner checkpoint lists (offset gaps are normal)."""
        self.ranges: list[Range] = []
        self.ends: dict[str, int] = {}
        """Each healed partition's log end (by its dir relative to PATH)."""
        self.unusable: list[dict] = []
        """Replicas that hold no usable copy of a partition, with why."""

    # -- step 0: which partitions, which copies ---------------------------------------------------

    def plan_partition(self, pp: PartitionPlan) -> int:
        p = pp.p
        if len(pp.segs) != len(p.segments) or any(
            s.new_size is not None or s.derived or s.log != s.scan.name for s in pp.segs
        ):
            # an interrupted swap or split was finished first: the files heal would splice from
            # are not yet those of the partition
            pp.plan.notes.append(
                f"{p.tp}: finished an interrupted swap first; salvaged, not healed"
            )
            return salvage.plan_partition(pp)
        local = make_copy(
            pp.plan.root,
            self.disk,
            p,
            local=True,
            compacted=p.tp in self.compacted,
            high_watermark=p.high_watermark,
        )
        steps = _drop_contradicted(local, list(local.walk(-1, p.settings.max_batch_size)))
        ranges = self._damaged_ranges(pp, local, steps)
        if not ranges:
            return 0
        copies: list[PartitionCopy] = []
        for path in self.replicas:
            copy = open_replica(self.disk, path, p.tp, p.settings)
            if isinstance(copy, str):
                self.unusable.append({"replica": path, "partition": str(p.tp), "why": copy})
            else:
                copies.append(copy)
        bound = max(
            (c.high_watermark for c in [local, *copies] if c.high_watermark is not None),
            default=None,
        )
        fills = {}
        for a, b in ranges:
            rng = self._fill(pp, local, copies, a, b, bound)
            self.ranges.append(rng)
            fills[(a, b)] = rng
        layout_partition(pp, local, steps, fills)
        self.ends[p.rel] = pp.log_end_offset
        return 0

    def resolved(self, finding: dict) -> bool:
        """A finding about a file past the log end that the heal gave back its data."""
        if finding["kind"] not in PAST_THE_END or finding.get("offset") is None:
            return False
        end = self.ends.get(finding["file"].rpartition("/")[0])
        return end is not None and finding["offset"] <= end

    # -- step 1: damaged ranges -------------------------------------------------------------------

    def _damaged_ranges(
        self, pp: PartitionPlan, local: PartitionCopy, steps: list[Step]
    ) -> list[tuple[Step | None, Step | None]]:
        """Pairs (batch before, batch after) around each damaged range; None at either end."""
        segs = [s.scan for s in pp.segs]
        out: list[tuple[Step | None, Step | None]] = []
        if not segs:
            return out
        start = _log_start(pp)

        def damaged_between(a: Step | None, b: Step | None) -> bool:
            first_seg = 0 if a is None else a.segment
            last_seg = len(segs) - 1 if b is None else b.segment
            if a is not None and a.batch.position + a.batch.size < segs[a.segment].size:
                return True  # bytes after it in its segment
            if b is not None and b.batch.position > 0:
                return True  # bytes before it in its segment
            inner = range(first_seg + (a is not None), last_seg + (b is None))
            if any(segs[i].size for i in inner):
                return True  # a whole segment between them holds no valid batch
            if local.compacted:
                return False  # offset holes are compaction's
            end = a.batch.last_offset + 1 if a is not None else start
            if b is None:
                return segs[-1].base_offset > end  # an emptied last segment past a hole
            return b.batch.base_offset > end  # an offset hole (an emptied first segment too)

        previous: Step | None = None
        for step in steps:
            if not step.joined and damaged_between(previous, step):
                out.append((previous, step))
            previous = step
        end = previous.batch.last_offset + 1 if previous is not None else start
        hw = pp.p.high_watermark
        if damaged_between(previous, None) or (hw is not None and end < hw):
            out.append((previous, None))
        return out

    # -- step 2: filling a range ------------------------------------------------------------------

    def _fill(
        self,
        pp: PartitionPlan,
        local: PartitionCopy,
        copies: list[PartitionCopy],
        a: Step | None,
        b: Step | None,
        bound: int | None,
    ) -> Range:
        p = pp.p
        first = a.batch.last_offset + 1 if a is not None else _log_start(pp)
        last = None if b is None else b.batch.base_offset - 1
        rng = Range(p.topic, p.partition, p.rel, first, last)
        prev: tuple[PartitionCopy, BatchRef] | None = None if a is None else (local, a.batch)
        after = None if b is None else (local, b.batch)
        cursor = first
        while True:
            best: tuple[PartitionCopy, list[BatchRef], bool] | None = None
            for copy in copies:
                refs, reached, why = self._stretch(local, copy, copies, prev, cursor, after, bound)
                if refs or reached:
                    if best is None or (reached, _end(refs)) > (best[2], _end(best[1])):
                        best = (copy, refs, reached)
                if why is not None and not refs and not reached:
                    rng.not_used.setdefault(copy.label, why)
                elif why is not None:
                    rng.not_used[copy.label] = f"used up to offset {_end(refs) - 1}: {why}"
            if best is None:
                break
            copy, refs, reached = best
            rng.not_used.pop(copy.label, None)
            if refs:
                rng.filled.append((copy, refs))
                prev = (copy, refs[-1])
                cursor = refs[-1].last_offset + 1
            if reached or not refs:
                rng.complete = reached
                break
        if not rng.complete:
            end = rng.last if rng.last is not None else (None if bound is None else bound - 1)
            if end is not None and cursor <= end:
                rng.lost = (cursor, end)
        if rng.last is None and not rng.complete:
            # a tail is complete when it reaches what some copy committed (or all a replica has)
            rng.complete = rng.lost is None
        for copy in copies:
            if copy not in [c for c, _ in rng.filled] and copy.label not in rng.not_used:
                rng.not_used[copy.label] = "not needed"
        return rng

    def _stretch(
        self,
        local: PartitionCopy,
        copy: PartitionCopy,
        copies: list[PartitionCopy],
        prev: tuple[PartitionCopy, BatchRef] | None,
        cursor: int,
        after: tuple[PartitionCopy, BatchRef] | None,
        bound: int | None,
    ) -> tuple[list[BatchRef], bool, str | None]:
        """The batches `copy` holds from `cursor` on, joined, consistent and committed: (batches,
        whether they reach the local batch after the range, why they stop)."""
        cap = local.scan.settings.max_batch_size if local.scan.settings else None
        start = prev[1].base_offset if prev is not None else cursor
        out: list[BatchRef] = []
        started = False
        last_epoch = prev[1].epoch if prev is not None else -1
        next_epoch = after[1].epoch if after is not None else None
        latest_local = max((e for e, _ in local.leader_epochs or []), default=None)
        for step in copy.walk(start, cap):
            x = step.batch
            if not started:
                where, why = _where_it_starts(copy, step, prev, cursor)
                if why is not None:
                    return [], False, why
                if where == SKIP:
                    continue
                started = True
                if where == AT_PREVIOUS:
                    continue
            elif not step.joined:
                before = out[-1].last_offset if out else cursor - 1
                return out, False, f"damaged or missing after offset {before}"
            if after is not None and x.last_offset >= after[1].base_offset:
                if x.base_offset == after[1].base_offset and _same(copy, x, *after):
                    return out, True, None
                return (
                    out,
                    False,
                    (
                        f"diverged: its batch at offset {x.base_offset} differs from the local batch "
                        f"at {after[1].base_offset}"
                    ),
                )
            why = self._inconsistent(local, copy, x, last_epoch, next_epoch, latest_local, after)
            if why is not None:
                return out, False, why
            if bound is None or x.last_offset >= bound:
                if not self.beyond_high_watermark:
                    return (
                        out,
                        False,
                        (
                            "the rest is past every checkpointed high watermark"
                            if bound is not None
                            else "no copy checkpointed a high watermark (see --beyond-high-watermark)"
                        ),
                    )
                disagree = self._disagreement(copy, copies, x, cap)
                if disagree is not None:
                    return out, False, disagree
            out.append(x)
            last_epoch = max(last_epoch, x.epoch)
        if not started:
            return [], False, "behind: it holds nothing from here"
        return out, False, "behind: its log ends here"

    @staticmethod
    def _inconsistent(
        local: PartitionCopy,
        copy: PartitionCopy,
        x: BatchRef,
        last_epoch: int,
        next_epoch: int | None,
        latest_local: int | None,
        after,
    ) -> str | None:
        """Why the batch `x` of `copy` is not part of the local copy's history, if it is not."""
        if x.magic < 2:
            return None
        if x.epoch < last_epoch or (
            next_epoch is not None and next_epoch >= 0 and x.epoch > next_epoch
        ):
            return f"diverged at offset {x.base_offset}: leader epoch {x.epoch} out of order"
        if local.leader_epochs:
            mine = epoch_at(local.leader_epochs, x.base_offset)
            # An epoch newer than any the local copy knows, past what it committed, is what a
            # follower fetches after truncating (Kafka's reconciliation); below its high
            # watermark the local copy's epochs are the history, and another is a divergence.
            committed = local.high_watermark
            newer = (
                after is None
                and latest_local is not None
                and x.epoch > latest_local
                and (committed is None or x.base_offset >= committed)
            )
            if mine is not None and mine != x.epoch and not newer:
                return (
                    f"diverged at offset {x.base_offset}: leader epoch {x.epoch} there, "
                    f"{mine} in the local leader-epoch-checkpoint"
                )
        if copy.leader_epochs:
            theirs = epoch_at(copy.leader_epochs, x.base_offset)
            if theirs is not None and theirs != x.epoch:
                return (
                    f"inconsistent at offset {x.base_offset}: its batch has leader epoch "
                    f"{x.epoch}, its leader-epoch-checkpoint {theirs}"
                )
        return None

    def _disagreement(
        self, copy: PartitionCopy, copies: list[PartitionCopy], x: BatchRef, cap
    ) -> str | None:
        """Past the committed bound a batch is taken only where every replica holding its
        offsets holds the same batch."""
        for other in copies:
            if other is copy:
                continue
            for step in other.walk(x.base_offset, cap):
                y = step.batch
                if y.last_offset < x.base_offset:
                    continue
                if y.base_offset <= x.last_offset and y.key != x.key:
                    return (
                        f"past the high watermark at offset {x.base_offset}, {other.label} "
                        "holds another batch"
                    )
                break
        return None


def _drop_contradicted(local: PartitionCopy, steps: list[Step]) -> list[Step]:
    """Leaves out the local batches whose leader epoch, a field the CRC does not cover, both
    breaks the order of epochs next to it and contradicts the leader-epoch checkpoint: bit rot
    there leaves a batch that looks valid. Its offsets become a damaged range like any other."""
    if not local.leader_epochs:
        return steps
    out: list[Step] = []
    dropped = False
    for i, step in enumerate(steps):
        x = step.batch
        before = steps[i - 1].batch if i else None
        after = steps[i + 1].batch if i + 1 < len(steps) else None
        expected = epoch_at(local.leader_epochs, x.base_offset)
        out_of_order = (before is not None and before.magic >= 2 and x.epoch < before.epoch) or (
            after is not None and after.magic >= 2 and x.epoch > after.epoch
        )
        if x.magic >= 2 and expected not in (None, x.epoch) and out_of_order:
            dropped = True
            continue
        out.append(replace(step, joined=False) if dropped else step)
        dropped = False
    return out


SKIP, AT_PREVIOUS, FIRST = "skip", "at previous", "first"


def _where_it_starts(
    copy: PartitionCopy, step: Step, prev: tuple[PartitionCopy, BatchRef] | None, cursor: int
) -> tuple[str, str | None]:
    """Where a copy's walk meets the range: before it (SKIP), at the batch before the range, held
    byte for byte against the one already taken (AT_PREVIOUS), or at the range's first offset
    (FIRST); with why the copy cannot be used from here, if it cannot."""
    x = step.batch
    if prev is not None:
        mine = prev[1]
        if x.last_offset < mine.last_offset:
            return SKIP, None
        if x.base_offset > mine.last_offset:
            return SKIP, (
                f"damaged or missing: it holds no batch at offsets "
                f"{mine.base_offset}..{mine.last_offset}"
            )
        if x.base_offset != mine.base_offset or not _same(copy, x, *prev):
            return SKIP, (
                f"diverged: its batch at offset {x.base_offset} differs from the copy's batch at "
                f"{mine.base_offset}..{mine.last_offset}"
            )
        return AT_PREVIOUS, None
    if x.last_offset < cursor:
        return SKIP, None
    if x.base_offset < cursor:
        return SKIP, f"its batch {x.base_offset}..{x.last_offset} straddles offset {cursor}"
    at_start = step.segment == 0 and x.position == 0 and copy.compacted
    if x.base_offset != cursor and not at_start:
        return SKIP, f"damaged or missing: it holds no batch at offset {cursor}"
    return FIRST, None


def _log_start(pp: PartitionPlan) -> int:
    """Where the partition starts: its first segment's base, or the checkpointed log start."""
    return max(pp.p.log_start_checkpoint or 0, pp.segs[0].base)


def _end(refs: list[BatchRef]) -> int:
    return refs[-1].last_offset + 1 if refs else -1


def _same(copy: PartitionCopy, x: BatchRef, other_copy: PartitionCopy, y: BatchRef) -> bool:
    """The two batches are byte for byte the same."""
    return x.key == y.key and _read(copy, x) == _read(other_copy, y)


def _read(copy: PartitionCopy, ref: BatchRef) -> bytes:
    path = join(copy.scan.path, ref.file.rpartition("/")[2])
    buf = bytearray(ref.size)
    with copy.disk.open(path) as f:
        n = f.read_into(ref.position, memoryview(buf))
    return bytes(buf[:n])
