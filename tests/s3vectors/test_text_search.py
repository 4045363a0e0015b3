"""The s3vectors adapter's text and hybrid search against the memory reference, through boto3
and the local bucket server (which ranks text with vectorport._textsearch, so rankings, BM25
scores and fused results must equal the memory store's on the same records)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vectorport
from vectorport._features import hybrid_search_of, text_search_of
from vectorport._textsearch import fuse
from vectorport.backends.s3vectors import S3VectorsStore
from vectorport.backends.s3vectors.store import TEXT_KEY

from .conftest import searchable_index

pytestmark = pytest.mark.s3vectors

WORDS = ["red", "fox", "hen", "blue", "sky", "run", "cat"]
FEATURES = {"text_search", "hybrid"}


@pytest.fixture(scope="module")
def pair(s3v: Any, endpoint: str) -> Iterator[tuple[S3VectorsStore, vectorport.VectorStore]]:
    searchable_index(s3v, "text-reference", "docs", 2, "euclidean")
    bucket = vectorport.connect(f"s3vectors://text-reference/docs?endpoint_url={endpoint}")
    mem = vectorport.connect("memory://s3-text-reference", dimension=2, metric="euclidean")
    assert isinstance(bucket, S3VectorsStore)
    yield bucket, mem
    bucket.drop()
    bucket.close()
    mem.drop()


def test_features_are_declared_for_a_searchable_index(pair: tuple[S3VectorsStore, Any]) -> None:
    bucket, _ = pair
    assert bucket.capabilities.features >= FEATURES
    assert text_search_of(bucket) is bucket and hybrid_search_of(bucket) is bucket


docs_strategy = st.lists(
    st.tuples(
        st.integers(-20, 20),
        st.integers(-20, 20),
        st.sampled_from(["x", "y"]),
        st.one_of(
            st.none(), st.just(""), st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)
        ),
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    docs=docs_strategy,
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
    k=st.integers(1, 6),
    weight=st.sampled_from([0.0, 0.25, 0.5, 0.8, 1.0]),
    rrf_k=st.integers(1, 80),
    filtered=st.booleans(),
)
def test_text_and_hybrid_equal_the_reference(
    pair: tuple[S3VectorsStore, Any],
    docs: list[tuple[int, int, str, str | None]],
    query: str,
    k: int,
    weight: float,
    rrf_k: int,
    filtered: bool,
) -> None:
    bucket, mem = pair
    for store in (bucket, mem):
        store.delete_all()
        # small integer coordinates: distances are exact in float32, so ties are real ties
        store.upsert(
            vectorport.Record(f"k{i:02d}", [x, y], {"g": g}, t) for i, (x, y, g, t) in enumerate(docs)
        )
    where = {"g": "x"} if filtered else None
    q = np.array([1.0, -2.0])

    def text(store: Any, n: int) -> list[tuple[Any, ...]]:
        return [
            (m.key, m.score, m.distance, m.extra, m.metadata, m.text)
            for m in store.text_query(query, n, filter=where)
        ]

    assert text(bucket, k) == text(mem, k)
    assert text(bucket, 100) == text(mem, 100)

    def hybrid(store: Any) -> list[tuple[Any, ...]]:
        found = store.hybrid_query(q, query, k, filter=where, weight=weight, rrf_k=rrf_k)
        return [(m.key, m.distance, m.score, m.extra, m.metadata, m.text) for m in found]

    got = hybrid(bucket)
    assert got == hybrid(mem)
    # and it is the reference fusion of the bucket's own two rankings (2k candidates each)
    vec = [m.key for m in bucket.query(q, 2 * k, filter=where)]
    txt = [m.key for m in bucket.text_query(query, 2 * k, filter=where)]
    want = fuse(vec, txt, weight=weight, rrf_k=rrf_k)[:k]
    assert [(g[0], g[3]["vector_rank"], g[3]["text_rank"]) for g in got] == [
        (f.key, f.vector_rank, f.text_rank) for f in want
    ]
    assert [g[3]["rrf_score"] for g in got] == [f.rrf_score for f in want]
    if filtered:
        assert all(g[4] == {"g": "x"} for g in got)


def test_a_record_found_only_by_text_gets_its_distance(pair: tuple[S3VectorsStore, Any]) -> None:
    bucket, mem = pair
    records = [vectorport.Record(f"near{i}", [1.0, 0.1 * i], {}, "plain words") for i in range(4)]
    records.append(vectorport.Record("far", [-3.0, 4.0], {"g": "x"}, "the lonely fox"))
    for store in (bucket, mem):
        store.delete_all()
        store.upsert(records)
    found = bucket.hybrid_query([1.0, 0.0], "fox", 2, weight=0.4)
    assert next(m.key for m in found) == "far"
    far = found.matches[0]
    assert far.extra == {"rrf_score": pytest.approx(0.6 / 61), "vector_rank": None, "text_rank": 1}
    assert far.distance == pytest.approx(np.hypot(4.0, 4.0))
    assert far.score == pytest.approx(-np.hypot(4.0, 4.0))
    reference = mem.hybrid_query([1.0, 0.0], "fox", 2, weight=0.4)
    assert [(m.key, m.distance, m.extra) for m in found] == [(m.key, m.distance, m.extra) for m in reference]
    # the text key itself is not user metadata, and metadata comes from the text ranking's hit
    assert (far.metadata, far.text) == ({"g": "x"}, "the lonely fox")


def count_calls(store: S3VectorsStore) -> list[str]:
    calls: list[str] = []
    store.client.meta.events.register("before-call.s3vectors", lambda model, **_: calls.append(model.name))
    return calls


def test_an_index_without_text_search_refuses_before_io(endpoint: str, s3v: Any, unique: Any) -> None:
    name = unique("plain")
    url = f"s3vectors://text-plain/{name}?endpoint_url={endpoint}"
    store = vectorport.connect(url, dimension=2, metric="cosine")
    assert isinstance(store, S3VectorsStore)
    reopened = None
    try:
        store.upsert([vectorport.Record("a", [1, 0], {}, "red fox")])
        assert not FEATURES & store.capabilities.features
        assert S3VectorsStore.capabilities.features >= FEATURES  # the backend's declaration
        calls = count_calls(store)
        with pytest.raises(vectorport.UnsupportedFeatureError, match="no text search"):
            text_search_of(store)
        with pytest.raises(vectorport.UnsupportedFeatureError, match="no hybrid search"):
            hybrid_search_of(store)
        with pytest.raises(
            vectorport.UnsupportedFeatureError, match=f"text key '{TEXT_KEY}' is not full-text"
        ):
            store.text_query("fox")
        with pytest.raises(vectorport.UnsupportedFeatureError, match="UpdateMetadataConfiguration"):
            store.hybrid_query([1, 0], "fox")
        assert calls == []
        # configured as the message says, the reopened index searches its text
        s3v.update_metadata_configuration(
            vectorBucketName="text-plain",
            indexName=name,
            add={"textSearchConfigurations": [{"metadataKey": TEXT_KEY}]},
        )
        reopened = vectorport.connect(url)
        assert reopened.capabilities.features >= FEATURES
        assert [m.key for m in text_search_of(reopened).text_query("fox")] == ["a"]
        assert [m.key for m in hybrid_search_of(reopened).hybrid_query([1, 0], "fox")] == ["a"]
    finally:
        if reopened is not None:
            reopened.close()
        store.drop()
        store.close()


def test_a_node_layout_has_no_text_search(endpoint: str, s3v: Any) -> None:
    # LlamaIndex keeps the text inside a JSON node: searchable by the service, not as the text
    searchable_index(s3v, "text-node", "docs", 2, "cosine", key="_node_content")
    store = vectorport.connect(f"s3vectors://text-node/docs?endpoint_url={endpoint}&layout=llamaindex")
    assert isinstance(store, S3VectorsStore)
    try:
        assert not FEATURES & store.capabilities.features
        calls = count_calls(store)
        with pytest.raises(vectorport.UnsupportedFeatureError, match="inside a JSON node"):
            store.text_query("fox")
        assert calls == []
    finally:
        store.drop()
        store.close()


def test_bad_requests_are_refused_before_io(pair: tuple[S3VectorsStore, Any]) -> None:
    bucket, _ = pair
    calls = count_calls(bucket)
    with pytest.raises(vectorport.ConfigurationError, match="takes no params"):
        bucket.text_query("fox", params={"ef_search": 10})
    with pytest.raises(vectorport.ConfigurationError, match="k can be at most 5000"):
        bucket.hybrid_query([1, 0], "fox", 6000)
    with pytest.raises(vectorport.ConfigurationError, match="fusion weight"):
        bucket.hybrid_query([1, 0], "fox", weight=1.5)
    with pytest.raises(vectorport.ConfigurationError, match="non-empty query text"):
        bucket.text_query("  ")
    with pytest.raises(vectorport.ValidationError):
        bucket.hybrid_query([1, 0, 0], "fox")
    assert calls == []
