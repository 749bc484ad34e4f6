"""What a run does first with the unfinished runs it finds on its log dir.

- A run interrupted while `saving` changed nothing: it is discarded.
- A run interrupted while `applying` is finished (replayed from its first uncounted action), but
  only once the log dir is checked to be as that run left it (logdir_state.py). If anything changed
  since — typically a broker started on the half-repaired dir, recovered it and appended — replaying
  old decisions would cut the newer batches or overwrite newer checkpoints, so the run refuses and
  says what changed, unless told what to do instead:
  - `ABANDON` (`--abandon-interrupted`): roll back what the interrupted run applied (its undo),
    then plan afresh; refused too where the files it changed were changed since.
  - `REPLAN` (`--replan`): leave what it applied as it is, mark it `abandoned` (its quarantine
    keeps every byte it removed), and plan afresh from the log dir as it is now, keeping the
    newer data.
- An interrupted undo must be finished by `logrepair undo` first.

What finishing a run removes is reported like any repair's (its journal's summary), and counts
for the exit status.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import logdir_state
from .apply import IndexRebuilder, run
from .journal import ABANDONED, APPLYING, SAVING, UNDOING, Journal, discard
from .runs import RepairRefused
from .undo import check_rollback, roll_back

FINISH, ABANDON, REPLAN = "finish", "abandon", "replan"


@dataclass(slots=True)
class Settled:
    """An interrupted run and what this run did with it."""

    qdir: str
    done: str
    """completed | rolled back | abandoned | discarded"""
    summary: dict

    def describe(self) -> str:
        if self.done == "discarded":
            return f"rolled back the interrupted repair in {self.qdir} (it had changed nothing)"
        if self.done == "completed":
            removed = self.summary.get("removed_bytes", 0)
            offsets = ", ".join(f"{a}..{b}" for a, b in self.summary.get("removed_offsets", []))
            return f"completed the interrupted repair in {self.qdir}: removed {removed:,} bytes" + (
                f", offsets {offsets}" if offsets else ""
            )
        if self.done == "rolled back":
            return f"rolled back what the interrupted repair in {self.qdir} had applied"
        return (
            f"abandoned the interrupted repair in {self.qdir}: what it applied stays, and its "
            "quarantine keeps every byte it removed"
        )

    @property
    def lost_data(self) -> bool:
        """Finishing it removed records or lost acknowledged offsets (as its plan said)."""
        if self.done != "completed":
            return False
        parts = self.summary.get("partitions")
        if parts is not None:
            return any(
                p.get("removed_offsets") or p.get("acknowledged_lost") or p.get("records_removed")
                for p in parts
            )
        return bool(self.summary.get("removed_offsets") or self.summary.get("removed_bytes"))

    def to_json(self) -> dict:
        return {"quarantine": self.qdir, "done": self.done, "summary": self.summary}


def refuse_unfinished_undo(pending: list[Journal]) -> None:
    for journal in pending:
        if journal.state == UNDOING:
            raise RepairRefused(
                f"the undo of {journal.qdir} was interrupted: run `logrepair undo "
                f"{journal.qdir}` to finish it first"
            )


def check_interrupted(pending: list[Journal], how: str) -> None:
    """Refuses (RepairRefused, one line) before anything changes when an interrupted run cannot be
    settled `how`: the log dir changed since it, or its journal cannot tell."""
    refuse_unfinished_undo(pending)
    for journal in pending:
        if journal.state != APPLYING or how == REPLAN:
            continue
        if journal.version < 3:
            raise RepairRefused(
                f"{journal.qdir}: a repair interrupted under an older logrepair (journal "
                f"version {journal.version}), which did not record what it changed: this one "
                "cannot check that the log dir is as that run left it. Finish it with the "
                "logrepair that started it, or leave it and plan afresh with --replan"
            )
        try:
            if how == ABANDON:
                check_rollback(journal)
            else:
                logdir_state.check(journal, what="refusing to finish it")
        except logdir_state.LogDirChanged as e:
            raise RepairRefused(
                f"the interrupted repair in {journal.qdir} cannot be "
                f"{'rolled back' if how == ABANDON else 'finished'}: {e}. If a broker ran "
                "since, keep its newer data: re-run with --replan (plans afresh; the "
                "interrupted run's quarantine keeps what it removed)"
            ) from None


def settle(pending: list[Journal], how: str, rebuild: IndexRebuilder) -> list[Settled]:
    """Finishes, rolls back or abandons each interrupted run, oldest first (after `check`)."""
    out = []
    for journal in pending:
        summary = journal.data.get("summary", {})
        if journal.state == SAVING:
            discard(journal)
            out.append(Settled(journal.qdir, "discarded", summary))
        elif how == REPLAN:
            journal.set_state(ABANDONED)
            out.append(Settled(journal.qdir, "abandoned", summary))
        elif how == ABANDON:
            roll_back(journal)
            out.append(Settled(journal.qdir, "rolled back", summary))
        else:
            run(journal, rebuild)
            out.append(Settled(journal.qdir, "completed", summary))
    return out
