"""Every scenario file under scenarios/ runs as a test, and every one is documented."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.scenario import ScenarioError, find_scenarios, load_scenario, run_scenario

SCENARIOS = sorted(Path(__file__).resolve().parents[2].joinpath("scenarios").glob("*.toml"))


def test_there_are_enough_documented_scenarios() -> None:
    assert len(SCENARIOS) >= 15
    for path in SCENARIOS:
        text = path.read_text()
        comment = [line for line in text.splitlines() if line.startswith("#")]
        assert text.startswith("# ") and len(comment) >= 3, path.name
        assert "Expected:" in text, path.name
        assert load_scenario(str(path)).description, path.name


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario(path: Path) -> None:
    result = run_scenario(load_scenario(str(path)))
    assert result.ok, (
        [str(v) for v in result.unexpected[:3]],
        result.missing,
        result.report.states,
    )


@pytest.mark.parametrize(
    "text, message",
    [
        ("description = 'x'\n", "starts with a comment"),
        ("# x\n[workload]\nappends = -1\n", "appends"),
        ("# x\n[explore]\nfaults = ['meteor']\n", "unknown fault"),
        ("# x\n[expect]\nviolations = ['happiness']\n", "unknown invariant"),
        ("# x\n[disk]\nsector_size = 1000\n", "sector size"),
        ("# x\n[bogus]\n", "unknown key 'bogus'"),
        ("# x\n[explore]\nspeed = 3\n", "unknown key 'speed'"),
        ("# x\nworkload = 3\n", "must be a table"),
        ("# x\n[workload\n", "not valid TOML"),
    ],
)
def test_bad_scenarios_are_one_clear_error(tmp_path, text: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ScenarioError, match=message):
        load_scenario(str(path))


def test_find_scenarios_expands_directories(tmp_path) -> None:
    assert len(find_scenarios([str(SCENARIOS[0].parent)])) == len(SCENARIOS)
    with pytest.raises(ScenarioError, match="holds no .toml"):
        find_scenarios([str(tmp_path)])
    with pytest.raises(ScenarioError, match="no such scenario"):
        find_scenarios([str(tmp_path / "missing.toml")])
