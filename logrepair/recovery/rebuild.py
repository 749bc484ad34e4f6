"""`rebuild-index`: every index of a partition rewritten from its log (spec fmt §6.4(a), §7.1).

Offset and time indexes come from each segment alone. Transaction indexes need the producers'
transaction state from the start of the log: the batches of every segment are replayed, in order,
through `storage.producer_state` (as Kafka's recovery does when no producer snapshot is left), and
each aborted transaction goes to the segment holding its ABORT marker. The rewrite goes through the
same journal and quarantine as a repair, so it can be undone.
"""

from __future__ import annotations

import operator

from ..format.batch import RecordBatch
from ..format.control import ControlType
from ..format.errors import Defect, FormatError
from ..storage import layout
from ..storage.disk import Disk, join
from ..storage.layout import printable
from ..storage.producer_state import ProducerState, ProducerStateError
from ..storage.scan import DEFAULT_MAX_BATCH_SIZE, LogScan
from . import indexes
from .plan import Action, Plan
from .scan import LogDirScan, PartitionScan
from .segment_scan import SegmentScan
from .state_checks import Checkpoints


def txn_entries_by_segment(
    disk: Disk,
    partition_path: str,
    bases: list[int],
    max_batch_size: int | None = DEFAULT_MAX_BATCH_SIZE,
) -> tuple[dict[int, bytes], list[str]]:
    """The `.txnindex` bytes of each segment (by base offset), and problems met on the way."""
    state = ProducerState()
    out: dict[int, bytes] = {}
    problems: list[str] = []
    for base in bases:
        entries = bytearray()
        log = join(partition_path, layout.log_file_name(base))
        for item in LogScan(disk, log, check_offsets=False, max_batch_size=max_batch_size):
            if isinstance(item, Defect):
                break
            if not isinstance(item, RecordBatch) or item.producer_id < 0:
                continue
            try:
                if item.is_control and item.is_transactional:
                    if item.control_type() not in (ControlType.ABORT, ControlType.COMMIT):
                        continue
                    marker = item.end_txn_marker()
                    aborted = state.append_end_txn(
                        item.producer_id,
                        item.producer_epoch,
                        item.base_offset,
                        item.max_timestamp,
                        marker.control_type is ControlType.ABORT,
                        marker.coordinator_epoch,
                    )
                    if aborted is not None:
                        entries += (
                            (0).to_bytes(2, "big")
                            + aborted.producer_id.to_bytes(8, "big", signed=True)
                            + aborted.first_offset.to_bytes(8, "big", signed=True)
                            + aborted.last_offset.to_bytes(8, "big", signed=True)
                            + aborted.last_stable_offset.to_bytes(8, "big", signed=True)
                        )
                elif not item.is_control:
                    state.append_data(
                        item.producer_id,
                        item.producer_epoch,
                        item.base_sequence,
                        item.base_offset,
                        item.last_offset,
                        item.max_timestamp,
                        item.is_transactional,
                    )
            except (ProducerStateError, FormatError, ValueError, OverflowError) as e:
                # (OverflowError: offsets at 2^63 - 1, outside the CRC, make a last stable offset
                # that does not fit the index's long)
                problems.append(f"{log} @{item.position}: {e}")
        out[base] = bytes(entries)
    return out, problems


def plan_rebuild(disk: Disk, scan: LogDirScan) -> Plan:
    """Rebuild actions for every index that differs from what the log says it should be, partition
    by partition (those planned beside their scan, `rebuild_partition`, taken as they are).

    What the scan already established is not read again: a segment whose batches it read whole
    has had its indexes held against the same rebuild, and a partition without a transactional
    batch has no aborted transaction to replay."""
    plan = Plan("rebuild-index", scan.root)
    for p in scan.partitions:
        own = scan.prepared.get(p.rel)
        if not isinstance(own, Plan) or own.mode != plan.mode or p.left_alone is not None:
            # (a partition left alone once every partition was scanned: shared link targets)
            own = Plan(plan.mode, scan.root)
            _plan_partition(disk, p, own)
        plan.actions.extend(own.actions)
        plan.notes.extend(own.notes)
    return plan


def rebuild_partition(
    p: PartitionScan, checkpoints: Checkpoints, root: str, *, render: bool = False
) -> Plan:
    """`scan_path`'s step for rebuild-index: the partition's rebuild actions and notes, made where
    it was scanned (the offset, time and transaction indexes are each built from its logs);
    their output (`render`: their JSON, else their lines) made there too."""
    plan = Plan("rebuild-index", root)
    _plan_partition(p.disk, p, plan)
    plan.render(as_json=render)
    return plan


def _plan_partition(disk: Disk, p: PartitionScan, plan: Plan) -> None:
    if p.left_alone is not None:
        plan.notes.append(f"{printable(p.rel or p.path)}: left as it is: {p.left_alone}")
        return
    txn, problems = _txn_entries(disk, p)
    plan.notes.extend(problems)
    swaps = _swaps(p)
    for seg in p.segments:
        if seg.misnamed or any(f.kind == "offset_overflow" for f in seg.findings):
            plan.notes.append(
                f"{seg.name}: offsets outside the segment's relative range; its indexes "
                "cannot be built (repair --mode salvage renames or splits the segment)"
            )
            continue
        if _indexes_stale(disk, p, seg, swaps):
            plan.actions.append(
                Action(
                    "rebuild_indexes",
                    seg.name,
                    "rebuilt from the log",
                    index_interval_bytes=p.settings.index_interval_bytes,
                )
            )
        stem = seg.name[: -len(layout.LOG_SUFFIX)]
        txn_name = stem + layout.TXN_INDEX_SUFFIX
        exists = txn_name.rpartition("/")[2] in p.files
        content = txn.get(seg.base_offset, b"")
        if (
            exists
            and disk.read_file(join(p.path, layout.txn_index_file_name(seg.base_offset))) != content
        ) or (not exists and content):
            plan.actions.append(
                Action(
                    "write_file",
                    txn_name,
                    "aborted transactions replayed from the log",
                    content=content,
                )
            )


def _read_whole(seg: SegmentScan) -> bool:
    """The scan read every byte of the segment as batches Kafka's recovery keeps, and found
    nothing to report: a rebuild would read exactly those batches again."""
    return not seg.findings and not seg.kafka_pieces and seg.kafka_valid_bytes == seg.size


def _swaps(p: PartitionScan) -> bool:
    """`.swap` files in the dir: the scan may have read an index's swap in its place (as Kafka's
    loader renames it in), where the rebuild compares with the file under its own name."""
    return any(map(_is_swap, p.files))


_is_swap = operator.methodcaller("endswith", layout.SWAP_SUFFIX)


def _txn_entries(disk: Disk, p: PartitionScan) -> tuple[dict[int, bytes], list[str]]:
    """`txn_entries_by_segment` of the partition; nothing to replay (no entry anywhere) when the
    scan read every segment whole and met no transactional batch."""
    if all(_read_whole(seg) and not seg.has_txn_batches for seg in p.segments):
        return {}, []
    bases = [s.base_offset for s in p.segments]
    return txn_entries_by_segment(disk, p.path, bases, p.settings.max_batch_size)


def _indexes_stale(disk: Disk, p: PartitionScan, seg: SegmentScan, swaps: bool) -> bool:
    """Whether the segment's offset or time index is missing or not the bytes the rebuild
    writes; from the scan's own comparison where it made one over the same batches (`swaps`:
    the dir holds `.swap` files, `_swaps`)."""
    if seg.kafka_index_checked and not swaps and _read_whole(seg):
        return seg.kafka_index_differs
    log = join(p.path, layout.log_file_name(seg.base_offset))
    wanted = indexes.rebuild(
        disk,
        log,
        p.settings.index_interval_bytes,
        verify_crc=True,
        max_batch_size=p.settings.max_batch_size,
    )
    stem = seg.name[: -len(layout.LOG_SUFFIX)]
    for path, content in wanted:
        current = stem + path[path.rindex(".") :]
        if current.rpartition("/")[2] not in p.files or disk.read_file(path) != content:
            return True
    return False
