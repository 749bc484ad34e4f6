"""SimDisk: a `Disk` that separates what the program sees from what survives a power loss.

Every file is an inode with a volatile content (the page cache) and a durable content (the platter);
every directory has volatile and durable entries. `DiskFile.fsync` copies a file's volatile content to
its durable one; `fsync_dir` does the same for a directory's entries (creates, renames, unlinks). Every
change that is not yet durable stays in `pending`, in program order, so `faults` can build any disk
image a crash could leave by choosing which pending changes reach the platter, and how. Everything
the program does that changes state is also appended to `trace`, so a crash point is an index into it.
"""

from __future__ import annotations

import errno
import functools
import os
import posixpath
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from logrepair.storage.disk import Disk, DiskFile, LockHeld, nonzero_runs

SECTOR_SIZES = (512, 4096)


@dataclass(frozen=True)
class PersistenceModel:
    """What the simulated disk and file system may do to unsynced data at a power loss."""

    sector_size: int = 512
    size_before_data: bool = True
    """An extended file's new size may reach the disk before its data (ext4 writeback, XFS)."""
    reorder: bool = True
    """Unsynced sectors may persist out of order (no write barriers between them)."""
    atomic_rename: bool = True
    """A rename is one journaled step; if False a crash may leave both names pointing at the file."""

    def __post_init__(self) -> None:
        if self.sector_size not in SECTOR_SIZES:
            raise ValueError(f"sector size must be 512 or 4096, not {self.sector_size}")


@dataclass(frozen=True)
class Op:
    """One state-changing operation in the trace; a crash point is 'just after op `index`'."""

    index: int
    kind: str  # mkdir create write truncate fsync fsync_dir rename unlink rmdir
    path: str
    node: int
    position: int = 0
    data: bytes = b""
    size: int = 0
    dst: str = ""

    def describe(self) -> str:
        if self.kind == "write":
            return f"#{self.index} write {self.path} @{self.position}+{len(self.data)}"
        if self.kind == "truncate":
            return f"#{self.index} truncate {self.path} to {self.size}"
        if self.kind == "rename":
            return f"#{self.index} rename {self.path} -> {self.dst}"
        return f"#{self.index} {self.kind} {self.path}"


@dataclass(frozen=True)
class DataChange:
    """A write (`data` set) or truncate (`data` None, to `size`) not yet made durable by fsync."""

    op: int
    node: int
    position: int
    data: bytes | None
    size: int = 0

    @property
    def end(self) -> int:
        return self.position + len(self.data) if self.data is not None else self.size


@dataclass(frozen=True)
class EntryChange:
    """A directory entry set (`target` a node) or removed (`target` None), not yet fsync_dir'ed."""

    op: int
    dir: int
    name: str
    target: int | None


Change = DataChange | EntryChange


@dataclass
class IoFault:
    """An I/O error raised while the program runs: on the `nth` (from 0) matching call.

    kinds: `eio_read` (read_at/read_into), `eio_write` (write_at/append/truncate), `enospc` (a write
    that would grow a file), `eio_fsync` (fsync or fsync_dir; the data stays unsynced)."""

    kind: str
    nth: int
    path_contains: str = ""
    fired: bool = False
    seen: int = 0

    KINDS = ("eio_read", "eio_write", "enospc", "eio_fsync")

    def __post_init__(self) -> None:
        if self.kind not in self.KINDS:
            raise ValueError(f"unknown I/O fault {self.kind!r}; one of {', '.join(self.KINDS)}")


class SimClock:
    """A deterministic clock: time moves only when the workload says so."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.time = start

    def __call__(self) -> float:
        return self.time

    def advance(self, seconds: float) -> None:
        self.time += seconds


@dataclass
class DiskImage:
    """What a disk holds at one moment (after a crash, or a snapshot): files and directories by path."""

    files: dict[str, bytes]
    dirs: set[str]
    nodes: dict[str, int] = field(default_factory=dict)

    def write_to(self, root: str) -> None:
        """Materialises the image under a real directory `root` (for reproducers and inspection)."""
        for d in sorted(self.dirs):
            os.makedirs(os.path.join(root, d.lstrip("/")), exist_ok=True)
        for p, data in self.files.items():
            real = os.path.join(root, p.lstrip("/"))
            os.makedirs(os.path.dirname(real), exist_ok=True)
            with open(real, "wb") as f:
                f.write(data)


class _Node:
    __slots__ = ("id", "is_dir", "data", "durable", "entries", "durable_entries", "mtime")

    def __init__(self, nid: int, is_dir: bool, mtime: float) -> None:
        self.id = nid
        self.is_dir = is_dir
        self.data = bytearray()
        self.durable = b""
        self.entries: dict[str, int] = {}
        self.durable_entries: dict[str, int] = {}
        self.mtime = mtime


@functools.lru_cache(maxsize=8192)
def _norm_cached(path: str) -> str:
    return posixpath.normpath(path if path.startswith("/") else "/" + path)


def _norm(path: str) -> str:
    if not isinstance(path, str) or not path:
        raise ValueError(f"not a path: {path!r}")
    return _norm_cached(path)


def _os_error(cls: type[OSError], code: int, path: str) -> OSError:
    return cls(code, os.strerror(code), path)


class SimFile(DiskFile):
    def __init__(self, disk: SimDisk, path: str, node: _Node, writable: bool) -> None:
        self.path = path
        self._disk = disk
        self._node = node
        self._writable = writable
        self._closed = False

    def _check(self, write: bool = False) -> None:
        if self._closed:
            raise ValueError(f"I/O operation on closed file {self.path}")
        if write and not self._writable:
            raise _os_error(OSError, errno.EBADF, self.path)

    def size(self) -> int:
        self._check()
        return len(self._node.data)

    def read_at(self, position: int, length: int) -> bytes:
        self._check()
        if position < 0 or length < 0:
            raise ValueError(f"negative position or length: {position}, {length}")
        self._disk._io_fault("eio_read", self.path)
        return bytes(self._node.data[position : position + length])

    def read_into(self, position: int, buffer: bytearray | memoryview) -> int:
        self._check()
        if position < 0:
            raise ValueError(f"negative position: {position}")
        self._disk._io_fault("eio_read", self.path)
        data = self._node.data
        n = max(0, min(len(buffer), len(data) - position))
        buffer[:n] = data[position : position + n]
        return n

    def write_at(self, position: int, data) -> None:
        self._check(write=True)
        if position < 0:
            raise ValueError(f"negative position: {position}")
        self._disk._write(self.path, self._node, position, bytes(data))

    def append(self, data) -> int:
        self._check(write=True)
        position = len(self._node.data)
        self._disk._write(self.path, self._node, position, bytes(data))
        return position

    def copy_to(
        self, position: int, length: int, dest: DiskFile, dest_position: int, *, sparse=False
    ) -> int:
        """A kernel copy in the simulator's terms: a read of this file, then one write to `dest`
        like any other (unsynced until its fsync, with the same I/O faults and crash states);
        `sparse`, one write per run of blocks that are not all zeros."""
        self._check()
        if position < 0 or length < 0 or dest_position < 0:
            raise ValueError(f"negative position or length: {position}, {length}, {dest_position}")
        if not isinstance(dest, SimFile):
            return super().copy_to(position, length, dest, dest_position, sparse=sparse)
        dest._check(write=True)
        self._disk._io_fault("eio_read", self.path)
        data = memoryview(bytes(self._node.data[position : position + length]))
        runs = nonzero_runs(dest_position, data) if sparse else [(0, len(data))] if data else []
        for start, end in runs:
            dest._disk._write(dest.path, dest._node, dest_position + start, bytes(data[start:end]))
        return len(data)

    def truncate(self, size: int) -> None:
        self._check(write=True)
        if size < 0:
            raise ValueError(f"negative size: {size}")
        self._disk._truncate(self.path, self._node, size)

    def fsync(self) -> None:
        self._check()
        self._disk._fsync(self.path, self._node)

    def close(self) -> None:
        self._closed = True


class _SimLock:
    def __init__(self, disk: SimDisk, node: int) -> None:
        self._disk = disk
        self._node = node
        self._held = True

    def release(self) -> None:
        if self._held:
            self._held = False
            self._disk._locks.discard(self._node)


class SimDisk(Disk):
    """A Disk with power-loss semantics, an operation trace, and injectable I/O errors.

    - `trace`: every state-changing operation, in order; `listeners` are called with each one just
      after it is applied (exploration builds crash states there; a listener that raises stops
      the program at that operation, as a power cut would).
    - `pending`: changes not yet durable, in program order (what `faults` chooses from).
    - `io_faults`: I/O errors to raise on chosen calls; `capacity`: bytes before ENOSPC.
    - `clock`: mtimes come from it (a `SimClock` by default, so runs are deterministic).
    """

    def __init__(
        self,
        model: PersistenceModel | None = None,
        *,
        clock: Callable[[], float] | None = None,
        io_faults: Iterable[IoFault] = (),
        capacity: int | None = None,
    ) -> None:
        self.model = model or PersistenceModel()
        self.clock = clock or SimClock()
        self.io_faults = list(io_faults)
        self.capacity = capacity
        self.trace: list[Op] = []
        self.pending: list[Change] = []
        self.listeners: list[Callable[[Op], None]] = []
        self._nodes: dict[int, _Node] = {0: _Node(0, True, self.clock())}
        self._locks: set[int] = set()
        self._used = 0
        self._lookups: dict[str, _Node] = {}

    # -- construction from an image -------------------------------------------------------------

    @classmethod
    def from_image(cls, image: DiskImage, model: PersistenceModel | None = None, **kw) -> SimDisk:
        """A disk whose whole content is `image`, all of it durable, with an empty trace."""
        disk = cls(model, **kw)
        now = disk.clock()

        def directory(path: str) -> _Node:
            node = disk._nodes[0]
            for part in path.strip("/").split("/") if path != "/" else []:
                nid = node.entries.get(part)
                if nid is None:
                    child = _Node(len(disk._nodes), True, now)
                    disk._nodes[child.id] = child
                    node.entries[part] = node.durable_entries[part] = child.id
                    node = child
                else:
                    node = disk._nodes[nid]
            return node

        for d in sorted(image.dirs):
            directory(d)
        linked: dict[int, _Node] = {}  # the image's node ids: paths sharing one are hard links
        for p, data in image.files.items():
            head, _, name = p.rpartition("/")
            parent = directory(head or "/")
            node = linked.get(image.nodes.get(p, -1))
            if node is None:
                node = _Node(len(disk._nodes), False, now)
                node.data = bytearray(data)
                node.durable = bytes(data)
                disk._nodes[node.id] = node
                disk._used += len(data)
                if p in image.nodes:
                    linked[image.nodes[p]] = node
            parent.entries[name] = parent.durable_entries[name] = node.id
        return disk

    # -- images -----------------------------------------------------------------------------------

    def crash_image(self, changes: Iterable[Change] = ()) -> DiskImage:
        """The durable state with `changes` (pending ones, possibly altered) applied in order."""
        entries = {n.id: dict(n.durable_entries) for n in self._nodes.values() if n.is_dir}
        contents: dict[int, bytearray] = {}
        for ch in changes:
            if isinstance(ch, EntryChange):
                e = entries.setdefault(ch.dir, {})
                if ch.target is None:
                    e.pop(ch.name, None)
                else:
                    e[ch.name] = ch.target
                continue
            buf = contents.get(ch.node)
            if buf is None:
                buf = contents[ch.node] = bytearray(self._nodes[ch.node].durable)
            _apply_data(buf, ch)
        return self._resolve(entries, lambda n: contents.get(n.id, n.durable))

    def volatile_image(self) -> DiskImage:
        """What a process crash leaves: everything the program wrote (the page cache survives)."""
        entries = {n.id: n.entries for n in self._nodes.values() if n.is_dir}
        return self._resolve(entries, lambda n: n.data)

    def durable_image(self) -> DiskImage:
        """What a power loss leaves if nothing unsynced reaches the disk."""
        return self.crash_image(())

    def _resolve(self, entries: dict[int, dict[str, int]], content) -> DiskImage:
        image = DiskImage({}, set(), {})
        stack = [(0, "")]
        seen = {0}
        while stack:
            nid, path = stack.pop()
            for name, child in entries.get(nid, {}).items():
                p = f"{path}/{name}"
                node = self._nodes[child]
                if node.is_dir:
                    if child not in seen:  # a lost rmdir + rename could make a cycle
                        seen.add(child)
                        image.dirs.add(p)
                        stack.append((child, p))
                else:
                    image.files[p] = bytes(content(node))
                    image.nodes[p] = child
        return image

    def node_of(self, path: str) -> int:
        """The inode number behind `path` now (faults use it to find a file's pending changes)."""
        return self._lookup(_norm(path)).id

    def durable_content(self, node: int) -> bytes:
        """What the last fsync of inode `node` made durable."""
        return self._nodes[node].durable

    # -- Disk -------------------------------------------------------------------------------------

    def open(self, path: str, *, write: bool = False, create: bool = False) -> SimFile:
        p = _norm(path)
        parent, name = self._parent(p)
        nid = parent.entries.get(name)
        if nid is None:
            if not create:
                raise _os_error(FileNotFoundError, errno.ENOENT, path)
            node = self._new_node(False)
            self._set_entry(parent, name, node.id)
            self._record("create", p, node.id)
            self._entry_change(parent, name, node.id)
        else:
            node = self._nodes[nid]
            if node.is_dir:
                raise _os_error(IsADirectoryError, errno.EISDIR, path)
        return SimFile(self, p, node, write or create)

    def exists(self, path: str) -> bool:
        try:
            self._lookup(_norm(path))
        except OSError:
            return False
        return True

    def is_dir(self, path: str) -> bool:
        try:
            return self._lookup(_norm(path)).is_dir
        except OSError:
            return False

    def is_symlink(self, path: str) -> bool:
        _norm(path)
        return False

    def list_dir(self, path: str) -> list[str]:
        node = self._lookup(_norm(path))
        if not node.is_dir:
            raise _os_error(NotADirectoryError, errno.ENOTDIR, path)
        return sorted(node.entries)

    def make_dirs(self, path: str) -> None:
        p = _norm(path)
        node = self._nodes[0]
        walked = ""
        for part in p.strip("/").split("/") if p != "/" else []:
            walked += "/" + part
            nid = node.entries.get(part)
            if nid is None:
                child = self._new_node(True)
                self._set_entry(node, part, child.id)
                self._record("mkdir", walked, child.id)
                self._entry_change(node, part, child.id)
                node = child
            else:
                node = self._nodes[nid]
                if not node.is_dir:
                    raise _os_error(FileExistsError, errno.EEXIST, walked)

    def size(self, path: str) -> int:
        node = self._lookup(_norm(path))
        return 0 if node.is_dir else len(node.data)

    def mtime(self, path: str) -> float:
        return self._lookup(_norm(path)).mtime

    def set_mtime(self, path: str, mtime: float) -> None:
        """Workloads age segments with it, for time-based retention (not part of the Disk seam)."""
        self._lookup(_norm(path)).mtime = mtime

    def rename(self, src: str, dst: str) -> None:
        s, d = _norm(src), _norm(dst)
        sparent, sname = self._parent(s)
        nid = sparent.entries.get(sname)
        if nid is None:
            raise _os_error(FileNotFoundError, errno.ENOENT, src)
        dparent, dname = self._parent(d)
        if s == d:
            return
        node = self._nodes[nid]
        old = dparent.entries.get(dname)
        if old is not None:
            onode = self._nodes[old]
            if onode.is_dir and not node.is_dir:
                raise _os_error(IsADirectoryError, errno.EISDIR, dst)
            if node.is_dir and not onode.is_dir:
                raise _os_error(NotADirectoryError, errno.ENOTDIR, dst)
            if onode.is_dir and onode.entries:
                raise _os_error(OSError, errno.ENOTEMPTY, dst)
        if node.is_dir and (d + "/").startswith(s + "/"):
            raise _os_error(OSError, errno.EINVAL, dst)
        self._set_entry(dparent, dname, nid)
        self._set_entry(sparent, sname, None)
        self._record("rename", s, nid, dst=d)
        self._entry_change(dparent, dname, nid)
        self._entry_change(sparent, sname, None)

    def unlink(self, path: str) -> None:
        p = _norm(path)
        parent, name = self._parent(p)
        nid = parent.entries.get(name)
        if nid is None:
            raise _os_error(FileNotFoundError, errno.ENOENT, path)
        if self._nodes[nid].is_dir:
            raise _os_error(IsADirectoryError, errno.EISDIR, path)
        self._set_entry(parent, name, None)
        self._used -= len(self._nodes[nid].data)
        self._record("unlink", p, nid)
        self._entry_change(parent, name, None)

    def remove_dir(self, path: str) -> None:
        p = _norm(path)
        if p == "/":
            raise _os_error(OSError, errno.EBUSY, path)
        parent, name = self._parent(p)
        nid = parent.entries.get(name)
        if nid is None:
            raise _os_error(FileNotFoundError, errno.ENOENT, path)
        node = self._nodes[nid]
        if not node.is_dir:
            raise _os_error(NotADirectoryError, errno.ENOTDIR, path)
        if node.entries:
            raise _os_error(OSError, errno.ENOTEMPTY, path)
        self._set_entry(parent, name, None)
        self._record("rmdir", p, nid)
        self._entry_change(parent, name, None)

    def fsync_dir(self, path: str) -> None:
        p = _norm(path)
        node = self._lookup(p)
        if not node.is_dir:
            raise _os_error(NotADirectoryError, errno.ENOTDIR, path)
        self._io_fault("eio_fsync", p)
        node.durable_entries = dict(node.entries)
        synced = {c.op for c in self.pending if isinstance(c, EntryChange) and c.dir == node.id}
        keep: list[Change] = []
        for c in self.pending:
            if not isinstance(c, EntryChange) or c.op not in synced:
                keep.append(c)
            elif c.dir != node.id and self.model.atomic_rename:
                # One journal transaction: the other half of a cross-directory rename commits too.
                other = self._nodes[c.dir].durable_entries
                if c.target is None:
                    other.pop(c.name, None)
                else:
                    other[c.name] = c.target
            elif c.dir != node.id:
                keep.append(c)
        self.pending = keep
        self._record("fsync_dir", p, node.id)

    def lock(self, path: str) -> _SimLock:
        """Kafka's `.lock`: exclusive within this disk (one process), the file created if missing."""
        p = _norm(path)
        with self.open(p, create=True) as f:
            node = f._node.id
        if node in self._locks:
            name = p.rpartition("/")[2]
            raise LockHeld(
                f"Failed to acquire lock on file {name} in {posixpath.dirname(p)}. A Kafka instance "
                "in another process or thread is using this directory."
            )
        self._locks.add(node)
        return _SimLock(self, node)

    def lock_owner(self, path: str) -> int | None:
        """None: a SimDisk is one process, and a process's own locks never conflict."""
        _norm(path)
        return None

    def links(self, path: str) -> int:
        nid = self._lookup(_norm(path)).id
        return sum(
            1
            for n in self._nodes.values()
            if n.is_dir
            for child in n.entries.values()
            if child == nid
        )

    def real_path(self, path: str) -> str:
        """A SimDisk has no symbolic links: the normalized path."""
        return _norm(path)

    # -- internals --------------------------------------------------------------------------------

    def _new_node(self, is_dir: bool) -> _Node:
        node = _Node(len(self._nodes), is_dir, self.clock())
        self._nodes[node.id] = node
        return node

    def _lookup(self, p: str) -> _Node:
        node = self._lookups.get(p)
        if node is not None:
            return node
        node = self._nodes[0]
        if p != "/":
            for part in p.strip("/").split("/"):
                if not node.is_dir:
                    raise _os_error(NotADirectoryError, errno.ENOTDIR, p)
                nid = node.entries.get(part)
                if nid is None:
                    raise _os_error(FileNotFoundError, errno.ENOENT, p)
                node = self._nodes[nid]
        self._lookups[p] = node
        return node

    def _parent(self, p: str) -> tuple[_Node, str]:
        if p == "/":
            raise _os_error(IsADirectoryError, errno.EISDIR, p)
        head, name = posixpath.split(p)
        parent = self._lookup(head)
        if not parent.is_dir:
            raise _os_error(NotADirectoryError, errno.ENOTDIR, p)
        return parent, name

    def _set_entry(self, parent: _Node, name: str, nid: int | None) -> None:
        self._lookups.clear()  # names moved: resolved paths may now point elsewhere
        if nid is None:
            parent.entries.pop(name, None)
        else:
            parent.entries[name] = nid
        parent.mtime = self.clock()

    def _entry_change(self, parent: _Node, name: str, nid: int | None) -> None:
        self.pending.append(EntryChange(len(self.trace) - 1, parent.id, name, nid))

    def _record(self, kind: str, path: str, node: int, **kw) -> Op:
        op = Op(len(self.trace), kind, path, node, **kw)
        self.trace.append(op)
        for listener in self.listeners:
            listener(op)
        return op

    def _io_fault(self, kind: str, path: str) -> None:
        for f in self.io_faults:
            if f.fired or f.kind != kind or f.path_contains not in path:
                continue
            if f.seen == f.nth:
                f.fired = True
                code = errno.ENOSPC if f.kind == "enospc" else errno.EIO
                raise _os_error(OSError, code, path)
            f.seen += 1

    def _write(self, path: str, node: _Node, position: int, data: bytes) -> None:
        grows = max(0, position + len(data) - len(node.data))
        self._io_fault("eio_write", path)
        if grows:
            self._io_fault("enospc", path)
            if self.capacity is not None and self._used + grows > self.capacity:
                raise _os_error(OSError, errno.ENOSPC, path)
        self._used += grows
        change = DataChange(len(self.trace), node.id, position, data)
        _apply_data(node.data, change)
        node.mtime = self.clock()
        self.pending.append(change)
        self._record("write", path, node.id, position=position, data=data)

    def _truncate(self, path: str, node: _Node, size: int) -> None:
        self._io_fault("eio_write", path)
        grows = size - len(node.data)
        if grows > 0:
            self._io_fault("enospc", path)
            if self.capacity is not None and self._used + grows > self.capacity:
                raise _os_error(OSError, errno.ENOSPC, path)
        self._used += grows
        change = DataChange(len(self.trace), node.id, 0, None, size)
        _apply_data(node.data, change)
        node.mtime = self.clock()
        self.pending.append(change)
        self._record("truncate", path, node.id, size=size)

    def _fsync(self, path: str, node: _Node) -> None:
        self._io_fault("eio_fsync", path)
        node.durable = bytes(node.data)
        self.pending = [
            c for c in self.pending if not (isinstance(c, DataChange) and c.node == node.id)
        ]
        self._record("fsync", path, node.id)


def _apply_data(buf: bytearray, ch: DataChange) -> None:
    if ch.data is None:
        if ch.size < len(buf):
            del buf[ch.size :]
        else:
            buf.extend(bytes(ch.size - len(buf)))
        return
    if ch.position > len(buf):
        buf.extend(bytes(ch.position - len(buf)))
    buf[ch.position : ch.position + len(ch.data)] = ch.data
