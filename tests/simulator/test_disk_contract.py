"""SimDisk keeps the Disk contract OsDisk keeps (tests/storage/disk_contract.py), before any crash."""

from __future__ import annotations

import pytest

from simulator.disk import PersistenceModel, SimDisk
from tests.storage.disk_contract import DiskContract


class TestSimDiskContract(DiskContract):
    @pytest.fixture(params=[PersistenceModel(), PersistenceModel(4096, False, False, False)])
    def disk(self, request) -> SimDisk:
        return SimDisk(request.param)

    @pytest.fixture
    def root(self, disk: SimDisk) -> str:
        disk.make_dirs("/data/root")
        return "/data/root"
