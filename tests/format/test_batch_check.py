"""`check_records` (deep verification, builds nothing) and `decode_records` must give the same verdict,
with the same kind and message, on every records region, valid or damaged."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from logrepair.format.errors import FormatError
from logrepair.format.record_codec import check_records, decode_records, encode_record

from .strategies import record_lists


def verdict(fn, *args):
    try:
        fn(*args)
    except FormatError as e:
        return e.kind, e.detail
    return None


@st.composite
def regions(draw):
    records = draw(record_lists(0, min_size=0, max_size=6))
    base_ts = records[0].timestamp if records else 0
    data = bytearray(
        b"".join(
            encode_record(r.offset, r.timestamp - base_ts, r.key, r.value, r.headers)
            for r in records
        )
    )
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        op = draw(st.sampled_from(["flip", "truncate", "insert", "varint"]))
        at = draw(st.integers(min_value=0, max_value=len(data)))
        if op == "flip" and at < len(data):
            data[at] ^= draw(st.integers(min_value=1, max_value=255))
        elif op == "truncate":
            del data[at:]
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif op == "varint":  # long and overlong varints where one-byte ones were
            data[at:at] = draw(
                st.sampled_from([b"\x80", b"\xff\xff", b"\x80\x80\x80\x80\x80\x00", b"\x81\x00"])
            )
    count = len(records) + draw(st.integers(min_value=-1, max_value=1))
    return bytes(data), max(count, 1)


@settings(max_examples=400)
@given(regions())
def test_check_and_decode_agree(region) -> None:
    data, count = region
    assert verdict(check_records, data, count, 7) == verdict(
        decode_records, data, count, 0, 0, None, -1, 7
    )


@settings(max_examples=200)
@given(st.binary(max_size=64), st.integers(min_value=1, max_value=4))
def test_check_and_decode_agree_on_noise(data: bytes, count: int) -> None:
    assert verdict(check_records, data, count, 0) == verdict(
        decode_records, data, count, 0, 0, None, -1, 0
    )
