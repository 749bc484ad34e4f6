"""The documented list of defect kinds that verify reports and repair fixes.

Every kind is a stable snake_case name that scripts match on (design.md, verify JSON), with what it
means and which repair modes remove it. The README table is generated from this list
(`kinds_markdown()`), so the documentation cannot drift from the code.

`fixed_by` names the modes whose result no longer shows the defect. `kafka` fixes a data defect
only where Kafka's loader recovers the segment (at or after the recovery point); below it the
defect is left and reported, with the modes that would fix it.

`severity` splits the kinds into damage (something a broker or consumer trips on, or data lost)
and notices (valid but unusual; Kafka loads the log as it is): verify exits 1 only on damage.
"""

from __future__ import annotations

from dataclasses import dataclass

ALL = ("kafka", "point-in-time", "salvage")
STRICT = ("point-in-time", "salvage")


@dataclass(frozen=True, slots=True)
class DefectKind:
    name: str
    meaning: str
    fixed_by: tuple[str, ...]
    data: bool = False
    """True when the defect is in `.log` bytes (decides where point-in-time truncates)."""
    severity: str = "damage"
    """`damage` or `notice`."""


_KINDS = (
    # .log contents (the format walker's kinds)
    DefectKind("torn_tail", "the file ends inside a batch (a write cut short)", ALL, True),
    DefectKind(
        "garbage_tail",
        "zeros or junk after the last batch (a preallocated or unsynced block, or up to 17 "
        "trailing bytes Kafka never parses)",
        ALL,
        True,
    ),
    DefectKind("crc_mismatch", "a batch whose stored CRC does not match its bytes", ALL, True),
    DefectKind("bad_magic", "a batch whose magic byte is not 0, 1 or 2", ALL, True),
    DefectKind("bad_length", "a batch length field that is impossible", ALL, True),
    DefectKind(
        "offset_regression",
        "a batch whose offsets do not increase past the previous batch's",
        STRICT,
        True,
    ),
    DefectKind(
        "offset_invalid",
        "a batch whose base offset is negative, whose last offset is below it, or whose range "
        "cannot be in a segment (past 2^63 - 2, or wider than 2^31 - 1 offsets); the offset "
        "fields are not covered by the CRC",
        STRICT,
        True,
    ),
    DefectKind(
        "record_count_mismatch",
        "a batch whose record count disagrees with its offset range",
        STRICT,
        True,
    ),
    DefectKind(
        "decompression_failed",
        "a compressed batch whose records do not decompress, or decompress past the cap "
        "(`--deep-iteration`; a consumer stops at it)",
        STRICT,
        True,
    ),
    DefectKind(
        "invalid_records",
        "a batch whose CRC holds but whose records do not parse (found by `--deep-iteration`, or "
        "in a compressed legacy wrapper; a consumer stops at it with CorruptRecordException)",
        STRICT,
        True,
    ),
    DefectKind(
        "unknown_codec",
        "a batch whose CRC holds but whose compression id is not one Kafka knows "
        "(`--deep-iteration`; a consumer stops at it)",
        STRICT,
        True,
    ),
    DefectKind(
        "offset_overflow",
        "a batch whose offset does not fit the segment's 32-bit relative range (legacy data)",
        ALL,
        True,
    ),
    # segments as a whole
    DefectKind(
        "segment_name_mismatch",
        "a segment named above its first batch's base offset (below it is normal after compaction)",
        STRICT,
        True,
    ),
    DefectKind(
        "offset_overlap",
        "offsets in two segments overlap: batches at or past the next segment's base offset (a "
        "truncation that was never made durable; the strict modes cut them), or a segment whose "
        "batches go back into the previous one's",
        STRICT,
        True,
    ),
    DefectKind(
        "offset_hole",
        "offsets missing between segments that compaction cannot explain: a segment in the "
        "middle of the partition holds no batch and the next one starts above it (the topic is "
        "not compacted: `cleanup.policy`, or no cleaner checkpoint entry); point-in-time cuts "
        "there, salvage drops the emptied segment and reports the gap",
        STRICT,
        True,
    ),
    # indexes
    DefectKind(
        "offset_index_corrupt",
        "the offset index has a bad size, entries out of order, or entries that do not point at "
        "a batch of the log",
        ALL,
    ),
    DefectKind(
        "time_index_corrupt",
        "the time index has a bad size, timestamps or offsets going backwards, or entries "
        "pointing past the log",
        ALL,
    ),
    DefectKind(
        "txn_index_corrupt",
        "the transaction index has an entry below the segment base offset or past the log end, "
        "out of order, or of a version other than 0",
        ALL,
    ),
    DefectKind("index_missing", "a segment without its offset index or time index", ALL),
    DefectKind("index_orphan", "an index file with no `.log` of the same base offset", ALL),
    # leftovers of interrupted operations
    DefectKind("swap_leftover", "a `.swap` file of an interrupted compaction or split", ALL),
    DefectKind("cleaned_leftover", "a `.cleaned` file of an interrupted compaction or split", ALL),
    # A broker leaves these after every compaction, retention or roll-back until file.delete.delay.ms
    # passes, and across a clean shutdown: Kafka deletes them at its next start.
    DefectKind(
        "deleted_leftover",
        "a `.deleted` file that was due for asynchronous deletion",
        ALL,
        severity="notice",
    ),
    DefectKind(
        "tmp_leftover", "a `.tmp` file of an interrupted checkpoint write (Kafka ignores it)", ALL
    ),
    # checkpoints and state files
    DefectKind(
        "checkpoint_malformed",
        "a checkpoint file Kafka cannot parse (Kafka takes the log dir offline or resets it)",
        ALL,
    ),
    DefectKind(
        "partition_metadata_malformed",
        "a partition.metadata Kafka cannot parse (it takes the log dir offline); the topic id "
        "cannot be recovered from the log, so it is reported only",
        (),
    ),
    DefectKind(
        "recovery_point_beyond_end",
        "the recovery point is past the log end: flushed data was lost",
        ALL,
    ),
    DefectKind(
        "high_watermark_beyond_end",
        "the high watermark is past the log end: committed data was lost",
        ALL,
    ),
    DefectKind(
        "log_start_beyond_high_watermark", "the log start offset is past the high watermark", ALL
    ),
    DefectKind(
        "log_start_beyond_end",
        "the log start offset is past the log end (Kafka deletes every segment)",
        ALL,
    ),
    DefectKind(
        "leader_epoch_beyond_end",
        "a leader epoch in leader-epoch-checkpoint starts past the log end",
        ALL,
    ),
    DefectKind(
        "leader_epoch_not_monotonic",
        "leader-epoch-checkpoint entries whose epochs or start offsets do not increase",
        ALL,
    ),
    DefectKind(
        "producer_snapshot_corrupt",
        "a producer-state snapshot that fails its version or CRC check",
        ALL,
    ),
    DefectKind(
        "producer_snapshot_stray",
        "a producer-state snapshot past the log end: it describes data that is gone (Kafka "
        "deletes it at load)",
        ALL,
    ),
    DefectKind(
        "batch_epoch_regression",
        "a batch whose partition leader epoch is below an earlier batch's (Kafka never checks; "
        "the batches are kept, so it is reported only)",
        (),
        severity="notice",
    ),
    DefectKind(
        "batch_too_large",
        "a valid batch larger than message.max.bytes (the config was lowered after it was written; "
        "Kafka's recovery keeps it, so it is reported only)",
        (),
        severity="notice",
    ),
    # names Kafka does not expect
    DefectKind(
        "stray_file",
        "a file Kafka does not know (reported, never touched)",
        (),
        severity="notice",
    ),
    DefectKind(
        "stray_directory",
        "a directory in the log dir whose name is not topic-partition (Kafka refuses to start)",
        (),
    ),
    DefectKind(
        "symlink",
        "a symbolic link inside the log dir, named with its target: not followed, never "
        "touched; a partition holding one is left as it is by every mode, unless `repair` or "
        "`rebuild-index` is given `--follow-symlinks` (a link to a regular file in the log dir, "
        "or under `--follow-symlinks-into DIR`, is then repaired as its target; the link stays) "
        "— `verify --follow-symlinks` reads any link to a regular file as that file",
        (),
        severity="notice",
    ),
    DefectKind(
        "special_file",
        "a FIFO, socket or device node where Kafka expects a file or directory: never opened "
        "(Kafka would hang or fail on it); a partition holding one is left as it is by every "
        "mode, and a root checkpoint that is one is treated as absent",
        (),
    ),
)

KINDS: dict[str, DefectKind] = {k.name: k for k in _KINDS}


def kind(name: str) -> DefectKind:
    """The documented kind named `name`.

    A kind the format layer adds later than this list is treated as damage inside `.log` bytes,
    which the strict modes remove, rather than crashing a scan."""
    found = KINDS.get(name)
    if found is None:
        return DefectKind(name, "damage in a batch", STRICT, True)
    return found


def is_data_defect(name: str) -> bool:
    return kind(name).data


def severity(name: str) -> str:
    return kind(name).severity


def kinds_markdown() -> str:
    """The README's defect-kind table."""
    lines = ["| kind | severity | meaning | fixed by |", "| --- | --- | --- | --- |"]
    for k in _KINDS:
        modes = ", ".join(f"`{m}`" for m in k.fixed_by) or "reported only"
        lines.append(f"| `{k.name}` | {k.severity} | {k.meaning} | {modes} |")
    return "\n".join(lines) + "\n"
