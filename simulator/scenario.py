"""Scenario files: one documented chaos test per TOML file.

A scenario starts with a comment on the real event it models, then states its workload, the disk's
persistence model, the faults and repair modes to explore, and the expected outcome:

    # Power loss during a segment roll ...
    description = "one line for the result table"

    [workload]          # simulator.workload.WorkloadSpec fields
    appends = 30
    segment_bytes = 1024

    [disk]              # simulator.disk.PersistenceModel fields
    sector_size = 4096

    [explore]           # faults, modes, seed, samples, io_samples, max_variants, deep_every
    faults = ["torn_write", "lose_unsynced"]
    modes = ["kafka"]

    [expect]
    violations = []     # invariants this scenario shows being violated (by design), if any
    min_states = 10     # the exploration must reach at least this many crash states

A run passes when every expected invariant is violated at least once and no other one is.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from simulator.disk import PersistenceModel
from simulator.explore import ExploreError, ExploreOptions, ExploreReport, explore, shrink
from simulator.faults import CRASH_FAULTS
from simulator.heal_explore import HEAL_INVARIANTS, HEAL_NO_WORSE, HealOptions, explore_heal
from simulator.invariants import INVARIANTS, Violation
from simulator.repair import Repairer
from simulator.replicas import ReplicaSpec
from simulator.workload import SpecError, WorkloadSpec

_TOP = {"description", "workload", "disk", "explore", "expect", "replicas"}
_HEAL_EXPLORE = {"faults", "samples", "seed", "max_variants", "independent"}
_EXPLORE = {
    "faults",
    "modes",
    "seed",
    "samples",
    "io_samples",
    "io_path",
    "max_variants",
    "deep_every",
    "repair_crash_points",
    "enforce_modes",
}
_EXPECT = {"violations", "min_states"}


class ScenarioError(ValueError):
    """A scenario file that cannot be read or does not follow the format."""


@dataclass
class Scenario:
    name: str
    path: str
    description: str
    spec: WorkloadSpec
    options: ExploreOptions
    expected: tuple[str, ...] = ()
    min_states: int = 1


@dataclass
class ScenarioResult:
    scenario: Scenario
    report: ExploreReport
    unexpected: list[Violation] = field(default_factory=list)
    expected_seen: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    too_few_states: bool = False
    reproducer: tuple[WorkloadSpec, Violation] | None = None
    """The smallest workload still showing the first unexpected violation."""

    @property
    def ok(self) -> bool:
        return not self.unexpected and not self.missing and not self.too_few_states

    def to_json(self) -> dict:
        return {
            "name": self.scenario.name,
            "path": self.scenario.path,
            "description": self.scenario.description,
            "ok": self.ok,
            "crash_states": self.report.states,
            "states_per_second": round(self.report.states_per_second, 1),
            "seconds": round(self.report.elapsed, 3),
            "violations": [v.to_json() for v in self.unexpected],
            **({"heal": self.report.figures()} if hasattr(self.report, "figures") else {}),
            "expected_violations": self.expected_seen,
            "missing_expected": self.missing,
            "reproducer": None
            if self.reproducer is None
            else {
                "workload": self.reproducer[0].to_dict(),
                "violation": self.reproducer[1].to_json(),
            },
        }


def _table(data: dict, key: str, allowed: set[str] | None, where: str) -> dict:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ScenarioError(f"{where}: [{key}] must be a table")
    if allowed is not None:
        unknown = sorted(set(value) - allowed)
        if unknown:
            raise ScenarioError(f"{where}: unknown key {unknown[0]!r} in [{key}]")
    return value


def load_scenario(path: str) -> Scenario:
    try:
        text = Path(path).read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except (OSError, UnicodeDecodeError) as e:
        raise ScenarioError(f"cannot read {path}: {e}") from None
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"{path}: not valid TOML: {e}") from None
    if not text.lstrip().startswith("#"):
        raise ScenarioError(f"{path}: a scenario starts with a comment on the event it models")
    if "serve" in data or "steps" in data:  # a client chaos scenario against `logsim serve`
        from simulator.serve.scenario import ServeScenarioError, load_serve_scenario

        try:
            return load_serve_scenario(path, os.path.splitext(os.path.basename(path))[0], data)
        except ServeScenarioError as e:
            raise ScenarioError(str(e)) from None
    unknown = sorted(set(data) - _TOP)
    if unknown:
        raise ScenarioError(f"{path}: unknown key {unknown[0]!r}")
    if "replicas" in data:
        return _replica_scenario(path, data)
    try:
        spec = WorkloadSpec.from_dict(_table(data, "workload", None, path))
        model = PersistenceModel(
            **_table(
                data, "disk", {"sector_size", "size_before_data", "reorder", "atomic_rename"}, path
            )
        )
        ex = dict(_table(data, "explore", _EXPLORE, path))
        for key in ("faults", "modes"):
            if key in ex:
                ex[key] = tuple(ex[key])
        options = ExploreOptions(model=model, **ex)
    except ScenarioError:
        raise
    except (SpecError, ExploreError, ValueError, TypeError) as e:
        raise ScenarioError(f"{path}: {e}") from None
    return _scenario(path, data, spec, options, INVARIANTS)


def _scenario(path: str, data: dict, spec, options, invariants: tuple[str, ...]) -> Scenario:
    expect = _table(data, "expect", _EXPECT, path)
    expected = tuple(expect.get("violations", ()))
    for name in expected:
        if name not in invariants:
            raise ScenarioError(
                f"{path}: unknown invariant {name!r}; one of {', '.join(invariants)}"
            )
    name = os.path.splitext(os.path.basename(path))[0]
    return Scenario(
        name,
        path,
        str(data.get("description", "")),
        spec,
        options,
        expected,
        int(expect.get("min_states", 1)),
    )


def _replica_scenario(path: str, data: dict) -> Scenario:
    """A `[replicas]` scenario: the replicated workload (simulator/replicas.py), healed on every
    broker of every crash state (simulator/heal_explore.py); `[explore]` takes the keys of
    `HealOptions`. Beside its invariants, heal must lose no more than kafka mode and salvage."""
    if "workload" in data or "disk" in data:
        raise ScenarioError(f"{path}: a [replicas] scenario has no [workload] or [disk]")
    try:
        spec = ReplicaSpec(**_table(data, "replicas", None, path))
        ex = dict(_table(data, "explore", _HEAL_EXPLORE, path))
        if "faults" in ex:
            ex["faults"] = tuple(ex["faults"])
            for f in ex["faults"]:
                if f not in CRASH_FAULTS:
                    raise ScenarioError(f"{path}: unknown fault {f!r}")
        options = HealOptions(**ex)
    except ScenarioError:
        raise
    except (ValueError, TypeError) as e:
        raise ScenarioError(f"{path}: {e}") from None
    return _scenario(path, data, spec, options, HEAL_INVARIANTS)


def find_scenarios(paths: list[str]) -> list[str]:
    """Scenario files named on the command line, directories expanded to their `*.toml`."""
    out = []
    for p in paths:
        if os.path.isdir(p):
            found = sorted(str(f) for f in Path(p).glob("*.toml"))
            if not found:
                raise ScenarioError(f"{p} holds no .toml scenario")
            out.extend(found)
        elif os.path.isfile(p):
            out.append(p)
        else:
            raise ScenarioError(f"{p}: no such scenario file or directory")
    return out


def run_scenario(
    scenario: Scenario,
    *,
    repairer: Repairer | None = None,
    progress=None,
    shrink_failures: bool = False,
) -> ScenarioResult:
    if not isinstance(scenario, Scenario):  # a serve scenario: real clients, real power cuts
        from simulator.serve.scenario import run_serve_scenario

        return run_serve_scenario(scenario)
    if isinstance(scenario.spec, ReplicaSpec):
        report = explore_heal(scenario.spec, scenario.options)
        worse = report.worse_than_local()
        if worse:
            report.violations.append(
                Violation(HEAL_NO_WORSE, scenario.name, f"{', '.join(worse)} lost less than heal")
            )
    else:
        report = explore(scenario.spec, scenario.options, repairer=repairer, progress=progress)
    result = ScenarioResult(scenario, report)
    seen = {v.invariant for v in report.violations}
    result.unexpected = [v for v in report.violations if v.invariant not in scenario.expected]
    result.expected_seen = sorted(seen & set(scenario.expected))
    result.missing = sorted(set(scenario.expected) - seen)
    result.too_few_states = report.states < scenario.min_states
    if shrink_failures and result.unexpected and not isinstance(scenario.spec, ReplicaSpec):
        result.reproducer = shrink(
            scenario.spec, scenario.options, result.unexpected[0].invariant, repairer=repairer
        )
    return result
