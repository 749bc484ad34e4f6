"""File-system objects that are not regular files, symlinks, and names that are not UTF-8 (issues
11.4, 11.10, 12.4): real FIFOs, sockets, device nodes and links in real directories, through the
real CLI in a subprocess with a timeout, so a hang fails the test instead of hanging the suite."""

from __future__ import annotations

import json
import os
import socket
import stat
from pathlib import Path

import pytest

from logrepair.storage import layout
from tests.test_cli_recovery import cli

from .builders import batches, flip_byte, write_offsets, write_segment

MODES = ("kafka", "point-in-time", "salvage")


def _state(d: Path) -> dict:
    """Every entry of `d`: its type, and a regular file's bytes (never opening anything else)."""
    out = {}
    for name in sorted(os.listdir(d)):
        st = os.lstat(d / name)
        out[name] = (
            stat.S_IFMT(st.st_mode),
            (d / name).read_bytes() if stat.S_ISREG(st.st_mode) else None,
        )
    return out


def _log_dir(tmp_path: Path) -> Path:
    """Two partitions: `a-0` (where the hostile object goes, with a damaged batch) and `b-0` (a
    torn tail), so a plan that goes around `a-0` still repairs `b-0`."""
    d = tmp_path / "kafka-logs"
    write_segment(d / "a-0", 0, batches(0, 10))
    write_segment(d / "a-0", 10, batches(10, 10))
    flip_byte(d / "a-0" / layout.log_file_name(10), 300)
    write_segment(d / "b-0", 0, batches(0, 10))
    with open(d / "b-0" / layout.log_file_name(0), "ab") as f:
        f.write(batches(10, 1)[0][:50])
    write_offsets(d, layout.RECOVERY_POINT_CHECKPOINT, {("a", 0): 0, ("b", 0): 0})
    return d


def _make(kind: str, path: Path, tmp_path: Path):
    """A real object of `kind` at `path`; returns what must stay open while it is used."""
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(path))
        return s
    elif kind == "char_device":
        os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 3))  # like /dev/null
    elif kind == "block_device":
        os.mknod(path, 0o600 | stat.S_IFBLK, os.makedev(7, 200))  # a loop device number
    return None


SPECIALS = ("fifo", "socket", "char_device", "block_device")
WHERE = (
    layout.log_file_name(20),  # an active segment
    layout.index_file_name(10),  # an index
    layout.snapshot_file_name(10),  # a producer snapshot
    layout.LEADER_EPOCH_CHECKPOINT,
)


def _can_mknod(tmp_path: Path) -> bool:
    try:
        os.mknod(tmp_path / "probe", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        return False
    os.unlink(tmp_path / "probe")
    return True


@pytest.mark.parametrize(
    ("kind", "where"),
    [(kind, WHERE[0]) for kind in SPECIALS] + [("fifo", where) for where in WHERE[1:]],
)
def test_a_special_file_is_a_finding_and_its_partition_is_left_as_it_is(tmp_path, kind, where):
    if kind.endswith("device") and not _can_mknod(tmp_path):
        pytest.skip("device nodes need CAP_MKNOD")
    d = _log_dir(tmp_path)
    target = d / "a-0" / where
    if target.exists():
        target.unlink()
    keep = _make(kind, target, tmp_path)
    try:
        out = cli("verify", str(d), "--json")
        assert out.returncode == 1, out.stderr
        a = next(p for p in json.loads(out.stdout)["partitions"] if p["topic"] == "a")
        special = [f for f in a["defects"] if f["kind"] == "special_file"]
        assert [f["file"] for f in special] == [f"a-0/{where}"]
        assert special[0]["severity"] == "damage" and "never opened" in special[0]["detail"]
        assert where in a["left_alone"]
        before = _state(d / "a-0")
        # every mode for the active segment; one for the other places
        for mode in MODES if where == WHERE[0] else ("salvage",):
            proc = cli("repair", str(d), "--mode", mode, "--quarantine", str(tmp_path / mode))
            assert proc.returncode in (0, 1), proc.stderr
            assert "a-0: left as it is" in proc.stdout
            assert _state(d / "a-0") == before  # never touched
            assert stat.S_IFMT(os.lstat(target).st_mode) != stat.S_IFREG
        # the other partition was repaired, and a second run plans nothing
        again = json.loads(cli("repair", str(d), "--mode", "salvage", "--dry-run", "--json").stdout)
        assert not again["actions"]
    finally:
        if keep is not None:
            keep.close()


@pytest.mark.parametrize(
    "name", [layout.RECOVERY_POINT_CHECKPOINT, layout.REPLICATION_CHECKPOINT, layout.LOCK_FILE]
)
def test_a_fifo_as_a_root_file_never_blocks(tmp_path, name):
    d = _log_dir(tmp_path)
    (d / name).unlink(missing_ok=True)
    os.mkfifo(d / name)
    out = cli("verify", str(d), "--json")
    assert out.returncode == 1, out.stderr
    found = json.loads(out.stdout)["defects"]
    assert [f["file"] for f in found if f["kind"] == "special_file"] == [name]
    proc = cli("repair", str(d), "--mode", "kafka", "--dry-run")
    assert proc.returncode in (0, 1), proc.stderr
    assert stat.S_ISFIFO(os.lstat(d / name).st_mode)


def test_a_symlinked_segment_leaves_its_partition_alone_unless_followed(tmp_path):
    d = _log_dir(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    seg = d / "a-0" / layout.log_file_name(10)
    real = elsewhere / seg.name
    seg.rename(real)
    seg.symlink_to(real)
    out = json.loads(cli("verify", str(d), "--json").stdout)
    a = next(p for p in out["partitions"] if p["topic"] == "a")
    link = next(f for f in a["defects"] if f["kind"] == "symlink")
    assert link["file"] == f"a-0/{seg.name}" and str(real) in link["detail"]
    assert link["severity"] == "notice"
    # the indexes beside the link are not orphans: the partition is left whole
    assert not any(f["kind"] == "index_orphan" for f in a["defects"])
    before = _state(d / "a-0")
    target = real.read_bytes()
    for mode in MODES:
        proc = cli("repair", str(d), "--mode", mode, "--quarantine", str(tmp_path / mode))
        assert proc.returncode in (0, 1) and "a-0: left as it is" in proc.stdout, proc
        assert _state(d / "a-0") == before and real.read_bytes() == target
    # verify --follow-symlinks reads the target as the segment: its damage is found
    out = json.loads(cli("verify", str(d), "--json", "--follow-symlinks").stdout)
    a = next(p for p in out["partitions"] if p["topic"] == "a")
    assert a["left_alone"] is None
    assert {"crc_mismatch", "symlink"} <= {f["kind"] for f in a["defects"]}


def test_names_that_are_not_utf8_are_reported_escaped(tmp_path):
    d = _log_dir(tmp_path)
    bad = os.fsencode(str(d)) + b"/t\xff-0"
    os.mkdir(bad)
    open(bad + b"/x\xfe.log", "wb").close()
    proc = cli("verify", str(d))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc
    assert "t\\xff-0" in proc.stdout
    out = json.loads(cli("verify", str(d), "--json").stdout)
    stray = [f for f in out["defects"] if f["kind"] == "stray_directory"]
    assert [f["file"] for f in stray] == ["t\\xff-0"] and "legal" in stray[0]["detail"]
    # the partition dir itself, given as PATH
    proc = cli("verify", os.fsdecode(bad), "--json")
    assert proc.returncode in (0, 1), proc
    files = [f["file"] for f in json.loads(proc.stdout)["partitions"][0]["defects"]]
    assert "x\\xfe.log" in files
    proc = cli("repair", str(d), "--mode", "salvage", "--dry-run")
    assert proc.returncode == 1 and "t\\xff-0" in proc.stdout, proc


def test_a_symlinked_root_checkpoint_is_read_as_absent_and_never_written(tmp_path):
    d = _log_dir(tmp_path)
    real = tmp_path / "elsewhere-checkpoint"
    (d / layout.RECOVERY_POINT_CHECKPOINT).rename(real)
    (d / layout.RECOVERY_POINT_CHECKPOINT).symlink_to(real)
    before = real.read_bytes()
    for mode in ("kafka", "salvage"):
        proc = cli("repair", str(d), "--mode", mode, "--quarantine", str(tmp_path / mode))
        assert proc.returncode in (0, 1), proc
        assert (d / layout.RECOVERY_POINT_CHECKPOINT).is_symlink() and real.read_bytes() == before
    again = json.loads(cli("repair", str(d), "--mode", "salvage", "--dry-run", "--json").stdout)
    assert not again["actions"], again["actions"]


def test_audit_and_rebuild_index_go_around_a_fifo(tmp_path):
    d = _log_dir(tmp_path)
    target = d / "a-0" / layout.log_file_name(20)
    os.mkfifo(target)
    out = json.loads(cli("audit", str(d), "--json").stdout)
    a = next(p for p in out["partitions"] if p["topic"] == "a")
    assert "special_file" in {f["kind"] for f in a["findings"]}
    before = _state(d / "a-0")
    (d / "a-0" / layout.index_file_name(0)).write_bytes(b"")  # an index to rebuild
    proc = cli("rebuild-index", str(d))
    assert proc.returncode in (0, 1) and "a-0: left as it is" in proc.stdout, proc
    assert _state(d / "a-0") == {**before, layout.index_file_name(0): (stat.S_IFREG, b"")}
