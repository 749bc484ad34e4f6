"""The README's `logsim serve` section is held to the code: the served versions, the scenarios and
the options."""

from __future__ import annotations

from pathlib import Path

from logrepair.protocol.schema import versions_markdown
from simulator.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
SECTION = README.split("## Chaos tests for Kafka clients: `logsim serve`", 1)[1].split("\n## ", 1)[
    0
]


def test_the_served_versions_table_is_the_schema() -> None:
    assert versions_markdown() in SECTION


def test_every_serve_scenario_is_documented() -> None:
    for path in sorted((ROOT / "scenarios").glob("serve-*.toml")):
        assert f"`{path.stem}`" in SECTION, path.stem
    assert len(list((ROOT / "scenarios").glob("serve-*.toml"))) >= 5


def test_every_serve_option_is_documented() -> None:
    serve = build_parser()._subparsers._group_actions[0].choices["serve"]
    for action in serve._actions:
        for flag in action.option_strings:
            if flag.startswith("--") and flag not in ("--help", "--verbose"):
                assert f"[{flag}" in SECTION or f"`{flag}" in SECTION, flag
