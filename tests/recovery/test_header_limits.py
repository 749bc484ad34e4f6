"""Numbers at their limits: any value of any batch header field is a finding of the batch it is in,
never an error of the command (issue 11.5), through verify and every repair mode."""

from __future__ import annotations

import shutil
import struct
import zlib

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from logrepair.format.batch_layout import HEADER, Record
from logrepair.format.crc import crc32c
from logrepair.format.legacy import build_legacy_batch
from logrepair.recovery.repair import repair
from logrepair.recovery.scan import scan_path
from logrepair.recovery.settings import Settings
from logrepair.storage.abstract_index import IndexOffsetOverflowError

from .builders import DISK, batch, batches, write_offsets, write_segment

INT64 = st.integers(-(2**63), 2**63 - 1)
INT32 = st.integers(-(2**31), 2**31 - 1)
INT16 = st.integers(-(2**15), 2**15 - 1)
INT8 = st.integers(-128, 127)


def _edge(values: st.SearchStrategy[int], bits: int) -> st.SearchStrategy[int | None]:
    """None (the field as written), a limit of the field's range, or any value in it."""
    top = 2 ** (bits - 1)
    limits = st.sampled_from([-top, -top + 1, -1, 0, 1, top - 2, top - 1])
    return st.none() | limits | values


# The v2 header (`HEADER`): base offset, length, partition leader epoch, magic, crc, attributes,
# last offset delta, first timestamp, max timestamp, producer id, producer epoch, base sequence,
# record count. `None` keeps what the writer wrote.
V2_FIELDS = st.tuples(
    _edge(INT64, 64),
    _edge(INT32, 32),
    _edge(INT32, 32),
    _edge(INT8, 8),
    st.none(),  # the CRC: recomputed or not (`fix_crc`)
    _edge(INT16, 16),
    _edge(INT32, 32),
    _edge(INT64, 64),
    _edge(INT64, 64),
    _edge(INT64, 64),
    _edge(INT16, 16),
    _edge(INT32, 32),
    _edge(INT32, 32),
)
MODES = ("kafka", "point-in-time", "salvage")
EXAMPLES = settings.default.max_examples // 8
"""Each example runs seven scans and three repairs: an eighth of the profile's count (12 by
default beside the explicit examples, 250 under the thorough profile)."""


def _v2_batch(fields: tuple, fix_crc: bool) -> bytes:
    raw = bytearray(batch(3, n=3))
    values = list(HEADER.unpack_from(raw))
    for i, v in enumerate(fields):
        if v is not None:
            values[i] = v
    HEADER.pack_into(raw, 0, *values)
    if fix_crc:
        struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    return bytes(raw)


def _through_every_command(tmp_path, damaged: bytes) -> None:
    """verify, then each mode's repair on its own copy, then a second run of the mode, which plans
    nothing: nothing raises."""
    src = tmp_path / "src"
    shutil.rmtree(src, ignore_errors=True)
    pdir = src / "t-0"
    data = [*batches(0, 3), damaged, *batches(6, 2)]
    try:
        write_segment(pdir, 0, data)
    except IndexOffsetOverflowError:  # the builder cannot index it: a segment without indexes
        write_segment(pdir, 0, data, indexes=False)
    write_offsets(src, "recovery-point-offset-checkpoint", {("t", 0): 0})
    write_offsets(src, "replication-offset-checkpoint", {("t", 0): 8})
    scan = scan_path(DISK, str(src), Settings())
    for f in scan.all_findings():
        assert f.file.startswith("t-0/"), f
    for mode in MODES:
        copy = tmp_path / mode
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(src, copy)
        repair(DISK, str(copy), mode, Settings(), quarantine_root=str(tmp_path / f"q-{mode}"))
        again = repair(DISK, str(copy), mode, Settings(), dry_run=True)
        assert not again.plan.actions, f"{mode} does not converge: {again.plan.actions}"
        shutil.rmtree(tmp_path / f"q-{mode}", ignore_errors=True)


@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fields=V2_FIELDS, fix_crc=st.booleans())
@example(fields=(2**63 - 2,) + (None,) * 12, fix_crc=True)
@example(fields=(2**63 - 1,) + (None,) * 5 + (2**31 - 1,) + (None,) * 6, fix_crc=True)
@example(fields=(-(2**63),) + (None,) * 12, fix_crc=True)
@example(fields=(-(2**63),) + (None,) * 7 + (2**63 - 2,) + (None,) * 4, fix_crc=True)
@example(fields=(None, None, -(2**31)) + (None,) * 10, fix_crc=True)
@example(fields=(None,) * 6 + (-(2**31),) + (None,) * 6, fix_crc=True)
def test_any_v2_header_value_is_a_finding_never_an_error(tmp_path, fields, fix_crc):
    _through_every_command(tmp_path, _v2_batch(fields, fix_crc))


def test_base_offset_near_the_int64_limit_is_offset_invalid(tmp_path):
    damaged = _v2_batch((2**63 - 2,) + (None,) * 12, fix_crc=True)
    pdir = tmp_path / "t-0"
    write_segment(pdir, 0, [*batches(0, 3), damaged, *batches(6, 2)])
    found = scan_path(DISK, str(pdir), Settings()).all_findings()
    assert [f.kind for f in found] == ["offset_invalid"]
    assert (found[0].position, found[0].length) == (3 * len(batch(0)), len(damaged))
    assert "would not fit a long" in found[0].detail


@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    offset=_edge(INT64, 64),
    attributes=_edge(INT8, 8),
    timestamp=_edge(INT64, 64),
    key_length=_edge(INT32, 32),
    magic=st.sampled_from([0, 1]),
    codec=st.sampled_from([0, 1]),
)
@example(offset=-5, attributes=None, timestamp=None, key_length=None, magic=1, codec=1)
@example(offset=-(2**63), attributes=None, timestamp=None, key_length=None, magic=0, codec=1)
@example(offset=2**63 - 1, attributes=None, timestamp=None, key_length=None, magic=1, codec=1)
def test_any_legacy_header_value_is_a_finding_never_an_error(
    tmp_path, offset, attributes, timestamp, key_length, magic, codec
):
    """A legacy entry (a compressed wrapper, or a plain message) with any offset, attributes,
    timestamp or key length; fields inside its CRC are written with the CRC recomputed."""
    records = [Record(3 + i, 1_700_000_000_000 + i, b"k", b"v" * 40, ()) for i in range(3)]
    raw = bytearray(build_legacy_batch(records, magic=magic, base_offset=3, codec=codec))
    if codec == 0:
        raw = raw[: 12 + struct.unpack_from(">i", raw, 8)[0]]  # the first message alone
    if offset is not None:
        struct.pack_into(">q", raw, 0, offset)
    if attributes is not None:
        struct.pack_into(">b", raw, 17, attributes)
    if timestamp is not None and magic == 1:
        struct.pack_into(">q", raw, 18, timestamp)
    if key_length is not None:
        struct.pack_into(">i", raw, 26 if magic == 1 else 18, key_length)
    struct.pack_into(">I", raw, 12, zlib.crc32(bytes(raw[16:])))
    _through_every_command(tmp_path, bytes(raw))


def test_kafka_mode_cuts_a_batch_whose_log_end_would_not_fit_a_long(tmp_path):
    """Found by the fuzzer (tests/fuzz): base offset 2^63 - 1 in the first batch of the active
    segment. kafka mode used to split it into a segment 09223372036854775807.log that still held
    the offset_invalid batch, unlisted in what it leaves; now it cuts the batch (well-formed)."""
    from .checks import repair_checked

    root = tmp_path / "logs"
    write_segment(root / "t-0", 0, batches(0, 3))
    damaged = _v2_batch((2**63 - 1,) + (None,) * 5 + (0,) + (None,) * 6, fix_crc=True)
    write_segment(root / "t-0", 3, [damaged], indexes=False)
    write_offsets(root, "recovery-point-offset-checkpoint", {("t", 0): 3})
    write_offsets(root, "replication-offset-checkpoint", {("t", 0): 3})
    result = repair_checked(root, "kafka")
    assert [f.name for f in (root / "t-0").glob("*.log")] != []
    assert not list((root / "t-0").glob("09223372036854775807.*"))
    assert result.plan.removed_bytes == len(damaged)
