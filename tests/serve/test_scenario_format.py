"""Serve scenario files: one clear error for each mistake, through `logsim run`'s loader."""

from __future__ import annotations

import pytest

from simulator.scenario import ScenarioError, load_scenario
from simulator.serve.scenario import ServeScenario


@pytest.mark.parametrize(
    "text, message",
    [
        ("# x\n[serve]\nflush_messages = 1\n", "needs [[steps]]"),
        ("# x\n[[steps]]\naction = 'dance'\n", "action must be one of"),
        ("# x\n[[steps]]\naction = 'cut'\nfault = 'meteor'\n", "unknown fault 'meteor'"),
        ("# x\n[[steps]]\naction = 'cut'\ntopic = 't'\n", "unknown key 'topic' for cut"),
        ("# x\n[[steps]]\naction = 'consume'\ntopic = 't'\nclient = 'java'\n", "client must be"),
        (
            "# x\n[serve]\nturbo = true\n[[steps]]\naction = 'cut'\n",
            "unknown key 'turbo' in [serve]",
        ),
        ("# x\n[[steps]]\naction = 'cut'\n[expect]\nhappy = true\n", "[expect] keys are"),
        ("# x\n[[steps]]\naction = 'cut'\n[workload]\nappends = 1\n", "unknown key 'workload'"),
    ],
)
def test_bad_serve_scenarios_are_one_clear_error(tmp_path, text: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ScenarioError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_scenario(str(path))


def test_serve_options_become_logsim_serve_flags(tmp_path) -> None:
    path = tmp_path / "ok.toml"
    path.write_text(
        "# x\n[serve]\nflush_ms = 50\ntopic_config = ['a:flush.messages=1', 'b:flush.ms=9']\n"
        "[[steps]]\naction = 'cut'\nafter_ops = 3\n"
    )
    sc = load_scenario(str(path))
    assert isinstance(sc, ServeScenario) and sc.name == "ok"
    assert sc.argv == ["--flush-ms", "50", "--topic-config", "a:flush.messages=1",
                       "--topic-config", "b:flush.ms=9"]  # fmt: skip
