"""`python -m bench NAME... [OPTIONS]` runs the named benches; with no name, lists them.

Options after the names go to every named bench (`python -m bench format_walk --size 64M`).
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path


def available() -> dict[str, str]:
    """Bench modules of this package, each with the first line of its docstring."""
    benches = {}
    for info in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"bench.{info.name}")
        if callable(getattr(module, "main", None)):
            benches[info.name] = (module.__doc__ or "").strip().splitlines()[0:1]
    return {name: (doc[0] if doc else "") for name, doc in sorted(benches.items())}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    names = []
    while argv and not argv[0].startswith("-"):
        names.append(argv.pop(0))
    benches = available()
    if not names:
        print("usage: python -m bench NAME... [OPTIONS]\n\navailable benches:")
        for name, doc in benches.items():
            print(f"  {name:<20} {doc}")
        return 0
    unknown = [n for n in names if n not in benches]
    if unknown:
        print(
            f"unknown bench: {', '.join(unknown)} (available: {', '.join(benches)})",
            file=sys.stderr,
        )
        return 2
    status = 0
    for name in names:
        status |= importlib.import_module(f"bench.{name}").main(list(argv)) or 0
    return status


if __name__ == "__main__":
    sys.exit(main())
