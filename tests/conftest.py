"""Suite-wide test settings.

Hypothesis runs with no per-example deadline (CI machines are shared and slow) and a moderate example
count; HYPOTHESIS_PROFILE=thorough raises it for a long local run.
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
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
