"""Java's Integer.parseInt / Long.parseLong and Pattern.split, as Kafka's readers use them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from logrepair.storage import java_text


@pytest.mark.parametrize(
    ("text", "value"),
    [("0", 0), ("-5", -5), ("+7", 7), ("007", 7), ("2147483647", 2**31 - 1),
     ("-2147483648", -(2**31)), ("\u0661\u0662", 12)],
)  # fmt: skip
def test_parse_int_accepts(text, value) -> None:
    assert java_text.parse_int(text) == value


@pytest.mark.parametrize(
    "text", ["", " 1", "1 ", "1_000", "+", "-", "0x10", "1.0", "2147483648", "-2147483649", "1\n"]
)
def test_parse_int_refuses(text) -> None:
    with pytest.raises(ValueError, match="For input string"):
        java_text.parse_int(text)


def test_parse_long_range() -> None:
    assert java_text.parse_int("9223372036854775807", bits=64) == 2**63 - 1
    with pytest.raises(ValueError):
        java_text.parse_int("9223372036854775808", bits=64)


@given(st.integers(-(2**63), 2**63 - 1))
def test_parse_long_round_trips(n) -> None:
    assert java_text.parse_int(str(n), bits=64) == n


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("a b c", ["a", "b", "c"]),
        ("a  \t b", ["a", "b"]),
        (" a b", ["", "a", "b"]),
        ("a b  ", ["a", "b"]),
        ("", [""]),
        ("   ", []),
        ("a\u00a0b", ["a\u00a0b"]),  # Java's \s is ASCII whitespace only
    ],
)
def test_split_whitespace_is_javas(text, parts) -> None:
    assert java_text.split_whitespace(text) == parts
