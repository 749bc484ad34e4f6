"""Offset checkpoints: Kafka's read rules and messages (spec fmt §8.1-8.2, rec §7.4), atomic writes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from logrepair.storage.checkpoints import (
    MAX_LINE_LENGTH,
    CheckpointError,
    format_offsets,
    iter_lines,
    read_offset_entries,
    read_offsets,
    read_small_file,
    write_offsets,
)
from logrepair.storage.disk import join
from logrepair.storage.layout import TopicPartition
from logrepair.storage.osdisk import OsDisk


@pytest.fixture
def path(tmp_path) -> str:
    return join(str(tmp_path), "recovery-point-offset-checkpoint")


def read(disk, path, data: bytes):
    disk.write_file_atomic(path, data)
    return read_offsets(disk, path)


topics = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-",
                 min_size=1, max_size=40)  # fmt: skip


@given(
    st.dictionaries(
        st.builds(TopicPartition, topics, st.integers(0, 2**31 - 1)),
        st.integers(0, 2**63 - 1),
        max_size=30,
    )
)
def test_round_trip(tmp_path_factory, offsets) -> None:
    disk = OsDisk()
    directory = str(tmp_path_factory.mktemp("cp"))
    path = join(directory, "replication-offset-checkpoint")
    write_offsets(disk, path, offsets)
    assert read_offsets(disk, path) == offsets
    assert disk.list_dir(directory) == ["replication-offset-checkpoint"]


def test_format_is_kafkas(disk, path) -> None:
    write_offsets(disk, path, {TopicPartition("b", 1): 5, TopicPartition("a", 0): 100})
    assert disk.read_file(path) == b"0\n2\na 0 100\nb 1 5\n"
    assert format_offsets({}) == b"0\n0\n"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", {}),
        (b"0\n", {}),
        (b"0", {}),
        (b"0\n0\n", {}),
        (b"0\n1\nt 0 5\n", {TopicPartition("t", 0): 5}),
        (b"0\r\n1\r\nt 0 5\r\n", {TopicPartition("t", 0): 5}),  # readLine accepts \r\n and \r
        (b"0\r1\rt 0 5", {TopicPartition("t", 0): 5}),
        (b"0\n1\nt\t0  5\n", {TopicPartition("t", 0): 5}),  # \s+ between fields
        (b"0\n1\nt 0 5 \n", {TopicPartition("t", 0): 5}),  # Java's split drops trailing empties
        (b"0\n1\nt +0 -5\n", {TopicPartition("t", 0): -5}),  # parseInt takes a sign
        (b"0\n2\nt 0 5\nt 0 7\n", {TopicPartition("t", 0): 7}),  # a later duplicate wins
    ],
)
def test_accepted(disk, path, data, expected) -> None:
    assert read(disk, path, data) == expected


def test_duplicates_are_kept_in_the_entry_list(disk, path) -> None:
    disk.write_file_atomic(path, b"0\n2\nt 0 5\nt 0 7\n")
    assert read_offset_entries(disk, path) == [
        (TopicPartition("t", 0), 5),
        (TopicPartition("t", 0), 7),
    ]


@pytest.mark.parametrize(
    ("data", "line_number", "message", "structural"),
    [
        (b"x\n", 1, "Malformed line in checkpoint file [{p}]: x", True),
        (b" 0\n0\n", 1, "Malformed line in checkpoint file [{p}]:  0", True),
        (b"\n", 1, "Malformed line in checkpoint file [{p}]: ", True),
        (b"1\n0\n", 1, "Unrecognised version:1, expected version: 0 in checkpoint file at: {p}", True),
        (b"2\n", 1, "Unrecognised version:2, expected version: 0 in checkpoint file at: {p}", True),
        (b"0\nx\n", 2, "Malformed line in checkpoint file [{p}]: x", True),
        (b"0\n1 \n", 2, "Malformed line in checkpoint file [{p}]: 1 ", True),
        (b"0\n\n", 2, "Malformed line in checkpoint file [{p}]: ", True),
        (b"0\n1\nt 0\n", 3, "Malformed line in checkpoint file [{p}]: t 0", True),
        (b"0\n1\nt 0 5 6\n", 3, "Malformed line in checkpoint file [{p}]: t 0 5 6", True),
        (b"0\n1\n t 0 5\n", 3, "Malformed line in checkpoint file [{p}]:  t 0 5", True),
        (b"0\n1\nt x 5\n", 3, "Malformed line in checkpoint file [{p}]: t x 5", False),
        (b"0\n1\nt 0 5x\n", 3, "Malformed line in checkpoint file [{p}]: t 0 5x", False),
        (b"0\n1\nt 2147483648 5\n", 3, "Malformed line in checkpoint file [{p}]: t 2147483648 5", False),
        (b"0\n1\nt 0 9223372036854775808\n", 3,
         "Malformed line in checkpoint file [{p}]: t 0 9223372036854775808", False),
        (b"0\n1\nt 0 5\n\n", 4, "Malformed line in checkpoint file [{p}]: ", True),
        (b"0\n2\nt 0 5\n", None, "Expected [2] entries in checkpoint file [{p}], but found only [1]", True),
        (b"0\n0\nt 0 5\n", None, "Expected [0] entries in checkpoint file [{p}], but found only [1]", True),
        (b"0\n-1\n", None, "Expected [-1] entries in checkpoint file [{p}], but found only [0]", True),
    ],
)  # fmt: skip
def test_malformed(disk, path, data, line_number, message, structural) -> None:
    with pytest.raises(CheckpointError) as info:
        read(disk, path, data)
    err = info.value
    assert err.message == message.format(p=path)
    assert err.line_number == line_number
    assert err.structural is structural
    assert err.path == path
    if line_number is not None:
        assert str(err).endswith(f"(line {line_number})")


def test_not_utf8_is_a_checkpoint_error(disk, path) -> None:
    with pytest.raises(CheckpointError, match="not UTF-8"):
        read(disk, path, b"0\n1\nt\xff 0 5\n")


def test_unicode_digits_are_numbers_to_java(disk, path) -> None:
    # Character.digit accepts every Unicode decimal digit, so Kafka reads "٥" as 5.
    assert read(disk, path, "0\n1\nt 0 \u0665\n".encode()) == {TopicPartition("t", 0): 5}


def test_missing_file_is_file_not_found(disk, path) -> None:
    with pytest.raises(FileNotFoundError):
        read_offsets(disk, path)


def test_write_is_atomic_over_a_stale_tmp(disk, path) -> None:
    disk.write_file_atomic(path + ".tmp", b"garbage left by a crash during a write\n" * 10)
    write_offsets(disk, path, {TopicPartition("t", 0): 1})
    assert read_offsets(disk, path) == {TopicPartition("t", 0): 1}
    assert not disk.exists(path + ".tmp")


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 64])
def test_lines_split_across_read_chunks(disk, path, monkeypatch, chunk) -> None:
    monkeypatch.setattr("logrepair.storage.checkpoints._READ_CHUNK", chunk)
    data = "0\r\n3\rt\u00e9 0 5\r\nu 1 6\n\u0665 2 7"
    disk.write_file_atomic(path, data.encode())
    assert list(iter_lines(disk, path)) == ["0", "3", "t\u00e9 0 5", "u 1 6", "\u0665 2 7"]
    assert read_offsets(disk, path)[TopicPartition("\u0665", 2)] == 7


def test_an_overlong_line_is_malformed_without_being_held(disk, path) -> None:
    with disk.open(path, create=True) as f:
        f.write_at(0, b"0\n1\n")
        f.truncate(4 + 8 * MAX_LINE_LENGTH)  # one line of zero bytes, no line break
    with pytest.raises(CheckpointError) as info:
        read_offsets(disk, path)
    assert info.value.line_number == 3
    assert info.value.message.startswith(f"Malformed line in checkpoint file [{path}]: ")
    assert len(str(info.value)) < 300


def test_small_files_have_a_size_limit(disk, path) -> None:
    disk.write_file_atomic(path, b"x" * 11)
    assert read_small_file(disk, path, limit=11) == b"x" * 11
    with pytest.raises(CheckpointError, match="more than a 10-byte limit"):
        read_small_file(disk, path, limit=10)


def _lines_or_error(disk, path, limit):
    try:
        return list(iter_lines(disk, path, limit=limit))
    except CheckpointError as e:
        return (e.message, e.line_number)


@given(
    st.lists(
        st.sampled_from(
            [b"0", b"12 7", b"t\xc3\xa9 0 5", b"\r", b"\n", b"\r\n", b"\xe2\x82", b" "]
        ),
        max_size=40,
    ),
    st.sampled_from([0, 1, 2**16, 2**20]),
)
def test_a_whole_read_gives_the_lines_and_errors_of_the_chunked_one(
    tmp_path_factory, pieces, padding
) -> None:
    """`limit` reads the file in one call (and splits a small one at once): the same lines, and
    the same error at the same line, as the chunked reading."""
    path = join(str(tmp_path_factory.mktemp("lines")), "leader-epoch-checkpoint")
    disk = OsDisk()
    disk.write_file_atomic(path, b"".join(pieces) + b"x" * padding)
    assert _lines_or_error(disk, path, 1 << 22) == _lines_or_error(disk, path, None)
    if padding == 2**20:
        with pytest.raises(CheckpointError, match="is not a checkpoint file Kafka wrote"):
            list(iter_lines(disk, path, limit=2**16))
