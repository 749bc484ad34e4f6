#!/usr/bin/env bash
# One entry point for a fresh clone: creates .venv on first use, installs the project with its test and
# Spark extras, then runs what was asked: `./dev.sh demo` (the main job on a built-in sample) or
# `./dev.sh test` (the whole test suite). Anything else is passed to the installed `logrepair`.
set -euo pipefail
cd "$(dirname "$0")"
VENV=${LOGREPAIR_VENV:-.venv}
PY=${PYTHON:-python3}
stamp="$VENV/.installed-$(cat pyproject.toml setup.py logrepair/format/_records.c | sha1sum | cut -c1-12)"
if [ ! -f "$stamp" ]; then
    "$PY" -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip
    "$VENV/bin/python" -m pip install -q -e '.[test,spark]'
    touch "$stamp"
fi
cmd=${1:-help}
shift || true
case "$cmd" in
    demo) exec "$VENV/bin/logrepair" demo "$@" ;;
    test)
        "$VENV/bin/ruff" check logrepair simulator tests bench
        "$VENV/bin/ruff" format --check logrepair simulator tests bench
        exec "$VENV/bin/python" -m pytest -q "$@" ;;
    bench) exec "$VENV/bin/python" -m bench "$@" ;;
    *) exec "$VENV/bin/logrepair" "$cmd" "$@" ;;
esac
