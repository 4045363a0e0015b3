"""Ground truth: the batched exact search equals the one-query oracle, and is fast."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vectorport import Metric
from vectorport.compare import GroundTruth, Query
from vectorport.compare._queries import filter_label
from vectorport.filters import parse_filter, to_dict
from vectorport.testing import ExactIndex, clustered_records
from vectorport.testing.strategies import dataset_filters

pytestmark = pytest.mark.memory

RECORDS = clustered_records(1500, 12, clusters=6, seed=5)


def _index(metric: Metric) -> ExactIndex:
    return ExactIndex.from_records(metric, RECORDS)


INDEXES = {m: _index(m) for m in Metric}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(
    metric=st.sampled_from(list(Metric)),
    f=dataset_filters(),
    k=st.integers(1, 60),
    seed=st.integers(0, 10_000),
    batch=st.integers(1, 9),
)
def test_search_many_equals_top_k(
    metric: Metric, f: dict[str, object], k: int, seed: int, batch: int
) -> None:
    index = INDEXES[metric]
    rng = np.random.default_rng(seed)
    queries = (rng.normal(size=(7, 12)) * rng.uniform(0.1, 5)).astype(np.float32)
    where = parse_filter(f)
    top = index.search_many(queries, k, where, batch_size=batch)
    for i, q in enumerate(queries):
        keys, dist, _ = index.top_k(q, k, where)
        n = int(top.counts[i])
        assert [str(x) for x in index.keys[top.rows[i, :n]]] == keys
        np.testing.assert_allclose(top.distances[i, :n], dist, rtol=0, atol=1e-12)
        assert (top.rows[i, n:] == -1).all()


def test_masks_are_computed_once_per_filter_and_keep_type_strict_semantics() -> None:
    index = _index(Metric.COSINE)
    a = index.mask(parse_filter({"draft": True}))
    assert a is index.mask(parse_filter({"draft": True}))
    # {"draft": 1} equals {"draft": True} as a tree, but 1 never matches true
    assert not index.mask(parse_filter({"draft": 1})).any() and a.any()


def test_truth_groups_queries_by_filter() -> None:
    truth = GroundTruth.from_records("euclidean", RECORDS)
    qs = [
        Query(RECORDS[0].vector, filter={"lang": "en"}),
        Query(RECORDS[1].vector),
        Query(RECORDS[2].vector, filter={"lang": {"$eq": "en"}}),
    ]
    table = truth.solve(qs, 5)
    assert [len(g.queries) for g in table.groups] == [2, 1]
    en = table.groups[0]
    assert en.matching == sum(r.metadata.get("lang") == "en" for r in RECORDS)
    assert table.keys(truth.index, 1)[0] == RECORDS[1].key and table.distances(1)[0] == 0.0


def test_ground_truth_is_vectorised() -> None:
    """1,000 queries x 100k x 384 must take seconds: here a fifth of that, with two filters."""
    rng = np.random.default_rng(0)
    n, dim = 20_000, 384
    vectors = rng.normal(size=(n, dim)).astype(np.float32)
    metas = [{"g": i % 10} for i in range(n)]
    truth = GroundTruth(ExactIndex(Metric.COSINE, [f"k{i}" for i in range(n)], vectors, metas))
    qs = [Query(v, filter=None if i % 2 else {"g": {"$lt": 3}}) for i, v in enumerate(vectors[:1000])]
    start = time.perf_counter()
    table = truth.solve(qs, 10)
    elapsed = time.perf_counter() - start
    assert table.keys(truth.index, 1)[0] == "k1"
    assert elapsed < 15, f"ground truth took {elapsed:.1f}s"


@settings(max_examples=300, deadline=None, database=None)
@given(f=dataset_filters())
def test_filter_labels_parse_back_to_the_same_filter(f: dict[str, object]) -> None:
    where = parse_filter(f)
    label = filter_label(where)
    assert to_dict(parse_filter(json.loads(label))) == to_dict(where)
