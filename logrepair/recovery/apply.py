"""Applying a plan: quarantine, journal and manifest, crash-safe.

A repair run owns one quarantine directory holding `manifest.json` (the journal), `blobs/` (removed
tails and the previous contents of replaced files) and `files/` (whole files moved out of the log
dir). The run goes through states written atomically to the manifest:

- `saving`: copies of everything the plan will remove or replace are made and fsynced. The log dir
  is not touched yet, so a crash here is rolled back: the next run discards this quarantine.
- `applying`: the actions run in order. Each is idempotent given the saved copies (a split reads
  the bytes it moves from the saved tail, a rebuild recomputes from the final `.log`), so a crash
  here is finished by the next run replaying every action.
- `done`: files and directories fsynced; the manifest is the record `undo` works from.

Nothing is deleted outright: a deleted file is renamed into `files/` (copied when the quarantine is
on another filesystem), a truncated tail is copied to `blobs/` first.
"""

from __future__ import annotations

import base64
import errno
import json
import time
from collections.abc import Callable

from ..storage.disk import Disk, join, parent_of
from ..storage.layout import TMP_SUFFIX
from .plan import Action, Plan

MANIFEST = "manifest.json"
COPY_CHUNK = 8 * 1024 * 1024

SAVING, APPLYING, DONE, UNDONE = "saving", "applying", "done", "undone"

# (disk, absolute .log path, index.interval.bytes, verify CRCs) -> [(absolute index path, bytes)]:
# the indexes Kafka's recovery would write for that log, computed from its current bytes.
IndexRebuilder = Callable[[Disk, str, int, bool], list[tuple[str, bytes]]]


class JournalError(ValueError):
    """A quarantine whose manifest is missing, unreadable, or for another target."""


def copy_range(disk: Disk, src: str, position: int, length: int, dst: str) -> None:
    """Copies `[position, position + length)` of `src` into a new file `dst`, fsynced.

    Chunked with one reused buffer, so a 1 GiB tail costs 8 MiB of memory."""
    buf = bytearray(min(COPY_CHUNK, max(length, 1)))
    view = memoryview(buf)
    with disk.open(src) as fin, disk.open(dst, create=True) as fout:
        fout.truncate(0)
        done = 0
        while done < length:
            n = fin.read_into(position + done, view[: min(len(buf), length - done)])
            if n <= 0:
                raise OSError(errno.EIO, f"{src} ended at {position + done} while copying")
            fout.write_at(done, view[:n])
            done += n
        fout.fsync()


def copy_ranges(disk: Disk, src: str, ranges: list[tuple[int, int]], dst: str) -> None:
    """`copy_range` of several `(position, length)` ranges of `src`, one after another in `dst`."""
    buf = bytearray(COPY_CHUNK)
    view = memoryview(buf)
    with disk.open(src) as fin, disk.open(dst, create=True) as fout:
        fout.truncate(0)
        out = 0
        for position, length in ranges:
            done = 0
            while done < length:
                n = fin.read_into(position + done, view[: min(len(buf), length - done)])
                if n <= 0:
                    raise OSError(errno.EIO, f"{src} ended at {position + done} while copying")
                fout.write_at(out, view[:n])
                done += n
                out += n
        fout.fsync()


def _unmoved(start: int, end: int, moved) -> list[tuple[int, int]]:
    """The parts of `[start, end)` outside the moved `(position, length, to)` ranges, in order."""
    out = []
    position = start
    for pos, length, _ in sorted(moved):
        if pos > position:
            out.append((position, pos - position))
        position = max(position, pos + length)
    if end > position:
        out.append((position, end - position))
    return out


class Journal:
    """The manifest of one repair run, and the operations that keep it in step with the disk."""

    def __init__(self, disk: Disk, qdir: str, data: dict) -> None:
        self.disk = disk
        self.qdir = qdir
        self.data = data

    # -- manifest ---------------------------------------------------------------------------------

    @classmethod
    def load(cls, disk: Disk, qdir: str) -> Journal:
        path = join(qdir, MANIFEST)
        if not disk.exists(path):
            raise JournalError(f"{qdir} is not a logrepair quarantine (no {MANIFEST})")
        try:
            data = json.loads(disk.read_file(path))
            if data.get("tool") != "logrepair" or not isinstance(data.get("actions"), list):
                raise ValueError("not a logrepair manifest")
        except (ValueError, UnicodeDecodeError) as exc:
            raise JournalError(f"{path} is not a readable logrepair manifest: {exc}") from None
        return cls(disk, qdir, data)

    @property
    def state(self) -> str:
        return self.data["state"]

    @property
    def target(self) -> str:
        return self.data["target"]

    @property
    def actions(self) -> list[Action]:
        return [Action.from_journal(a) for a in self.data["actions"]]

    def write(self) -> None:
        payload = json.dumps(self.data, indent=1, sort_keys=True).encode()
        self.disk.write_file_atomic(join(self.qdir, MANIFEST), payload)

    def set_state(self, state: str) -> None:
        self.data["state"] = state
        self.data["updated"] = _now()
        self.write()

    def q(self, rel: str) -> str:
        return join(self.qdir, rel)

    def t(self, rel: str) -> str:
        return join(self.target, rel)


def make_dirs_durable(disk: Disk, path: str) -> None:
    """Creates `path` and its missing parents, and fsyncs each new entry's directory, so that a
    power loss cannot take a quarantine away while the log dir keeps the repair."""
    missing = []
    p = path
    while not disk.exists(p):
        missing.append(p)
        parent = parent_of(p)
        if parent == p:
            break
        p = parent
    disk.make_dirs(path)
    for created in reversed(missing):
        disk.fsync_dir(parent_of(created))


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def start(disk: Disk, plan: Plan, qdir: str, summary: dict, *, validated: bool = True) -> Journal:
    """Creates the quarantine for `plan` and saves every byte the plan removes or replaces.

    `validated`: the plan comes from a scan that checked every batch it keeps, so index rebuilds
    may read headers only."""
    if disk.exists(qdir) and disk.list_dir(qdir):
        raise JournalError(f"quarantine directory {qdir} is not empty")
    make_dirs_durable(disk, join(qdir, "blobs"))
    make_dirs_durable(disk, join(qdir, "files"))
    data = {
        "tool": "logrepair",
        "version": 1,
        "target": plan.root,
        "mode": plan.mode,
        "state": SAVING,
        "created": _now(),
        "updated": _now(),
        "actions": [a.to_journal() for a in plan.actions],
        "summary": summary,
        "validated": validated,
    }
    journal = Journal(disk, qdir, data)
    for i, entry in enumerate(data["actions"]):
        # New contents live beside the manifest, not in it: an index can be megabytes.
        content = entry.pop("content", None)
        if content is not None:
            blob = f"blobs/{i:05d}.new"
            with disk.open(journal.q(blob), create=True) as f:
                f.truncate(0)
                f.write_at(0, base64.b64decode(content))
                f.fsync()
            entry["content_blob"] = blob
    journal.write()
    for i, entry in enumerate(data["actions"]):
        entry["saved"] = _save(journal, i, Action.from_journal(entry))
    disk.fsync_dir(join(qdir, "blobs"))
    journal.set_state(APPLYING)
    return journal


def _save(journal: Journal, i: int, action: Action) -> dict:
    disk = journal.disk
    path = journal.t(action.file)
    if action.action == "truncate":
        size = disk.size(path)
        blob = f"blobs/{i:05d}.tail"
        ranges = _unmoved(action.size, size, action.moved or [])
        copy_ranges(disk, path, ranges, journal.q(blob))
        return {"tail": blob, "original_size": size}
    if action.action == "delete":
        return {"moved_to": f"files/{action.file}"}
    if action.action in ("write_file", "rebuild_indexes", "create_segment"):
        previous = []
        for j, rel in enumerate(replaced_files(action)):
            p = journal.t(rel)
            if disk.exists(p):
                blob = f"blobs/{i:05d}.{j}.prev"
                copy_range(disk, p, 0, disk.size(p), journal.q(blob))
                previous.append({"file": rel, "blob": blob})
            else:
                previous.append({"file": rel, "blob": None})
        return {"previous": previous}
    return {}


def replaced_files(action: Action) -> list[str]:
    """Files an action overwrites or creates whole (their previous state is saved).

    Each file written through `Disk.write_file_atomic` brings its `<name>.tmp`: the write reuses
    and renames away a `.tmp` an interrupted checkpoint write left, so that one is saved too."""
    if action.action in ("rebuild_indexes", "create_segment"):
        stem = action.file[: -len(".log")]
        written = [stem + ".index", stem + ".timeindex"]
        created = [action.file] if action.action == "create_segment" else []
    else:
        written, created = [action.file], []
    return created + written + [w + TMP_SUFFIX for w in written]


def run(journal: Journal, rebuild: IndexRebuilder) -> None:
    """Runs (or replays, after a crash) every action of an `applying` journal, then fsyncs."""
    disk = journal.disk
    touched_dirs: set[str] = {journal.qdir, join(journal.qdir, "files")}
    verify = not journal.data.get("validated", False)
    for entry in journal.data["actions"]:
        action = Action.from_journal(entry)
        saved = entry.get("saved", {})
        path = journal.t(action.file)
        if disk.is_symlink(path) or disk.is_symlink(parent_of(path)):
            raise JournalError(f"{path} is a symbolic link; a repair never follows one")
        touched_dirs.add(parent_of(path))
        kind = action.action
        if kind == "truncate":
            if action.moved:
                # the copies must survive a power loss before the bytes they came from go
                for _, _, to in action.moved:
                    disk.fsync_dir(parent_of(journal.t(to)))
            if disk.exists(path) and disk.size(path) > action.size:
                with disk.open(path, write=True) as f:
                    f.truncate(action.size)
                    f.fsync()
        elif kind == "split":
            _split(journal, action, path)
            touched_dirs.add(parent_of(journal.t(action.to)))
        elif kind == "delete":
            dest = journal.q(saved["moved_to"])
            disk.make_dirs(parent_of(dest))
            touched_dirs.add(parent_of(dest))
            if disk.exists(path) and not (disk.exists(dest) and _made_later(journal, entry, path)):
                # (Replayed after a crash with the file already moved, the name may belong to a
                # later action's new file, e.g. the `.tmp` of a checkpoint write: that one stays.)
                _move(disk, path, dest)
        elif kind == "rename":
            if disk.exists(path):
                disk.rename(path, journal.t(action.to))
        elif kind == "write_file":
            disk.write_file_atomic(path, disk.read_file(journal.q(entry["content_blob"])))
        elif kind == "create_segment":
            if not disk.exists(path):
                with disk.open(path, create=True) as f:
                    f.fsync()
            _write_indexes(disk, path, rebuild, action.index_interval_bytes, verify)
        elif kind == "rebuild_indexes":
            _write_indexes(disk, path, rebuild, action.index_interval_bytes, verify)
        else:
            raise JournalError(f"unknown action {kind!r} in {journal.qdir}")
    for d in sorted(touched_dirs):
        if disk.exists(d):
            disk.fsync_dir(d)
    journal.set_state(DONE)


def _write_indexes(
    disk: Disk, log_path: str, rebuild: IndexRebuilder, interval: int | None, verify: bool
) -> None:
    interval = 4096 if interval is None else interval
    for index_path, content in rebuild(disk, log_path, interval, verify):
        disk.write_file_atomic(index_path, content)


def _split(journal: Journal, split: Action, path: str) -> None:
    """Copies the split's bytes to its new segment, from wherever they are now: the source file
    before its truncate ran, the saved tail after (a split back into the same file), or — when a
    crash came after the truncate of a moved range — already complete in the new segment."""
    disk = journal.disk
    dest = journal.t(split.to)
    end = split.position + split.length
    truncate = _truncate_entry_for(journal, split)
    moved = truncate.get("moved")
    if moved:
        if disk.exists(path) and disk.size(path) >= end:
            copy_range(disk, path, split.position, split.length, dest)
        elif not disk.exists(dest) or disk.size(dest) != split.length:
            raise JournalError(f"{split.to} is incomplete and its source bytes are gone")
        return
    copy_range(
        disk, journal.q(truncate["saved"]["tail"]), split.position - truncate["size"],
        split.length, dest,
    )  # fmt: skip


def _truncate_entry_for(journal: Journal, split: Action) -> dict:
    for entry in journal.data["actions"]:
        if entry["action"] == "truncate" and entry["file"] == split.file:
            if entry["size"] <= split.position:
                return entry
    raise JournalError(f"split of {split.file} has no truncate that saved its bytes")


def _made_later(journal: Journal, entry: dict, path: str) -> bool:
    """A later action of the journal creates or writes `path` whole."""
    actions = journal.data["actions"]
    later = actions[actions.index(entry) + 1 :]
    return any(path == journal.t(f) for e in later for f in made_files(e))


def made_files(entry: dict) -> list[str]:
    """Files an action (by its journal entry) creates or writes whole."""
    if entry["action"] in ("rename", "split"):
        return [entry["to"]]
    if entry["action"] in ("write_file", "rebuild_indexes", "create_segment"):
        return replaced_files(Action.from_journal(entry))
    return []


def _move(disk: Disk, src: str, dst: str) -> None:
    """Renames `src` to `dst`; across filesystems copies, fsyncs, then unlinks."""
    try:
        disk.rename(src, dst)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        part = dst + ".part"
        copy_range(disk, src, 0, disk.size(src), part)
        disk.rename(part, dst)
        disk.fsync_dir(parent_of(dst))
        disk.unlink(src)


def pending(disk: Disk, quarantine_root: str, target: str) -> list[Journal]:
    """Unfinished runs for `target` under `quarantine_root`, oldest first."""
    if not disk.is_dir(quarantine_root):
        return []
    found = []
    for name in disk.list_dir(quarantine_root):
        qdir = join(quarantine_root, name)
        if not disk.exists(join(qdir, MANIFEST)):
            continue
        try:
            journal = Journal.load(disk, qdir)
        except JournalError:
            continue
        if journal.target == target and journal.state in (SAVING, APPLYING):
            found.append(journal)
    return found


def finish(journal: Journal, rebuild: IndexRebuilder) -> str:
    """Completes or rolls back an interrupted run; returns what was done."""
    if journal.state == SAVING:
        _discard(journal)
        return f"rolled back the interrupted repair in {journal.qdir} (it had changed nothing)"
    run(journal, rebuild)
    return f"completed the interrupted repair in {journal.qdir}"


def _discard(journal: Journal) -> None:
    """Removes a quarantine whose run never touched the log dir (crash while saving)."""
    disk = journal.disk
    _remove_tree(disk, journal.qdir)
    disk.fsync_dir(parent_of(journal.qdir))


def _remove_tree(disk: Disk, path: str) -> None:
    for name in disk.list_dir(path):
        p = join(path, name)
        if disk.is_dir(p) and not disk.is_symlink(p):
            _remove_tree(disk, p)
        else:
            disk.unlink(p)
    disk.remove_dir(path)
