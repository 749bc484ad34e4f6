"""The clean-shutdown marker (spec fmt §8.6): existence decides; content is Kafka's JSON."""

from __future__ import annotations

import pytest

from logrepair.storage.checkpoints import CheckpointError
from logrepair.storage.clean_shutdown import (
    had_clean_shutdown,
    marker_path,
    read_broker_epoch,
    remove_marker,
    write_marker,
)
from logrepair.storage.osdisk import OsDisk


@pytest.fixture
def log_dir(tmp_path) -> str:
    return str(tmp_path)


def test_write_read_remove(log_dir) -> None:
    disk = OsDisk()
    assert not had_clean_shutdown(disk, log_dir)
    write_marker(disk, log_dir, 42)
    assert disk.read_file(marker_path(log_dir)) == b'{"version":0,"brokerEpoch":42}'
    assert had_clean_shutdown(disk, log_dir)
    assert read_broker_epoch(disk, log_dir) == 42
    write_marker(disk, log_dir, 7)  # rewritten whole, not over the old bytes
    assert read_broker_epoch(disk, log_dir) == 7
    remove_marker(disk, log_dir)
    assert not had_clean_shutdown(disk, log_dir)


def test_unknown_fields_are_ignored(log_dir) -> None:
    disk = OsDisk()
    disk.write_file_atomic(marker_path(log_dir), b'{"brokerEpoch": -1, "version": 0, "x": [1]}')
    assert read_broker_epoch(disk, log_dir) == -1


@pytest.mark.parametrize(
    "content",
    [b"", b"not json", b"[]", b'{"version":0}', b'{"brokerEpoch":"5"}', b'{"brokerEpoch":true}',
     b'{"brokerEpoch":1.5}', b'{"brokerEpoch":9223372036854775808}', b"\xff"],
)  # fmt: skip
def test_bad_content_is_a_checkpoint_error(log_dir, content) -> None:
    disk = OsDisk()
    disk.write_file_atomic(marker_path(log_dir), content)
    with pytest.raises(CheckpointError) as info:
        read_broker_epoch(disk, log_dir)
    assert marker_path(log_dir) in str(info.value)
    assert had_clean_shutdown(disk, log_dir)  # existence still decides
