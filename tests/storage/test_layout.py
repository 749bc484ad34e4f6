"""File and directory names as Kafka forms and parses them (spec fmt §5)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from logrepair.storage import layout
from logrepair.storage.layout import (
    DirKind,
    FileKind,
    LayoutError,
    TopicPartition,
    classify_log_dir_file,
    classify_partition_file,
    parse_partition_dir_name,
)


def test_segment_names_are_20_digit_zero_padded() -> None:
    assert layout.log_file_name(0) == "00000000000000000000.log"
    assert layout.index_file_name(45) == "00000000000000000045.index"
    assert layout.time_index_file_name(2**63 - 1) == "09223372036854775807.timeindex"
    assert layout.txn_index_file_name(7) == "00000000000000000007.txnindex"
    assert layout.snapshot_file_name(100) == "00000000000000000100.snapshot"
    assert layout.segment_file_name(5, ".log", ".swap") == "00000000000000000005.log.swap"
    assert layout.kraft_snapshot_file_name(10, 3) == "00000000000000000010-0000000003.checkpoint"
    # As Kafka 4.1.1 names the segment it opens for `-5.log` (seen with the harness).
    assert layout.log_file_name(-5) == "-00000000000000000005.log"
    assert "beside it" in layout.classify_partition_file("-5.log").detail
    own = layout.classify_partition_file("-00000000000000000005.log")
    assert not own.canonical and own.detail.endswith("a segment Kafka never writes")


@given(st.integers(0, 2**63 - 1))
def test_offset_round_trips_through_every_name(offset: int) -> None:
    for suffix in (".log", ".index", ".timeindex", ".txnindex", ".snapshot"):
        for leftover in ("", ".deleted", ".cleaned", ".swap"):
            name = layout.segment_file_name(offset, suffix, leftover)
            assert layout.offset_from_file_name(name) == offset
            classified = classify_partition_file(name)
            assert classified.offset == offset
            assert classified.leftover == (leftover or None)
            assert classified.canonical


def test_offset_parsing_is_long_parse_long_of_the_text_before_the_first_dot() -> None:
    assert layout.offset_from_file_name("5.log") == 5
    assert layout.offset_from_file_name("+5.log") == 5
    assert layout.offset_from_file_name("00000000000000000005.log.swap") == 5
    for bad in ("x.log", ".log", " 5.log", "5_0.log", "9223372036854775808.log"):
        with pytest.raises(LayoutError):
            layout.offset_from_file_name(bad)


@pytest.mark.parametrize(
    ("name", "kind", "offset", "leftover"),
    [
        ("00000000000000000000.log", FileKind.LOG, 0, None),
        ("00000000000000000100.index", FileKind.INDEX, 100, None),
        ("00000000000000000100.timeindex", FileKind.TIME_INDEX, 100, None),
        ("00000000000000000100.txnindex", FileKind.TXN_INDEX, 100, None),
        ("00000000000000000100.snapshot", FileKind.SNAPSHOT, 100, None),
        ("00000000000000000100.log.deleted", FileKind.LOG, 100, ".deleted"),
        ("00000000000000000100.index.cleaned", FileKind.INDEX, 100, ".cleaned"),
        ("00000000000000000100.timeindex.swap", FileKind.TIME_INDEX, 100, ".swap"),
        ("00000000000000000100.txnindex.deleted", FileKind.TXN_INDEX, 100, ".deleted"),
        ("00000000000000000100.snapshot.deleted", FileKind.SNAPSHOT, 100, ".deleted"),
        ("leader-epoch-checkpoint", FileKind.LEADER_EPOCH_CHECKPOINT, None, None),
        ("partition.metadata", FileKind.PARTITION_METADATA, None, None),
        ("quorum-state", FileKind.QUORUM_STATE, None, None),
        ("bootstrap.checkpoint", FileKind.BOOTSTRAP_CHECKPOINT, None, None),
        ("00000000000000000010-0000000003.checkpoint", FileKind.KRAFT_SNAPSHOT, 10, None),
        ("00000000000000000010-0000000003.checkpoint.part", FileKind.KRAFT_SNAPSHOT, 10, ".part"),
        (
            "00000000000000000010-0000000003.checkpoint.deleted",
            FileKind.KRAFT_SNAPSHOT,
            10,
            ".deleted",
        ),
        ("notes.txt", FileKind.UNKNOWN, None, None),
        ("00000000000000000000.log.bak", FileKind.UNKNOWN, None, None),
    ],
)
def test_partition_files_are_classified(name, kind, offset, leftover) -> None:
    got = classify_partition_file(name)
    assert (got.kind, got.offset, got.leftover) == (kind, offset, leftover)
    assert not got.blocks_kafka_load and not got.tmp


def test_kraft_snapshot_epoch() -> None:
    assert classify_partition_file("00000000000000000010-0000000003.checkpoint").epoch == 3


def test_checkpoint_tmp_leftovers_in_a_partition_dir() -> None:
    got = classify_partition_file("partition.metadata.tmp")
    assert got.kind is FileKind.PARTITION_METADATA and got.tmp
    got = classify_partition_file("leader-epoch-checkpoint.tmp")
    assert got.kind is FileKind.LEADER_EPOCH_CHECKPOINT and got.tmp
    assert classify_partition_file("other.tmp").kind is FileKind.UNKNOWN


def test_names_kafka_cannot_parse_block_loading() -> None:
    # A .log whose prefix is not a long: LogSegment.open throws NumberFormatException.
    got = classify_partition_file("abc.log")
    assert got.kind is FileKind.LOG and got.offset is None and got.blocks_kafka_load
    # .cleaned and .swap names are parsed whatever their type.
    assert classify_partition_file("x.cleaned").blocks_kafka_load
    assert classify_partition_file("x.index.swap").blocks_kafka_load
    # .deleted names are removed without parsing.
    got = classify_partition_file("abc.log.deleted")
    assert got.kind is FileKind.LOG and not got.blocks_kafka_load
    assert not classify_partition_file("junk.deleted").blocks_kafka_load


def test_non_canonical_names() -> None:
    got = classify_partition_file("5.log")
    assert got.offset == 5 and not got.canonical
    assert classify_partition_file("00000000000000000005.log").canonical


@pytest.mark.parametrize(
    ("name", "kind", "tmp"),
    [
        (".lock", FileKind.LOCK, False),
        (".kafka_cleanshutdown", FileKind.CLEAN_SHUTDOWN, False),
        ("meta.properties", FileKind.META_PROPERTIES, False),
        ("meta.properties.tmp", FileKind.META_PROPERTIES, True),
        ("recovery-point-offset-checkpoint", FileKind.OFFSET_CHECKPOINT, False),
        ("log-start-offset-checkpoint", FileKind.OFFSET_CHECKPOINT, False),
        ("replication-offset-checkpoint", FileKind.OFFSET_CHECKPOINT, False),
        ("cleaner-offset-checkpoint.tmp", FileKind.OFFSET_CHECKPOINT, True),
        # kafka-storage format writes it at the metadata log dir's root (seen from Kafka 4.1.1)
        ("bootstrap.checkpoint", FileKind.BOOTSTRAP_CHECKPOINT, False),
        (".lock.tmp", FileKind.UNKNOWN, False),
        ("random", FileKind.UNKNOWN, False),
    ],
)
def test_log_dir_root_files(name, kind, tmp) -> None:
    got = classify_log_dir_file(name)
    assert (got.kind, got.tmp) == (kind, tmp)
    assert not got.blocks_kafka_load


@pytest.mark.parametrize(
    ("name", "topic", "partition", "kind", "unique_id"),
    [
        ("foo-0", "foo", 0, DirKind.LIVE, None),
        ("my-topic-12", "my-topic", 12, DirKind.LIVE, None),
        ("a.b_c-3", "a.b_c", 3, DirKind.LIVE, None),
        ("foo-3.0123456789abcdef0123456789abcdef-delete", "foo", 3, DirKind.DELETE, None),
        ("foo-3.abc-future", "foo", 3, DirKind.FUTURE, "abc"),
        ("foo-3.abc-stray", "foo", 3, DirKind.STRAY, "abc"),
        ("__cluster_metadata-0", "__cluster_metadata", 0, DirKind.LIVE, None),
        ("topic--1", "topic-", 1, DirKind.LIVE, None),
        ("t-+1", "t", 1, DirKind.LIVE, None),
    ],
)
def test_partition_dir_names(name, topic, partition, kind, unique_id) -> None:
    got = parse_partition_dir_name(name)
    assert got.topic_partition == TopicPartition(topic, partition)
    assert got.kind is kind
    if unique_id is not None:
        assert got.unique_id == unique_id
    assert got.is_cluster_metadata == (topic == "__cluster_metadata")


@pytest.mark.parametrize(
    "name",
    ["", "foo", "lost+found", "foo-", "-0", "foo-x", "foo-0.abc-delete.x", "foo 0.x-delete",
     "foo-0-delete", "foo.abc-delete", "foo-99999999999"],
)  # fmt: skip
def test_unparsable_partition_dirs_have_kafkas_message(name) -> None:
    with pytest.raises(LayoutError) as info:
        parse_partition_dir_name(name, f"/data/{name}")
    assert str(info.value) == (
        f"Found directory /data/{name}, '{name}' is not in the form of topic-partition or "
        "topic-partition.uniqueId-delete (if marked for deletion).\n"
        "Kafka's log directories (and children) should only contain Kafka topic data."
    )


def test_java_whitespace_is_ascii_only_in_dir_patterns() -> None:
    # A no-break space is \S to Java, so the pattern matches.
    got = parse_partition_dir_name("fo\u00a0o-1.abc-delete")
    assert got.topic_partition == TopicPartition("fo\u00a0o", 1)


def test_dir_name_builders() -> None:
    tp = TopicPartition("orders", 7)
    uid = "0123456789abcdef0123456789abcdef"
    assert layout.log_dir_name(tp) == "orders-7"
    assert layout.delete_dir_name(tp, uid) == f"orders-7.{uid}-delete"
    assert layout.stray_dir_name(tp, uid) == f"orders-7.{uid}-stray"
    assert layout.future_dir_name(tp, uid) == f"orders-7.{uid}-future"
    for name in (layout.delete_dir_name(tp, uid), layout.future_dir_name(tp, uid)):
        assert parse_partition_dir_name(name).topic_partition == tp


def test_long_topics_are_truncated_for_delete_and_stray_only() -> None:
    tp = TopicPartition("t" * 249, 12345)
    uid = "f" * 32
    for build in (layout.delete_dir_name, layout.stray_dir_name):
        name = build(tp, uid)
        assert len(name) == 255
        assert name.endswith(f"-12345.{uid}" + name[name.rindex("-") :])
        assert parse_partition_dir_name(name).topic_partition.partition == 12345
    assert len(layout.future_dir_name(tp, uid)) > 255


@given(
    st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", min_size=1,
            max_size=249),
    st.integers(0, 2**31 - 1),
)  # fmt: skip
def test_live_dir_names_round_trip(topic: str, partition: int) -> None:
    tp = TopicPartition(topic, partition)
    assert parse_partition_dir_name(layout.log_dir_name(tp)).topic_partition == tp
