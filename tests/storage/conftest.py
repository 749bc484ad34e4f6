"""Fixtures shared by the storage tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyfakefs import helpers
from pyfakefs.fake_filesystem import FakeFilesystem

from logrepair.storage.osdisk import OsDisk


@pytest.fixture
def disk() -> OsDisk:
    return OsDisk()


@pytest.fixture
def unprivileged(fs: FakeFilesystem) -> Iterator[FakeFilesystem]:
    """pyfakefs as a non-root user: only then does it apply permission checks."""
    helpers.set_uid(1000)
    helpers.set_gid(1000)
    yield fs
    helpers.reset_ids()
