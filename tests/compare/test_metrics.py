"""Ranking measures and aggregates of the comparison harness, on hand-computed cases."""

from __future__ import annotations

import math

import pytest

from vectorport.compare import (
    Latency,
    hit_at_k,
    ndcg_at_k,
    overlap_at_k,
    rank_biased_overlap,
    reciprocal_rank,
)

pytestmark = pytest.mark.memory


def test_overlap_at_k() -> None:
    assert overlap_at_k(list("abc"), list("abc"), 3) == 1.0
    assert overlap_at_k(list("abc"), list("xyz"), 3) == 0.0
    assert overlap_at_k(list("ab"), list("ba"), 10) == 1.0  # both short, same set
    assert overlap_at_k(list("abcd"), list("ab"), 4) == 0.5  # one under-filled
    assert overlap_at_k(list("abcdef"), list("abcxyz"), 3) == 1.0  # only the top k counts
    assert overlap_at_k([], [], 5) == 1.0


def _rbo_truncated(a: list[str], b: list[str], p: float, depth: int) -> float:
    """The defining infinite sum of RBO, truncated: for lists that agree past their end."""
    total = 0.0
    for d in range(1, depth + 1):
        total += len(set(a[:d]) & set(b[:d])) / d * p ** (d - 1)
    return (1 - p) * total


def test_rank_biased_overlap() -> None:
    assert rank_biased_overlap(list("abcde"), list("abcde")) == pytest.approx(1.0)
    assert rank_biased_overlap(list("abc"), list("xyz")) == 0.0
    assert rank_biased_overlap([], []) == 1.0
    assert rank_biased_overlap(list("a"), []) == 0.0
    # a swap at the top costs more than a swap at the bottom
    top = rank_biased_overlap(list("bacde"), list("abcde"))
    bottom = rank_biased_overlap(list("abced"), list("abcde"))
    assert top < bottom < 1.0
    # symmetric, and the extrapolation matches the hand value for this case (Webber eq. 32)
    a, b = list("abc"), list("bac")
    assert rank_biased_overlap(a, b) == pytest.approx(rank_biased_overlap(b, a))
    assert rank_biased_overlap(a, b, 0.9) == pytest.approx(0.1 / 0.9 * (0 + 0.81 + 0.729) + 0.729)
    # uneven lengths: between disjoint and identical, symmetric
    un = rank_biased_overlap(list("abcdef"), list("abc"))
    assert 0.5 < un <= 1.0 and un == pytest.approx(rank_biased_overlap(list("abc"), list("abcdef")))
    with pytest.raises(ValueError):
        rank_biased_overlap(a, b, 1.0)


def test_rbo_extrapolation_agrees_with_the_sum_for_identical_prefixes() -> None:
    a = [f"k{i}" for i in range(10)]
    b = a[:5] + [f"k{i}" for i in (6, 5, 7, 8, 9)]
    # both lists continue identically: the truncated sum with the perfect tail is exact
    p = 0.8
    head = _rbo_truncated(a, b, p, 10)
    assert rank_biased_overlap(a, b, p) == pytest.approx(head + p**10, abs=1e-9)


def test_relevance_measures() -> None:
    gains = {"a": 1.0, "b": 1.0}
    assert ndcg_at_k(["a", "b", "x"], gains, 3) == pytest.approx(1.0)
    assert ndcg_at_k(["x", "a", "b"], gains, 3) == pytest.approx(
        (1 / math.log2(3) + 1 / math.log2(4)) / (1 + 1 / math.log2(3))
    )
    assert ndcg_at_k(["a", "a"], {"a": 1.0}, 2) == pytest.approx(1.0)  # a duplicate earns nothing
    graded = {"a": 3.0, "b": 1.0}
    assert ndcg_at_k(["b", "a"], graded, 2) < ndcg_at_k(["a", "b"], graded, 2) == pytest.approx(1.0)
    assert math.isnan(ndcg_at_k(["a"], {}, 1))
    assert reciprocal_rank(["x", "y", "b"], gains) == pytest.approx(1 / 3)
    assert reciprocal_rank(["x"], gains) == 0.0
    assert hit_at_k(["x", "a"], gains, 2) == 1.0
    assert hit_at_k(["x", "a"], gains, 1) == 0.0


def test_latency_percentiles() -> None:
    lat = Latency.of([i / 1000 for i in range(1, 101)] + [math.nan])
    assert lat.count == 100
    assert lat.p50 == pytest.approx(50.5)
    assert lat.p99 == pytest.approx(99.01)
    assert lat.max == pytest.approx(100.0)
    assert math.isnan(Latency.of([]).p50)
