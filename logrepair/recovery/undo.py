"""`undo`: put back, byte for byte, everything a repair run changed.

Works from the run's manifest alone, in reverse action order. Before touching anything it checks
that the log dir still looks as the repair left it (a truncated file still at its truncated size,
a moved file still absent), so an undo never mixes with later broker writes.
"""

from __future__ import annotations

from ..storage.disk import Disk, parent_of
from .apply import DONE, UNDONE, Journal, JournalError, _move, copy_range, made_files


class UndoRefused(JournalError):
    """The log dir changed since the repair; undoing would destroy newer data."""


def undo(disk: Disk, qdir: str) -> list[str]:
    """Restores the pre-repair state recorded in quarantine `qdir`; returns what it did."""
    journal = Journal.load(disk, qdir)
    if journal.state == UNDONE:
        return []
    if journal.state != DONE:
        raise JournalError(
            f"the repair recorded in {qdir} is {journal.state}: run `logrepair repair` on "
            f"{journal.target} to finish it first"
        )
    entries = journal.data["actions"]
    _check(journal, entries)
    done: list[str] = []
    dirs: set[str] = set()
    for entry in reversed(entries):
        kind = entry["action"]
        path = journal.t(entry["file"])
        dirs.add(parent_of(path))
        saved = entry.get("saved", {})
        if kind == "truncate":
            size = _restore_tail(journal, entry)
            done.append(f"restored {size} bytes at the end of {entry['file']}")
        elif kind == "split":
            cut = [
                e["size"] for e in entries if e["action"] == "truncate" and e["file"] == entry["to"]
            ]
            if cut:  # the batches were copied back into the file they came from
                with disk.open(journal.t(entry["to"]), write=True) as f:
                    f.truncate(cut[0])
                    f.fsync()
            else:
                disk.unlink(journal.t(entry["to"]))
                done.append(f"removed {entry['to']}")
        elif kind == "delete":
            _move(disk, journal.q(saved["moved_to"]), path)
            done.append(f"put back {entry['file']}")
        elif kind == "rename":
            disk.rename(journal.t(entry["to"]), path)
            done.append(f"renamed {entry['to']} back to {entry['file']}")
        else:
            for prev in saved["previous"]:
                p = journal.t(prev["file"])
                if prev["blob"] is None:
                    if disk.exists(p):
                        disk.unlink(p)
                else:
                    blob = journal.q(prev["blob"])
                    copy_range(disk, blob, 0, disk.size(blob), p + ".undo")
                    disk.rename(p + ".undo", p)
                done.append(f"restored {prev['file']}")
    for d in sorted(dirs):
        if disk.exists(d):
            disk.fsync_dir(d)
    journal.set_state(UNDONE)
    return done


def _restore_tail(journal: Journal, entry: dict) -> int:
    """Writes the cut tail back: saved bytes from the blob, moved ranges from their segments."""
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
    disk = journal.disk
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


def _recreated_by_plan(entries: list[dict], rel: str) -> bool:
    """A file the repair moved away and then wrote anew (a rebuilt index, a swap renamed in)."""
    return any(rel in made_files(e) for e in entries)
