"""The commands' `--json` writer is `json.dumps(data, indent=1)`, character for character."""

from __future__ import annotations

import enum
import json

from hypothesis import given
from hypothesis import strategies as st

from logrepair.commands import _json_text
from logrepair.commands._json_text import dumps


class Kind(enum.IntEnum):
    ONE = 1


scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
    | st.just(Kind.ONE)
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text() | st.integers() | st.booleans(), inner, max_size=4)
    ),
    max_leaves=30,
)


@given(values)
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
    monkeypatch.setattr(_json_text.json, "dumps", None)
    assert dumps(report) == expected
