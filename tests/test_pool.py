"""`logrepair.pool`: results in the items' order whatever the chunking and the window, an error in a
worker's task raised here as the serial path raises it, and the `--jobs` defaults."""

from __future__ import annotations

import os

import pytest

from logrepair import pool


def square_or_fail(offset: int, item: int) -> int:
    if item < 0:
        raise FileNotFoundError(2, "No such file or directory", f"item-{item}")
    return offset + item * item


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
