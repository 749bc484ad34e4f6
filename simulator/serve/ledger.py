"""The record of a serve run: what was acknowledged, what each power cut took, and whether Kafka's
semantics allowed it.

On a single broker an acknowledged record is durable only once flushed (`acks=all` waits for the
in-sync replicas, which here is the leader alone, not for an fsync). So a power cut may take
acknowledged batches at or past the partition's recovery point at the cut — that loss is allowed
by the flush policy — and nothing below it. After each reboot every acknowledged batch still
believed present is looked up at its offset (same base offset, same CRC): missing ones are lost.

The record is JSON Lines (`--record FILE`): a `start` line with the policy, one `ack` line per
acknowledged batch, one `cut` line per power cut with each partition's outcome. `logsim verdict`
reads it back.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import IO

from logrepair.storage.layout import TopicPartition
from logrepair.storage.log import Log

from .reading import log_batches
from .storage import CutReport


@dataclass(frozen=True, slots=True)
class Ack:
    base_offset: int
    last_offset: int
    crc: int
    marker: bool = False
    """A COMMIT marker of an acknowledged EndTxn (not a record: counted apart)."""

    @property
    def count(self) -> int:
        return self.last_offset - self.base_offset + 1


@dataclass
class PartitionOutcome:
    """One partition at one reboot."""

    acknowledged: int
    present: int
    recovery_point: int
    log_end_before: int
    log_end_after: int
    lost_allowed: list[list[int]] = field(default_factory=list)
    lost_beyond_policy: list[list[int]] = field(default_factory=list)
    commits_lost: list[dict] = field(default_factory=list)
    """Acknowledged COMMIT markers lost: the transaction is aborted at reboot."""

    def to_json(self) -> dict:
        return {
            "commits_lost": self.commits_lost,
            "acknowledged": self.acknowledged,
            "present": self.present,
            "recovery_point": self.recovery_point,
            "log_end_before": self.log_end_before,
            "log_end_after": self.log_end_after,
            "lost_allowed": self.lost_allowed,
            "lost_beyond_policy": self.lost_beyond_policy,
        }


def tp_name(tp: TopicPartition) -> str:
    return f"{tp.topic}-{tp.partition}"


def _ranges(acks: list[Ack]) -> list[list[int]]:
    """Offset ranges `[first, last]`, adjacent batches merged."""
    out: list[list[int]] = []
    for a in sorted(acks, key=lambda a: a.base_offset):
        if out and out[-1][1] + 1 == a.base_offset:
            out[-1][1] = a.last_offset
        else:
            out.append([a.base_offset, a.last_offset])
    return out


def batch_crcs(log: Log, start: int) -> dict[int, int]:
    """Base offset → CRC of every batch of the log from the one holding `start`; a batch whose
    bytes no longer match its CRC (bit rot kept by a trusting repair) counts as gone."""
    return {b.base_offset: b.crc for b in log_batches(log, start) if b.crc_valid}


class Ledger:
    def __init__(self, record: IO[str] | None, policy: dict) -> None:
        self.record = record
        self.policy = policy
        self.live: dict[TopicPartition, list[Ack]] = {}
        self.acknowledged: dict[TopicPartition, int] = {}
        self.cuts: list[dict] = []
        self._write({"event": "start", "time": time.time(), **policy})

    def _write(self, event: dict) -> None:
        if self.record is not None:
            self.record.write(json.dumps(event) + "\n")
            self.record.flush()

    def ack(
        self,
        tp: TopicPartition,
        base_offset: int,
        last_offset: int,
        crc: int,
        *,
        marker: bool = False,
    ) -> None:
        a = Ack(base_offset, last_offset, crc, marker)
        self.live.setdefault(tp, []).append(a)
        if not marker:
            self.acknowledged[tp] = self.acknowledged.get(tp, 0) + a.count
        self._write(
            {"event": "commit" if marker else "ack", "partition": tp_name(tp),
             "base_offset": base_offset, "last_offset": last_offset, "crc": crc}
        )  # fmt: skip

    def after_reboot(
        self, report: CutReport, logs: dict[TopicPartition, Log], offsets_beyond_end: list[dict]
    ) -> dict:
        """Looks up every live acknowledged batch in the rebooted logs; returns the cut's line."""
        partitions: dict[str, dict] = {}
        for tp in sorted(set(self.live) | set(report.log_ends_before), key=tp_name):
            acks = self.live.get(tp, [])
            lg = logs.get(tp)
            if lg is not None:  # below the log start: deleted by retention, not by the cut
                acks = [a for a in acks if a.last_offset >= lg.log_start_offset]
            crcs = (
                batch_crcs(lg, min(a.base_offset for a in acks)) if lg is not None and acks else {}
            )
            kept, lost = [], []
            for a in acks:
                (kept if crcs.get(a.base_offset) == a.crc else lost).append(a)
            rp = report.recovery_points.get(tp, 0)
            records = [a for a in lost if not a.marker]
            outcome = PartitionOutcome(
                self.acknowledged.get(tp, 0),
                sum(a.count for a in kept if not a.marker),
                rp,
                report.log_ends_before.get(tp, 0),
                report.log_ends_after.get(tp, 0),
                _ranges([a for a in records if a.base_offset >= rp]),
                _ranges([a for a in records if a.base_offset < rp]),
                [
                    {"offset": a.base_offset, "allowed": a.base_offset >= rp}
                    for a in lost
                    if a.marker
                ],
            )
            self.live[tp] = kept
            partitions[tp_name(tp)] = outcome.to_json()
        line = {
            "event": "cut",
            "number": report.number,
            "fault": report.fault,
            "variant": report.variant,
            "at_op": report.at_op,
            "mode": report.mode,
            "removed_offsets": report.removed_offsets,
            "damage": report.damage,
            "reboot_seconds": round(report.reboot_seconds, 6),
            "partitions": partitions,
            "offsets_beyond_end": offsets_beyond_end,
        }
        self.cuts.append(line)
        self._write(line)
        return line

    def finish(self) -> dict:
        summary = summarize(self.policy, self.cuts, self.acknowledged_by_name())
        self._write({"event": "end", **summary})
        return summary

    def acknowledged_by_name(self) -> dict[str, int]:
        return {tp_name(tp): n for tp, n in self.acknowledged.items()}


def summarize(policy: dict, cuts: list[dict], acknowledged: dict[str, int]) -> dict:
    """Per partition over the whole run: acknowledged, lost within and beyond the policy."""

    def empty(n: int) -> dict:
        return {"acknowledged": n, "lost_allowed": [], "lost_beyond_policy": [],
                "present_after": [], "commits_lost": []}  # fmt: skip

    parts = {name: empty(n) for name, n in acknowledged.items()}
    for cut in cuts:
        for name, o in cut["partitions"].items():
            p = parts.setdefault(name, empty(0))
            p["present_after"].append(o["present"])
            p["lost_allowed"].extend(o["lost_allowed"])
            p["lost_beyond_policy"].extend(o["lost_beyond_policy"])
            p["commits_lost"].extend(o.get("commits_lost", []))
    ok = not any(
        p["lost_beyond_policy"] or any(not c["allowed"] for c in p["commits_lost"])
        for p in parts.values()
    )
    return {
        "policy": policy,
        "cuts": len(cuts),
        "partitions": parts,
        "offsets_beyond_end": [o for c in cuts for o in c.get("offsets_beyond_end", [])],
        "ok": ok,
    }


def read_record(lines) -> dict:
    """A record file's lines → the same summary `finish` gives (the acks are recounted)."""
    policy: dict = {}
    acknowledged: dict[str, int] = {}
    cuts: list[dict] = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
            kind = event["event"]
        except (ValueError, KeyError, TypeError):
            raise ValueError(f"line {n} is not a serve record event") from None
        if kind == "start":
            policy = {k: v for k, v in event.items() if k not in ("event", "time")}
        elif kind == "ack":
            count = event["last_offset"] - event["base_offset"] + 1
            acknowledged[event["partition"]] = acknowledged.get(event["partition"], 0) + count
        elif kind == "cut":
            cuts.append(event)
    return summarize(policy, cuts, acknowledged)
