"""Hypothesis strategies for v2 records, batches and segments, shared by every area's tests.

`batch_specs()` draws the inputs of `build_batch` for each kind of batch Kafka writes (plain,
idempotent, transactional, LogAppendTime, delete horizon, compacted with an overridden last offset);
`segments()` draws a run of batches with continuing offsets, as one `.log` file holds them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st

from logrepair.format.batch_builder import build_batch
from logrepair.format.batch_layout import Record

INT32_MAX = 2**31 - 1

header_keys = st.text(max_size=8)
optional_bytes = st.none() | st.binary(max_size=40)
headers = st.lists(st.tuples(header_keys, optional_bytes), max_size=3).map(tuple)
timestamps = st.integers(min_value=-1, max_value=2**45)


@st.composite
def record_lists(
    draw, base_offset: int = 0, min_size: int = 1, max_size: int = 12, gaps: bool = True
):
    """Records with strictly increasing offsets from `base_offset` (gaps only if `gaps`)."""
    n = draw(st.integers(min_value=min_size, max_value=max_size))
    offset = base_offset
    out = []
    for i in range(n):
        if i and gaps:
            offset += draw(st.integers(min_value=1, max_value=300))
        elif i:
            offset += 1
        out.append(
            Record(
                offset,
                draw(timestamps),
                draw(optional_bytes),
                draw(optional_bytes),
                draw(headers),
            )
        )
    return out


@dataclass
class BatchSpec:
    """The inputs of one `build_batch` call."""

    records: list[Record]
    kwargs: dict = field(default_factory=dict)

    def build(self) -> bytes:
        return build_batch(self.records, **self.kwargs)

    @property
    def last_offset(self) -> int:
        return self.kwargs.get("last_offset") or self.records[-1].offset


KINDS = ("plain", "idempotent", "transactional", "append_time", "delete_horizon", "compacted")


@st.composite
def batch_specs(draw, base_offset: int | None = None, codecs=(0,), kinds=KINDS):
    """A batch of a drawn kind and codec at `base_offset` (drawn when None)."""
    if base_offset is None:
        base_offset = draw(st.integers(min_value=0, max_value=2**40))
    kind = draw(st.sampled_from(kinds))
    records = draw(record_lists(base_offset, gaps=kind == "compacted"))
    kwargs: dict = {
        "base_offset": base_offset,
        "codec": draw(st.sampled_from(codecs)),
        "partition_leader_epoch": draw(st.integers(min_value=-1, max_value=INT32_MAX)),
    }
    if kind in ("idempotent", "transactional"):
        kwargs["producer_id"] = draw(st.integers(min_value=0, max_value=2**62))
        kwargs["producer_epoch"] = draw(st.integers(min_value=0, max_value=2**15 - 1))
        kwargs["base_sequence"] = draw(st.integers(min_value=0, max_value=INT32_MAX))
        kwargs["is_transactional"] = kind == "transactional"
    elif kind == "append_time":
        kwargs["timestamp_type"] = "append"
        kwargs["log_append_time"] = draw(timestamps)
    elif kind == "delete_horizon":
        kwargs["delete_horizon_ms"] = draw(timestamps)
    elif kind == "compacted":
        kwargs["last_offset"] = records[-1].offset + draw(st.integers(min_value=0, max_value=50))
    return BatchSpec(records, kwargs)


@st.composite
def segments(
    draw, min_batches: int = 1, max_batches: int = 6, codecs=(0,), same_epoch: bool = False
):
    """(segment bytes, specs): batches whose offsets continue, as in one `.log` file; with
    `same_epoch`, mostly of one leader epoch, as one leader writes them."""
    offset = draw(st.integers(min_value=0, max_value=2**40))
    epoch = draw(st.integers(min_value=-1, max_value=3))
    specs = []
    for _ in range(draw(st.integers(min_value=min_batches, max_value=max_batches))):
        spec = draw(batch_specs(offset, codecs=codecs))
        if same_epoch and draw(st.integers(0, 9)):
            spec.kwargs["partition_leader_epoch"] = epoch
        specs.append(spec)
        offset = spec.last_offset + 1 + draw(st.integers(min_value=0, max_value=3))
    return b"".join(s.build() for s in specs), specs
