"""kafka-dump-log's text lines (spec fmt §10.3), one function per line shape, no I/O.

Operators compare this output with what kafka-dump-log printed on another broker, or grep it with
scripts written for kafka-dump-log, so every field name, separator and oddity (the legacy record's
stray closing brace) is Kafka's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from ..decoders import DecodeError, format_kraft_control, is_kraft_control
from ..format.batch_layout import Record, codec_name
from ..format.control import ControlType, EndTransactionMarker, parse_control_key
from ..format.errors import Defect, FormatError
from ..storage.java_text import utf8

RECORD_INDENT = "|"

# (key bytes or None, value bytes or None, offset) -> (key text or None, payload text or None)
Parser = Callable[[bytes | None, bytes | None, int], tuple[str | None, str | None]]

_TIMESTAMP_TYPES = {"create": "CreateTime", "append": "LogAppendTime", None: "NoTimestampType"}


def timestamp_type_name(batch) -> str:
    return _TIMESTAMP_TYPES[batch.timestamp_type]


def _bool(value: bool) -> str:
    return "true" if value else "false"


def batch_line(batch, crc_valid: bool) -> str:
    """`printBatchLevel`: one line per batch (v2) or shallow message (magic 0/1)."""
    ts = f"{timestamp_type_name(batch)}: {_timestamp(batch.max_timestamp)}"
    tail = (
        f"size: {batch.size} magic: {batch.magic} compresscodec: {codec_name(batch.codec)} "
        f"crc: {batch.crc} isvalid: {_bool(crc_valid)}"
    )
    if batch.magic < 2:
        return f"offset: {batch.last_offset} position: {batch.position} {ts} {tail}"
    horizon = batch.delete_horizon_ms
    horizon_text = "OptionalLong.empty" if horizon is None else f"OptionalLong[{horizon}]"
    return (
        f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} count: {batch.count} "
        f"baseSequence: {batch.base_sequence} lastSequence: {batch.last_sequence} "
        f"producerId: {batch.producer_id} producerEpoch: {batch.producer_epoch} "
        f"partitionLeaderEpoch: {batch.partition_leader_epoch} "
        f"isTransactional: {_bool(batch.is_transactional)} isControl: {_bool(batch.is_control)} "
        f"deleteHorizonMs: {horizon_text} position: {batch.position} {ts} {tail}"
    )


def record_lines(
    batch,
    records: list[Record],
    *,
    metadata: bool,
    parser: Parser | None,
    legacy_crcs: list[tuple[int, int]] | None = None,
) -> Iterator[str]:
    """The record lines of a deep iteration over one batch. `legacy_crcs` are the (stored,
    computed) CRCs of each magic 0/1 message (`LegacyBatch.record_crcs`). What is the same for
    every record of the batch is worked out once."""
    ts_name = timestamp_type_name(batch)
    v2 = batch.magic >= 2
    control = batch.is_control
    parse = None if control else parser
    key_lead = " key: " if metadata else f"{RECORD_INDENT} key: "
    for i, record in enumerate(records):
        key, value = record.key, record.value
        line = ""
        if metadata:
            ts = record.timestamp
            line = (
                f"{RECORD_INDENT} offset: {record.offset} {ts_name}: {-1 if ts is None else ts} "
                f"keySize: {-1 if key is None else len(key)} "
                f"valueSize: {-1 if value is None else len(value)}"
            )
            if v2:
                keys = ",".join([k for k, _ in record.headers])
                line += f" sequence: {record.sequence} headerKeys: [{keys}]"
            if legacy_crcs is not None and i < len(legacy_crcs):
                crc, computed = legacy_crcs[i]
                # Kafka prints a stray closing brace here (a typo in DumpLogSegments); kept.
                line += f" isValid: {_bool(crc == computed)} crc: {crc}}}"
            if control:
                line += _control_part(record)
        if parse is not None:
            key_text, payload = parse(
                None if key is None else bytes(key),
                None if value is None else bytes(value),
                record.offset,
            )
            if key_text is not None:
                line += key_lead + key_text
            if payload is not None:
                line += " payload: " + payload
        yield line


def _timestamp(ts: int | None) -> int:
    return -1 if ts is None else ts  # magic 0 has no timestamp: Kafka says -1


def _control_part(record: Record) -> str:
    try:
        control_type, type_id = parse_control_key(record.key)
        if control_type in (ControlType.COMMIT, ControlType.ABORT):
            marker = EndTransactionMarker.parse(record.key, record.value)
            return (
                f" endTxnMarker: {marker.control_type.name} "
                f"coordinatorEpoch: {marker.coordinator_epoch}"
            )
        if is_kraft_control(control_type):
            return " " + format_kraft_control(control_type, record.value)
        return f" controlType: {control_type.name}({type_id})"
    except FormatError as e:
        return f" controlRecordError: {e.detail}"
    except DecodeError as e:
        return f" controlRecordError: {e}"


def string_parser(
    key: bytes | None, value: bytes | None, offset: int
) -> tuple[str | None, str | None]:
    """Kafka's default `StringDecoder`: UTF-8, malformed bytes replaced as Java replaces them."""
    return (None if key is None else utf8(key), None if value is None else utf8(value))


def defect_line(defect: Defect) -> str:
    """What kafka-dump-log cannot say: an unreadable region, named, and where the dump resumes."""
    offset = "" if defect.offset is None else f" offset: {defect.offset}"
    return (
        f"defect: {defect.kind} position: {defect.position} length: {defect.length}{offset} "
        f"detail: {defect.detail}"
    )
