"""Suite-wide test settings.

Hypothesis runs with no per-example deadline (CI machines are shared and slow) and a moderate example
count; under CI=true the examples are derandomized; HYPOTHESIS_PROFILE=thorough raises the count for
a long local run.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "default",
    deadline=None,
    max_examples=100,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("thorough", deadline=None, max_examples=2000)
# CI runs the same examples every time, so a red run is a regression, not a lucky draw; finding new
# counterexamples is what the default and thorough profiles are for, on developers' machines.
settings.register_profile("ci", parent=settings.get_profile("default"), derandomize=True)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "default")
)
