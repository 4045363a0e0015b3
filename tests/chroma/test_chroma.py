"""Chroma-specific behaviour on real Chroma (embedded and a ``chroma run`` server)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import chromadb
import numpy as np
import pytest
from chromadb.config import Settings

import vectorport
from vectorport import Record
from vectorport.backends.chroma._client import local_path
from vectorport.backends.chroma._write import NO_TEXT
from vectorport.exceptions import (
    BackendUnavailableError,
    ConfigurationError,
    ConflictError,
    NotFoundError,
    UnsupportedFilterError,
    ValidationError,
)
from vectorport.filters import evaluate, parse_filter
from vectorport.testing.conformance import assert_vectors_equal

pytestmark = pytest.mark.chroma


def _raw(store: vectorport.VectorStore) -> Any:
    """The chromadb collection behind a store, opened with chromadb itself."""
    url = store.url
    settings = Settings(anonymized_telemetry=False)
    if url.scheme == "chroma":
        client = chromadb.PersistentClient(path=local_path(url), settings=settings)
    else:
        client = chromadb.HttpClient(host=url.host, port=url.port, settings=settings)
    return client, client.get_collection(store.collection)


def _close(client: Any) -> None:
    # chromadb's HttpClient never closes its httpx sessions (see ChromaStore.close).
    servers = [client._server, client._admin_client._server]
    client.close()
    for server in servers:
        if hasattr(server, "_session"):
            server._session.close()


def test_full_replace_where_chroma_upsert_merges(new_url: Callable[[], str]) -> None:
    store = vectorport.connect(new_url(), dimension=2, metric="cosine")
    try:
        store.upsert([Record("k", [1, 0], {"a": 1, "old": "x", "tags": ["t"]}, "old text")])
        # What Chroma's own upsert does: merge metadata and keep the old document.
        client, coll = _raw(store)
        coll.upsert(ids=["m"], embeddings=[[1.0, 0.0]], metadatas=[{"a": 1, "old": "x"}], documents=["d"])
        coll.upsert(ids=["m"], embeddings=[[0.0, 1.0]], metadatas=[{"a": 2}])
        merged = coll.get(ids=["m"], include=["metadatas", "documents"])
        assert merged["metadatas"][0] == {"a": 2, "old": "x"} and merged["documents"] == ["d"]
        store.delete(["m"])
        # vectorport leaves exactly the new record, also with empty metadata and no text.
        store.upsert([Record("k", [0, 1], {"a": 2}, None)])
        assert store.get(["k"])[0] == Record("k", np.array([0, 1], dtype=np.float32), {"a": 2}, None)
        store.upsert([Record("k", [0, 1], {}, None)])
        seen = coll.get(ids=["k"], include=["metadatas", "documents", "embeddings"])
        # the stored text was dropped in one upsert: an empty document and the no-text marker
        assert seen["metadatas"] == [{NO_TEXT: True}] and seen["documents"] == [""]
        assert store.get(["k"])[0].metadata == {} and store.count() == 1
        _close(client)
    finally:
        store.drop()
        store.close()


def test_a_reviewer_sees_a_normal_chroma_collection(new_url: Callable[[], str]) -> None:
    store = vectorport.connect(new_url(), dimension=3, metric="dot", embedding_model="m1")
    try:
        store.upsert([Record("docs/a.md#0", [1, 2, 3], {"lang": "en", "tags": ["x", "y"]}, "chunk text")])
        client, coll = _raw(store)
        got = coll.get(include=["embeddings", "metadatas", "documents"])
        assert got["ids"] == ["docs/a.md#0"] and got["documents"] == ["chunk text"]
        assert got["metadatas"] == [{"lang": "en", "tags": ["x", "y"]}]
        np.testing.assert_array_equal(np.asarray(got["embeddings"], dtype=np.float32), [[1, 2, 3]])
        assert coll.configuration_json["hnsw"]["space"] == "ip"
        assert coll.metadata["vectorport:dimension"] == 3 and coll.metadata["vectorport:metric"] == "dot"
        raw = coll.query(query_embeddings=[[1.0, 0.0, 0.0]], n_results=1, include=["distances"])
        match = store.query([1, 0, 0], k=1)[0]
        assert raw["distances"][0][0] == pytest.approx(0.0)  # Chroma ip: 1 - dot = 1 - 1
        assert match.distance == pytest.approx(-1.0) and match.score == pytest.approx(1.0)
        _close(client)
        again = vectorport.connect(store.url.raw)
        assert again.spec.embedding_model == "m1" and again.spec.metric.value == "dot"
        with pytest.raises(ConfigurationError):
            vectorport.connect(store.url.raw, dimension=4)
        with pytest.raises(ConfigurationError):
            vectorport.connect(store.url.raw, dimension=3, metric="cosine")
        again.close()
    finally:
        store.drop()
        store.close()


def test_distances_are_canonical_per_space(embedded_url: Callable[[], str]) -> None:
    for metric, want in (("euclidean", 5.0), ("dot", -25.0), ("cosine", 0.0)):
        store = vectorport.connect(embedded_url(), dimension=2, metric=metric)
        store.upsert([Record("x", [3, 4])])
        assert store.query([3, 4] if metric != "euclidean" else [0, 0.000001], k=1)[0].distance == (
            pytest.approx(want, abs=1e-4)
        )
        store.drop()
        store.close()


def test_vectors_exact_for_l2_and_ip_within_two_ulps_for_cosine(embedded_url: Callable[[], str]) -> None:
    vecs = (np.random.default_rng(3).normal(size=(200, 32)) * 7).astype(np.float32)
    for metric in ("euclidean", "dot", "cosine"):
        store = vectorport.connect(embedded_url(), dimension=32, metric=metric)
        store.upsert([Record(f"k{i}", v) for i, v in enumerate(vecs)])
        got = {r.key: r.vector for r in store.records(include=["vector"])}
        back = np.stack([got[f"k{i}"] for i in range(200)])
        if metric == "cosine":
            assert_vectors_equal(back, vecs, store.capabilities.vector_ulps)
        else:
            np.testing.assert_array_equal(back, vecs)
        store.drop()
        store.close()


# --------------------------------------------------------------------------- filters
_META: list[dict[str, Any]] = [
    {"f": 1, "g": "x"},
    {"f": 1.0},
    {"f": 1.5, "g": ["x", "y"]},
    {"f": True, "g": "y"},
    {"f": "1"},
    {"f": "x", "g": ["z"]},
    {"f": [1, 2], "g": "x"},
    {"f": [1.0, 2.5]},
    {"f": ["x", "y"]},
    {"f": [True]},
    {"f": -3, "g": ["x"]},
    {"h": 0},
    {"f": 0},
    {"f": -2},
    {"f": 0.5},
    {},
]
_FILTERS: list[dict[str, Any]] = [{"f": v} for v in (1, 1.0, 2, 2.5, True, False, "x", "1", -3)] + [
    {"f": {"$ne": 1}},
    {"f": {"$ne": "x"}},
    {"f": {"$ne": True}},
    {"f": {"$ne": 2.5}},
    {"f": {"$gt": 1}},
    {"f": {"$gte": 1}},
    {"f": {"$lt": 1.5}},
    {"f": {"$lte": -3}},
    {"f": {"$gt": 0.5}},
    {"f": 0.5},
    {"f": -1.5},
    {"f": {"$ne": 0.5}},
    {"f": {"$ne": -1.5}},
    {"f": {"$in": [0.5, -1.5, 1]}},
    {"f": {"$nin": [0.5, -1.5]}},
    {"f": {"$lt": -1.5}},
    {"f": {"$gte": -1.5}},
    {"f": {"$in": [1, "x"]}},
    {"f": {"$in": [2.5, True]}},
    {"f": {"$in": ["y"]}},
    {"f": {"$nin": [1, "x"]}},
    {"f": {"$nin": [True]}},
    # True == 1 == 1.0 in Python: a set-based de-duplication once dropped the bool (conformance kit)
    {"f": {"$in": [1.0, True]}},
    {"f": {"$in": [True, 1]}},
    {"f": {"$nin": [1, True]}},
    {"f": {"$nin": [False, 0, 0.0]}},
    {"$not": {"f": {"$in": [1.0, True]}}},
    {"g": "x", "f": {"$gte": 1}},
    {"$or": [{"g": "z"}, {"f": -3}]},
    {"$and": [{"g": {"$ne": "x"}}]},
    {"$not": {"f": 1}},
    {"$not": {"$or": [{"g": "x"}, {"f": {"$in": ["x", 2.5]}}]}},
    {"missing": {"$ne": 1}},
    {"missing": {"$nin": ["a"]}},
    {"missing": 1},
]


def test_every_compiled_operator_matches_the_oracle(new_url: Callable[[], str]) -> None:
    store = vectorport.connect(new_url(), dimension=2, metric="euclidean")
    try:
        store.upsert([Record(f"r{i}", [float(i), 1.0], m) for i, m in enumerate(_META)])
        for spec in _FILTERS:
            node = parse_filter(spec)
            want = sorted(f"r{i}" for i, m in enumerate(_META) if evaluate(node, m))
            got = sorted(store.query([0, 0], k=len(_META), filter=spec).keys)
            assert got == want, f"{spec}: chroma {got} != oracle {want}"
    finally:
        store.drop()
        store.close()


@pytest.mark.parametrize(
    "spec",
    [
        {"f": {"$exists": True}},
        {"f": {"$exists": False}},
        {"$not": {"f": {"$gt": 1}}},
        {"f": 2**53 + 1},
        {"f": {"$gt": 2**64}},
        {"#document": "x"},
    ],
)
def test_inexpressible_filters_are_refused_before_io(embedded_url: Callable[[], str], spec: Any) -> None:
    store = vectorport.connect(embedded_url(), dimension=2)
    store.close()  # a closed store proves no I/O happens: refusal comes first
    store.connection.client = object()  # type: ignore[attr-defined]
    with pytest.raises(UnsupportedFilterError):
        store.query([1, 0], filter=spec)


# --------------------------------------------------------------------------- metadata
@pytest.mark.parametrize(
    ("meta", "path"),
    [
        ({"a": {"b": 1}}, "metadata.a"),
        ({"a": None}, "metadata.a"),
        ({"a": []}, "metadata.a"),
        ({"a": [1, "x"]}, "metadata.a"),
        ({"a": [2**60 + 1, 0.5]}, "metadata.a"),
        ({"chroma:document": "x"}, "metadata.chroma:document"),
        ({"#x": 1}, "metadata.#x"),
    ],
)
def test_metadata_chroma_cannot_hold_is_refused(
    embedded_url: Callable[[], str], meta: dict[str, Any], path: str
) -> None:
    store = vectorport.connect(embedded_url(), dimension=2)
    try:
        with pytest.raises(ValidationError) as info:
            store.upsert([Record("ok", [1, 0]), Record("bad", [1, 1], meta)])
        assert info.value.key == "bad" and info.value.path == path
        assert store.count() == 0
    finally:
        store.drop()
        store.close()


def test_mixed_int_float_lists_are_stored_as_floats(embedded_url: Callable[[], str]) -> None:
    store = vectorport.connect(embedded_url(), dimension=2)
    try:
        store.upsert([Record("k", [1, 0], {"n": [1, 2.5]})])
        assert store.get(["k"])[0].metadata == {"n": [1.0, 2.5]}
        assert store.query([1, 0], filter={"n": 1}).keys == ["k"]
    finally:
        store.drop()
        store.close()


def test_drop_leaves_no_ghost_list_metadata(new_url: Callable[[], str]) -> None:
    # chroma-core/chroma#7594: delete_collection leaves list metadata that new records inherit.
    first = vectorport.connect(new_url(), dimension=2)
    first.upsert([Record(f"k{i}", [1, i], {"tags": ["ghost"]}) for i in range(5)])
    first.drop()
    first.close()
    second = vectorport.connect(new_url(), dimension=2)
    try:
        second.upsert([Record(f"k{i}", [1, i], {"n": i}) for i in range(5)])
        assert all("tags" not in r.metadata for r in second.records())
        assert second.query([1, 0], filter={"tags": "ghost"}).k_returned == 0
    finally:
        second.drop()
        second.close()


# --------------------------------------------------------------------------- scans
def test_scan_cursor_detects_moved_positions(embedded_url: Callable[[], str]) -> None:
    store = vectorport.connect(embedded_url(), dimension=2)
    try:
        store.upsert([Record(f"k{i:03}", [1, i]) for i in range(50)])
        first = next(store.scan(batch_size=10, include=[]))
        store.delete([first.records[0].key])  # positions before the cursor move
        with pytest.raises(ConflictError):
            list(store.scan(batch_size=10, cursor=first.cursor))
        with pytest.raises(ConfigurationError):
            list(store.scan(cursor="garbage"))
    finally:
        store.drop()
        store.close()


def test_50k_records_scan_completely(embedded_url: Callable[[], str]) -> None:
    n, dim = 50_000, 8
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(n, dim)).astype(np.float32)
    store = vectorport.connect(embedded_url(), dimension=dim, metric="cosine")
    try:
        store.upsert(
            Record(f"doc{i // 10}.md#{i % 10}", vecs[i], {"i": i, "tags": ["a", "b"]}, f"t{i}")
            for i in range(n)
        )
        assert store.count() == n
        seen: dict[str, np.ndarray] = {}
        for page in store.scan():
            for rec in page:
                assert rec.key not in seen
                assert rec.text == f"t{rec.metadata['i']}"
                seen[rec.key] = np.asarray(rec.vector)
        assert len(seen) == n
        back = np.stack([seen[f"doc{i // 10}.md#{i % 10}"] for i in range(n)])
        assert_vectors_equal(back, vecs, store.capabilities.vector_ulps)
        segments = [
            {r.key for page in store.scan(segment=(s, 4), include=[]) for r in page} for s in range(4)
        ]
        assert sum(len(s) for s in segments) == n and set().union(*segments) == seen.keys()
    finally:
        store.drop()
        store.close()


# --------------------------------------------------------------------------- errors
def test_server_down_is_backend_unavailable() -> None:
    with pytest.raises(BackendUnavailableError):
        vectorport.connect("chroma+http://127.0.0.1:1?collection=docs")


def test_missing_collection_is_not_found(new_url: Callable[[], str]) -> None:
    with pytest.raises(NotFoundError):
        vectorport.connect(new_url())


def test_bad_urls_fail_clearly(chroma_dir: str) -> None:
    with pytest.raises(ConfigurationError, match="name the collection"):
        vectorport.connect(f"chroma://{chroma_dir}")
    with pytest.raises(ConfigurationError, match="3-512 characters"):
        vectorport.connect(f"chroma://{chroma_dir}?collection=x")
    with pytest.raises(ConfigurationError, match="unknown chroma URL parameter 'bogus'"):
        vectorport.connect(f"chroma://{chroma_dir}?collection=docs&bogus=1")
    with pytest.raises(ConfigurationError, match="unknown options"):
        vectorport.connect(f"chroma://{chroma_dir}?collection=docs", bogus=1)


def test_relative_path_and_hnsw_options(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    store = vectorport.connect(
        "chroma://./rel/Dir?collection=docs&ef_construction=64", dimension=2, max_neighbors=8
    )
    try:
        assert (tmp_path / "rel" / "Dir").is_dir()
        client, coll = _raw(store)
        assert coll.configuration_json["hnsw"]["ef_construction"] == 64
        assert coll.configuration_json["hnsw"]["max_neighbors"] == 8
        _close(client)
    finally:
        store.drop()
        store.close()


def test_fractional_range_operands_against_integers_match_the_oracle(embedded_url: Callable[[], str]) -> None:
    # Chroma truncates a fractional operand toward zero against integer values, which both
    # misses (`$lt 1.5` vs 1) and over-matches (`$lte -1.5` vs -1); found by the conformance kit.
    import itertools

    store = vectorport.connect(embedded_url(), dimension=2, metric="euclidean")
    values: list[Any] = [-3, -2, -1, 0, 1, 2, 3, -2.5, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.5, "x", True]
    recs = [Record(f"k{i}", [1, i], {"c": v}) for i, v in enumerate(values)] + [Record("none", [1, 99], {})]
    store.upsert(recs)
    try:
        for op, v in itertools.product(["$gt", "$gte", "$lt", "$lte"], [1.5, -1.5, 0.5, -0.5, 2.5, -2.5]):
            for spec in ({"c": {op: v}}, {"$not": {"$not": {"c": {op: v}}}}):
                got = set(store.query([1, 0], k=50, filter=spec).keys)
                want = {r.key for r in recs if evaluate(parse_filter(spec), r.metadata)}
                assert got == want, (spec, sorted(got ^ want))
    finally:
        store.drop()


def test_a_scan_whose_last_page_is_full_ends_on_it(new_url: Callable[[], str]) -> None:
    """A full page that reaches the collection's count is the last one (its cursor is None): no
    empty page after it. A resumed scan ends the same way, and a record added after the cursor is
    still read."""
    store = vectorport.connect(new_url(), dimension=2, metric="euclidean")
    try:
        store.upsert([Record(f"k{i:02d}", [float(i), 1.0], {"i": i}, None) for i in range(20)])
        pages = list(store.scan(batch_size=10))
        assert [len(p) for p in pages] == [10, 10] and pages[-1].cursor is None
        assert [r.key for p in pages for r in p] == [f"k{i:02d}" for i in range(20)]
        store.upsert([Record("k20", [20.0, 1.0], {"i": 20}, None)])
        rest = list(store.scan(batch_size=10, cursor=pages[0].cursor))
        assert [len(p) for p in rest] == [10, 1] and rest[-1].cursor is None
    finally:
        store.drop()
