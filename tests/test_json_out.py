"""`logrepair.json_out`: a command's JSON with items rendered beside each partition's scan is, byte for
byte, what `json.dumps(data, indent=1)` writes of the same data, whatever the values (text of any
code point, nested lists and objects, empty ones) and whichever items were rendered."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

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


def test_data_holding_the_marker_text_is_still_written_right() -> None:
    data = {"a": "\0rendered 0", "b": [{"x": [1, {}]}, []]}
    mixed = {"a": data["a"], "b": [Rendered.of(data["b"][0]), []]}
    assert dumps(mixed) == json.dumps(data, indent=1)
