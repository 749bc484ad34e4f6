"""meta.properties: Java properties parsing and Kafka's MetaProperties checks (spec fmt §8.5)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from logrepair.storage.checkpoints import CheckpointError
from logrepair.storage.disk import join
from logrepair.storage.meta_properties import (
    MetaProperties,
    format_properties,
    meta_properties_from,
    parse_properties,
    read_meta_properties,
    write_meta_properties,
)

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qk"
DIRECTORY = "b3e1Z2xkS1mXq4t0d7c9Aw"


@pytest.fixture
def path(tmp_path) -> str:
    return join(str(tmp_path), "meta.properties")


def test_v1_round_trip_and_format(disk, path) -> None:
    meta = MetaProperties(1, CLUSTER, 3, DIRECTORY)
    write_meta_properties(disk, path, meta)
    lines = disk.read_file(path).decode().split("\n")
    assert lines[0] == "#" and lines[1].startswith("#")
    assert lines[2:] == [
        f"cluster.id={CLUSTER}",
        f"directory.id={DIRECTORY}",
        "node.id=3",
        "version=1",
        "",
    ]
    assert read_meta_properties(disk, path) == meta
    assert not disk.exists(path + ".tmp")


def test_v0_round_trip(disk, path) -> None:
    for meta in (MetaProperties(0), MetaProperties(0, CLUSTER, 7), MetaProperties(0, None, 7)):
        write_meta_properties(disk, path, meta)
        assert read_meta_properties(disk, path) == meta
    assert b"broker.id=7" in disk.read_file(path)


def test_missing_version_means_zero() -> None:
    assert meta_properties_from({"broker.id": "5"}) == MetaProperties(0, None, 5)


def test_version_string_is_trimmed() -> None:
    assert meta_properties_from({"version": " 1\t", "cluster.id": "c", "node.id": "1"}).version == 1


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"version": "2"}, "Unknown meta.properties version number 2"),
        ({"version": "-1"}, "Unknown meta.properties version number -1"),
        ({"version": "one"}, "Invalid meta.properties version string 'one'"),
        ({"version": ""}, "Invalid meta.properties version string ''"),
        ({"version": "1", "node.id": "1"}, "cluster.id was not found."),
        ({"version": "1", "cluster.id": "c"}, "Failed to find node.id"),
        ({"version": "1", "cluster.id": "c", "node.id": "x"},
         "Unable to read node.id as a base-10 number."),
        ({"version": "0", "broker.id": "1.5"}, "Unable to read broker.id as a base-10 number."),
        ({"version": "1", "cluster.id": "c", "node.id": "1", "directory.id": "shortish"},
         "Unable to read directory.id as a Uuid: Input string `shortish` decoded as 6 bytes, which "
         "is not equal to the expected 16 bytes of a base64-encoded UUID"),
        ({"version": "1", "cluster.id": "c", "node.id": "1", "directory.id": "short"},
         "Unable to read directory.id as a Uuid: Last unit does not have enough valid bits"),
        ({"version": "1", "cluster.id": "c", "node.id": "1", "directory.id": "a+b"},
         "Unable to read directory.id as a Uuid: Illegal base64 character 2b"),
    ],
)  # fmt: skip
def test_kafkas_errors(props, message) -> None:
    with pytest.raises(ValueError) as info:
        meta_properties_from(props)
    assert str(info.value) == message


def test_read_errors_name_the_file(disk, path) -> None:
    disk.write_file_atomic(path, b"version=1\nnode.id=1\n")
    with pytest.raises(CheckpointError) as info:
        read_meta_properties(disk, path)
    assert str(info.value) == f"cluster.id was not found. ({path})"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a=b", {"a": "b"}),
        ("a = b ", {"a": "b "}),
        ("a:b", {"a": "b"}),
        ("a b", {"a": "b"}),
        ("a  =  b", {"a": "b"}),
        ("a\t:\tb", {"a": "b"}),
        ("a", {"a": ""}),
        ("a=", {"a": ""}),
        ("   # comment\n! other\n\na=1", {"a": "1"}),
        ("a=b=c", {"a": "b=c"}),
        ("a\\=b=c", {"a=b": "c"}),
        ("a\\ b=c", {"a b": "c"}),
        ("a=\\u0041\\t", {"a": "A\t"}),
        ("a=one\\\n    two", {"a": "onetwo"}),
        ("a=one\\\\\nb=2", {"a": "one\\", "b": "2"}),
        ("a=1\r\nb=2\rc=3", {"a": "1", "b": "2", "c": "3"}),
        ("a=1\na=2", {"a": "2"}),
        ("a=x\\", {"a": "x"}),
        ("#a=1\\\nb=2", {"b": "2"}),
    ],
)
def test_java_properties_syntax(text, expected) -> None:
    assert parse_properties(text.encode("latin-1")) == expected


def test_properties_are_latin_1() -> None:
    assert parse_properties(b"k=caf\xe9") == {"k": "caf\u00e9"}


def test_malformed_unicode_escape(disk, path) -> None:
    disk.write_file_atomic(path, b"version=\\u00zz\n")
    with pytest.raises(CheckpointError, match="Malformed"):
        read_meta_properties(disk, path)


values = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=30)


@given(st.dictionaries(values.filter(bool), values, max_size=8))
def test_format_then_parse_round_trips(props) -> None:
    assert parse_properties(format_properties(props, now=0)) == props
