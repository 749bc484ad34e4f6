"""The one line an I/O error becomes: what the run (or undo) was doing when it failed, and the state
it leaves the log dir in — untouched, or journaled with how to finish or roll it back — so that an
operator knows what to do next without reading the journal."""

from __future__ import annotations

import errno
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ..storage.disk import LockHeld


class RepairFailed(OSError):
    """An I/O error stopped a run or an undo; the message says what state the log dir is in."""

    def __str__(self) -> str:
        return self.strerror


@contextmanager
def io_errors(
    doing: str, state: str | Callable[[], str], *, on_full: Callable[[], str] | None = None
) -> Iterator[None]:
    """Turns an OSError in one step of a run (or undo) into RepairFailed, whose one line says what the
    run was doing, the state it leaves (`state`, or a function giving it at the time), and, when
    the disk is full, what needs space where (`on_full`)."""
    try:
        yield
    except (RepairFailed, LockHeld):
        raise
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        if exc.filename and exc.filename2:  # a copy: from one file to another
            where = f" ({exc.filename} -> {exc.filename2})"
        line = (
            f"{exc.strerror or exc}{where} while {doing}: {state() if callable(state) else state}"
        )
        if exc.errno in (errno.ENOSPC, errno.EDQUOT) and on_full is not None:
            line += f"; {on_full()}"
        raise RepairFailed(exc.errno or errno.EIO, line) from None
