"""Applying a plan: quarantine, journal and manifest, crash-safe.

A repair run owns one quarantine directory holding `manifest.json` (the journal), `blobs/` (removed
tails and the previous contents of replaced files) and `files/` (whole files moved out of the log
dir). The run goes through states written atomically to the manifest:

- `saving`: copies of everything the plan will remove or replace are made and fsynced. The log dir
  is not touched yet, so a crash here is rolled back: the next run discards this quarantine. (The
  directory gets its name only once the manifest is in it, and loses it before it is removed, so a
  crash never leaves a run without a manifest; the `.discarded` rest goes with the next run.)
- `applying`: the actions run in order. Each is idempotent given the saved copies (a split reads
  the bytes it moves from the saved tail, a rebuild recomputes from the final `.log`), so a crash
  here is finished by the next run replaying every action.
- `done`: files and directories fsynced; the manifest is the record `undo` works from, with the
  state the repair left each touched file in (`left`), so undo can refuse a log dir that changed.
- `undoing`, `undone`: see undo.py.

The manifest holds everything a replay needs, so the run that finishes an interrupted repair gets
the result the interrupted one would have: each index rebuild carries its `index.interval.bytes`
and the batch-size cap its scan used (`max_batch_size`, raised with `message.max.bytes`).

Nothing is deleted outright: a deleted file is renamed into `files/` (copied when the quarantine is
on another filesystem), a truncated tail is copied to `blobs/` first.
"""

from __future__ import annotations

import base64
import errno
import json
import time
from collections.abc import Callable, Mapping

from ..format.crc import crc32c
from ..storage import scan as storage_scan
from ..storage.abstract_index import IndexFileError
from ..storage.disk import Disk, join, parent_of
from ..storage.layout import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    TMP_SUFFIX,
    TXN_INDEX_SUFFIX,
)
from .plan import Action, Plan
from .settings import Settings

MANIFEST = "manifest.json"
DISCARDED = ".discarded"
"""Suffix of a run dir no run will use: one being created (until its manifest is in) or one being
removed after a roll-back. The next run removes what a crash left of it."""
COPY_CHUNK = 8 * 1024 * 1024

SAVING, APPLYING, DONE, UNDOING, UNDONE = "saving", "applying", "done", "undoing", "undone"

VERSION = 2
"""Version 2 records each index rebuild's `max_batch_size`; a version 1 manifest is replayed with
the default cap, which is what the version that wrote it used."""

# (disk, absolute .log path, index.interval.bytes, verify CRCs, max batch size)
#   -> [(absolute index path, bytes)]:
# the indexes Kafka's recovery would write for that log, computed from its current bytes.
IndexRebuilder = Callable[[Disk, str, int, bool, int], list[tuple[str, bytes]]]


class JournalError(ValueError):
    """A quarantine whose manifest is missing, unreadable, or for another target."""


def copy_range(disk: Disk, src: str, position: int, length: int, dst: str) -> None:
    """Copies `[position, position + length)` of `src` into a new file `dst`, fsynced."""
    copy_ranges(disk, src, [(position, length)], dst)


def copy_ranges(disk: Disk, src: str, ranges: list[tuple[int, int]], dst: str) -> None:
    """The `(position, length)` ranges of `src`, one after another, in a new file `dst`, fsynced."""
    copy_pieces(disk, [(src, position, length) for position, length in ranges], dst)


def copy_pieces(disk: Disk, pieces: list[tuple[str, int, int]], dst: str) -> None:
    """The `(file, position, length)` ranges, one after another, in a new file `dst`, fsynced.

    Chunked with one reused buffer, so a 1 GiB tail costs 8 MiB of memory."""
    total = sum(length for _, _, length in pieces)
    buf = bytearray(min(COPY_CHUNK, max(total, 1)))
    view = memoryview(buf)
    with disk.open(dst, create=True) as fout:
        fout.truncate(0)
        out = 0
        for src, position, length in pieces:
            with disk.open(src) as fin:
                done = 0
                while done < length:
                    n = fin.read_into(position + done, view[: min(len(buf), length - done)])
                    if n <= 0:
                        raise OSError(errno.EIO, f"{src} ended at {position + done} while copying")
                    fout.write_at(out, view[:n])
                    done += n
                    out += n
        fout.fsync()


def _source(journal: Journal, file: str) -> str:
    """A piece's file: absolute (a replica's, only read) or relative to the repaired PATH."""
    return file if file.startswith("/") else journal.t(file)


def _install(disk: Disk, blob: str, path: str) -> None:
    """`path` atomically replaced by a copy of `blob`, streamed (a segment can be a gigabyte):
    `<path>.tmp`, fsync, rename, fsync the directory, as `Disk.write_file_atomic` does."""
    tmp = path + TMP_SUFFIX
    copy_range(disk, blob, 0, disk.size(blob), tmp)
    disk.rename(tmp, path)
    disk.fsync_dir(parent_of(path))


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
        if data.get("version") not in (1, VERSION):
            raise JournalError(
                f"{path} has manifest version {data.get('version')!r}; this logrepair reads "
                f"versions 1 to {VERSION}: use the logrepair that wrote it"
            )
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


def start(
    disk: Disk,
    plan: Plan,
    qdir: str,
    summary: dict,
    *,
    max_batch_sizes: Mapping[str, int] | None = None,
    validated: bool = True,
) -> Journal:
    """Creates the quarantine for `plan` and saves every byte the plan removes or replaces.

    `max_batch_sizes`: the batch-size cap the scan used in each partition dir (relative to the
    plan's root, '' for the root itself), recorded with each index rebuild there; None for a plan
    whose scan ran with Kafka's default settings.
    `validated`: the plan comes from a scan that checked every batch it keeps, so index rebuilds
    may read headers only."""
    if disk.exists(qdir) and disk.list_dir(qdir):
        raise JournalError(f"quarantine directory {qdir} is not empty")
    data = {
        "tool": "logrepair",
        "version": VERSION,
        "target": plan.root,
        "mode": plan.mode,
        "state": SAVING,
        "created": _now(),
        "updated": _now(),
        "actions": [a.to_journal() for a in plan.actions],
        "summary": summary,
        "validated": validated,
    }
    for entry in data["actions"]:
        if entry["action"] in REBUILDS:
            entry["max_batch_size"] = (
                Settings().max_batch_size
                if max_batch_sizes is None
                else max_batch_sizes[entry["file"].rpartition("/")[0]]
            )
    # New contents live beside the manifest, not in it: an index can be megabytes.
    contents = {}
    pieced = {}
    for i, entry in enumerate(data["actions"]):
        content = entry.pop("content", None)
        if content is not None:
            entry["content_blob"] = f"blobs/{i:05d}.new"
            contents[entry["content_blob"]] = base64.b64decode(content)
        elif entry.get("pieces"):
            entry["content_blob"] = f"blobs/{i:05d}.new"
            pieced[entry["content_blob"]] = entry["pieces"]
    # The run dir takes its name only with its manifest inside, so a crash never leaves a run
    # without one; until then it is `<qdir>.discarded`, which the next run removes.
    staging = qdir + DISCARDED
    make_dirs_durable(disk, join(staging, "blobs"))
    make_dirs_durable(disk, join(staging, "files"))
    Journal(disk, staging, data).write()
    disk.rename(staging, qdir)
    disk.fsync_dir(parent_of(qdir))
    journal = Journal(disk, qdir, data)
    for blob, content in contents.items():
        with disk.open(journal.q(blob), create=True) as f:
            f.truncate(0)
            f.write_at(0, content)
            f.fsync()
    for blob, pieces in pieced.items():
        copy_pieces(disk, [(_source(journal, f), pos, n) for f, pos, n in pieces], journal.q(blob))
    # Where each file's bytes will be when its action runs: an earlier rename brings other bytes
    # (a `.swap` renamed in, then rebuilt or truncated), an earlier delete leaves none.
    source: dict[str, str | None] = {}
    for i, entry in enumerate(data["actions"]):
        action = Action.from_journal(entry)
        entry["saved"] = _save(journal, i, action, source)
        if action.action == "rename":
            source[action.to] = source.get(action.file, action.file)
            source[action.file] = None
        elif action.action == "delete":
            source[action.file] = None
    disk.fsync_dir(join(qdir, "blobs"))
    journal.set_state(APPLYING)
    return journal


def _save(journal: Journal, i: int, action: Action, source: dict[str, str | None]) -> dict:
    """What undo needs to put back the bytes this action changes, as they will be when it runs."""
    disk = journal.disk
    if action.action == "truncate":
        path = journal.t(source.get(action.file) or action.file)
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
            now = source.get(rel, rel)
            p = None if now is None else journal.t(now)
            if p is not None and disk.exists(p):
                blob = f"blobs/{i:05d}.{j}.prev"
                copy_range(disk, p, 0, disk.size(p), journal.q(blob))
                previous.append({"file": rel, "blob": blob})
            else:
                previous.append({"file": rel, "blob": None})
        return {"previous": previous}
    return {}


REBUILDS = ("rebuild_indexes", "create_segment")
"""Actions that write a `.log`'s offset and time index from its bytes."""


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
    default_cap = storage_scan.DEFAULT_MAX_BATCH_SIZE  # what a version 1 manifest was applied with
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
            make_dirs_durable(disk, parent_of(dest))
            touched_dirs.add(parent_of(dest))
            if disk.exists(path) and not (disk.exists(dest) and _made_later(journal, entry, path)):
                # (Replayed after a crash with the file already moved, the name may belong to a
                # later action's new file, e.g. the `.tmp` of a checkpoint write: that one stays.)
                _move(disk, path, dest)
                # The file's new name must be durable before anything makes its removal from the
                # log dir durable (a later atomic write fsyncs that dir): where a rename is not
                # atomic, a power loss in between would lose the file from both places.
                disk.fsync_dir(parent_of(dest))
        elif kind == "rename":
            if disk.exists(path):
                disk.rename(path, journal.t(action.to))
        elif kind == "write_file" and entry.get("pieces"):
            _install(disk, journal.q(entry["content_blob"]), path)
        elif kind == "write_file":
            disk.write_file_atomic(path, disk.read_file(journal.q(entry["content_blob"])))
        elif kind == "flush":
            _flush_segment(disk, path)
        elif kind in REBUILDS:
            if kind == "create_segment" and not disk.exists(path):
                with disk.open(path, create=True) as f:
                    f.fsync()
            cap = entry.get("max_batch_size", default_cap)
            _write_indexes(journal, path, rebuild, action.index_interval_bytes, verify, cap)
        else:
            raise JournalError(f"unknown action {kind!r} in {journal.qdir}")
    for d in sorted(touched_dirs):
        if disk.exists(d):
            disk.fsync_dir(d)
    journal.data["left"] = left_state(journal)
    journal.set_state(DONE)


def left_state(journal: Journal) -> dict:
    """How the repair left every file it touched and the directories holding them, so that `undo`
    can tell whether anything changed since (a broker started, an operator edited a file)."""
    disk = journal.disk
    files = {}
    for entry in journal.data["actions"]:
        if entry["action"] != "flush":
            for rel in [entry["file"], *made_files(entry)]:
                files[rel] = file_state(disk, journal.t(rel))
    dirs = {}
    for rel in files:
        d = rel.rpartition("/")[0]
        if d not in dirs:
            dirs[d] = sorted(disk.list_dir(journal.t(d) if d else journal.target))
    return {"files": files, "dirs": dirs}


def file_state(disk: Disk, path: str) -> list[int] | None:
    """`[size, CRC-32C]` of a file, `[size]` for a `.log` (appends and truncations change its size;
    reading gigabytes back is not worth it), None when it does not exist."""
    if not disk.exists(path):
        return None
    size = disk.size(path)
    if path.endswith(LOG_SUFFIX):
        return [size]
    crc = 0
    buf = bytearray(min(COPY_CHUNK, max(size, 1)))
    with disk.open(path) as f:
        position = 0
        while position < size:
            n = f.read_into(position, buf)
            if n <= 0:
                break
            crc = crc32c(memoryview(buf)[:n], crc)
            position += n
    return [size, crc]


def _flush_segment(disk: Disk, log_path: str) -> None:
    """Kafka's `LogSegment.flush`: the `.log` and its indexes fsynced, so that the recovery point
    may move past them (their directory is fsynced with the other touched ones at the end).
    Replayed after a crash, a file already gone is skipped."""
    stem = log_path[: -len(LOG_SUFFIX)]
    for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
        if disk.exists(stem + suffix):
            with disk.open(stem + suffix) as f:
                f.fsync()


def _write_indexes(
    journal: Journal,
    log_path: str,
    rebuild: IndexRebuilder,
    interval: int | None,
    verify: bool,
    max_batch_size: int,
) -> None:
    interval = 4096 if interval is None else interval
    try:
        written = rebuild(journal.disk, log_path, interval, verify, max_batch_size)
    except IndexFileError as exc:
        # The plan decides which bytes remain and that their indexes can be built; reaching
        # this is a planning bug, said in one line rather than a trace.
        raise JournalError(
            f"{log_path}: its indexes cannot be rebuilt ({exc}), which the plan did not "
            f"foresee; the repair in {journal.qdir} is left unfinished (please report this)"
        ) from None
    for index_path, content in written:
        journal.disk.write_file_atomic(index_path, content)


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
    """Unfinished runs (and undos) for `target` under `quarantine_root`, oldest first."""
    if not disk.is_dir(quarantine_root):
        return []
    found = []
    for name in disk.list_dir(quarantine_root):
        qdir = join(quarantine_root, name)
        if name.endswith(DISCARDED) or not disk.exists(join(qdir, MANIFEST)):
            continue
        try:
            journal = Journal.load(disk, qdir)
        except JournalError:
            continue
        if journal.target == target and journal.state in (SAVING, APPLYING, UNDOING):
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
    """Removes a quarantine whose run never touched the log dir (crash while saving).

    It is renamed to `<dir>.discarded` first: a crash during the removal leaves a directory that
    no run takes for a pending one and the next run removes (`remove_discarded`), never a run
    dir without its manifest."""
    disk = journal.disk
    gone = journal.qdir + DISCARDED
    disk.rename(journal.qdir, gone)
    disk.fsync_dir(parent_of(gone))
    _remove(disk, gone)
    disk.fsync_dir(parent_of(gone))


def remove_discarded(disk: Disk, quarantine_root: str) -> None:
    """Finishes removing the rolled-back runs a crash left under `quarantine_root`."""
    if not disk.is_dir(quarantine_root):
        return
    for name in disk.list_dir(quarantine_root):
        if name.endswith(DISCARDED):
            _remove(disk, join(quarantine_root, name))
            disk.fsync_dir(quarantine_root)


def _remove(disk: Disk, path: str) -> None:
    """Removes a file, or a directory tree bottom up, each directory emptied durably first."""
    if not disk.is_dir(path) or disk.is_symlink(path):
        disk.unlink(path)
        return
    for name in disk.list_dir(path):
        _remove(disk, join(path, name))
    disk.fsync_dir(path)
    disk.remove_dir(path)
