"""The core exact search (``vectorport._exact``) against the definition: sort every row by its
float64 canonical distance, then key. Ties (duplicate vectors, equal norms), tiny and large
magnitudes and every metric are generated, so the float32 candidate cut is exercised where it
could drop a true neighbour."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vectorport import Metric
from vectorport._exact import ExactIndex, SearchMatrix, StreamingTopK
from vectorport._models import canonical_distances

pytestmark = pytest.mark.memory

EXAMPLES = int(os.environ.get("VECTORPORT_EXAMPLES", "200"))


def _brute(metric: Metric, vectors: np.ndarray, keys: list[str], q: np.ndarray, k: int, rows: np.ndarray):
    dist = canonical_distances(metric, q, vectors[rows])
    order = np.lexsort((np.array(keys, dtype=object)[rows], dist))[:k]
    return rows[order].tolist(), dist[order].tolist()


@st.composite
def _cases(draw: st.DrawFn) -> tuple[Metric, np.ndarray, list[str], np.ndarray, int, np.ndarray | None]:
    metric = draw(st.sampled_from(list(Metric)))
    dim = draw(st.integers(1, 12))
    distinct = draw(st.integers(1, 30))
    scale = draw(st.sampled_from([1e-3, 1.0, 1e3]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    base = (rng.integers(-3, 4, size=(distinct, dim)) * scale).astype(np.float32)
    if metric is Metric.COSINE:
        base[np.all(base == 0, axis=1)] = scale  # cosine rows need a direction
    # duplicates make exact ties that only the key can break
    picks = rng.integers(0, distinct, size=draw(st.integers(1, 80)))
    vectors = base[picks]
    keys = [f"k{i:03d}" for i in rng.permutation(len(vectors))]
    q = (rng.integers(-3, 4, size=dim) * scale).astype(np.float32)
    if metric is Metric.COSINE and not q.any():
        q[0] = scale
    k = draw(st.integers(1, 20))
    rows = None
    if draw(st.booleans()):
        rows = np.flatnonzero(rng.random(len(vectors)) < 0.5).astype(np.int64)
    return metric, vectors, keys, q, k, rows


@settings(max_examples=EXAMPLES, deadline=None)
@given(_cases())
def test_search_matrix_is_the_full_sort(case: tuple) -> None:
    metric, vectors, keys, q, k, rows = case
    top = SearchMatrix(metric, vectors, keys).search(q[None, :], k, rows)
    allowed = np.arange(len(vectors)) if rows is None else rows
    want_rows, want_dist = _brute(metric, vectors, keys, q, k, allowed)
    n = int(top.counts[0])
    assert n == len(want_rows)
    assert top.rows[0, :n].tolist() == want_rows
    assert top.distances[0, :n].tolist() == want_dist


@settings(max_examples=EXAMPLES // 2, deadline=None)
@given(_cases(), st.integers(1, 7))
def test_streaming_top_k_equals_one_pass(case: tuple, pages: int) -> None:
    metric, vectors, keys, q, k, _ = case
    stream = StreamingTopK(metric, q[None, :], k)
    for chunk in np.array_split(np.arange(len(vectors)), pages):
        stream.update([keys[i] for i in chunk], vectors[chunk])
    want_rows, want_dist = _brute(metric, vectors, keys, q, k, np.arange(len(vectors)))
    assert stream.keys[0].tolist() == [keys[r] for r in want_rows]
    assert stream.distances[0].tolist() == want_dist


def test_many_exact_ties_beyond_any_fixed_margin_are_broken_by_key() -> None:
    # 500 copies of one vector: a fixed candidate margin would keep an arbitrary 42 of them
    vectors = np.ones((500, 8), dtype=np.float32)
    keys = [f"k{i:04d}" for i in np.random.default_rng(3).permutation(500)]
    top = SearchMatrix(Metric.COSINE, vectors, keys).search(np.ones((1, 8)), 10)
    assert [keys[r] for r in top.rows[0]] == [f"k{i:04d}" for i in range(10)]


def _degenerate(metric: Metric) -> tuple[np.ndarray, list[str]]:
    """Ten vectors of which rows 2, 5 and 7 have no distance (NaN, inf; all zeros under cosine)."""
    vectors = np.random.default_rng(7).normal(size=(10, 4)).astype(np.float32)
    vectors[2, 1] = np.nan
    vectors[5, 3] = -np.inf
    vectors[7] = 0.0 if metric is Metric.COSINE else np.inf
    return vectors, [f"k{i}" for i in range(10)]


@pytest.mark.parametrize("metric", list(Metric))
@pytest.mark.parametrize("k", [1, 5, 7, 12])
def test_rows_without_a_distance_are_never_answers(metric: Metric, k: int) -> None:
    vectors, keys = _degenerate(metric)
    good = np.array([0, 1, 3, 4, 6, 8, 9])
    q = np.random.default_rng(8).normal(size=4).astype(np.float32)
    want_rows, want_dist = _brute(metric, vectors, keys, q, k, good)
    for rows in (None, np.arange(10), np.array([2, 3, 5, 6, 7, 9])):
        allowed = good if rows is None else np.intersect1d(rows, good)
        want = _brute(metric, vectors, keys, q, k, allowed)
        top = SearchMatrix(metric, vectors, keys).search(q[None, :], k, rows)
        n = int(top.counts[0])
        assert (top.rows[0, :n].tolist(), top.distances[0, :n].tolist()) == want
    stream = StreamingTopK(metric, q, k)
    for chunk in np.array_split(np.arange(10), 3):
        stream.update([keys[i] for i in chunk], vectors[chunk])
    assert stream.keys[0].tolist() == [keys[r] for r in want_rows]
    index = ExactIndex(metric, keys, vectors, [{}] * 10)
    assert index.top_k(q, k)[0] == [keys[r] for r in want_rows]
    assert index.top_k(q, k)[1].tolist() == want_dist
    top = index.search_many(q[None, :], k, mask=np.arange(10) != 3)
    assert top.rows[0, : top.counts[0]].tolist() == _brute(metric, vectors, keys, q, k, good[good != 3])[0]


@pytest.mark.parametrize("metric", list(Metric))
def test_queries_without_a_distance_have_no_answers(metric: Metric) -> None:
    vectors = np.random.default_rng(9).normal(size=(6, 3)).astype(np.float32)
    queries = np.array([[1, 2, 3], [np.nan, 0, 0], [np.inf, 0, 1], [0, 0, 0]], dtype=np.float32)
    top = SearchMatrix(metric, vectors, [f"k{i}" for i in range(6)]).search(queries, 4)
    zero_answers = 0 if metric is Metric.COSINE else 4
    assert top.counts.tolist() == [4, 0, 0, zero_answers]
    assert (top.rows[1:3] == -1).all()
    index = ExactIndex(metric, [f"k{i}" for i in range(6)], vectors, [{}] * 6)
    assert index.top_k(queries[1], 4)[0] == [] and index.top_k(queries[2], 4)[0] == []


@pytest.mark.parametrize("metric", [Metric.EUCLIDEAN, Metric.DOT])
def test_scores_beyond_float32_range_still_rank_exactly(metric: Metric) -> None:
    # norms near 1.8e19 (the largest a write accepts): 2 q.x overflows float32, not float64
    rng = np.random.default_rng(10)
    unit = rng.normal(size=(50, 4))
    vectors = (unit / np.linalg.norm(unit, axis=1)[:, None] * rng.uniform(1.2e19, 1.8e19, (50, 1))).astype(
        np.float32
    )
    keys = [f"k{i:02d}" for i in range(50)]
    for q in (vectors[3], np.float32(1e-3) * vectors[4], rng.normal(size=4).astype(np.float32)):
        top = SearchMatrix(metric, vectors, keys).search(q[None, :], 5)
        assert top.rows[0].tolist() == _brute(metric, vectors, keys, q, 5, np.arange(50))[0]
