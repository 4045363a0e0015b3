"""What vectorport writes, read back by a plain chromadb client (embedded and ``chroma run``)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import vectorport
from vectorport import Record
from vectorport.testing.conformance import assert_vectors_equal

from ._plain import collection_name, plain_client

pytestmark = pytest.mark.chroma

# Chroma raw distance → vectorport's canonical distance, as documented in docs/backends/chroma.md.
CANONICAL: dict[str, Callable[[float], float]] = {
    "cosine": lambda d: d,
    "euclidean": lambda d: math.sqrt(max(d, 0.0)),
    "dot": lambda d: d - 1.0,
}
SPACE = {"cosine": "cosine", "euclidean": "l2", "dot": "ip"}

KEYS = ["docs/intro.md#chunk0", 'we"ird key/#1 ü', "x", "中文/路径.md#3", "a" * 300, "sp ace", "0", "-1"]


def _records(dim: int) -> list[Record]:
    rng = np.random.default_rng(7)
    vecs = (rng.normal(size=(len(KEYS) * 4, dim)) * 7).astype(np.float32)
    metas: list[dict[str, Any]] = [
        {"lang": "en", "n": 1, "big": 2**62 + 1, "x": 0.25, "ok": True},
        {"lang": "fr", "tags": ["a", "b"], "ints": [1, 2, 3], "floats": [0.5, 1.5], "bools": [True, False]},
        {},
        {"lang": "en", "mixed": [1, 2.5], "neg": -7, "s": ""},
        {"lang": "de", "x": -1e-3, "unicode": "ünï ✓ 中"},
    ]
    texts: list[str | None] = ["chunk text", None, "", "ünïcode ✓", "a\nb\tc"]
    return [
        Record(f"{KEYS[i % len(KEYS)]}-{i}", vecs[i], metas[i % len(metas)], texts[i % len(texts)])
        for i in range(len(vecs))
    ]


def _chroma_form(meta: dict[str, Any]) -> dict[str, Any] | None:
    """What vectorport documents it stores for ``meta``."""
    if not meta:
        return None
    out = dict(meta)
    for key, value in meta.items():
        if isinstance(value, list) and {type(v) for v in value} == {int, float}:
            out[key] = [float(v) for v in value]
    return out


@pytest.mark.parametrize("metric", ["cosine", "euclidean", "dot"])
def test_plain_chromadb_sees_exactly_what_was_written(new_url: Callable[[], str], metric: str) -> None:
    url = new_url()
    store = vectorport.connect(url, dimension=16, metric=metric, embedding_model="test-model")
    recs = _records(16)
    try:
        store.upsert(recs)
        with plain_client(url) as client:
            coll = client.get_collection(collection_name(url))  # no warning: warnings are errors here
            assert coll.configuration_json["hnsw"]["space"] == SPACE[metric]
            assert coll.metadata == {
                "vectorport:dimension": 16,
                "vectorport:metric": metric,
                "vectorport:embedding_model": "test-model",
            }
            assert coll.count() == len(recs)
            described = store.info()["chroma"]
            assert described["chroma_version"] == client.get_version()
            assert described["mode"] == ("http" if url.startswith("chroma+http") else "embedded")
            assert described["index"]["hnsw"] == coll.configuration_json["hnsw"]
            got = coll.get(include=["embeddings", "metadatas", "documents"])
            by_id = {key: i for i, key in enumerate(got["ids"])}
            assert set(by_id) == {r.key for r in recs}
            order = [by_id[r.key] for r in recs]
            back = np.asarray(got["embeddings"], dtype=np.float32)[order]
            want = np.stack([np.asarray(r.vector, dtype=np.float32) for r in recs])
            if metric == "cosine":  # Chroma stores unit vectors and the norm (docs/backends/chroma.md)
                assert_vectors_equal(back, want, store.capabilities.vector_ulps)
            else:
                np.testing.assert_array_equal(back, want)
            assert [got["documents"][i] for i in order] == [r.text for r in recs]
            assert [got["metadatas"][i] for i in order] == [_chroma_form(r.metadata) for r in recs]
            # The same records through vectorport: the mapping is reversed on read.
            for rec, mine in zip(recs, store.get([r.key for r in recs]), strict=True):
                assert mine.key == rec.key and mine.text == rec.text
                assert mine.metadata == (_chroma_form(rec.metadata) or {})
    finally:
        store.drop()
        store.close()


@pytest.mark.parametrize("metric", ["cosine", "euclidean", "dot"])
def test_plain_query_ranks_like_vectorport(new_url: Callable[[], str], metric: str) -> None:
    url = new_url()
    store = vectorport.connect(url, dimension=16, metric=metric)
    recs = _records(16)
    try:
        store.upsert(recs)
        queries = (np.random.default_rng(8).normal(size=(6, 16)) * 3).astype(np.float32)
        with plain_client(url) as client:
            coll = client.get_collection(collection_name(url))
            for q in queries:
                for where, portable in (
                    (None, None),
                    ({"lang": "en"}, {"lang": "en"}),
                    ({"n": {"$gte": 1}}, None),
                ):
                    raw = coll.query(
                        query_embeddings=[q.tolist()], n_results=10, where=where, include=["distances"]
                    )
                    mine = store.query(q, k=10, filter=portable if portable is not None else where)
                    assert raw["ids"][0] == mine.keys, (metric, where)
                    converted = [CANONICAL[metric](d) for d in raw["distances"][0]]
                    np.testing.assert_allclose([m.distance for m in mine], converted, rtol=1e-6, atol=1e-6)
                    exact = _exact(recs, q, metric, portable or where)
                    np.testing.assert_allclose(converted, exact[: len(converted)], rtol=1e-4, atol=1e-4)
    finally:
        store.drop()
        store.close()


def _exact(recs: list[Record], q: np.ndarray, metric: str, where: dict[str, Any] | None) -> list[float]:
    from vectorport.filters import evaluate, parse_filter

    node = parse_filter(where)
    q64 = q.astype(np.float64)
    out = []
    for r in recs:
        if node is not None and not evaluate(node, r.metadata):
            continue
        v = np.asarray(r.vector, dtype=np.float64)
        if metric == "cosine":
            out.append(1 - float(v @ q64) / (np.linalg.norm(v) * np.linalg.norm(q64)))
        elif metric == "euclidean":
            out.append(float(np.linalg.norm(v - q64)))
        else:
            out.append(-float(v @ q64))
    return sorted(out)
