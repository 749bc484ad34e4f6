"""A repair run's journal: the manifest in its quarantine directory, its states, and finding runs.

A run owns one quarantine directory holding `manifest.json` (the journal), `blobs/` (removed tails
and the previous contents of replaced files) and `files/` (whole files moved out of the log dir).
Its states, each written atomically to the manifest:

- `saving`: copies of everything the plan removes or replaces are being made (apply.py). The log
  dir is not touched yet, so a crash here is rolled back: the next run discards this quarantine.
- `applying`: the actions run in order; `applied` counts those done and durable, and `expect`
  holds the state each touched file and directory was left in (logdir_state.py), so that a run
  finishing it, or an undo rolling it back, can first check that nothing else changed the log dir.
- `done`: `expect` is the state the repair left; undo works from it.
- `undoing`, `undone`: see undo.py.
- `abandoned`: a later run was told to leave it (`--replan`); its quarantine keeps what it saved.
"""

from __future__ import annotations

import json
import time

from ..storage.disk import Disk, join, parent_of

MANIFEST = "manifest.json"
PROGRESS = "progress.jsonl"
DISCARDED = ".discarded"
"""Suffix of a run dir no run will use: one being created (until its manifest is in) or one being
removed after a roll-back. The next run removes what a crash left of it."""

SAVING, APPLYING, DONE, UNDOING, UNDONE, ABANDONED = (
    "saving", "applying", "done", "undoing", "undone", "abandoned",
)  # fmt: skip
UNFINISHED = (SAVING, APPLYING, UNDOING)

VERSION = 4
"""Version 4 follows symbolic links (`--follow-symlinks`): the manifest's `links` are the links
followed, with their targets' identities at plan time, each action's `links` the files it changes
through one (their targets), and `expect.links` what each link held and which file it resolved to
after the last action; a logrepair that reads version 3 at most would write over those links, so
it refuses the journal. Version 3 counts the actions applied and records the state after each (`applied`, `expect`),
writes through temporary names unique to the run, and copies a hard-linked segment before cutting
it. Version 2 recorded each index rebuild's `max_batch_size` and the state a finished repair left
(`left`); version 1 neither. Finished runs of every version can be undone; an interrupted run of
version 1 or 2 cannot be checked against later changes, so it is not replayed."""


class JournalError(ValueError):
    """A quarantine whose manifest is missing, unreadable, or for another target."""


class Journal:
    """The manifest of one repair run, and the operations that keep it in step with the disk."""

    def __init__(self, disk: Disk, qdir: str, data: dict) -> None:
        self.disk = disk
        self.qdir = qdir
        self.data = data

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
        if data.get("version") not in range(1, VERSION + 1):
            raise JournalError(
                f"{path} has manifest version {data.get('version')!r}; this logrepair reads "
                f"versions 1 to {VERSION}: use the logrepair that wrote it"
            )
        journal = cls(disk, qdir, data)
        for update in journal._progress_lines():
            journal._merge(update)
        return journal

    # -- progress: one line appended per step, instead of the whole manifest rewritten ------------

    def progress(self, update: dict) -> None:
        """Appends `update` (absolute values: `applied`, `undo_progress`, and `expect` entries)
        to `progress.jsonl` and fsyncs it: a step's record costs one small write, not a rewrite
        of a manifest that grows with the plan. Loading the manifest replays the lines in order."""
        self._merge(update)
        path = join(self.qdir, PROGRESS)
        line = json.dumps(update, sort_keys=True, separators=(",", ":")).encode() + b"\n"
        created = not self.disk.exists(path)
        with self.disk.open(path, create=True) as f:
            end = f.size()
            if end and f.read_at(end - 1, 1) != b"\n":  # a line a crash cut short: dropped
                end = self._complete_end(f)
                f.truncate(end)
            f.write_at(end, line)
            f.fsync()
        if created:  # (apply creates it with the run dir; an undo of an older journal here)
            self.disk.fsync_dir(self.qdir)

    def _merge(self, update: dict) -> None:
        for key, value in update.items():
            if key == "expect":
                expect = self.data.setdefault("expect", {"files": {}, "dirs": {}})
                expect["files"].update(value.get("files", {}))
                expect["dirs"].update(value.get("dirs", {}))
                if value.get("links"):
                    expect.setdefault("links", {}).update(value["links"])
            else:
                self.data[key] = value

    def _progress_lines(self) -> list[dict]:
        path = join(self.qdir, PROGRESS)
        if not self.disk.exists(path):
            return []
        raw = self.disk.read_file(path)
        lines = raw.split(b"\n")
        out = []
        for n, line in enumerate(lines):
            if not line:
                continue
            try:
                out.append(json.loads(line))
            except ValueError:
                if n == len(lines) - 1:  # the last, cut short by a crash: never counted
                    break
                raise JournalError(f"{path}: line {n + 1} is not readable") from None
        return out

    @staticmethod
    def _complete_end(f) -> int:
        data = f.read_at(0, f.size())
        return data.rfind(b"\n") + 1

    @property
    def state(self) -> str:
        return self.data["state"]

    @property
    def target(self) -> str:
        return self.data["target"]

    @property
    def version(self) -> int:
        return self.data["version"]

    @property
    def run_id(self) -> str:
        """The run dir's name: part of every temporary name the run uses in the log dir."""
        return self.qdir.rstrip("/").rpartition("/")[2]

    def temp_name(self, path: str) -> str:
        """A name beside `path` that only this run uses, so no file it did not make is replaced."""
        return f"{path}.logrepair-{self.run_id}.tmp"

    def write(self) -> None:
        payload = json.dumps(self.data, indent=1, sort_keys=True).encode()
        path = join(self.qdir, MANIFEST)
        self.disk.write_file_atomic(path, payload)

    def set_state(self, state: str) -> None:
        """Writes the new state; entering a state that changes the log dir marks the run pending
        beside the log dir first, and leaving one unmarks it after (see `PENDING_MARKER`)."""
        marker = self.data.get("marker")
        if marker and state in (APPLYING, UNDOING):
            mark_pending(self.disk, marker, self.qdir, tmp=self.temp_name(marker))
        self.data["state"] = state
        self.data["updated"] = now()
        self.write()
        if marker and state in (DONE, UNDONE, ABANDONED):
            unmark_pending(self.disk, marker, self.qdir, tmp=self.temp_name(marker))

    def q(self, rel: str) -> str:
        return join(self.qdir, rel)

    def t(self, rel: str) -> str:
        return join(self.target, rel) if rel else self.target

    def at(self, entry: dict, rel: str) -> str:
        """Where action `entry` changes the file `rel`: the target of a followed symbolic link
        (resolved at plan time: symlinks.py), else the name in the log dir."""
        target = (entry.get("links") or {}).get(rel)
        return target if target is not None else self.t(rel)


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


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


def runs_under(disk: Disk, quarantine_root: str) -> list[Journal]:
    """Every run under `quarantine_root` with a readable manifest, oldest first (by name: a run
    dir's name starts with its UTC start time)."""
    if not disk.is_dir(quarantine_root):
        return []
    found = []
    for name in disk.list_dir(quarantine_root):
        qdir = join(quarantine_root, name)
        if name.endswith(DISCARDED) or not disk.exists(join(qdir, MANIFEST)):
            continue
        try:
            found.append(Journal.load(disk, qdir))
        except JournalError:
            continue
    return found


def overlaps(a: str, b: str) -> bool:
    """One path is the other or inside it: a run on a log dir and one on its partition dir touch
    the same files."""
    a, b = a.rstrip("/") or "/", b.rstrip("/") or "/"
    return a == b or a.startswith(b.rstrip("/") + "/") or b.startswith(a.rstrip("/") + "/")


PENDING_MARKER = ".logrepair-pending"
"""A file beside the `.lock` (in the log dir; `<dir>.logrepair-pending` beside a partition dir in no
log dir) naming, one a line, the runs that are changing the log dir or were interrupted doing so.
A run finds them there whatever path (a bind mount, another `--quarantine`) started them. Kafka
loads only directories from a log dir, so the file is ignored by a broker."""


def marked(disk: Disk, marker: str) -> list[str]:
    """The run directories `marker` names."""
    if not disk.exists(marker):
        return []
    return [line for line in disk.read_file(marker).decode("utf-8", "replace").splitlines() if line]


def mark_pending(disk: Disk, marker: str, qdir: str, *, tmp: str) -> None:
    names = marked(disk, marker)
    if qdir not in names:
        disk.write_file_atomic(marker, "".join(f"{n}\n" for n in [*names, qdir]).encode(), tmp=tmp)


def unmark_pending(disk: Disk, marker: str, qdir: str, *, tmp: str) -> None:
    names = marked(disk, marker)
    rest = [n for n in names if n != qdir]
    if rest != names and rest:
        disk.write_file_atomic(marker, "".join(f"{n}\n" for n in rest).encode(), tmp=tmp)
        return
    gone = [p for p in (tmp, marker if not rest else None) if p and disk.exists(p)]
    for p in gone:  # (`tmp`: what a crash in the middle of a marker write left)
        disk.unlink(p)
    if gone:
        disk.fsync_dir(parent_of(marker))


def pending(
    disk: Disk, quarantine_roots: list[str], target: str, marker: str | None = None
) -> list[Journal]:
    """Unfinished runs (and undos) on `target`, a directory inside it or one holding it, under
    any of `quarantine_roots` or named by the `marker` file, oldest first."""
    found: dict[str, Journal] = {}
    for root in quarantine_roots:
        for journal in runs_under(disk, root):
            if journal.state in UNFINISHED and overlaps(journal.target, target):
                found[journal.qdir] = journal
    # the marker is in this very log dir: its runs are on it, whatever path they named it by
    for qdir in marked(disk, marker) if marker else []:
        try:
            journal = Journal.load(disk, qdir)
        except JournalError:
            continue  # a run dir removed by hand: nothing to settle (the marker is cleaned)
        if journal.state in UNFINISHED:
            found[journal.qdir] = journal
    return sorted(found.values(), key=lambda j: j.run_id)


def clean_marker(disk: Disk, marker: str) -> list[str]:
    """Drops from `marker` the runs that are no longer unfinished (a crash between a run's last
    state and its unmarking, a run dir removed by hand); returns a note for each run dir that is
    gone, whose interrupted changes no run can finish or roll back any more."""
    notes = []
    for qdir in marked(disk, marker):
        try:
            journal = Journal.load(disk, qdir)
        except JournalError as e:
            journal = Journal(disk, qdir, {})
            notes.append(
                f"an interrupted run was journaled in {qdir}, which is gone ({e}): what it "
                "applied can be neither finished nor rolled back; this plan starts from the log "
                "dir as it is"
            )
        if journal.data.get("state") not in UNFINISHED:
            # through the run's own tmp name: one its crash left is renamed away or removed
            unmark_pending(disk, marker, qdir, tmp=journal.temp_name(marker))
    return notes


def discard(journal: Journal) -> None:
    """Removes a quarantine whose run never touched the log dir (crash while saving).

    It is renamed to `<dir>.discarded` first: a crash during the removal leaves a directory that
    no run takes for a pending one and the next run removes (`remove_discarded`), never a run
    dir without its manifest."""
    disk = journal.disk
    marker = journal.data.get("marker")
    if marker:  # marked just before `applying`: a crash may have come in between
        unmark_pending(disk, marker, journal.qdir, tmp=journal.temp_name(marker))
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
