"""`repair` / `rebuild-index` `--follow-symlinks` (issue 12.4): segments that are symbolic links to
files in another directory, as an operator who moved old segments to another disk leaves them.
Real links in real directories, the real CLI in a subprocess, a real SIGKILL mid-apply: the
target is repaired as the file and the link stays, the quarantine keeps the target's bytes, undo
puts them back byte for byte (and a removed link back as it was), and a target that changed
since the plan is refused."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logrepair.recovery import repair as repair_module
from logrepair.recovery.journal import APPLYING, JournalError, runs_under
from logrepair.recovery.repair import repair
from logrepair.recovery.settings import Settings
from logrepair.recovery.undo import undo
from logrepair.storage import layout
from logrepair.storage.osdisk import OsDisk
from tests.test_cli_interrupted import STOPPED_AFTER_ACTIONS
from tests.test_cli_recovery import REPO, cli, one_line_error

from .builders import batches, flip_byte, write_offsets, write_segment

DISK = OsDisk()
SEG10, SEG20 = layout.log_file_name(10), layout.log_file_name(20)


def _setup(base: Path) -> tuple[Path, Path]:
    """A log dir whose `a-0` keeps segments 10 and 20 on another "disk" (`cold`), linked in by
    relative links, with a corrupt batch at offset 11; and `b-0`, a torn tail, all regular."""
    d, cold = base / "kafka-logs", base / "cold"
    for first in (0, 10, 20):
        write_segment(d / "a-0", first, batches(first, 10))
    flip_byte(d / "a-0" / SEG10, 300)
    write_segment(d / "b-0", 0, batches(0, 10))
    with open(d / "b-0" / layout.log_file_name(0), "ab") as f:
        f.write(batches(10, 1)[0][:50])
    write_offsets(d, layout.RECOVERY_POINT_CHECKPOINT, {("a", 0): 0, ("b", 0): 0})
    write_offsets(d, layout.REPLICATION_CHECKPOINT, {("a", 0): 30, ("b", 0): 10})
    cold.mkdir()
    for name in (SEG10, SEG20):
        link = d / "a-0" / name
        link.rename(cold / name)
        link.symlink_to(os.path.relpath(cold / name, link.parent))
    return d, cold


def _tree(d: Path) -> dict:
    """Every entry under `d`: a link's text, a file's bytes, a directory's entries."""
    out = {}
    for name in sorted(os.listdir(d)):
        p = d / name
        if p.is_symlink():
            out[name] = ("link", os.readlink(p))
        elif p.is_dir():
            out[name] = _tree(p)
        else:
            out[name] = p.read_bytes()
    return out


def _follow(cold: Path) -> tuple[str, ...]:
    return ("--follow-symlinks-into", str(cold))


@pytest.mark.parametrize("mode", ["kafka", "point-in-time", "salvage"])
def test_a_linked_segment_is_repaired_as_its_target_and_undo_puts_every_byte_back(tmp_path, mode):
    d, cold = _setup(tmp_path)
    before, cold_before = _tree(d), _tree(cold)
    # without the option, or with it but the targets outside the log dir: a-0 is left as it is
    # (the same in every mode: asked of one)
    for option, why in (
        ((), "(--follow-symlinks reads a link to a regular file as that file)"),
        (("--follow-symlinks",), "not followed: it points outside the log dir"),
    )[: 2 if mode == "salvage" else 0]:
        out = json.loads(
            cli("repair", str(d), "--mode", mode, "--json", "--dry-run", *option).stdout
        )
        assert not any(a["file"].startswith("a-0/") for a in out["actions"])
        assert any(n.startswith("a-0: left as it is") and why in n for n in out["notes"]), out
    # the dry run names each link's target and its identity, and changes nothing
    dry = cli("repair", str(d), "--mode", mode, "--json", "--dry-run", *_follow(cold))
    assert dry.returncode == 1, dry.stderr
    links = {x["link"]: x for x in json.loads(dry.stdout)["links"]}
    assert set(links) == {f"a-0/{SEG10}", f"a-0/{SEG20}"}
    st = os.stat(cold / SEG10)
    assert links[f"a-0/{SEG10}"]["target"] == str(cold.resolve() / SEG10)
    assert (links[f"a-0/{SEG10}"]["inode"], links[f"a-0/{SEG10}"]["size"]) == (
        st.st_ino,
        st.st_size,
    )
    assert _tree(d) == before and _tree(cold) == cold_before

    proc = cli("repair", str(d), "--mode", mode, *_follow(cold))
    assert proc.returncode == 1, proc.stderr
    assert f"link: a-0/{SEG10} -> {cold.resolve() / SEG10}" in proc.stdout
    # the link stays a link holding what it held; the target was cut (segment 10 at offset 11)
    assert os.readlink(d / "a-0" / SEG10) == before["a-0"][SEG10][1]
    assert (cold / SEG10).stat().st_size < len(cold_before[SEG10])
    deleted = mode != "salvage"  # kafka and point-in-time drop segment 20: its target moves
    assert (d / "a-0" / SEG20).is_symlink() != deleted and (cold / SEG20).exists() != deleted
    [run] = runs_under(DISK, f"{d}.logrepair-quarantine")
    if deleted:  # the quarantine keeps the target's bytes, not a link
        kept = Path(run.qdir) / "files" / "a-0" / SEG20
        assert not kept.is_symlink() and kept.read_bytes() == cold_before[SEG20]
    verify = cli("verify", str(d), "--follow-symlinks")
    assert verify.returncode == 0, verify.stdout
    again = cli("repair", str(d), "--mode", mode, "--json", *_follow(cold))
    assert again.returncode == 0 and json.loads(again.stdout)["actions"] == [], again.stdout

    undo = cli("undo", run.qdir)
    assert undo.returncode == 0, undo.stderr
    assert _tree(d) == before and _tree(cold) == cold_before  # byte for byte, links as they were
    target = cold.resolve()
    assert f"restored a-0/{SEG10} (in its symbolic link's target {target / SEG10})" in undo.stdout
    if deleted:
        assert (
            f"put back a-0/{SEG20} (its target {target / SEG20} moved back, the link made again)"
        ) in undo.stdout


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda link, cold, d: link.symlink_to(cold / "gone.log"), "a dangling link"),
        (lambda link, cold, d: link.symlink_to(link.name), "a loop of symbolic links"),
        (lambda link, cold, d: link.symlink_to(cold), "points at a directory"),
        (lambda link, cold, d: (os.mkfifo(cold / "p"), link.symlink_to(cold / "p")), "a FIFO"),
        (
            lambda link, cold, d: link.symlink_to(d / "b-0" / layout.log_file_name(0)),
            f"it points at b-0/{layout.log_file_name(0)}, a file Kafka reads on its own",
        ),
        (
            lambda link, cold, d: link.symlink_to(cold / SEG20),
            f"a-0/{SEG10}, a-0/{SEG20} are links to the same file",
        ),
    ],
    ids=["dangling", "loop", "directory", "fifo", "kafka-file", "shared-target"],
)
def test_a_link_that_cannot_be_followed_leaves_its_partition_as_it_is(tmp_path, make, why):
    d, cold = _setup(tmp_path)
    link = d / "a-0" / SEG10
    link.unlink()
    make(link, cold, d)
    before = _tree(d / "a-0")
    proc = cli("repair", str(d), "--mode", "salvage", "--json", *_follow(cold))
    assert proc.returncode == 1, proc.stderr  # b-0's torn tail is repaired
    out = json.loads(proc.stdout)
    [note] = [n for n in out["notes"] if n.startswith("a-0: left as it is")]
    assert why in note, note
    assert _tree(d / "a-0") == before and {a["file"][:3] for a in out["actions"]} >= {"b-0"}


def _replace_after_planning(monkeypatch, change) -> None:
    """`change()` runs after the plan is made and before anything is saved: another process
    replacing the target in that window."""
    real = repair_module.make_plan

    def make_plan(scan, mode, *args):
        plan = real(scan, mode, *args)
        change()
        return plan

    monkeypatch.setattr(repair_module, "make_plan", make_plan)


def _replaced(target: Path) -> None:
    fresh = target.with_name("fresh")
    fresh.write_bytes(target.read_bytes())
    fresh.rename(target)  # the same name and bytes, another file


def _appended(target: Path) -> None:
    with open(target, "ab") as f:
        f.write(b"x")


@pytest.mark.parametrize(
    ("change", "why"),
    [(_replaced, "was replaced by another file"), (_appended, "went from 1,770 to 1,771 bytes")],
)
def test_a_target_changed_between_plan_and_apply_is_refused(tmp_path, monkeypatch, change, why):
    d, cold = _setup(tmp_path)
    _replace_after_planning(monkeypatch, lambda: change(cold / SEG10))
    before = _tree(d)
    settings = Settings(follow_symlinks=True, symlink_roots=(str(cold),))
    with pytest.raises(JournalError) as refused:
        repair(DISK, str(d), "salvage", settings)
    assert f"a-0/{SEG10}: its target {cold.resolve() / SEG10} {why} since the plan" in str(
        refused.value
    )
    assert "nothing was changed" in str(refused.value)
    assert _tree(d) == before and runs_under(DISK, f"{d}.logrepair-quarantine") == []


def _stopped(
    d: Path, cold: Path, mode: str, how: str, after: int, script: str = ""
) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO), **{f"{how}_AFTER_ACTIONS": str(after)})
    cmd = [sys.executable, "-c", script or STOPPED_AFTER_ACTIONS, "repair", str(d), "--mode", mode,
           *_follow(cold)]  # fmt: skip
    return subprocess.Popen(
        cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
        text=True,
    )  # fmt: skip


def _killed(d: Path, cold: Path, mode: str, after: int, script: str = "") -> None:
    proc = _stopped(d, cold, mode, "KILL", after, script)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL, err


KILLED_IN_DELETE = textwrap.dedent(
    """
    import os, signal, sys
    from logrepair.cli import main
    from logrepair.recovery import apply

    real = apply.move_file

    def move_file(disk, src, dst):
        # killed with a followed link's target in the quarantine and the link not yet removed
        real(disk, src, dst)
        if "/files/" in dst:
            os.kill(os.getpid(), signal.SIGKILL)

    apply.move_file = move_file
    sys.exit(main(sys.argv[1:]))
    """
)


@pytest.mark.parametrize(
    ("mode", "after"),
    [("salvage", 1), ("point-in-time", 3), ("kafka", 0)],
)
def test_a_repair_killed_mid_apply_is_finished_or_undone_exactly(tmp_path, mode, after):
    """SIGKILL after `after` actions (after=0: inside the move of a linked segment's target),
    then: the next repair reaches what an uninterrupted one reaches; and undo (of the finished
    run, or the roll-back of the interrupted one) puts every byte and link back."""
    reference, reference_cold = _setup(tmp_path / "reference")
    assert cli("repair", str(reference), "--mode", mode, *_follow(reference_cold)).returncode == 1
    for finish in (True, False):
        d, cold = _setup(tmp_path / f"finish-{finish}")
        before, cold_before = _tree(d), _tree(cold)
        _killed(d, cold, mode, after or -1, KILLED_IN_DELETE if after == 0 else "")
        [run] = runs_under(DISK, f"{d}.logrepair-quarantine")
        assert run.state == APPLYING
        if finish:
            proc = cli("repair", str(d), "--mode", mode, *_follow(cold))
            assert proc.returncode == 1 and "completed the interrupted repair" in proc.stdout, proc
            assert _tree(d) == _tree(reference) and _tree(cold) == _tree(reference_cold)
        undo = cli("undo", run.qdir)
        assert undo.returncode == 0, undo.stderr
        assert _tree(d) == before and _tree(cold) == cold_before


def test_a_target_replaced_while_a_repair_is_paused_stops_it_and_is_never_written(tmp_path):
    d, cold = _setup(tmp_path)
    proc = _stopped(d, cold, "salvage", "PAUSE", 1)  # the split out of segment 10 done
    assert proc.stdout.readline().strip() == "paused", proc.stderr.read()
    _replaced(cold / SEG10)
    replaced = (cold / SEG10).read_bytes()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2 and "Traceback" not in err, err
    assert f"a-0/{SEG10} is a followed symbolic link to {cold.resolve() / SEG10}, but its " in err
    assert "target was replaced by another file since the repair planned" in err
    assert (cold / SEG10).read_bytes() == replaced  # never cut
    # the next run, and undo, refuse in one line too: the journal no longer describes that file
    for again in (
        cli("repair", str(d), "--mode", "salvage", *_follow(cold)),
        cli("undo", runs_under(DISK, f"{d}.logrepair-quarantine")[0].qdir),
    ):
        one_line_error(again)
        assert f"a-0/{SEG10}: its target" in again.stderr, again.stderr
    assert (cold / SEG10).read_bytes() == replaced


def test_rebuild_index_follows_a_linked_index_and_writes_its_target(tmp_path):
    d, cold = _setup(tmp_path)
    index = d / "b-0" / layout.index_file_name(0)
    index.rename(cold / index.name)
    index.symlink_to(cold / index.name)
    (cold / index.name).write_bytes(b"  ")  # corrupt: rebuilt by the rebuild
    proc = cli("rebuild-index", str(d / "b-0"), "--json", *_follow(cold))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert [x["link"] for x in out["links"]] == [index.name]
    assert index.is_symlink() and (cold / index.name).read_bytes() != b"  "
    assert not list(cold.glob("*.tmp"))  # the temporary file beside the target was renamed
    again = json.loads(cli("rebuild-index", str(d / "b-0"), "--json", *_follow(cold)).stdout)
    assert again["actions"] == []
    undo = cli("undo", out["quarantine"])
    assert undo.returncode == 0 and (cold / index.name).read_bytes() == b"  ", undo.stderr


def test_a_linked_root_checkpoint_is_rewritten_beside_its_target(tmp_path):
    d, cold = _setup(tmp_path)
    checkpoint = d / layout.RECOVERY_POINT_CHECKPOINT
    checkpoint.rename(cold / "recovery-points")
    checkpoint.symlink_to(cold / "recovery-points")
    before, cold_before = _tree(d), _tree(cold)
    proc = cli("repair", str(d), "--mode", "salvage", "--json", *_follow(cold))
    assert proc.returncode == 1, proc.stderr
    assert checkpoint.is_symlink() and os.readlink(checkpoint) == str(cold / "recovery-points")
    assert (cold / "recovery-points").read_text() != cold_before["recovery-points"].decode()
    assert sorted(os.listdir(cold)) == sorted(cold_before)  # no temporary file left beside it
    undo = cli("undo", json.loads(proc.stdout)["quarantine"])
    assert undo.returncode == 0 and _tree(d) == before and _tree(cold) == cold_before, undo


def test_a_target_replaced_between_the_dry_run_and_the_apply_is_what_the_apply_plans_from(tmp_path):
    """A dry run and the apply are two runs: the apply plans again, from the file the link
    resolves to then, and says which (its `links`), so the change is seen, never papered over."""
    d, cold = _setup(tmp_path)
    dry = json.loads(
        cli("repair", str(d), "--mode", "salvage", "--dry-run", "--json", *_follow(cold)).stdout
    )
    assert any(a["file"] == f"a-0/{SEG10}" for a in dry["actions"])
    fresh = cold / "fresh"
    fresh.write_bytes(b"".join(batches(10, 10)))  # an undamaged copy, renamed over the target
    fresh.rename(cold / SEG10)
    proc = cli("repair", str(d), "--mode", "salvage", "--json", *_follow(cold))
    out = json.loads(proc.stdout)
    before = {x["link"]: x["inode"] for x in dry["links"]}
    after = {x["link"]: x["inode"] for x in out["links"]}
    assert after[f"a-0/{SEG10}"] == os.stat(cold / SEG10).st_ino != before[f"a-0/{SEG10}"]
    assert [p["topic"] for p in out["partitions"] if p["removed_bytes"]] == ["b"]
    assert (cold / SEG10).read_bytes() == b"".join(batches(10, 10))  # nothing to cut there now


def test_targets_on_another_filesystem_are_copied_into_the_quarantine_and_back(tmp_path):
    """The usual case: old segments on another disk. A deleted target crosses filesystems into
    the quarantine (copied, fsynced, then removed) and back on undo; killed in between, the next
    run finishes it."""
    other = Path("/dev/shm")
    if not other.is_dir() or os.stat(other).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("needs a second filesystem (/dev/shm)")
    base = Path(tempfile.mkdtemp(dir=other))
    try:
        d, _ = _setup(tmp_path)
        cold = base / "cold"
        shutil.copytree(tmp_path / "cold", cold)
        for name in (SEG10, SEG20):
            (d / "a-0" / name).unlink()
            (d / "a-0" / name).symlink_to(cold / name)
        before, cold_before = _tree(d), _tree(cold)
        _killed(d, cold, "point-in-time", -1, KILLED_IN_DELETE)
        proc = cli("repair", str(d), "--mode", "point-in-time", *_follow(cold))
        assert proc.returncode == 1 and "completed the interrupted repair" in proc.stdout, proc
        assert not (d / "a-0" / SEG20).exists() and not (cold / SEG20).exists()
        [run] = runs_under(DISK, f"{d}.logrepair-quarantine")
        assert (Path(run.qdir) / "files" / "a-0" / SEG20).read_bytes() == cold_before[SEG20]
        undo = cli("undo", run.qdir)
        assert undo.returncode == 0, undo.stderr
        assert _tree(d) == before and _tree(cold) == cold_before
    finally:
        shutil.rmtree(base)


DAMAGE = st.sampled_from(["none", "flip", "torn", "garbage", "index"])


def _damaged(base: Path, damage: list[str]) -> Path:
    """`a-0` with three segments, each damaged as drawn; `b-0` clean."""
    d = base / "kafka-logs"
    for n, first in enumerate((0, 10, 20)):
        write_segment(d / "a-0", first, batches(first, 10))
        log = d / "a-0" / layout.log_file_name(first)
        if damage[n] == "flip":
            flip_byte(log, 177 * 3 + 60)
        elif damage[n] == "torn":
            os.truncate(log, 177 * 9 + 40)
        elif damage[n] == "garbage":
            with open(log, "ab") as f:
                f.write(b"\x07" * 300)
        elif damage[n] == "index":
            (d / "a-0" / layout.index_file_name(first)).write_bytes(b"\x01" * 7)
    write_segment(d / "b-0", 0, batches(0, 5))
    write_offsets(d, layout.RECOVERY_POINT_CHECKPOINT, {("a", 0): 10, ("b", 0): 5})
    write_offsets(d, layout.REPLICATION_CHECKPOINT, {("a", 0): 30, ("b", 0): 5})
    return d


def _linked(d: Path, cold: Path, names: list[str]) -> None:
    cold.mkdir()
    for name in names:
        (d / "a-0" / name).rename(cold / name)
        (d / "a-0" / name).symlink_to(cold / name)


def _through_links(d: Path) -> dict:
    """The partition as Kafka would read it: each name's bytes, through its link if it is one."""
    return {n: (d / "a-0" / n).read_bytes() for n in sorted(os.listdir(d / "a-0"))}


FILES = [
    layout.log_file_name(b) if kind == "log" else layout.index_file_name(b)
    for b in (0, 10, 20)
    for kind in ("log", "index")
]


@settings(max_examples=300 if os.environ.get("HYPOTHESIS_PROFILE") == "thorough" else 6)
@given(
    damage=st.lists(DAMAGE, min_size=3, max_size=3),
    linked=st.lists(st.sampled_from(FILES), min_size=1, max_size=4, unique=True),
    mode=st.sampled_from(["kafka", "point-in-time", "salvage"]),
)
def test_following_links_repairs_as_if_the_targets_were_in_place(damage, linked, mode):
    """Invariant: a repair through followed links leaves, read through the links, exactly what
    the same repair leaves with the files in place; the links stay or go as the files do; undo
    puts back every byte and link."""
    with tempfile.TemporaryDirectory() as tmp:
        plain = _damaged(Path(tmp) / "plain", damage)
        d = _damaged(Path(tmp) / "linked", damage)
        cold = Path(tmp) / "linked" / "cold"
        _linked(d, cold, linked)
        before, cold_before = _tree(d), _tree(cold)
        expected = repair(DISK, str(plain), mode, Settings())
        result = repair(
            DISK, str(d), mode, Settings(follow_symlinks=True, symlink_roots=(str(cold),))
        )
        assert [a.to_json() for a in result.plan.actions] == [
            a.to_json() for a in expected.plan.actions
        ]
        assert _through_links(d) == _through_links(plain)
        for name in linked:
            assert (d / "a-0" / name).is_symlink() == (plain / "a-0" / name).exists()
        again = repair(
            DISK, str(d), mode, Settings(follow_symlinks=True, symlink_roots=(str(cold),))
        )
        assert again.plan.actions == []
        if result.quarantine is not None:
            undo(DISK, result.quarantine)
        assert _tree(d) == before and _tree(cold) == cold_before
