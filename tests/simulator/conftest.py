"""The simulator's own pytest fixtures, the ones `simulator.testing` offers every suite."""

from simulator.testing import sim_disk, sim_disk_models  # noqa: F401
