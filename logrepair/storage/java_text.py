"""Java's text parsing, reproduced where Kafka's acceptance of a file depends on it.

Kafka reads checkpoint lines with `Integer.parseInt`/`Long.parseLong` and splits them with
`Pattern.split`; Python's `int()` and `str.split()` accept more (surrounding whitespace, `_`) or
split differently (trailing empty fields), so a file Kafka rejects would pass. These helpers say
exactly what Java says.
"""

from __future__ import annotations

import re

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

# Character.digit accepts every Unicode decimal digit, as Python's \d does without re.ASCII.
_JAVA_INTEGER = re.compile(r"[+-]?\d+")
# Java's \s is ASCII only: space, \t, \n, \x0B, \f, \r.
_JAVA_WHITESPACE = re.compile(r"[ \t\n\x0b\f\r]+")


def parse_int(text: str, *, bits: int = 32) -> int:
    """`Integer.parseInt` (bits=32) or `Long.parseLong` (bits=64); ValueError where Java throws."""
    if not _JAVA_INTEGER.fullmatch(text):
        raise ValueError(f'For input string: "{text}"')
    value = int(text)
    low, high = (INT32_MIN, INT32_MAX) if bits == 32 else (INT64_MIN, INT64_MAX)
    if not low <= value <= high:
        raise ValueError(f'For input string: "{text}"')
    return value


def split(pattern: re.Pattern[str], text: str) -> list[str]:
    """`Pattern.split(text)`: like re.split, but every trailing empty string is removed.

    A leading empty string is kept when the text starts with a separator (that is what makes a
    checkpoint line with a leading space malformed); a text with no separator is returned whole,
    even when empty, and a text of separators only gives no parts at all."""
    if pattern.search(text) is None:
        return [text]
    parts = pattern.split(text)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def split_whitespace(text: str) -> list[str]:
    """`"\\s+"`-split as Kafka's checkpoint formatters do."""
    return split(_JAVA_WHITESPACE, text)
