"""`undo`: put back, byte for byte, everything a repair run changed — or, for a run interrupted
while applying, everything it had applied (its roll-back).

Works from the run's manifest alone, in reverse action order. Before touching anything it checks
that the log dir is as the run left it (logdir_state.py), so an undo never mixes with later broker
writes or overwrites newer bytes.

Undo is journaled like apply: the manifest goes to `undoing` before the first change and counts
the steps done (`undo_progress`), each made durable before it is counted. A crash during undo is
finished by running undo again, which resumes at the first uncounted step; each step is
idempotent, and safe on an action a crash interrupted or never reached, so redoing the one the
crash interrupted is safe. A repair refuses to run on a log dir whose undo is unfinished.

What it did is said per file, in the order of the log dir's files as the repair met them:
`restored` (bytes put back in a file the repair cut or rewrote), `removed` (a file the repair
created), `put back` (a file the repair moved into the quarantine), `renamed back`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..storage.disk import Disk, parent_of
from . import logdir_state
from .copies import copy_range, copy_span, file_state, move_file
from .failures import io_errors
from .journal import (
    ABANDONED,
    APPLYING,
    DONE,
    SAVING,
    UNDOING,
    UNDONE,
    Journal,
    JournalError,
    clean_marker,
    discard,
)
from .path_kind import NotALogDir, classify
from .runs import lock_run


class UndoRefused(JournalError):
    """The log dir changed since the repair; undoing would destroy newer data."""


@dataclass(slots=True)
class UndoResult:
    journal: Journal
    files: list[tuple[str, str]] = field(default_factory=list)
    """(what was done: restored | removed | put back | renamed back, file), in forward order."""
    notes: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = list(self.notes)
        links = self.journal.data.get("links") or {}
        for done, rel in self.files:
            line = (
                f"{done} {rel}" if done != "removed" else f"removed {rel} (created by the repair)"
            )
            if rel in links and done == "put back":
                line += f" (its target {links[rel]['target']} moved back, the link made again)"
            elif rel in links:
                line += f" (in its symbolic link's target {links[rel]['target']})"
            out.append(line)
        out.append(self.summary())
        return out

    def summary(self) -> str:
        counts = {}
        for done, _ in self.files:
            counts[done] = counts.get(done, 0) + 1
        parts = [f"{n} {done}" for done, n in counts.items()] or ["nothing left to change"]
        what = (
            "the applied part of the interrupted repair"
            if self.journal.data.get("rolled_back")
            else "the repair"
        )
        return (
            f"undone: {', '.join(parts)}; {self.journal.target} is as it was before {what} "
            f"in {self.journal.qdir}"
        )

    def to_json(self) -> dict:
        return {
            "quarantine": self.journal.qdir,
            "target": self.journal.target,
            "files": [{"file": rel, "done": done} for done, rel in self.files],
            "notes": self.notes,
            "summary": self.summary(),
        }


def undo(disk: Disk, qdir: str) -> UndoResult:
    """Restores the pre-repair state recorded in quarantine `qdir` (or finishes an interrupted
    undo of it, or rolls back the applied part of an interrupted repair). Holds the run's lock."""
    journal = Journal.load(disk, qdir)
    result = UndoResult(journal)
    if journal.state == UNDONE:
        if journal.data.get("marker"):  # a crash may have come before the unmarking
            clean_marker(disk, journal.data["marker"])
        return result
    if journal.state == SAVING:
        lock = _lock(disk, journal.target)
        try:
            discard(journal)
        finally:
            lock.release()
        result.notes.append(
            f"the repair recorded in {qdir} was interrupted before it changed anything; its "
            "quarantine is removed"
        )
        return result
    if journal.state == APPLYING and journal.version < 3:
        raise JournalError(
            f"the repair recorded in {qdir} was interrupted, and its journal (version "
            f"{journal.version}) does not say how far it got: run `logrepair repair` on "
            f"{journal.target} to finish it first"
        )
    if journal.state == ABANDONED:
        raise JournalError(
            f"the repair recorded in {qdir} was interrupted and then abandoned by a later run "
            "(--replan): what it applied stays, and its quarantine keeps every byte it removed "
            "(blobs/, files/, as its manifest lists them)"
        )
    if not disk.is_dir(journal.target):
        raise UndoRefused(f"{journal.target}: the repaired directory is gone")
    with io_errors("taking the lock", "nothing was changed"):
        lock = _lock(disk, journal.target)
    # a run that died holding a `.lock` it had created left it: its roll-back removes it
    lock.created = lock.created or bool(journal.data.get("lock_created"))
    try:
        with io_errors("undoing", lambda: _state_after_error(journal)):
            _undo(journal, result)
    finally:
        lock.release()
    return result


def _state_after_error(journal: Journal) -> str:
    if journal.state != UNDOING:
        return "nothing was changed"
    steps = journal.data.get("rolled_back", len(journal.data["actions"]))
    return (
        f"the undo is journaled in {journal.qdir} with {journal.data.get('undo_progress', 0)} of "
        f"{steps} steps done: run `logrepair undo {journal.qdir}` again to finish it (a repair "
        "refuses to run until then)"
    )


def check_rollback(journal: Journal) -> None:
    """Refuses (UndoRefused, LogDirChanged) unless the log dir is as the run left it and the
    quarantine holds every copy the undo needs."""
    logdir_state.check(journal, what="refusing to undo")
    _check_quarantine(journal)


def roll_back(journal: Journal) -> UndoResult:
    """The undo of a run interrupted while applying, by a repair that holds the lock."""
    result = UndoResult(journal)
    _undo(journal, result)
    return result


def _undo(journal: Journal, result: UndoResult) -> None:
    entries = journal.data["actions"]
    if journal.state in (DONE, APPLYING):
        check_rollback(journal)
        if journal.state == APPLYING:
            # the action a crash interrupted is undone too: its undo is safe however far it got
            journal.data["rolled_back"] = min(journal.data.get("applied", 0) + 1, len(entries))
        journal.data["undo_progress"] = 0
        journal.set_state(UNDOING)
    else:
        result.notes.append(f"finishing the interrupted undo of {journal.qdir}")
    steps = list(reversed(entries[: journal.data.get("rolled_back", len(entries))]))
    done: list[list[tuple[str, str]]] = []
    for n in range(journal.data.get("undo_progress", 0), len(steps)):
        done.append(_undo_step(journal, steps[n], entries))
        journal.progress({"undo_progress": n + 1})
    journal.set_state(UNDONE)
    for step in reversed(done):
        result.files += step


def _undo_step(journal: Journal, entry: dict, entries: list[dict]) -> list[tuple[str, str]]:
    """Reverses one action and makes that durable; safe to run again after a crash inside it,
    and on an action that never ran or stopped half way."""
    disk = journal.disk
    kind = entry["action"]
    path = journal.at(entry, entry["file"])  # (a followed link's target)
    saved = entry.get("saved", {})
    if kind == "truncate":
        temp = journal.temp_name(path)
        if disk.exists(temp):  # a copy-on-cut the crash interrupted
            disk.unlink(temp)
            disk.fsync_dir(parent_of(path))
        if disk.exists(path) and disk.size(path) >= saved["original_size"]:
            return []  # never cut
        _restore_tail(journal, entry)
        return [("restored", entry["file"])]
    if kind == "split":
        to = journal.t(entry["to"])
        cut = [e["size"] for e in entries if e["action"] == "truncate" and e["file"] == entry["to"]]
        if cut:  # the batches were copied back into the file they came from
            with disk.open(to, write=True) as f:
                f.truncate(cut[0])
                f.fsync()
            return []
        if not disk.exists(to):
            return []
        disk.unlink(to)
        disk.fsync_dir(parent_of(to))
        return [("removed", entry["to"])]
    if kind == "delete" and "link" in saved:
        return _put_back_followed(journal, entry, path)
    if kind == "delete":
        source = journal.q(saved["moved_to"])
        if not disk.exists(source):
            if disk.exists(path):
                return []  # never moved (or already put back)
            raise UndoRefused(f"the quarantined copy of {entry['file']} is missing")
        move_file(disk, source, path)
        disk.fsync_dir(parent_of(path))
        disk.fsync_dir(parent_of(source))
        return [("put back", entry["file"])]
    if kind == "rename":
        to = journal.t(entry["to"])
        if not disk.exists(to) or disk.exists(path):
            return []  # never renamed (or already back)
        disk.rename(to, path)
        disk.fsync_dir(parent_of(path))
        disk.fsync_dir(parent_of(to))
        return [("renamed back", f"{entry['to']} to {entry['file']}")]
    if kind == "flush":
        return []  # an fsync changes no bytes
    return _restore_previous(journal, entry, saved["previous"])


def _put_back_followed(journal: Journal, entry: dict, target: str) -> list[tuple[str, str]]:
    """A deleted file a followed link stood for: its target moved back from the quarantine, then
    the link made again, holding what it held. Each step already done is skipped."""
    disk = journal.disk
    source = journal.q(entry["saved"]["moved_to"])
    link = journal.t(entry["file"])
    done = False
    if disk.exists(source):
        move_file(disk, source, target)
        disk.fsync_dir(parent_of(target))
        disk.fsync_dir(parent_of(source))
        done = True
    elif not disk.exists(target):
        raise UndoRefused(f"the quarantined copy of {entry['file']} is missing")
    if not disk.exists(link):
        disk.make_symlink(entry["saved"]["link"], link)
        disk.fsync_dir(parent_of(link))
        done = True
    return [("put back", entry["file"])] if done else []


def _restore_previous(journal: Journal, entry: dict, previous: list[dict]) -> list[tuple[str, str]]:
    """Files an action wrote whole: each put back from its saved copy through a name only this
    run uses (beside a followed link's target, for a file the action wrote through one), or
    removed if the repair created it. A file already as it was is left alone."""
    disk = journal.disk
    out = []
    for prev in previous:
        p = journal.at(entry, prev["file"])
        temp = journal.temp_name(p)
        if disk.exists(temp):
            disk.unlink(temp)
        if prev["blob"] is None:
            if not disk.exists(p):
                continue
            disk.unlink(p)
            out.append(("removed", prev["file"]))
        else:
            blob = journal.q(prev["blob"])
            if file_state(disk, p) == file_state(disk, blob):
                continue
            copy_range(disk, blob, 0, disk.size(blob), temp)
            disk.rename(temp, p)
            out.append(("restored", prev["file"]))
        disk.fsync_dir(parent_of(p))
    return out


def _restore_tail(journal: Journal, entry: dict) -> None:
    """Writes the cut tail back: saved bytes from the blob, moved ranges from their segments.

    Writes at fixed positions from sources that outlive this step (the segments a split made are
    removed by a later step), so running it again rewrites the same bytes; zero blocks are left
    as holes past the cut and the length set at the end, as the quarantine keeps them."""
    disk = journal.disk
    saved = entry["saved"]
    moved = {pos: (length, to) for pos, length, to in entry.get("moved") or []}
    blob = journal.q(saved["tail"])
    blob_at = 0
    position = entry["size"]
    end = saved["original_size"]
    with disk.open(journal.at(entry, entry["file"]), write=True) as dst:
        dst.truncate(entry["size"])  # what an earlier try wrote goes; holes read as zeros again
        while position < end:
            if position in moved:
                # kept batches, back from the segment they went to, whole
                length, to = moved[position]
                source, at, sparse = journal.t(to), 0, False
            else:
                length = min([p for p in moved if p > position], default=end) - position
                source, at, sparse = blob, blob_at, True
                blob_at += length
            with disk.open(source) as src:
                if copy_span(src, at, length, dst, position, sparse) < length:
                    raise UndoRefused(f"{source} is shorter than the repair left it")
            position += length
        dst.truncate(end)
        dst.fsync()


def _check_quarantine(journal: Journal) -> None:
    """Refuses (UndoRefused) unless every copy the undo needs is in the quarantine; a version 1
    journal, which recorded no state, also gets the checks of the log dir it knew."""
    disk = journal.disk
    entries = journal.data["actions"]
    legacy = logdir_state.expected(journal) is None
    for n, entry in enumerate(entries[: journal.data.get("applied", len(entries))]):
        kind, rel = entry["action"], entry["file"]
        path = journal.t(rel)
        if kind == "delete":
            if not disk.exists(journal.q(entry["saved"]["moved_to"])):
                raise UndoRefused(f"the quarantined copy of {rel} is missing")
            if legacy and disk.exists(path) and not _recreated_by_plan(entries, rel):
                raise UndoRefused(f"{rel} exists again; refusing to undo")
        if not legacy:
            continue
        if kind == "truncate" and not _moved_later(entries, n, rel):
            if not disk.exists(path) or disk.size(path) != entry["size"]:
                raise UndoRefused(f"{rel} is no longer {entry['size']} bytes; refusing to undo")
        if kind == "truncate":
            for _, length, to in entry.get("moved") or []:
                if not disk.exists(journal.t(to)) or disk.size(journal.t(to)) != length:
                    raise UndoRefused(f"{to} is no longer as the repair left it; refusing to undo")
        elif kind == "rename" and not disk.exists(journal.t(entry["to"])):
            raise UndoRefused(f"{entry['to']} is gone; refusing to undo")


def _moved_later(entries: list[dict], n: int, rel: str) -> bool:
    return any(
        (e["action"] == "delete" and e["file"] == rel)
        or (e["action"] == "split" and e.get("to") == rel)
        for e in entries[n + 1 :]
    )


def _recreated_by_plan(entries: list[dict], rel: str) -> bool:
    """A file the repair moved away and then wrote anew (a rebuilt index, a swap renamed in)."""
    return any(rel in logdir_state.made_files(e) for e in entries)


def _lock(disk: Disk, target: str):
    """The lock a repair of `target` takes: no broker, and no other run, may work there."""
    try:
        is_log_dir = classify(disk, target)
    except NotALogDir:
        is_log_dir = False
    return lock_run(disk, target, is_log_dir)
