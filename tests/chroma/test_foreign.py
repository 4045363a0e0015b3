"""Collections written by plain chromadb, opened by vectorport (embedded and ``chroma run``)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from chromadb import Schema, VectorIndexConfig

import vectorport
from vectorport import Record
from vectorport.exceptions import ConfigurationError, NotFoundError
from vectorport.filters import evaluate, parse_filter
from vectorport.testing.oracle import ExactIndex, judge

from ._plain import collection_name, plain_client

pytestmark = pytest.mark.chroma

METRIC = {"l2": "euclidean", "cosine": "cosine", "ip": "dot"}
IDS = ["1", "x y", "ü/#?", "a" * 200, "UPPER", "0001", "with\nnewline", "tab\tid", "e", "f", "g", "h"]


def _create(client: Any, name: str, style: str, space: str | None) -> Any:
    """A collection made the way a Chroma user would, with Chroma's default embedding function."""
    if style == "default":
        return client.create_collection(name)
    assert space is not None
    if style == "metadata":  # the pre-1.0 way, still accepted
        return client.create_collection(name, metadata={"hnsw:space": space, "owner": "someone"})
    if style == "configuration":
        return client.create_collection(name, configuration={"hnsw": {"space": space, "ef_search": 50}})
    schema = Schema()
    schema.create_index(config=VectorIndexConfig(space=space))  # type: ignore[arg-type]
    return client.create_collection(name, schema=schema)


def _fill(coll: Any, dim: int) -> tuple[list[str], np.ndarray, list[dict[str, Any] | None], list[str | None]]:
    rng = np.random.default_rng(5)
    vecs = rng.normal(size=(len(IDS), dim)).astype(np.float32)
    metas: list[dict[str, Any] | None] = [
        {"lang": "en", "n": i, "tags": ["a", "b"][: 1 + i % 2]} if i % 3 else None for i in range(len(IDS))
    ]
    docs: list[str | None] = [f"doc {i}" if i % 2 else None for i in range(len(IDS))]
    # One add with some documents and metadatas missing, one with none at all.
    coll.add(ids=IDS[:8], embeddings=vecs[:8].tolist(), metadatas=metas[:8], documents=docs[:8])
    coll.add(ids=IDS[8:], embeddings=vecs[8:].tolist())
    return IDS, vecs, [*metas[:8], *([None] * 4)], [*docs[:8], *([None] * 4)]


CASES = [("default", None)] + [
    (s, sp) for s in ("metadata", "configuration", "schema") for sp in ("l2", "cosine", "ip")
]


@pytest.mark.parametrize(("style", "space"), CASES)
def test_vectorport_opens_what_plain_chromadb_made(
    new_url: Callable[[], str], style: str, space: str | None
) -> None:
    url = new_url()
    with plain_client(url) as client:
        coll = _create(client, collection_name(url), style, space)
        ids, vecs, metas, docs = _fill(coll, 6)
    metric = METRIC[space or "l2"]
    store = vectorport.connect(url)
    try:
        # Dimension from the vectors, metric from the space, no model: Chroma's default embedding
        # function is recorded on the collection but these 6-dim vectors are not its (384-dim).
        assert (store.spec.dimension, store.spec.metric.value, store.spec.embedding_model) == (
            6,
            metric,
            None,
        )
        assert store.count() == len(ids)
        want = {k: Record(k, vecs[i], metas[i] or {}, docs[i]) for i, k in enumerate(ids)}
        scanned = {r.key: r for page in store.scan(batch_size=5) for r in page}
        assert scanned.keys() == want.keys()
        for key, rec in scanned.items():
            assert (rec.metadata, rec.text) == (want[key].metadata, want[key].text)
            np.testing.assert_allclose(np.asarray(rec.vector), want[key].vector, rtol=1e-6, atol=1e-6)
        got = store.get(["x y", "nope", "1", "with\nnewline"])
        assert [r.key for r in got] == ["x y", "1", "with\nnewline"]
        index = ExactIndex.from_records(metric, list(want.values()))
        for q in np.random.default_rng(6).normal(size=(4, 6)).astype(np.float32):
            for spec in (None, {"lang": "en"}, {"tags": "b"}, {"n": {"$gte": 4}}, {"lang": {"$ne": "en"}}):
                result = store.query(q, k=len(ids), filter=spec)
                j = judge(index, q, result, parse_filter(spec))
                assert not j.violations and j.k_returned == j.k_expected, (spec, j)
                assert j.max_distance_error < 1e-4, (spec, j.max_distance_error)
        # Writing into it keeps it a normal Chroma collection for its owner.
        store.upsert([Record("new", vecs[0], {"lang": "xx"}, "t")])
        with plain_client(url) as client:
            seen = client.get_collection(collection_name(url)).get(ids=["new"], include=["documents"])
            assert seen["documents"] == ["t"]
    finally:
        store.drop()
        store.close()


def test_metric_and_dimension_mismatch_say_what_the_collection_is(new_url: Callable[[], str]) -> None:
    url = new_url()
    with plain_client(url) as client:
        _fill(_create(client, collection_name(url), "configuration", "cosine"), 6)
    with pytest.raises(ConfigurationError, match="uses the cosine metric, not euclidean"):
        vectorport.connect(url, metric="euclidean")
    with pytest.raises(ConfigurationError, match="has dimension 6, not 8"):
        vectorport.connect(url, dimension=8)
    store = vectorport.connect(url, dimension=6, metric="cosine")
    store.drop()
    store.close()


def test_an_empty_foreign_collection_needs_a_dimension(new_url: Callable[[], str]) -> None:
    url = new_url()
    with plain_client(url) as client:
        _create(client, collection_name(url), "metadata", "ip")
    with pytest.raises(ConfigurationError, match="pass dimension= to adopt it"):
        vectorport.connect(url)
    store = vectorport.connect(url, dimension=3)
    try:
        assert store.spec.metric.value == "dot"  # the space decides; the default metric does not
        store.upsert([Record("a", [1, 2, 3])])
        assert store.query([1, 0, 0], k=1)[0].distance == pytest.approx(-1.0)
    finally:
        store.drop()
        store.close()


def test_default_embedding_function_is_the_model_only_at_its_dimension(new_url: Callable[[], str]) -> None:
    url = new_url()
    with plain_client(url) as client:
        coll = client.create_collection(collection_name(url))
        coll.add(ids=["a"], embeddings=[[0.1] * 384])
    store = vectorport.connect(url)
    try:
        assert store.spec.embedding_model == "chroma:default"
    finally:
        store.drop()
        store.close()


def test_filters_on_foreign_metadata_match_the_oracle(new_url: Callable[[], str]) -> None:
    url = new_url()
    with plain_client(url) as client:
        coll = client.create_collection(collection_name(url), configuration={"hnsw": {"space": "cosine"}})
        ids, _vecs, metas, _docs = _fill(coll, 6)
    store = vectorport.connect(url)
    try:
        for spec in ({"n": {"$in": [1, 2, "x"]}}, {"tags": {"$nin": ["b"]}}, {"missing": {"$ne": 1}}):
            want = sorted(k for k, m in zip(ids, metas, strict=True) if evaluate(parse_filter(spec), m or {}))
            assert sorted(store.query([1] * 6, k=len(ids), filter=spec).keys) == want, spec
    finally:
        store.drop()
        store.close()


def test_opening_a_missing_directory_creates_nothing(tmp_path: Any) -> None:
    where = tmp_path / "typo"
    with pytest.raises(NotFoundError, match=r"no Chroma database in .*pass dimension="):
        vectorport.connect(f"chroma://{where}?collection=docs")
    assert not where.exists()
    where.mkdir()
    with pytest.raises(NotFoundError, match=r"no chroma\.sqlite3"):
        vectorport.connect(f"chroma://{where}?collection=docs")
    assert os.listdir(where) == []
    store = vectorport.connect(f"chroma://{where}?collection=docs", dimension=2)
    try:
        assert store.list_collections() == ["docs"]
        with pytest.raises(NotFoundError, match=r"does not exist.*pass dimension="):
            vectorport.connect(f"chroma://{where}?collection=other")
    finally:
        store.drop()
        store.close()


def test_migration_plan_into_a_new_directory_writes_nothing(tmp_path: Any) -> None:
    from vectorport.migrate import plan
    from vectorport.migrate import run as migrate

    src = vectorport.connect("memory://chroma-plan-src", dimension=2)
    src.upsert([Record("a", [1, 0], {"n": 1}, "t")])
    target = f"chroma://{tmp_path / 'new'}?collection=docs"
    try:
        assert plan("memory://chroma-plan-src", target).target_exists is False
        assert not (tmp_path / "new").exists()
        migrate("memory://chroma-plan-src", target)
        store = vectorport.connect(target)
        assert store.get(["a"])[0].text == "t"
        store.drop()
        store.close()
    finally:
        src.drop()
