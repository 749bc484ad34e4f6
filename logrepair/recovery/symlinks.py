"""Symbolic links a run follows (`--follow-symlinks`): the link's target is treated as the file.

Without the option a link is reported and never read, and its partition is left as it is. With
it, each link is resolved when the scan meets it, before its file is read, and recorded as a
`FollowedLink`: the link's name, what it holds, the resolved target, and the target's identity
(device, inode, size, modification time). A link is not followed, and its partition is left as
it is with why, when it dangles, loops, points at something other than a regular file, resolves
outside the places the run may write (the log dir, and each `--follow-symlinks-into DIR`), points
at a file Kafka reads in its own right (another segment, a checkpoint), or shares its target with
another followed link (a repair would change one file twice).

A repair records the followed links in its plan and journal, checks before it saves anything
that each still resolves to the same file with the same size and modification time, and before
each action that its link still resolves there. The actions change the target, never the link:
a cut cuts the target, a rewrite writes a temporary file beside the target and renames it over
the target (fsyncing the target's directory), a deleted file's target moves into the quarantine
and its link is removed (undo moves it back and makes the link again). Renaming a followed link
or creating a file where one is would change what the link means, and is refused.
"""

from __future__ import annotations

import errno
from collections import defaultdict
from dataclasses import dataclass

from ..storage import layout
from ..storage.disk import SPECIAL_TYPES, Disk, FileIdentity, join
from ..storage.layout import FileKind, printable
from .settings import Settings


class LinkRefused(ValueError):
    """A plan that would rename a followed link, or create a file where one is."""


@dataclass(frozen=True, slots=True)
class FollowedLink:
    rel: str
    """The link's name relative to the scanned PATH."""
    text: str
    """What the link holds (`readlink`)."""
    target: str
    """The file it resolves to, absolute, every link on the way resolved."""
    identity: FileIdentity
    """The target as the scan found it, before reading it."""

    def to_json(self) -> dict:
        ident = self.identity
        return {
            "link": printable(self.rel),
            "text": printable(self.text),
            "target": printable(self.target),
            "device": ident.device,
            "inode": ident.inode,
            "size": ident.size,
            "mtime_ns": ident.mtime_ns,
        }

    def describe(self) -> str:
        """One line of a plan: which file the link's name stands for."""
        return (
            f"{printable(self.rel)} -> {printable(self.target)} (a symbolic link, followed: "
            f"inode {self.identity.inode} on device {self.identity.device}, "
            f"{self.identity.size:,} bytes); the plan changes that file, never the link"
        )


def follow(disk: Disk, path: str, rel: str, settings: Settings) -> tuple[FollowedLink | None, str]:
    """The link at `path` (named `rel`) resolved, or None and why it is not followed."""
    text = disk.read_link(path)
    try:
        kind = disk.file_type(path, follow=True)
    except OSError as e:
        if e.errno == errno.ELOOP:
            return None, "it is a loop of symbolic links"
        return None, f"it cannot be resolved ({e.strerror})"
    if kind == "missing":
        return None, "it points at nothing (a dangling link)"
    if kind != "file":
        what = SPECIAL_TYPES.get(kind, "a directory")
        return None, f"it points at {what}; only a link to a regular file is followed"
    target = disk.real_path(path)
    roots = settings.symlink_roots
    if roots is not None:
        if not any(_inside(target, r) for r in roots):
            where = "the log dir" + (" and every --follow-symlinks-into DIR" if roots[1:] else "")
            return None, (
                f"it points outside {where}, at {printable(target)}; a repair follows it there "
                "only with --follow-symlinks-into DIR naming a directory that holds it"
            )
        kafka_file = _kafka_file(target, roots[0])
        if kafka_file is not None:
            return None, f"it points at {printable(kafka_file)}, a file Kafka reads on its own"
    return FollowedLink(rel, text, target, disk.identity(path)), ""


def _inside(path: str, root: str) -> bool:
    root = root.rstrip("/") or "/"
    return path == root or path.startswith(root.rstrip("/") + "/")


def _kafka_file(target: str, log_dir: str) -> str | None:
    """`target` relative to the log dir when it is a name Kafka reads there (a root checkpoint,
    or a segment, index or state file of a partition dir)."""
    if not _inside(target, log_dir) or target == log_dir:
        return None
    rel = target[len(log_dir.rstrip("/")) + 1 :]
    parts = rel.split("/")
    if len(parts) == 1:
        known = layout.classify_log_dir_file(parts[0]).kind is not FileKind.UNKNOWN
        return rel if known else None
    if len(parts) == 2:
        try:
            layout.parse_partition_dir_name(parts[0])
        except layout.LayoutError:
            return None
        known = layout.classify_partition_file(parts[1]).kind is not FileKind.UNKNOWN
        return rel if known else None
    return None


def shared_targets(links: list[FollowedLink]) -> dict[str, str]:
    """For each link whose target another followed link shares (by device and inode), why it
    cannot be followed: a repair would change the one file for two names."""
    by_file: dict[tuple[int, int], list[FollowedLink]] = defaultdict(list)
    for link in links:
        by_file[(link.identity.device, link.identity.inode)].append(link)
    out = {}
    for same in by_file.values():
        if len(same) > 1:
            names = ", ".join(printable(link.rel) for link in same)
            for link in same:
                out[link.rel] = f"{names} are links to the same file {printable(link.target)}"
    return out


def through(entries: list[dict], links: dict[str, FollowedLink]) -> list[dict[str, str]]:
    """For each action (journal entries, in order), the files it touches that are followed links
    at that point, with their targets: what the action changes instead of the link. A deleted
    link is gone for later actions. LinkRefused for a rename of or onto a followed link, or a
    file created where one is."""
    # (the import is here: logdir_state imports this module)
    from .logdir_state import made_files

    current = {rel: link.target for rel, link in links.items()}
    out = []
    for entry in entries:
        kind, rel = entry["action"], entry["file"]
        made = made_files(entry)
        if kind == "rename" and (rel in current or entry["to"] in current):
            raise LinkRefused(
                f"{printable(rel)}: a repair does not rename a followed symbolic link or rename "
                "a file over one (the link would mean another file); nothing was changed"
            )
        if kind in ("split", "create_segment"):
            created = [entry["to"]] if kind == "split" else [rel]
            for name in created:
                if name in current:
                    raise LinkRefused(
                        f"{printable(name)}: a repair does not create a file where a followed "
                        "symbolic link is; nothing was changed"
                    )
        out.append({f: current[f] for f in dict.fromkeys([rel, *made]) if f in current})
        if kind == "delete":
            current.pop(rel, None)
    return out


def check_unchanged(disk: Disk, root: str, links: list[FollowedLink]) -> str | None:
    """Why a followed link no longer stands for the file the plan was made from (it is no
    longer a link, holds another text, resolves elsewhere, or its target was replaced, resized
    or modified), or None."""
    for link in links:
        path = join(root, link.rel)
        why = still_resolves(disk, path, link.text, link.target)
        if why is None:
            try:
                now = disk.identity(path)
            except OSError as e:
                why = f"its target cannot be read ({e.strerror})"
            else:
                if now != link.identity:
                    why = f"its target {printable(link.target)} {_change(link.identity, now)}"
        if why is not None:
            return f"{printable(link.rel)}: {why} since the plan"
    return None


def still_resolves(disk: Disk, path: str, text: str, target: str) -> str | None:
    """Why the link at `path` no longer holds `text` resolving to `target`, or None."""
    if not disk.is_symlink(path):
        return "it is no longer a symbolic link" if disk.exists(path) else "the link is gone"
    if disk.read_link(path) != text:
        return f"the link now holds {printable(disk.read_link(path))}"
    if disk.real_path(path) != target:
        return f"the link now resolves to {printable(disk.real_path(path))}"
    return None


def _change(before: FileIdentity, now: FileIdentity) -> str:
    if (now.device, now.inode) != (before.device, before.inode):
        return "was replaced by another file"
    if now.size != before.size:
        return f"went from {before.size:,} to {now.size:,} bytes"
    return "was modified"
