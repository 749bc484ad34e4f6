"""The state a run left the log dir in, recorded in its journal and checked before anything works
from that journal again.

After each action a run records, for every file the action touched, `[size]` (a `.log`) or
`[size, CRC-32C]` (anything else), and the names in each directory holding one (`expect`). A run
that finishes an interrupted repair, an undo, and the roll-back of an interrupted repair each first
check that the log dir is still as the journal says: a broker started in between (appending
batches, rolling segments, rewriting checkpoints) shows as a size, a CRC or a name that differs,
and the run refuses in one line instead of replaying old decisions over newer data.

The action a crash interrupted may have left its files in any state it passes through; those
are accepted, and nothing else (a truncate's file only at its old or its new size).

A followed symbolic link (symlinks.py) is recorded too: what it holds and which file (device,
inode) it resolves to. A file is read through its link, so its size and CRC are the target's;
a link retargeted, or a target replaced by another file, is refused like any other change.
"""

from __future__ import annotations

from ..storage import layout
from .copies import file_state
from .journal import APPLYING, DONE, PENDING_MARKER, UNDOING, UNDONE, Journal, JournalError
from .plan import Action
from .symlinks import still_resolves


class LogDirChanged(JournalError):
    """The log dir is not as the journal left it; replaying or undoing would mix with newer
    writes. The message names the first difference."""


def replaced_files(action: Action) -> list[str]:
    """Files an action overwrites or creates whole (their previous state is saved)."""
    if action.action in ("rebuild_indexes", "create_segment"):
        stem = action.file[: -len(layout.LOG_SUFFIX)]
        written = [stem + layout.INDEX_SUFFIX, stem + layout.TIME_INDEX_SUFFIX]
        return ([action.file] if action.action == "create_segment" else []) + written
    if action.action == "write_file":
        return [action.file]
    return []


def made_files(entry: dict) -> list[str]:
    """Files an action (by its journal entry) creates or writes whole."""
    if entry["action"] in ("rename", "split"):
        return [entry["to"]]
    if entry["action"] in ("write_file", "rebuild_indexes", "create_segment"):
        return replaced_files(Action.from_journal(entry))
    return []


def touched_files(entry: dict) -> list[str]:
    """Every file an action changes, creates or removes (a flush changes no bytes)."""
    if entry["action"] == "flush":
        return []
    return list(dict.fromkeys([entry["file"], *made_files(entry)]))


def changed_files(entry: dict) -> list[str]:
    """The files an action writes, cuts, creates or moves: what a crash in the middle of it may
    have left in any state it passes through (a split's source and a rebuild's `.log` are only
    read)."""
    if entry["action"] in ("split", "rebuild_indexes"):
        return made_files(entry)
    return touched_files(entry)


def _dir_of(rel: str) -> str:
    return rel.rpartition("/")[0]


def _listing(journal: Journal, d: str) -> list[str]:
    """The names in directory `d` (relative to the target), without the `.lock` (a run holds it
    while it records, and a broker's comes and goes) and the pending-runs marker."""
    path = journal.t(d)
    if not journal.disk.is_dir(path):
        return []
    return [n for n in journal.disk.list_dir(path) if n not in (layout.LOCK_FILE, PENDING_MARKER)]


def record(journal: Journal, entries: list[dict]) -> dict:
    """The state of every file `entries` touch and of their directories, as an `expect` update
    (journal.progress merges it)."""
    files = {}
    for entry in entries:
        for rel in touched_files(entry):
            files[rel] = file_state(journal.disk, journal.t(rel))
    dirs = {d: _listing(journal, d) for d in sorted({_dir_of(rel) for rel in files})}
    # A followed link's target keeps the identity recorded before, unless these actions
    # changed it (a rewrite renames a new file over it): a target replaced by someone else
    # meanwhile is then caught, not recorded as the run's own doing.
    followed = journal.data.get("links") or {}
    before = (journal.data.get("expect") or {}).get("links") or {}
    changed = {rel for entry in entries for rel in changed_files(entry)}
    links = {
        rel: link_state(journal, rel) if rel in changed or rel not in before else before[rel]
        for rel in files
        if rel in followed
    }
    return {"files": files, "dirs": dirs, **({"links": links} if links else {})}


def link_state(journal: Journal, rel: str) -> list | None:
    """`[text, device, inode]` of a followed link's target as it resolves now, None when the
    name is no longer that link (its delete moved the target away and removed it)."""
    link = journal.data["links"][rel]
    path = journal.t(rel)
    if still_resolves(journal.disk, path, link["text"], link["target"]) is not None:
        return None
    if journal.disk.file_type(path, follow=True) == "missing":
        return None
    now = journal.disk.identity(path)
    return [link["text"], now.device, now.inode]


def expected(journal: Journal) -> dict | None:
    """The state the journal last recorded (`left`, in a version 2 journal); None in version 1."""
    return journal.data.get("expect") or journal.data.get("left")


def check(journal: Journal, *, what: str) -> None:
    """Raises LogDirChanged unless the log dir is as the journal left it. `what` names the work
    refused, for the message ("refusing to undo")."""
    expect = expected(journal)
    if expect is None:
        return
    disk = journal.disk
    entries = journal.data["actions"]
    in_progress: dict = {}
    if journal.data["state"] not in (DONE, UNDOING, UNDONE):
        k = journal.data.get("applied", 0)
        in_progress = entries[k] if k < len(entries) else {}
    loose = set(changed_files(in_progress)) if in_progress else set()
    since = "since the repair" + (" was interrupted" if journal.data["state"] == APPLYING else "")
    for rel, state in (expect.get("links") or {}).items():
        now = link_state(journal, rel)
        if now != state and not (rel in loose and _passes_through(in_progress, now)):
            link = journal.data["links"][rel]
            why = still_resolves(disk, journal.t(rel), link["text"], link["target"])
            why = why or f"its target {link['target']} is no longer the file the repair left"
            raise LogDirChanged(f"{rel}: {why} {since}; {what}")
    for rel, state in expect["files"].items():
        now = file_state(disk, journal.t(rel))
        if now == state:
            continue
        if rel in loose and (in_progress["action"] != "truncate" or now == [in_progress["size"]]):
            continue
        raise LogDirChanged(f"{rel} {_change(state, now)} {since}; {what}")
    for d, listed in expect["dirs"].items():
        names = set(listed) - {layout.LOCK_FILE, PENDING_MARKER}  # (a version 2 `left` has them)
        now = set(_listing(journal, d))
        allowed = {rel.rpartition("/")[2] for rel in loose if _dir_of(rel) == d}
        now -= {n for n in now if n.endswith(f".logrepair-{journal.run_id}.tmp")}  # its own
        came = sorted(now - names - allowed)
        went = sorted(names - now - allowed)
        if came or went:
            what_changed = "; ".join(
                [f"{', '.join(came)} appeared"] * bool(came)
                + [f"{', '.join(went)} went"] * bool(went)
            )
            raise LogDirChanged(f"{d or journal.target}: {what_changed} {since}; {what}")


def _passes_through(entry: dict, now: list | None) -> bool:
    """Whether a followed link the interrupted action changes may be as it is `now`: its target
    moved away (a delete), or a new file renamed over the target (a rewrite; a cut of a
    segment with other hard links too)."""
    if entry["action"] == "delete":
        return now is None
    if entry["action"] == "truncate":
        return bool(entry.get("saved", {}).get("copy_on_cut"))
    return entry["action"] in ("write_file", "rebuild_indexes", "create_segment")


def _change(before: list[int] | None, now: list[int] | None) -> str:
    if now is None:
        return "was removed"
    if before is None:
        return "appeared"
    if now[0] != before[0]:
        return f"went from {before[0]} to {now[0]} bytes"
    return "was rewritten"
