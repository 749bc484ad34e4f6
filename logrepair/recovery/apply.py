"""Applying a plan: quarantine, journal and manifest, crash-safe.

`start` creates the run's quarantine (journal.py) and saves every byte the plan will remove or
replace while the manifest says `saving`; `run` then goes through the actions in order (`applying`).
Each action is idempotent given the saved copies (a split reads the bytes it moves from the saved
tail, a rebuild recomputes from the final `.log`), and is made durable, counted (`applied`) and its
files' state recorded (logdir_state.py) before the next starts. So a crash is finished by the next
run replaying from the first uncounted action, after checking that nothing else changed the log dir
in between, or rolled back by `undo` from the same record.

The manifest holds everything a replay needs, so the run that finishes an interrupted repair gets
the result the interrupted one would have: each index rebuild carries its `index.interval.bytes`
and the batch-size cap its scan used (`max_batch_size`, raised with `message.max.bytes`).

Nothing is deleted outright: a deleted file is renamed into `files/` (copied when the quarantine is
on another filesystem), a truncated tail is copied to `blobs/` first (zero runs as holes). A
segment with other hard links (a `cp -al` snapshot) is cut by writing the kept part as a new file
renamed over it, so the other names keep every byte. Every file the run writes goes through a
temporary name unique to the run, and nothing is written through a symbolic link — but a link
the plan follows (`--follow-symlinks`), whose target the actions change as the file (symlinks.py).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping

from ..storage.abstract_index import IndexFileError
from ..storage.disk import SPECIAL_TYPES, Disk, join, parent_of
from ..storage.layout import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX
from . import logdir_state
from .copies import copy_pieces, copy_range, copy_ranges, move_file
from .journal import (
    APPLYING,
    DISCARDED,
    DONE,
    PROGRESS,
    SAVING,
    VERSION,
    Journal,
    JournalError,
    make_dirs_durable,
    now,
)
from .logdir_state import made_files, replaced_files
from .plan import Action, Plan
from .settings import Settings
from .symlinks import LinkRefused, check_unchanged, still_resolves, through

# (disk, absolute .log path, index.interval.bytes, verify CRCs, max batch size)
#   -> [(absolute index path, bytes)]:
# the indexes Kafka's recovery would write for that log, computed from its current bytes.
IndexRebuilder = Callable[[Disk, str, int, bool, int], list[tuple[str, bytes]]]

REBUILDS = ("rebuild_indexes", "create_segment")
"""Actions that write a `.log`'s offset and time index from its bytes."""


def start(
    disk: Disk,
    plan: Plan,
    qdir: str,
    summary: dict,
    *,
    max_batch_sizes: Mapping[str, int] | None = None,
    validated: bool = True,
    lock_created: bool = False,
    marker: str | None = None,
) -> Journal:
    """Creates the quarantine for `plan` and saves every byte the plan removes or replaces.

    `max_batch_sizes`: the batch-size cap the scan used in each partition dir (relative to the
    plan's root, '' for the root itself), recorded with each index rebuild there; None for a plan
    whose scan ran with Kafka's default settings.
    `validated`: the plan comes from a scan that checked every batch it keeps, so index rebuilds
    may read headers only.
    `lock_created`: the run created the `.lock` it holds; if it dies, the run that settles its
    journal removes that file.
    `marker`: the log dir's pending-runs file (journal.PENDING_MARKER), which names the run while
    it changes the log dir."""
    if disk.exists(qdir) and disk.list_dir(qdir):
        raise JournalError(f"quarantine directory {qdir} is not empty")
    changed = check_unchanged(disk, plan.root, plan.links)
    if changed is not None:
        raise JournalError(f"{changed}; nothing was changed: run it again to plan afresh")
    data = {
        "tool": "logrepair",
        "version": VERSION,
        "target": plan.root,
        "mode": plan.mode,
        "state": SAVING,
        "created": now(),
        "updated": now(),
        "actions": [a.to_journal() for a in plan.actions],
        "summary": summary,
        "validated": validated,
        "applied": 0,
        "warnings": [],
        "lock_created": lock_created,
        "marker": marker,
        "links": {link.rel: link.to_json() for link in plan.links},
    }
    for entry, linked in zip(data["actions"], _through(plan), strict=True):
        if linked:
            entry["links"] = linked
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
    refuse_unwritable(disk, plan)
    # The run dir takes its name only with its manifest inside, so a crash never leaves a run
    # without one; until then it is `<qdir>.discarded`, which the next run removes.
    staging = qdir + DISCARDED
    make_dirs_durable(disk, join(staging, "blobs"))
    make_dirs_durable(disk, join(staging, "files"))
    with disk.open(join(staging, PROGRESS), create=True):
        pass  # made durable by the manifest write's fsync of the run dir
    Journal(disk, staging, data).write()
    disk.rename(staging, qdir)
    disk.fsync_dir(parent_of(qdir))
    journal = Journal(disk, qdir, data)
    for blob, content in contents.items():
        with disk.open(journal.q(blob), create=True) as f:
            f.truncate(0)
            f.write_at(0, content)
            f.fsync()
    # (heal) a segment's new content from byte ranges of this log dir's files and replicas',
    # copied before any action runs, so that no later action can change what it reads
    for blob, pieces in pieced.items():
        copy_pieces(
            disk,
            [(_source(journal, f), pos, n) for f, pos, n in pieces],
            journal.q(blob),
            sparse=False,
        )
    # Where each file's bytes will be when its action runs: an earlier rename brings other bytes
    # (a `.swap` renamed in, then rebuilt or truncated), an earlier delete leaves none.
    source: dict[str, str | None] = {}
    for i, entry in enumerate(data["actions"]):
        action = Action.from_journal(entry)
        entry["saved"] = _save(journal, i, entry, action, source)
        if action.action == "rename":
            source[action.to] = source.get(action.file, action.file)
            source[action.file] = None
        elif action.action == "delete":
            source[action.file] = None
    disk.fsync_dir(join(qdir, "blobs"))
    data["expect"] = logdir_state.record(journal, data["actions"])
    journal.set_state(APPLYING)
    return journal


def _source(journal: Journal, file: str) -> str:
    """A piece's file: absolute (a replica's, only read) or relative to the repaired PATH."""
    return file if file.startswith("/") else journal.t(file)


def _through(plan: Plan) -> list[dict[str, str]]:
    """Per action, the files it changes through a followed link (symlinks.through)."""
    try:
        return through([a.to_journal() for a in plan.actions], {x.rel: x for x in plan.links})
    except LinkRefused as e:
        raise JournalError(str(e)) from None


def refuse_unwritable(disk: Disk, plan: Plan) -> None:
    """Before anything changes: every name the plan writes, cuts or moves is a regular file or
    absent, in a directory that is no symbolic link, so that apply never fails half way on
    one (or writes through a link to files outside the log dir) — a link the plan follows stands
    for its target, which must be a regular file. JournalError otherwise."""
    for action, linked in zip(plan.actions, _through(plan), strict=True):
        for rel in [action.file, *made_files(action.to_journal())]:
            path = linked.get(rel) or join(plan.root, rel)
            for p in (path, parent_of(path)):
                if disk.is_symlink(p):
                    raise JournalError(
                        f"{p} is a symbolic link; a repair never writes through one (nothing "
                        "was changed)"
                    )
            kind = disk.file_type(path, follow=True)
            if kind not in ("file", "missing"):
                what = SPECIAL_TYPES.get(kind, "a directory")
                raise JournalError(
                    f"{path} is not a regular file but {what}; a repair cannot "
                    f"{_VERBS[action.action]} it (nothing was changed)"
                )


_VERBS = {
    "truncate": "cut",
    "split": "copy out of",
    "delete": "move",
    "rename": "rename",
    "write_file": "rewrite",
    "rebuild_indexes": "rebuild the indexes of",
    "create_segment": "create",
    "flush": "fsync",
}


def _save(
    journal: Journal, i: int, entry: dict, action: Action, source: dict[str, str | None]
) -> dict:
    """What undo needs to put back the bytes this action changes, as they will be when it runs."""
    disk = journal.disk
    if action.action == "truncate":
        path = journal.at(entry, source.get(action.file) or action.file)
        size = disk.size(path)
        blob = f"blobs/{i:05d}.tail"
        ranges = _unmoved(action.size, size, action.moved or [])
        copy_ranges(disk, path, ranges, journal.q(blob))
        saved = {"tail": blob, "original_size": size}
        links = disk.links(path)
        if links > 1:
            saved["copy_on_cut"] = True
            journal.data["warnings"].append(
                f"{action.file} has {links} hard links (a snapshot made with `cp -al`?): the "
                "repaired segment is written as a new file, so the other links keep their bytes"
            )
        return saved
    if action.action == "delete":
        saved = {"moved_to": f"files/{action.file}"}
        if action.file in entry.get("links", {}):  # the target moves; undo makes the link again
            saved["link"] = journal.data["links"][action.file]["text"]
        return saved
    if action.action in ("write_file", "rebuild_indexes", "create_segment"):
        previous = []
        for j, rel in enumerate(replaced_files(action)):
            now_at = source.get(rel, rel)
            p = None if now_at is None else journal.t(now_at)
            if p is not None and disk.exists(p):
                blob = f"blobs/{i:05d}.{j}.prev"
                copy_range(disk, p, 0, disk.size(p), journal.q(blob))
                previous.append({"file": rel, "blob": blob})
            else:
                previous.append({"file": rel, "blob": None})
        return {"previous": previous}
    return {}


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


def run(journal: Journal, rebuild: IndexRebuilder) -> None:
    """Runs (or replays, after a crash) the actions of an `applying` journal from the first one
    not counted, each made durable, counted and its files' state recorded before the next."""
    entries = journal.data["actions"]
    for i in range(journal.data.get("applied", 0), len(entries)):
        _apply(journal, entries[i], rebuild)
        journal.progress({"applied": i + 1, "expect": logdir_state.record(journal, [entries[i]])})
    journal.set_state(DONE)


def _apply(journal: Journal, entry: dict, rebuild: IndexRebuilder) -> None:
    """One action, then fsyncs of every directory whose entries it changed."""
    disk = journal.disk
    action = Action.from_journal(entry)
    saved = entry.get("saved", {})
    linked = entry.get("links") or {}
    _check_links(journal, entry)
    path = journal.at(entry, action.file)
    if action.file not in linked and (disk.is_symlink(path) or disk.is_symlink(parent_of(path))):
        raise JournalError(f"{path} is a symbolic link; a repair never follows one")
    dirs = {parent_of(path)}
    kind = action.action
    if kind == "truncate":
        if action.moved:
            # the copies must survive a power loss before the bytes they came from go
            for _, _, to in action.moved:
                disk.fsync_dir(parent_of(journal.t(to)))
        if disk.exists(path) and disk.size(path) > action.size:
            if saved.get("copy_on_cut"):
                temp = journal.temp_name(path)
                copy_range(disk, path, 0, action.size, temp, sparse=False)
                disk.rename(temp, path)
            else:
                with disk.open(path, write=True) as f:
                    f.truncate(action.size)
                    f.fsync()
    elif kind == "split":
        _split(journal, action, path)
        dirs.add(parent_of(journal.t(action.to)))
    elif kind == "delete" and action.file in linked:
        _delete_followed(journal, action.file, path, journal.q(saved["moved_to"]))
        dirs.add(parent_of(journal.t(action.file)))
    elif kind == "delete":
        dest = journal.q(saved["moved_to"])
        make_dirs_durable(disk, parent_of(dest))
        if disk.exists(path) and not (disk.exists(dest) and _made_later(journal, entry, path)):
            # (Replayed after a crash with the file already moved, the name may belong to a
            # later action's new file: that one stays.)
            move_file(disk, path, dest)
        # The file's new name must be durable before its removal from the log dir: where a
        # rename is not atomic, a power loss in between would lose the file from both places.
        disk.fsync_dir(parent_of(dest))
    elif kind == "rename":
        if disk.exists(path):
            disk.rename(path, journal.t(action.to))
        dirs.add(parent_of(journal.t(action.to)))
    elif kind == "write_file" and entry.get("pieces"):
        # streamed (a segment can be a gigabyte), through the run's own temporary name
        temp = journal.temp_name(path)
        copy_range(
            disk,
            journal.q(entry["content_blob"]),
            0,
            disk.size(journal.q(entry["content_blob"])),
            temp,
            sparse=False,
        )
        disk.rename(temp, path)
    elif kind == "write_file":
        content = disk.read_file(journal.q(entry["content_blob"]))
        disk.write_file_atomic(path, content, tmp=journal.temp_name(path))
    elif kind == "flush":
        _flush_segment(disk, journal.t(action.file))  # (each file through its own link)
    elif kind in REBUILDS:
        if kind == "create_segment" and not disk.exists(path):
            with disk.open(path, create=True) as f:
                f.fsync()
        cap = entry["max_batch_size"]
        verify = not journal.data.get("validated", False)
        dirs |= _write_indexes(journal, entry, rebuild, action.index_interval_bytes, verify, cap)
    else:
        raise JournalError(f"unknown action {kind!r} in {journal.qdir}")
    for d in sorted(dirs):
        if disk.exists(d):
            disk.fsync_dir(d)


def _check_links(journal: Journal, entry: dict) -> None:
    """Each followed link the action changes a file through still resolves to the target the
    plan recorded, and that target is the file the run last left there (a link its own delete
    already removed excepted)."""
    expect = (journal.data.get("expect") or {}).get("links") or {}
    for rel, target in (entry.get("links") or {}).items():
        link = journal.t(rel)
        if entry["action"] == "delete" and not journal.disk.exists(target):
            continue  # its own delete moved the target into the quarantine already
        why = still_resolves(journal.disk, link, journal.data["links"][rel]["text"], target)
        if why is None and rel in expect and logdir_state.link_state(journal, rel) != expect[rel]:
            why = "its target was replaced by another file"
        if why is not None:
            raise JournalError(
                f"{rel} is a followed symbolic link to {target}, but {why} since the repair "
                f"planned; the repair journaled in {journal.qdir} stops here with "
                f"{journal.data['applied']} of {len(journal.data['actions'])} actions applied"
            )


def _delete_followed(journal: Journal, rel: str, target: str, dest: str) -> None:
    """A deleted file that a followed link stands for: the target moves into the quarantine
    (durably, before it leaves its directory), then the link goes. Replayed after a crash, each
    step already done is skipped."""
    disk = journal.disk
    make_dirs_durable(disk, parent_of(dest))
    if disk.exists(target):
        move_file(disk, target, dest)
    disk.fsync_dir(parent_of(dest))
    disk.fsync_dir(parent_of(target))
    link = journal.t(rel)
    if disk.is_symlink(link):
        disk.unlink(link)


def _flush_segment(disk: Disk, log_path: str) -> None:
    """Kafka's `LogSegment.flush`: the `.log` and its indexes fsynced, so that the recovery point
    may move past them. Replayed after a crash, a file already gone is skipped."""
    stem = log_path[: -len(LOG_SUFFIX)]
    for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
        if disk.exists(stem + suffix):
            with disk.open(stem + suffix) as f:
                f.fsync()


def _write_indexes(
    journal: Journal,
    entry: dict,
    rebuild: IndexRebuilder,
    interval: int | None,
    verify: bool,
    max_batch_size: int,
) -> set[str]:
    """Writes the `.log`'s indexes (each through its followed link's target, if it has one);
    returns the directories written in."""
    interval = 4096 if interval is None else interval
    log_path = journal.t(entry["file"])  # read through its link, if it is one
    try:
        written = rebuild(journal.disk, log_path, interval, verify, max_batch_size)
    except IndexFileError as exc:
        # The plan decides which bytes remain and that their indexes can be built; reaching
        # this is a planning bug, said in one line rather than a trace.
        raise JournalError(
            f"{log_path}: its indexes cannot be rebuilt ({exc}), which the plan did not "
            f"foresee; the repair in {journal.qdir} is left unfinished (please report this)"
        ) from None
    stem = entry["file"][: -len(LOG_SUFFIX)]
    dirs = set()
    for index_path, content in written:
        out = journal.at(entry, stem + index_path[len(log_path) - len(LOG_SUFFIX) :])
        journal.disk.write_file_atomic(out, content, tmp=journal.temp_name(out))
        dirs.add(parent_of(out))
    return dirs


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
            copy_range(disk, path, split.position, split.length, dest, sparse=False)
        elif not disk.exists(dest) or disk.size(dest) != split.length:
            raise JournalError(f"{split.to} is incomplete and its source bytes are gone")
        return
    copy_range(
        disk, journal.q(truncate["saved"]["tail"]), split.position - truncate["size"],
        split.length, dest, sparse=False,
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
