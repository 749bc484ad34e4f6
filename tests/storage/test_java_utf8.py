"""Payloads are printed as Java decodes them: Java groups malformed UTF-8 differently from Python's
`errors="replace"`, so a dump of random bytes (a topic id in `__cluster_metadata`) would differ."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from logrepair.storage.java_text import REPLACEMENT, utf8

R = REPLACEMENT


def test_valid_utf8_reads_as_python_reads_it() -> None:
    text = "héllo wörld – 𝄞 ✓"
    assert utf8(text.encode()) == text


def test_malformed_sequences_are_grouped_as_java_groups_them() -> None:
    # outputs of JDK 17's `new String(bytes, UTF_8)`
    assert utf8(bytes.fromhex("91a1edb470")) == R * 3 + "p"  # Python: 4 replacements
    assert utf8(bytes.fromhex("eda080")) == R  # a surrogate: one for the three bytes
    assert utf8(bytes.fromhex("e08080")) == R * 3  # overlong: byte by byte
    assert utf8(bytes.fromhex("e282")) == R  # truncated at the end
    assert utf8(bytes.fromhex("f09f98")) == R
    assert utf8(bytes.fromhex("f4908080")) == R * 4  # past U+10FFFF
    assert utf8(bytes.fromhex("c0af41")) == R * 2 + "A"
    assert utf8(bytes.fromhex("c3c4eb025e914791a1edb470a254054c00")) == (
        f"{R}{R}{R}\x02^{R}G{R}{R}{R}p{R}T\x05L\x00"
    )


@given(st.binary(max_size=64))
def test_never_raises_and_agrees_with_python_on_valid_input(data: bytes) -> None:
    text = utf8(data)
    try:
        assert text == data.decode("utf-8")
    except UnicodeDecodeError:
        assert R in text
