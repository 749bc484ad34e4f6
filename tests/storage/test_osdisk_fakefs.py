"""Filesystem edge cases for OsDisk under pyfakefs: a full disk, permissions, odd names.

(pyfakefs does not emulate os.pread/os.pwrite, so reads and writes of data are tested on real
files in test_osdisk.py; here the operations that fail for reasons a real disk rarely offers up.)
"""

from __future__ import annotations

import errno

import pytest

from logrepair.storage.abstract_index import DEFAULT_MAX_INDEX_SIZE
from logrepair.storage.offset_index import OffsetIndex
from logrepair.storage.osdisk import OsDisk


def test_preallocating_an_index_on_a_full_disk_names_the_file(fs) -> None:
    fs.set_disk_usage(1 << 20)
    fs.create_dir("/data/t-0")
    path = "/data/t-0/00000000000000000000.index"
    with pytest.raises(OSError) as info:
        OffsetIndex.open(OsDisk(), path, 0, max_index_size=DEFAULT_MAX_INDEX_SIZE)
    assert info.value.errno == errno.ENOSPC
    assert path in str(info.value)


def test_read_only_file_cannot_be_opened_for_writing(unprivileged) -> None:
    unprivileged.create_file("/data/t-0/cp", contents=b"0\n0\n", st_mode=0o100444)
    disk = OsDisk()
    with pytest.raises(PermissionError) as info:
        disk.open("/data/t-0/cp", write=True)
    assert "/data/t-0/cp" in str(info.value)


def test_read_only_directory_refuses_create_rename_unlink(unprivileged) -> None:
    unprivileged.create_file("/data/f", contents=b"x")
    unprivileged.chmod("/data", 0o555)
    disk = OsDisk()
    with pytest.raises(PermissionError):
        disk.open("/data/new", create=True)
    with pytest.raises(PermissionError):
        disk.rename("/data/f", "/data/g")
    with pytest.raises(PermissionError):
        disk.unlink("/data/f")
    with pytest.raises(PermissionError):
        disk.make_dirs("/data/sub/dir")
    with pytest.raises(PermissionError) as info:
        disk.lock("/data/.lock")
    assert "/data" in str(info.value)
    assert disk.list_dir("/data") == ["f"]


def test_unreadable_directory_cannot_be_listed(unprivileged) -> None:
    unprivileged.create_dir("/data/t-0")
    unprivileged.chmod("/data/t-0", 0o000)
    with pytest.raises(PermissionError) as info:
        OsDisk().list_dir("/data/t-0")
    assert "/data/t-0" in str(info.value)


@pytest.mark.parametrize(
    "name",
    ["topic with space-0", "tøpic-0", "new\nline-0", "-0", "ends.with.dot.", "x" * 255],
)
def test_odd_names_survive_listing_and_renaming(fs, name: str) -> None:
    fs.create_dir("/data")
    disk = OsDisk()
    disk.make_dirs(f"/data/{name}")
    assert disk.list_dir("/data") == [name]
    assert disk.is_dir(f"/data/{name}")
    disk.rename(f"/data/{name}", f"/data/{name[:200]}.abc-delete")
    assert disk.list_dir("/data") == [f"{name[:200]}.abc-delete"]
