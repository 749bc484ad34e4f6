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

from . import __version__, commands


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


def _command_named(names: list[str], argv: list[str]) -> str | None:
    """The module of the command the arguments name: their first one, when a module has its name
    (`rebuild-index` is in rebuild_index.py; every option of `logrepair` itself comes before it and ends the run: --help, --version)."""
    module = argv[0].replace("-", "_") if argv else None
    return module if module in names else None


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser(argv).parse_args(argv)
        # What the imports made lives as long as the run: the collector need not look at it
        # again each time a scan's results (thousands of partitions) trigger a full collection
        # (given back after, for a caller that runs the CLI in its own process).
        gc.freeze()
        try:
            return args.run(args)
        finally:
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


def _fail(message: str) -> int:
    if os.environ.get("LOGREPAIR_DEBUG"):
        import traceback

        traceback.print_exc()
    print(message, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
