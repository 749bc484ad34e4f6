"""`undo`: put back, byte for byte, everything a repair run changed.

Works from the run's manifest alone, in reverse action order. Before touching anything it checks
that the log dir still looks as the repair left it (every file the repair touched at the size and
CRC it left, no file come or gone in the directories it touched), so an undo never mixes with
later broker writes or overwrites newer bytes.

Undo is journaled like apply: the manifest goes to `undoing` before the first change and counts
the steps done (`undo_progress`), each made durable before it is counted. A crash during undo is
finished by running undo again, which resumes at the first uncounted step; each step is
idempotent, so redoing the one the crash interrupted is safe. A repair refuses to run on a log dir
whose undo is unfinished.
"""

from __future__ import annotations

from ..storage.disk import Disk, DiskLock, parent_of
from .apply import (
    DONE,
    UNDOING,
    UNDONE,
    Journal,
    JournalError,
    _move,
    copy_range,
    file_state,
    made_files,
)
from .repair import lock_log_dir, log_dir_of
from .scan import NotALogDir, classify


class UndoRefused(JournalError):
    """The log dir changed since the repair; undoing would destroy newer data."""


def undo(disk: Disk, qdir: str) -> list[str]:
    """Restores the pre-repair state recorded in quarantine `qdir` (or finishes an interrupted
    undo of it); returns what this call did. Holds the log dir's `.lock` while it works."""
    journal = Journal.load(disk, qdir)
    if journal.state == UNDONE:
        return []
    if journal.state not in (DONE, UNDOING):
        raise JournalError(
            f"the repair recorded in {qdir} is {journal.state}: run `logrepair repair` on "
            f"{journal.target} to finish it first"
        )
    if not disk.is_dir(journal.target):
        raise UndoRefused(f"{journal.target}: the repaired directory is gone")
    lock = _lock(disk, journal.target)
    try:
        return _undo(journal)
    finally:
        if lock is not None:
            lock.release()


def _undo(journal: Journal) -> list[str]:
    entries = journal.data["actions"]
    done: list[str] = []
    if journal.state == DONE:
        _check(journal, entries)
        journal.data["undo_progress"] = 0
        journal.set_state(UNDOING)
    else:
        done.append(f"finishing the interrupted undo of {journal.qdir}")
    steps = list(reversed(entries))
    for n in range(journal.data.get("undo_progress", 0), len(steps)):
        done += _undo_step(journal, steps[n], entries)
        journal.data["undo_progress"] = n + 1
        journal.write()
    journal.set_state(UNDONE)
    return done


def _undo_step(journal: Journal, entry: dict, entries: list[dict]) -> list[str]:
    """Reverses one action and makes that durable; safe to run again after a crash inside it."""
    disk = journal.disk
    kind = entry["action"]
    path = journal.t(entry["file"])
    saved = entry.get("saved", {})
    if kind == "truncate":
        size = _restore_tail(journal, entry)
        return [f"restored {size} bytes at the end of {entry['file']}"]
    if kind == "split":
        to = journal.t(entry["to"])
        cut = [e["size"] for e in entries if e["action"] == "truncate" and e["file"] == entry["to"]]
        if cut:  # the batches were copied back into the file they came from
            with disk.open(to, write=True) as f:
                f.truncate(cut[0])
                f.fsync()
            return []
        if disk.exists(to):
            disk.unlink(to)
            disk.fsync_dir(parent_of(to))
        return [f"removed {entry['to']}"]
    if kind == "delete":
        source = journal.q(saved["moved_to"])
        if disk.exists(source):
            _move(disk, source, path)
            disk.fsync_dir(parent_of(path))
            disk.fsync_dir(parent_of(source))
        elif not disk.exists(path):
            raise UndoRefused(f"the quarantined copy of {entry['file']} is missing")
        return [f"put back {entry['file']}"]
    if kind == "rename":
        to = journal.t(entry["to"])
        if disk.exists(to):
            disk.rename(to, path)
            disk.fsync_dir(parent_of(path))
        return [f"renamed {entry['to']} back to {entry['file']}"]
    if kind == "flush":
        return []  # an fsync changes no bytes
    lines = []
    for prev in saved["previous"]:
        p = journal.t(prev["file"])
        if prev["blob"] is None:
            if disk.exists(p):
                disk.unlink(p)
        else:
            blob = journal.q(prev["blob"])
            copy_range(disk, blob, 0, disk.size(blob), p + ".undo")
            disk.rename(p + ".undo", p)
        disk.fsync_dir(parent_of(p))
        lines.append(f"restored {prev['file']}")
    return lines


def _restore_tail(journal: Journal, entry: dict) -> int:
    """Writes the cut tail back: saved bytes from the blob, moved ranges from their segments.

    Writes at fixed positions from sources that outlive this step (the segments a split made are
    removed by a later step), so running it again rewrites the same bytes."""
    disk = journal.disk
    saved = entry["saved"]
    moved = {pos: (length, to) for pos, length, to in entry.get("moved") or []}
    blob = journal.q(saved["tail"])
    blob_at = 0
    position = entry["size"]
    end = saved["original_size"]
    with disk.open(journal.t(entry["file"]), write=True) as dst:
        while position < end:
            if position in moved:
                length, to = moved[position]
                source, at = journal.t(to), 0
            else:
                length = min([p for p in moved if p > position], default=end) - position
                source, at = blob, blob_at
                blob_at += length
            with disk.open(source) as src:
                done = 0
                while done < length:
                    chunk = src.read_at(at + done, min(8 << 20, length - done))
                    if not chunk:
                        raise UndoRefused(f"{source} is shorter than the repair left it")
                    dst.write_at(position + done, chunk)
                    done += len(chunk)
            position += length
        dst.fsync()
    return end - entry["size"]


def _check(journal: Journal, entries: list[dict]) -> None:
    """Refuses (UndoRefused) unless the log dir is as the repair left it."""
    disk = journal.disk
    left = journal.data.get("left")
    if left is not None:  # recorded since manifest version 2
        for rel, state in left["files"].items():
            now = file_state(disk, journal.t(rel))
            if now != state:
                raise UndoRefused(f"{rel} {_change(state, now)} since the repair; refusing to undo")
        for d, names in left["dirs"].items():
            now = set(disk.list_dir(journal.t(d) if d else journal.target))
            if now != set(names):
                came, went = sorted(now - set(names)), sorted(set(names) - now)
                what = "; ".join(
                    [f"{', '.join(came)} appeared"] * bool(came)
                    + [f"{', '.join(went)} went"] * bool(went)
                )
                raise UndoRefused(
                    f"{d or journal.target}: {what} since the repair; refusing to undo"
                )
    for n, entry in enumerate(entries):
        kind = entry["action"]
        rel = entry["file"]
        path = journal.t(rel)
        moved_later = any(
            (e["action"] == "delete" and e["file"] == rel)
            or (e["action"] == "split" and e.get("to") == rel)
            for e in entries[n + 1 :]
        )
        if kind == "truncate" and not moved_later:
            # A later split or segment may have re-created content; only the size matters here.
            if not disk.exists(path) or disk.size(path) != entry["size"]:
                raise UndoRefused(f"{rel} is no longer {entry['size']} bytes; refusing to undo")
        if kind == "truncate":
            for _, length, to in entry.get("moved") or []:
                if not disk.exists(journal.t(to)) or disk.size(journal.t(to)) != length:
                    raise UndoRefused(f"{to} is no longer as the repair left it; refusing to undo")
        elif kind == "delete":
            if disk.exists(path) and not _recreated_by_plan(entries, rel):
                raise UndoRefused(f"{rel} exists again; refusing to undo")
            if not disk.exists(journal.q(entry["saved"]["moved_to"])):
                raise UndoRefused(f"the quarantined copy of {rel} is missing")
        elif kind == "rename":
            if not disk.exists(journal.t(entry["to"])):
                raise UndoRefused(f"{entry['to']} is gone; refusing to undo")


def _change(before: list[int] | None, now: list[int] | None) -> str:
    if now is None:
        return "was removed"
    if before is None:
        return "appeared"
    if now[0] != before[0]:
        return f"went from {before[0]} to {now[0]} bytes"
    return "was rewritten"


def _recreated_by_plan(entries: list[dict], rel: str) -> bool:
    """A file the repair moved away and then wrote anew (a rebuilt index, a swap renamed in)."""
    return any(rel in made_files(e) for e in entries)


def _lock(disk: Disk, target: str) -> DiskLock | None:
    """The `.lock` of the log dir holding `target`, as a repair takes it: no broker may run."""
    try:
        is_log_dir = classify(disk, target)
    except NotALogDir:
        is_log_dir = False
    return lock_log_dir(disk, log_dir_of(disk, target, is_log_dir) or target)
