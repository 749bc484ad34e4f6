"""`logrepair.json_out`: the commands' JSON is, byte for byte, what `json.dumps(data, indent=1)`
writes of the same data, whatever the values (text of any code point, nested lists and objects,
empty ones, types the fast path hands to the standard library) and whichever parts were rendered
beside each partition's scan."""

from __future__ import annotations

import enum
import json

from hypothesis import given
from hypothesis import strategies as st

from logrepair import json_out
from logrepair.json_out import Rendered, dumps

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text()
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(
    st.dictionaries(
        st.text(),
        st.one_of(values, st.lists(st.tuples(values, st.booleans()), max_size=5)),
        max_size=5,
    )
)
def test_rendered_items_give_json_dumps_bytes(raw: dict) -> None:
    data, mixed = {}, {}
    for key, value in raw.items():
        if isinstance(value, list) and all(isinstance(v, tuple) for v in value):
            data[key] = [item for item, _ in value]
            mixed[key] = [Rendered.of(item) if render else item for item, render in value]
        else:
            data[key] = mixed[key] = value
    assert dumps(mixed) == json.dumps(data, indent=1)


def test_data_holding_text_like_a_rendered_part_is_written_as_text() -> None:
    data = {"a": "\0rendered 0", "b": [{"x": [1, {}]}, []]}
    mixed = {"a": data["a"], "b": [Rendered.of(data["b"][0]), []]}
    assert dumps(mixed) == json.dumps(data, indent=1)


class Kind(enum.IntEnum):
    ONE = 1


plain_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
    | st.just(Kind.ONE)
)
plain_values = st.recursive(
    plain_scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text() | st.integers() | st.booleans(), inner, max_size=4)
    ),
    max_leaves=30,
)


@given(plain_values)
def test_the_text_is_json_dumps_with_indent_1(value):
    assert dumps(value) == json.dumps(value, indent=1)


def test_a_log_dir_report_is_written_without_the_standard_encoder(monkeypatch):
    """(the shape of a verify report: nested dicts and lists of plain values, no float)"""
    report = {
        "clean": True,
        "partitions": [{"path": "/l/t-0", "defects": [], "left_alone": None, "bytes": 10}],
        "defects": [{"kind": "x", "position": 3, "detail": "caf\u00e9 \u2603"}],
    }
    expected = json.dumps(report, indent=1)
    monkeypatch.setattr(json_out.json, "dumps", None)
    assert dumps(report) == expected


@given(plain_values, st.randoms(use_true_random=False))
def test_rendered_values_at_any_depth_give_json_dumps_bytes(value, rnd) -> None:
    """Any part rendered on its own, wherever it sits (and the whole handed to the standard
    library when another part is not JSON's own type, an IntEnum or an int key)."""

    def mixed(v):
        if rnd.random() < 0.3:
            return Rendered.of(v)
        if isinstance(v, dict):
            return {k: mixed(item) for k, item in v.items()}
        if isinstance(v, (list, tuple)):
            return [mixed(item) for item in v]
        return v

    expected = json.dumps(value, indent=1)
    assert dumps(mixed(value)) == expected
