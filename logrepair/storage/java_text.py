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


REPLACEMENT = "\ufffd"


def _continuation(b: int) -> bool:
    return b & 0xC0 == 0x80


def utf8(data: bytes) -> str:
    """`new String(bytes, UTF_8)`: Java's decoder, which Kafka's tools print payloads with.

    Valid UTF-8 reads as in Python; invalid bytes are replaced by U+FFFD in Java's grouping, which
    is not Python's `errors="replace"` (Java takes `ED B4` as one malformed sequence, Python as
    two, so a dump of the same bytes would differ in length)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return _utf8_replacing(data)


def _utf8_replacing(src: bytes) -> str:
    """JDK 17's String UTF-8 decoding with replacement, step for step."""
    out: list[str] = []
    sp, sl = 0, len(src)
    while sp < sl:
        b1 = src[sp]
        sp += 1
        if b1 < 0x80:
            out.append(chr(b1))
        elif 0xC2 <= b1 <= 0xDF:
            if sp < sl:
                b2 = src[sp]
                if _continuation(b2):
                    out.append(chr(((b1 & 0x1F) << 6) | (b2 & 0x3F)))
                    sp += 1
                else:
                    out.append(REPLACEMENT)
                continue
            out.append(REPLACEMENT)
            break
        elif b1 >> 4 == 0xE:
            if sp + 1 < sl:
                b2, b3 = src[sp], src[sp + 1]
                if (b1 == 0xE0 and b2 & 0xE0 == 0x80) or not _continuation(b2):
                    out.append(REPLACEMENT)  # malformed at the first byte
                elif not _continuation(b3):
                    out.append(REPLACEMENT)  # the first two bytes, as one
                    sp += 1
                else:
                    c = ((b1 & 0x0F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)
                    out.append(REPLACEMENT if 0xD800 <= c <= 0xDFFF else chr(c))
                    sp += 2
                continue
            if sp < sl and ((b1 == 0xE0 and src[sp] & 0xE0 == 0x80) or not _continuation(src[sp])):
                out.append(REPLACEMENT)
                continue
            out.append(REPLACEMENT)
            break
        elif b1 >> 3 == 0x1E:
            if sp + 2 < sl:
                b2, b3, b4 = src[sp], src[sp + 1], src[sp + 2]
                uc = ((b1 & 0x07) << 18) | ((b2 & 0x3F) << 12) | ((b3 & 0x3F) << 6) | (b4 & 0x3F)
                if (
                    not (_continuation(b2) and _continuation(b3) and _continuation(b4))
                    or not 0x10000 <= uc <= 0x10FFFF
                ):
                    out.append(REPLACEMENT)
                    if (
                        b1 > 0xF4
                        or (b1 == 0xF0 and not 0x90 <= b2 <= 0xBF)
                        or (b1 == 0xF4 and b2 & 0xF0 != 0x80)
                        or not _continuation(b2)
                    ):
                        pass  # one byte
                    elif not _continuation(b3):
                        sp += 1
                    else:
                        sp += 2
                else:
                    out.append(chr(uc))
                    sp += 3
                continue
            if b1 > 0xF4 or (
                sp < sl
                and (
                    (b1 == 0xF0 and not 0x90 <= src[sp] <= 0xBF)
                    or (b1 == 0xF4 and src[sp] & 0xF0 != 0x80)
                    or not _continuation(src[sp])
                )
            ):
                out.append(REPLACEMENT)
                continue
            sp += 1
            out.append(REPLACEMENT)
            if sp < sl and not _continuation(src[sp]):
                continue
            break
        else:
            out.append(REPLACEMENT)
    return "".join(out)
