"""S3VectorsStore against the local server: calibration, exactness, the Supabase form,
client-side validation, filters refused before I/O, throttling and write pacing."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vectorport
from vectorport import Metric, Record
from vectorport._retry import RetryPolicy
from vectorport.backends.s3vectors import S3VectorsStore
from vectorport.backends.s3vectors.filters import S3FilterCompiler
from vectorport.bucketserver import Limits, LocalServer, Throttle
from vectorport.exceptions import (
    BackendUnavailableError,
    ConfigurationError,
    UnsupportedFeatureError,
    UnsupportedFilterError,
    ValidationError,
)
from vectorport.filters import parse_filter
from vectorport.testing import ExactIndex, clustered_records, judge, query_vectors
from vectorport.testing.strategies import dataset_filters

pytestmark = pytest.mark.s3vectors

FAST_RETRY = RetryPolicy(attempts=30, base=0.005, cap=0.05)


@pytest.fixture
def store(endpoint: str, unique: Any) -> Iterator[S3VectorsStore]:
    s = vectorport.connect(
        f"s3vectors://adapter/{unique('ix')}?endpoint_url={endpoint}", dimension=2, metric="euclidean"
    )
    assert isinstance(s, S3VectorsStore)
    yield s
    s.drop()
    s.close()


def test_euclidean_calibration_is_pinned(store: S3VectorsStore) -> None:
    # S3 "euclidean" returns plain L2 (AWS: "the straight-line distance"); canonical is L2 too.
    store.upsert([Record("origin", [0, 0]), Record("p", [3, 4])])
    result = store.query([0, 0], k=2)
    assert [(m.key, m.distance, m.score) for m in result] == [("origin", 0.0, -0.0), ("p", 5.0, -5.0)]
    raw = store.client.query_vectors(
        vectorBucketName="adapter",
        indexName=store.index,
        topK=2,
        queryVector={"float32": [0.0, 0.0]},
        returnDistance=True,
    )
    assert [v["distance"] for v in raw["vectors"]] == [0.0, 5.0]


def test_bad_names_are_configuration_errors(endpoint: str) -> None:
    for url in (
        "s3vectors://b/idx",
        "s3vectors://bucket/Index_1",
        "s3vectors://bucket",
        "s3vectors://bu_ck/idx",
    ):
        with pytest.raises(ConfigurationError):
            vectorport.connect(f"{url}?endpoint_url={endpoint}", dimension=2)


def test_dot_metric_is_refused_clearly(endpoint: str) -> None:
    with pytest.raises(UnsupportedFeatureError, match="no dot-product metric"):
        vectorport.connect(f"s3vectors://adapter/dots?endpoint_url={endpoint}", dimension=4, metric="dot")


def test_index_layout_text_key_and_embedding_model(endpoint: str, unique: Any) -> None:
    name = unique("layout")
    s = vectorport.connect(
        f"s3vectors://adapter/{name}?endpoint_url={endpoint}", dimension=3, embedding_model="all-MiniLM-L6-v2"
    )
    try:
        info = s.client.get_index(vectorBucketName="adapter", indexName=name)["index"]
        assert info["metadataConfiguration"]["nonFilterableMetadataKeys"] == ["vectorport_text"]
        assert (info["dimension"], info["distanceMetric"], info["dataType"]) == (3, "cosine", "float32")
        again = vectorport.connect(f"s3vectors://adapter/{name}?endpoint_url={endpoint}")
        assert again.spec.embedding_model == "all-MiniLM-L6-v2"
        with pytest.raises(ConfigurationError, match="embedded with"):
            vectorport.connect(
                f"s3vectors://adapter/{name}?endpoint_url={endpoint}",
                dimension=3,
                embedding_model="other-model",
            )
        s.upsert([Record("a", [1, 0, 0], {"lang": "en"}, "a long chunk " * 500)])
        raw = s.client.get_vectors(
            vectorBucketName="adapter", indexName=name, keys=["a"], returnMetadata=True
        )
        assert raw["vectors"][0]["metadata"]["vectorport_text"].startswith("a long chunk")
        (rec,) = s.get(["a"])
        assert rec.metadata == {"lang": "en"} and rec.text == "a long chunk " * 500
    finally:
        s.drop()


def test_client_side_validation_before_any_request(store: S3VectorsStore) -> None:
    bad = [
        Record("n", [1, 1], {"x": None}),
        Record("o", [1, 1], {"x": {"nested": 1}}),
        Record("b", [1, 1], {"big": "x" * 2100}),
        Record("i", [1, 1], {"huge": 2**60}),
        Record("t", [1, 1], {"vectorport_text": "reserved"}),
        Record("m", [1, 1], {"mixed": [1, "a"]}),
        Record("k", [1, 1], {f"k{i}": i for i in range(50)}),
    ]
    for rec in bad:
        with pytest.raises(ValidationError) as info:
            store.upsert([rec])
        assert info.value.key == rec.key
    assert store.count() == 0


def test_filters_refused_before_io(store: S3VectorsStore) -> None:
    store.upsert([Record("a", [1, 1], {"n": 1})])
    for flt in ({"$not": {"n": {"$gt": 1}}}, {"vectorport_text": "x"}, {"n": 2**60}):
        with pytest.raises(UnsupportedFilterError):
            store.query([1, 1], k=1, filter=flt)
    compiler = S3FilterCompiler({"vectorport_text"})
    assert compiler.compile(parse_filter({"n": {"$ne": 1}})) == {
        "$or": [{"n": {"$ne": 1}}, {"n": {"$exists": False}}]
    }
    assert compiler.compile(parse_filter({"$not": {"n": {"$in": [1, 2]}}})) == {
        "$or": [{"n": {"$nin": [1, 2]}}, {"n": {"$exists": False}}]
    }
    assert compiler.compile(parse_filter({"a": 1, "b": {"$gte": 2}})) == {
        "$and": [{"a": {"$eq": 1}}, {"b": {"$gte": 2}}]
    }
    assert "$not" in S3VectorsStore.capabilities.filter_operators


def test_exact_against_the_oracle(endpoint: str, unique: Any) -> None:
    s = vectorport.connect(
        f"s3vectors://adapter/{unique('exact')}?endpoint_url={endpoint}&write_rate=0",
        dimension=8,
        metric="cosine",
    )
    records = clustered_records(300, 8, clusters=6, seed=5, rules=s.capabilities.metadata)
    s.upsert(records)
    index = ExactIndex.from_records(Metric.COSINE, records)
    queries = query_vectors(32, 8, clusters=6, seed=5)
    try:

        @settings(
            max_examples=60,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
        )
        @given(f=dataset_filters(), qi=st.integers(0, 31), k=st.integers(1, 100))
        def check(f: dict[str, Any], qi: int, k: int) -> None:
            try:
                result = s.query(queries[qi], k=k, filter=f)
            except UnsupportedFilterError:
                return
            j = judge(index, queries[qi], result, parse_filter(f))
            assert not j.violations and j.k_returned == j.k_expected and not j.missing_required
            assert j.max_distance_error < 1e-5

        check()
    finally:
        s.drop()


def test_count_and_scan_segments(endpoint: str, unique: Any) -> None:
    s = vectorport.connect(
        f"s3vectors://adapter/{unique('seg')}?endpoint_url={endpoint}&write_rate=0",
        dimension=4,
        metric="cosine",
    )
    try:
        recs = clustered_records(1300, 4, seed=2, rules=s.capabilities.metadata)
        s.upsert(recs)
        assert s.count() == 1300
        keys = {r.key for r in recs}
        for parts in (3, 20):  # native ListVectors segments, and more than the 16 it offers
            seen = [
                r.key for i in range(parts) for page in s.scan(segment=(i, parts), include=[]) for r in page
            ]
            assert sorted(seen) == sorted(keys)
    finally:
        s.drop()


def test_supabase_form(
    endpoint: str, supabase_key: str, unique: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = unique("supa")
    url = f"supabase://abcdefgh.supabase.co/supa-bucket/{index}?key={supabase_key}&endpoint_url={endpoint}"
    s = vectorport.connect(url, dimension=2, metric="cosine")
    try:
        assert "key=***" in repr(s) and supabase_key not in repr(s)
        s.upsert([Record("a", [1, 0], {"lang": "en"}, "hello"), Record("b", [0, 1], {"lang": "fr"})])
        assert s.query([1, 0.1], k=2, filter={"lang": "fr"}).keys == ["b"]
        assert s.count() == 2 and {r.key for r in s.records()} == {"a", "b"}
        monkeypatch.setenv("SUPABASE_SERVICE_ROLE_KEY", supabase_key)
        via_env = vectorport.connect(
            f"supabase://abcdefgh.supabase.co/supa-bucket/{index}?endpoint_url={endpoint}"
        )
        assert via_env.get(["a"])[0].text == "hello"
        monkeypatch.delenv("SUPABASE_SERVICE_ROLE_KEY")
        with pytest.raises(ConfigurationError, match="service-role key"):
            vectorport.connect(f"supabase://abcdefgh.supabase.co/supa-bucket/{index}?endpoint_url={endpoint}")
        with pytest.raises(ConfigurationError, match="AccessDenied"):
            vectorport.connect(
                f"supabase://abcdefgh.supabase.co/supa-bucket/{index}?key=wrong&endpoint_url={endpoint}"
            )
    finally:
        s.drop()


def test_unreachable_endpoint_is_backend_unavailable() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(BackendUnavailableError):
        vectorport.connect(
            f"s3vectors://nobody/idx?endpoint_url=http://127.0.0.1:{port}&max_attempts=1", dimension=2
        )


@pytest.mark.parametrize("failure", ["fraction", "unavailable"])
def test_completes_correctly_under_injected_throttling(failure: str) -> None:
    throttle = Throttle(fraction=0.3, seed=3) if failure == "fraction" else Throttle(unavailable=0.3, seed=4)
    server = LocalServer(throttle=throttle)
    url = server.start()
    try:
        s = vectorport.connect(
            f"s3vectors://throttled/chunks?endpoint_url={url}&max_attempts=1&write_rate=0",
            dimension=8,
            metric="euclidean",
            retry=FAST_RETRY,
        )
        recs = clustered_records(1600, 8, seed=9, rules=s.capabilities.metadata)
        assert s.upsert(recs) == 1600
        assert s.count() == 1600
        got = {r.key: r for r in s.records(include=["vector", "metadata"])}
        assert set(got) == {r.key for r in recs}
        for r in recs[:50]:
            assert np.array_equal(got[r.key].vector, np.asarray(r.vector, np.float32))
            assert got[r.key].metadata == r.metadata
        assert s.query(recs[0].vector, k=1)[0].key == recs[0].key
        assert s.delete([r.key for r in recs[:700]]) == 700 and s.count() == 900
        assert throttle.throttled > 5
    finally:
        server.stop()


def test_write_pacing_keeps_under_the_service_rate() -> None:
    server = LocalServer(limits=Limits(write_rate=2000.0))
    url = server.start()
    try:
        recs = [Record(f"k{i}", [1.0, float(i)]) for i in range(2500)]
        paced = vectorport.connect(
            f"s3vectors://paced/aaa?endpoint_url={url}&write_rate=1500&max_attempts=1",
            dimension=2,
            metric="euclidean",
            retry=RetryPolicy(attempts=1),
        )
        assert paced.capabilities.write_rate == 1500  # declared: what the engines read
        began = time.monotonic()
        paced.upsert(recs)  # no 429 at all: a single failure would raise (one attempt)
        assert time.monotonic() - began >= 0.5
        unpaced = vectorport.connect(
            f"s3vectors://paced/bbb?endpoint_url={url}&write_rate=0&max_attempts=1",
            dimension=2,
            metric="euclidean",
            retry=FAST_RETRY,
        )
        assert unpaced.capabilities.write_rate is None
        assert unpaced.upsert(recs) == 2500 and unpaced.count() == 2500  # 429s, retried with backoff
    finally:
        server.stop()


def test_k_beyond_one_page_follows_next_token(store: S3VectorsStore) -> None:
    recs = clustered_records(400, 2, clusters=3, seed=11, rules=store.capabilities.metadata)
    store.upsert(recs)
    index = ExactIndex.from_records(Metric.EUCLIDEAN, recs)
    q = np.asarray(recs[7].vector, np.float32)
    for k, flt in ((250, None), (400, None), (150, {"lang": {"$ne": "en"}})):
        result = store.query(q, k=k, filter=flt)
        j = judge(index, q, result, parse_filter(flt))
        assert j.recall == 1.0 and not j.violations and j.k_returned == j.k_expected, (k, flt, j)
        assert [m.distance for m in result] == sorted(m.distance for m in result)


def test_old_top_k_limit_can_be_emulated() -> None:
    server = LocalServer(limits=Limits(max_top_k=100))
    url = server.start()
    try:
        s = vectorport.connect(f"s3vectors://old/ix1?endpoint_url={url}", dimension=2, metric="euclidean")
        s.upsert([Record(f"k{i}", [1.0, float(i)]) for i in range(150)])
        assert len(s.query([1, 0], k=100)) == 100
        with pytest.raises(vectorport.ValidationError, match="topK"):
            s.query([1, 0], k=101)
    finally:
        server.stop()
