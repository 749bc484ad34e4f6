"""Option types for logsim's parsers: a number out of range is a usage error (one line, exit 2)
named by argparse, never an internal error from deep inside a run."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def int_in(low: int, high: int | None = None) -> Callable[[str], int]:
    """An integer in [low, high] (no upper bound when `high` is None)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < low or (high is not None and value > high):
            bound = f"at least {low}" if high is None else f"from {low} to {high}"
            raise argparse.ArgumentTypeError(f"{value} is out of range: {bound}")
        return value

    parse.__name__ = "integer"
    return parse


PORT = int_in(0, 65535)
