"""The JSON contracts of design.md, stated once for every test that holds the code to them."""

# `logrepair dump --json`: one object per batch, keys in this order (`file` first, added by the dump;
# `records` last, with --deep-iteration).
DUMP_BATCH_KEYS = [
    "file",
    "position",
    "size",
    "magic",
    "base_offset",
    "last_offset",
    "count",
    "codec",
    "crc",
    "crc_valid",
    "is_transactional",
    "is_control",
    "producer_id",
    "producer_epoch",
    "base_sequence",
    "partition_leader_epoch",
    "timestamp_type",
    "first_timestamp",
    "max_timestamp",
]

# What a batch's `to_json()` gives: the dump object without the file the dump adds.
BATCH_JSON_KEYS = set(DUMP_BATCH_KEYS) - {"file"}

# `logrepair repair --json`: one object with these keys; `partitions` holds one entry per partition
# the plan touches, with (at least) REPAIR_PARTITION_KEYS: offset lists are `[first, last]` ranges of
# that partition alone, `high_watermark` and `recovery_point` are `[before, after]`.
REPAIR_KEYS = {
    "path",
    "mode",
    "applied",
    "dry_run",
    "actions",
    "removed_bytes",
    "removed_offsets",
    "gaps",
    "partitions",
    "quarantine",
    "left",
    "notes",
    "finished_interrupted",
}
REPAIR_PARTITION_KEYS = {
    "topic",
    "partition",
    "removed_offsets",
    "gaps",
    "removed_bytes",
    "acknowledged_lost",
    "high_watermark",
    "recovery_point",
}
