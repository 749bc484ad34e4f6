"""`logrepair`: the command-line entry point.

Each subcommand lives in `logrepair/commands/<name>.py` with `add_parser(subparsers)` and
`run(args) -> int`; they are found by listing that package, so adding a command touches one file.
Exit status: 0 ok/clean, 1 defects found or repair applied with loss, 2 bad usage, unusable
input or an internal error (one line on stderr, never a traceback; LOGREPAIR_DEBUG=1 shows it).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import pkgutil
import sys
from itertools import islice

from . import __version__, commands, pool

POOLED = {
    "verify": "logrepair.recovery.scan",
    "repair": "logrepair.recovery.scan",
    "rebuild-index": "logrepair.recovery.scan",
    "audit": "logrepair.audit.local",
}
"""The commands that spread partitions over `--jobs` processes, with the module of their work."""


class InputError(Exception):
    """Unusable input (missing file, not a log dir, locked dir, ...): exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:
        """argparse would print the whole usage; bad usage is one line like any other bad input."""
        raise InputError(f"{self.prog}: {message}")


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command; given the arguments, of the command they name only, when
    they name one (each command imports what it runs: a scan need not import the audit's Spark
    tables); `--help` and anything else get every command."""
    parser = _Parser(
        prog="logrepair",
        description="Offline verification and repair of Apache Kafka log directories.",
    )
    parser.add_argument("--version", action="version", version=f"logrepair {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    names = sorted(m.name for m in pkgutil.iter_modules(commands.__path__))
    names = [n for n in names if not n.startswith("_")]
    named = _command_named(names, sys.argv[1:] if argv is None else argv)
    for name in names if named is None else [named]:
        module = importlib.import_module(f"{commands.__name__}.{name}")
        module.add_parser(sub)
    return parser


YOUNG_COLLECTION_THRESHOLD = 50_000
"""Allocations between two collections of the youngest generation during a run (CPython's default
is 700): at 4,000 partitions, `repair --dry-run` spent ~7% of its CPU in the collector (0.13 s),
1.5% with this (10,000: 4%); what waits for a collection meanwhile is a few MiB at most."""


def _command_named(names: list[str], argv: list[str]) -> str | None:
    """The module of the command the arguments name: their first one, when a module has its name
    (`rebuild-index` is in rebuild_index.py; `logrepair`'s own options, --help and --version,
    come before it and end the run)."""
    module = argv[0].replace("-", "_") if argv else None
    return module if module in names else None


def main(argv: list[str] | None = None) -> int:
    try:
        argv = sys.argv[1:] if argv is None else argv
        if _will_pool(argv):
            pool.prestart(POOLED[argv[0]])
        args = build_parser(argv).parse_args(argv)
        # What the imports made lives as long as the run: the collector need not look at it
        # again each time a scan's results (thousands of partitions) trigger a full collection
        # (given back after, for a caller that runs the CLI in its own process). So does most of
        # what the run makes (a scan's findings and runs, a plan's actions and losses): young
        # objects are collected less often, which spares the full collections their promotion
        # triggers (a cycle left behind lives a little longer).
        gc.freeze()
        thresholds = gc.get_threshold()
        gc.set_threshold(max(thresholds[0], YOUNG_COLLECTION_THRESHOLD), *thresholds[1:])
        try:
            return args.run(args)
        finally:
            gc.set_threshold(*thresholds)
            gc.unfreeze()
    except InputError as exc:
        return _fail(str(exc))
    except BrokenPipeError:
        return 0
    except (OSError, ValueError) as exc:
        return _fail(f"logrepair: {exc}")
    except KeyboardInterrupt:
        return _fail("logrepair: interrupted")
    except Exception as exc:  # a bug, not bad input: still one line, and the way to see more
        return _fail(
            f"logrepair: internal error: {type(exc).__name__}: {exc} (LOGREPAIR_DEBUG=1 shows where)"
        )


def _will_pool(argv: list[str]) -> bool:
    """Whether the command will spread partitions over worker processes, guessed from its
    arguments before they are parsed (so that their forkserver starts before this process imports
    the command's modules, and imports beside it): `--jobs N` with N > 1, or no `--jobs` and a
    directory among them with as many entries as the default needs. A wrong guess costs one
    process started for nothing, or that head start."""
    if not argv or argv[0] not in POOLED or "--spark" in argv:
        return False
    jobs = None
    for i, arg in enumerate(argv):
        if arg == "--jobs" and i + 1 < len(argv):
            jobs = argv[i + 1]
        elif arg.startswith("--jobs="):
            jobs = arg.partition("=")[2]
    if jobs is not None:
        return jobs.isdigit() and int(jobs) > 1
    return pool.available_cores() > 1 and any(_holds_many(arg) for arg in argv[1:])


def _holds_many(path: str) -> bool:
    """A directory of at least AUTO_MIN_ITEMS entries."""
    try:
        with os.scandir(path) as entries:
            return next(islice(entries, pool.AUTO_MIN_ITEMS - 1, None), None) is not None
    except OSError:
        return False


def _fail(message: str) -> int:
    if os.environ.get("LOGREPAIR_DEBUG"):
        import traceback

        traceback.print_exc()
    print(message, file=sys.stderr)
    return 2


if __name__ == "__main__":
    # `python -m logrepair.cli`: this file runs as `__main__`, a second copy of the module; the
    # commands raise `logrepair.cli.InputError`, which only the imported module's `main` catches.
    from logrepair.cli import main as imported_main

    sys.exit(imported_main())
