"""`logrepair.pool`: results in the items' order whatever the chunking and the window, whichever
process ran them (a worker, or this one while a worker's result is due); an error in a task raised
here as the serial path raises it, after the items before it; a worker that dies is `WorkerDied`;
and the `--jobs` defaults."""

from __future__ import annotations

import importlib
import os
import signal
import sys
import time

import pytest

from logrepair import pool


def square_or_fail(offset: int, item: int) -> int:
    if item < 0:
        raise FileNotFoundError(2, "No such file or directory", f"item-{item}")
    return offset + item * item


def where(parent: int, item: int) -> tuple[int, bool]:
    """The item, and whether this process is `parent`; a worker takes its time (so that the parent
    runs chunks of its own while it waits)."""
    here = os.getpid() == parent
    if not here:
        time.sleep(0.001)
    return item, here


def fail_in_parent(parent: int, item: int) -> int:
    if os.getpid() == parent and item >= 100:
        raise ValueError(f"item {item}")
    if os.getpid() != parent:
        time.sleep(0.001)
    return item


def die_in_worker(parent: int, item: int) -> int:
    if os.getpid() != parent:
        os.kill(os.getpid(), signal.SIGKILL)
    return item


def test_this_process_runs_chunks_too_and_its_results_wait_their_turn() -> None:
    out = list(pool.Pool(2)(where, os.getpid(), range(1000)))
    assert [item for item, _ in out] == list(range(1000))
    assert {here for _, here in out} == {True, False}


def test_an_error_in_this_process_is_raised_in_its_turn() -> None:
    got = []
    with pytest.raises(ValueError) as e:
        for item in pool.Pool(2)(fail_in_parent, os.getpid(), range(1000)):
            got.append(item)
    failed = int(str(e.value).split()[1])
    assert failed >= 100 and got == list(range(failed))  # every item before it, in order


def test_a_worker_that_dies_is_worker_died() -> None:
    with pytest.raises(pool.WorkerDied, match="killed by SIGKILL"):
        list(pool.Pool(2)(die_in_worker, os.getpid(), range(1000)))


def test_a_pool_yields_what_the_serial_path_yields_in_order() -> None:
    items = list(range(1000))  # chunks of 16, many more than the window of four per worker
    expected = list(pool.serial(square_or_fail, 7, items))
    assert list(pool.Pool(2)(square_or_fail, 7, items)) == expected
    assert list(pool.Pool(3)(square_or_fail, 7, items[:5])) == expected[:5]


def test_an_error_in_a_worker_is_raised_here_as_in_the_serial_path() -> None:
    items = [*range(100), -1, *range(100)]
    with pytest.raises(FileNotFoundError) as serial:
        list(pool.serial(square_or_fail, 0, items))
    with pytest.raises(FileNotFoundError) as pooled:
        list(pool.Pool(2)(square_or_fail, 0, items))
    assert str(pooled.value) == str(serial.value)


def test_jobs_defaults() -> None:
    assert pool.mapper(1) is None  # the caller's own loop: the serial path
    assert pool.mapper(4) == pool.Pool(4)
    cores = len(os.sched_getaffinity(0))
    auto = pool.mapper(None)
    assert auto == (pool.Pool(cores, min_items=pool.AUTO_MIN_ITEMS) if cores > 1 else None)
    # below the threshold the default runs here, with no worker started
    few = pool.Pool(2, min_items=64)(square_or_fail, 0, [1, 2])
    assert few.__name__ == "serial" and list(few) == [1, 4]
    assert pool.Pool(2)(square_or_fail, 0, [1, 2]).__name__ == "_pooled"


def test_a_module_imported_beside_a_block_is_loaded_after_it_and_a_failure_is_left_to_import(
    tmp_path, monkeypatch
) -> None:
    (tmp_path / "beside_ok.py").write_text("import time\ntime.sleep(0.05)\nVALUE = 7\n")
    (tmp_path / "beside_bad.py").write_text("raise ValueError('broken module')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pool.importing("beside_ok"):
        ran = True  # the block runs while the module loads
    assert ran and sys.modules["beside_ok"].VALUE == 7
    with pool.importing("beside_bad"):
        pass
    assert "beside_bad" not in sys.modules
    with pytest.raises(ValueError, match="broken module"):
        importlib.import_module("beside_bad")
