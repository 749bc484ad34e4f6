"""Undo after a plan that renames a `.swap` into place and then rewrites or cuts what it brought in:
undo must put back the swap's bytes, not the bytes the name held before the repair (found by
`logsim explore`: an interrupted swap whose index the repair then rebuilt)."""

from __future__ import annotations

import pytest

from logrepair.storage import layout

from .builders import batches, write_segment
from .checks import repair_checked

MODES = ["kafka", "point-in-time", "salvage"]


def _interrupted_swap(log_dir, *, torn: bool) -> None:
    """Segment 0 being replaced by a cleaned copy: the `.swap` files are complete (the old segment
    already deleted), so every mode finishes the swap; its index is junk, so it is rebuilt."""
    pdir = log_dir / "t-0"
    write_segment(pdir, 0, batches(0, 6))
    for suffix in (layout.LOG_SUFFIX, layout.INDEX_SUFFIX, layout.TIME_INDEX_SUFFIX):
        name = pdir / ("0" * 20 + suffix)
        name.rename(name.with_name(name.name + ".swap"))
    (pdir / ("0" * 20 + layout.INDEX_SUFFIX + ".swap")).write_bytes(b"\x00\x00\x00\x07junk")
    if torn:
        swap_log = pdir / ("0" * 20 + layout.LOG_SUFFIX + ".swap")
        swap_log.write_bytes(swap_log.read_bytes()[:-30])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("torn", [False, True], ids=["index-rebuilt", "log-truncated"])
def test_undo_puts_back_the_swap_a_repair_renamed_in_and_then_rewrote(log_dir, mode, torn):
    _interrupted_swap(log_dir, torn=torn)
    result = repair_checked(log_dir, mode)  # undo restoring every byte is one of its checks
    kinds = [a.action for a in result.plan.actions]
    assert "rename" in kinds
    assert ("truncate" if torn else "rebuild_indexes") in kinds
