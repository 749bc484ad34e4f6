"""Holding checkpoints against data: pure functions over plans and segment summaries.

The same functions run in the single-machine audit and inside Spark tasks, which is why the two
give equal results. Offsets follow Kafka's load rules (spec recovery §6.6, §6.8): the log end is
the last segment's next offset (its base when empty), the log start is
`max(log-start checkpoint, first segment base)`, and an unclean start re-reads the segment holding
the recovery point and every later one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..recovery.partition_segments import COMPACTED_TOPICS
from .model import (
    BatchDigests,
    Commit,
    CommitKey,
    Finding,
    PartitionAudit,
    PartitionPlan,
    PendingCommit,
    SegmentSummary,
)
from .segments import offer_commit


@dataclass(slots=True)
class PartitionResult:
    """A partition's audit plus what the fleet-wide checks need from it."""

    audit: PartitionAudit
    digests: BatchDigests = field(default_factory=BatchDigests)
    commits: dict[CommitKey, Commit] = field(default_factory=dict)
    cleaner_offset: int | None = None


def audit_partition(
    plan: PartitionPlan,
    summaries: list[SegmentSummary],
    *,
    broker: str,
    clean_shutdown: bool,
) -> PartitionResult:
    """One partition held against its checkpoints. `summaries` come in any order (Spark's
    shuffle does not keep one); the segment index in each task restores it."""
    summaries = sorted(summaries, key=lambda s: s.task.index)
    findings = list(plan.findings)
    live = plan.state == "live"
    digests = BatchDigests()
    commits: dict[CommitKey, Commit] = {}
    open_transactions: dict[int, list[PendingCommit]] = {}
    data_epochs: list[tuple[int, int]] = []
    for s in summaries:
        if s.scan_error:
            findings.append(Finding("unreadable_segment", s.scan_error))
        if plan.state != "delete":
            findings += [Finding(d["kind"], _defect_detail(d)) for d in s.defects]
        for part in ("base", "last", "crc", "position"):
            getattr(digests, part).extend(getattr(s.digests, part))
        for epoch, offset in s.epochs:
            if not data_epochs or epoch > data_epochs[-1][0]:
                data_epochs.append((epoch, offset))
        for pid, committed in s.transaction_ends.items():
            pending = open_transactions.pop(pid, [])
            if committed:
                for key, at, offset in pending:
                    offer_commit(commits, key, at, offset)
        for key, (at, offset) in s.commits.items():
            offer_commit(commits, key, at, offset)
        for pid, pending in s.open_transactions.items():
            open_transactions.setdefault(pid, []).extend(pending)

    first_base = summaries[0].task.base_offset if summaries else None
    if summaries:
        last = summaries[-1]
        log_end = last.next_offset if last.next_offset is not None else last.task.base_offset
    else:
        log_end = plan.log_start_checkpoint or 0  # Kafka starts an empty segment there
    log_start = max(plan.log_start_checkpoint or 0, first_base if first_base is not None else 0)
    rp = plan.recovery_point
    hw = plan.high_watermark

    if plan.state != "delete":
        findings += _hole_findings(plan, summaries, log_start)
    if live:
        findings += _checkpoint_findings(plan, log_start, log_end, first_base, clean_shutdown)
        if not plan.leader_epochs_malformed:
            findings += _epoch_findings(plan.leader_epochs, data_epochs, log_start, log_end)

    audit = PartitionAudit(
        path=plan.path,
        log_dir=plan.log_dir,
        broker=broker,
        topic=plan.topic,
        partition=plan.partition,
        state=plan.state,
        log_start_offset=log_start,
        log_end_offset=log_end,
        recovery_point=rp,
        high_watermark=hw,
        unflushed_bytes=_unflushed_bytes(summaries, rp or 0),
        recovery_bytes=0 if plan.state == "delete" else _recovery_bytes(summaries, rp or 0),
        segments=len(summaries),
        bytes=sum(s.task.size for s in summaries),
        batches=sum(s.batches for s in summaries),
        findings=findings,
    )
    return PartitionResult(audit, digests, commits, plan.cleaner_offset)


def _hole_findings(
    plan: PartitionPlan, summaries: list[SegmentSummary], log_start: int
) -> list[Finding]:
    """`offset_hole` as the verify scan finds it, from the `.log` files alone: a segment in the
    middle of a topic not known to be compacted holds no batch, so the offsets up to the next
    segment's base are missing (Kafka never leaves such a segment outside compaction)."""
    if plan.cleaner_offset is not None or plan.topic in COMPACTED_TOPICS:
        return []
    out = []
    data_end: int | None = None
    for s, nxt in zip(summaries, summaries[1:], strict=False):
        if s.batches:
            data_end = s.next_offset
            continue
        first = s.task.base_offset if data_end is None else min(data_end, s.task.base_offset)
        first = max(first, log_start)
        last = nxt.task.base_offset - 1
        if first <= last:
            out.append(
                Finding(
                    "offset_hole",
                    f"offsets {first}..{last} are missing: segment {s.task.base_offset} holds no "
                    f"batch and the next segment starts at {nxt.task.base_offset}",
                )
            )
            data_end = nxt.task.base_offset
    return out


def _checkpoint_findings(
    plan: PartitionPlan,
    log_start: int,
    log_end: int,
    first_base: int | None,
    clean_shutdown: bool,
) -> list[Finding]:
    out: list[Finding] = []
    rp, hw, lso = plan.recovery_point, plan.high_watermark, plan.log_start_checkpoint
    if rp is None:
        out.append(
            Finding(
                "recovery_point_missing",
                "no entry in recovery-point-offset-checkpoint: an unclean start recovers the "
                "whole partition",
            )
        )
    elif rp > log_end:
        out.append(
            Finding(
                "recovery_point_beyond_end",
                f"recovery point {rp} is past the log end {log_end}: offsets [{log_end}, {rp}) "
                "were flushed and are gone",
            )
        )
    elif clean_shutdown and rp < log_end:
        out.append(
            Finding(
                "clean_shutdown_with_unflushed_data",
                f"clean-shutdown marker present but the recovery point {rp} is below the log end "
                f"{log_end}: the broker will skip recovery of offsets [{rp}, {log_end})",
            )
        )
    if hw is None:
        out.append(
            Finding(
                "high_watermark_missing",
                f"no entry in replication-offset-checkpoint: the high watermark restarts at the "
                f"log start offset {log_start}",
            )
        )
    elif hw > log_end:
        out.append(
            Finding(
                "high_watermark_beyond_end",
                f"high watermark {hw} is past the log end {log_end}: acknowledged offsets "
                f"[{log_end}, {hw}) are gone",
            )
        )
    if lso is not None and lso > log_end:
        out.append(
            Finding(
                "log_start_beyond_end",
                f"log-start-offset-checkpoint {lso} is past the log end {log_end}: Kafka deletes "
                "every segment at load",
            )
        )
    elif hw is not None and log_start > hw:
        where = (
            "the first segment starts at"
            if first_base is not None and first_base == log_start
            else "log-start-offset-checkpoint is"
        )
        out.append(
            Finding(
                "log_start_beyond_high_watermark",
                f"{where} {log_start}, past the high watermark {hw}: acknowledged offsets "
                f"[{hw}, {log_start}) are gone",
            )
        )
    return out


def _epoch_findings(
    entries: list[tuple[int, int]] | None,
    data_epochs: list[tuple[int, int]],
    log_start: int,
    log_end: int,
) -> list[Finding]:
    """leader-epoch-checkpoint against the batches: every epoch the batches carry must be in the
    file, starting at the first batch that carries it (the file is written before that batch)."""
    out: list[Finding] = []
    if entries is None:
        if data_epochs:
            out.append(
                Finding(
                    "leader_epoch_mismatch",
                    f"leader-epoch-checkpoint is missing but the batches carry epochs "
                    f"{data_epochs[0][0]}..{data_epochs[-1][0]}",
                )
            )
        return out
    pairs = list(zip(entries, entries[1:], strict=False))
    if any(b[0] <= a[0] or b[1] < a[1] for a, b in pairs):
        out.append(
            Finding(
                "leader_epoch_not_monotonic",
                f"leader-epoch-checkpoint entries do not increase: {entries}",
            )
        )
    # Past the end: Kafka drops them at load (rec §6.8). At the end is what a leader election with
    # nothing written since leaves (every partition of a healthy broker that has no data yet).
    beyond = [e for e in entries if e[1] > log_end]
    if beyond:
        out.append(
            Finding(
                "leader_epoch_beyond_end",
                f"leader-epoch-checkpoint entries {beyond} start past the log end {log_end}",
            )
        )
    starts = dict(entries)
    first_epoch = entries[0][0] if entries else None
    for epoch, offset in data_epochs:
        if offset < log_start:
            continue  # logically deleted; Kafka moves the covering entry to the log start
        start = starts.get(epoch)
        if start is None:
            out.append(
                Finding(
                    "leader_epoch_mismatch",
                    f"epoch {epoch} first appears at offset {offset} but is not in "
                    "leader-epoch-checkpoint",
                )
            )
        elif start != offset and not (epoch == first_epoch and start <= offset):
            out.append(
                Finding(
                    "leader_epoch_mismatch",
                    f"epoch {epoch} first appears at offset {offset} but leader-epoch-checkpoint "
                    f"starts it at {start}",
                )
            )
    return out


def _unflushed_bytes(summaries: list[SegmentSummary], rp: int) -> int:
    """Bytes from the first batch at or past the recovery point to the end of the log (with any
    bytes after the last batch of the segment holding it): what nothing says was flushed."""
    start = _recovery_start(summaries, rp)
    if start is None:
        return 0
    s = summaries[start]
    d = s.digests
    if s.recovery_cut is not None and s.recovery_cut[0] == rp:
        cut = s.recovery_cut[1]
    else:
        cut = next((d.position[i] for i in range(len(d)) if d.last[i] >= rp), s.valid_end)
    if s.task.base_offset >= rp:
        cut = 0
    return s.task.size - cut + sum(x.task.size for x in summaries[start + 1 :])


def _recovery_bytes(summaries: list[SegmentSummary], rp: int) -> int:
    """`segments.values(recoveryPoint, MAX)`: the segment holding the recovery point and all
    later ones (all of them when it lies below the first base) — what LogLoader re-reads."""
    start = _recovery_start(summaries, rp)
    return 0 if start is None else sum(s.task.size for s in summaries[start:])


def _recovery_start(summaries: list[SegmentSummary], rp: int) -> int | None:
    if not summaries:
        return None
    start = 0
    for i, s in enumerate(summaries):
        if s.task.base_offset <= rp:
            start = i
    return start


def _defect_detail(d: dict) -> str:
    name = d["file"].rsplit("/", 1)[-1]
    at = f" (offset {d['offset']})" if d.get("offset") is not None else ""
    return f"{name} at byte {d['position']}, {d['length']} bytes{at}: {d['detail']}"
