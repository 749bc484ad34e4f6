"""`first_divergence` against a model: replicas as prefixes of one history, one batch rewritten."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from logrepair.audit.fleet import first_divergence
from logrepair.audit.model import BatchDigests


def digests(batches: list[tuple[int, int, int]]) -> BatchDigests:
    d = BatchDigests()
    for i, (base, last, crc) in enumerate(batches):
        d.add(base, last, crc, i * 100)
    return d


@st.composite
def history(draw) -> list[tuple[int, int, int]]:
    sizes = draw(st.lists(st.integers(1, 5), min_size=1, max_size=30))
    out, offset = [], draw(st.integers(0, 1000))
    for n in sizes:
        out.append((offset, offset + n - 1, draw(st.integers(0, 2**32 - 1))))
        offset += n + draw(st.sampled_from([0, 0, 0, 3]))  # compaction leaves offset gaps
    return out


@settings(max_examples=150)
@given(history(), st.data())
def test_first_divergence_matches_the_model(batches, data):
    n = len(batches)
    start = data.draw(st.integers(0, n - 1), label="b starts at batch")  # retention
    end = data.draw(st.integers(start + 1, n), label="b ends after batch")  # lag
    other = list(batches[start:end])
    changed = data.draw(st.one_of(st.none(), st.integers(0, len(other) - 1)), label="rewritten")
    if changed is not None:
        base, last, crc = other[changed]
        other[changed] = (base, last, crc ^ 1)
    expected = None if changed is None else other[changed][0]
    assert first_divergence(digests(batches), digests(other)) == expected
    assert first_divergence(digests(other), digests(batches)) == expected


def test_a_batch_split_differently_diverges_at_the_split():
    a = digests([(0, 3, 1), (4, 7, 2), (8, 11, 3)])
    b = digests([(0, 3, 1), (4, 5, 9), (6, 11, 8)])
    assert first_divergence(a, b) == 4


def test_comparison_starts_at_the_cleaned_offset():
    a = digests([(0, 3, 1), (4, 7, 2), (8, 11, 3)])
    b = digests([(0, 3, 7), (4, 7, 2), (8, 11, 3)])
    assert first_divergence(a, b) == 0
    assert first_divergence(a, b, from_offset=4) is None


def test_empty_replica_has_not_diverged():
    assert first_divergence(digests([]), digests([(0, 0, 1)])) is None


def test_a_batch_one_replica_lacks_is_a_hole_not_a_divergence():
    a = digests([(0, 3, 1), (4, 7, 2), (8, 11, 3), (12, 12, 4)])
    b = digests([(0, 3, 1), (8, 11, 3), (12, 12, 4)])  # 4..7 lost to damage
    assert first_divergence(a, b) is None
    assert first_divergence(b, a) is None
    c = digests([(0, 3, 1), (8, 11, 5)])
    assert first_divergence(a, c) == 8
