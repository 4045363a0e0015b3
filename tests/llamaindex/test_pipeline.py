"""A LlamaIndex pipeline on every backend: a ``VectorStoreIndex`` over the store holding 1,000
nodes from several documents, its retriever asked with ``MetadataFilters`` (AND, OR, NOT,
nested, IN, NIN, NE), ``delete_ref_doc``, the same queries again. Each answer is compared with
LlamaIndex's own ``SimpleVectorStore`` holding the same nodes (exact search under LlamaIndex's
filter semantics); for nested filters, which SimpleVectorStore refuses, with the same semantics
applied level by level (its own ``build_metadata_filter_fn``) and exact cosine ranking. Sync and
async (``pgvector+aconnect``: on psycopg's async pool).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import numpy as np
import pytest

from tests._frameworks import each_target, opened_target

pytest.importorskip("llama_index.core")

from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.schema import NodeRelationship, QueryBundle, RelatedNodeInfo, TextNode
from llama_index.core.vector_stores import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    SimpleVectorStore,
    VectorStoreQuery,
)
from llama_index.core.vector_stores.utils import build_metadata_filter_fn

from vectorport.llamaindex import LlamaIndexStore

pytestmark = pytest.mark.llamaindex

DIM = 16
N = 1000
DOCS = [f"doc-{i}" for i in range(5)]
LANGS = ["en", "fr", "de"]
TOPICS = ["a", "b", "c", "d"]
K = 10


def _nodes() -> list[TextNode]:
    rng = np.random.default_rng(30)
    vectors = rng.normal(size=(N, DIM)).astype(np.float32)
    out = []
    for i in range(N):
        meta: dict[str, Any] = {"lang": LANGS[i % 3], "topic": TOPICS[(i // 3) % 4], "page": i // 5}
        if i % 7:  # every seventh node has no stars: NE / NIN match it, ranges do not
            meta["stars"] = int(i * 37 % 50)
        out.append(
            TextNode(
                id_=f"n{i:04d}",
                text=f"chunk {i} of {DOCS[i % 5]}",
                metadata=meta,
                embedding=[float(x) for x in vectors[i]],
                relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=DOCS[i % 5])},
            )
        )
    return out


def _f(key: str, value: Any, op: str = "==") -> MetadataFilter:
    return MetadataFilter(key=key, value=value, operator=FilterOperator(op))


FLAT = {
    "and": MetadataFilters(filters=[_f("lang", "en"), _f("stars", 10, ">=")]),
    "or": MetadataFilters(filters=[_f("topic", "a"), _f("stars", 5, "<")], condition=FilterCondition.OR),
    "in": MetadataFilters(filters=[_f("lang", ["fr", "de"], "in")]),
    "ne": MetadataFilters(filters=[_f("topic", "b", "!=")]),
    "nin-missing": MetadataFilters(filters=[_f("stars", [1, 2, 3], "nin"), _f("lang", "de")]),
    "not": MetadataFilters(filters=[_f("topic", "a"), _f("lang", "en")], condition=FilterCondition.NOT),
    "range": MetadataFilters(filters=[_f("stars", 20, ">"), _f("stars", 30, "<=")]),
}
NESTED = {
    "and-of-or": MetadataFilters(
        filters=[
            _f("lang", "en"),
            MetadataFilters(filters=[_f("topic", "a"), _f("stars", 40, ">")], condition=FilterCondition.OR),
        ]
    ),
    "or-of-and": MetadataFilters(
        filters=[
            MetadataFilters(filters=[_f("lang", "fr"), _f("stars", 45, ">=")]),
            MetadataFilters(filters=[_f("topic", ["c", "d"], "in"), _f("page", 20, "<")]),
        ],
        condition=FilterCondition.OR,
    ),
}


def _matches(filters: MetadataFilters, meta: dict[str, Any]) -> bool:
    """LlamaIndex's own semantics at every level of a nested filter."""
    parts = [
        _matches(f, meta)
        if isinstance(f, MetadataFilters)
        else build_metadata_filter_fn(lambda _: meta, MetadataFilters(filters=[f]))("")
        for f in filters.filters
    ]
    if filters.condition == FilterCondition.OR:
        return any(parts)
    if filters.condition == FilterCondition.NOT:
        return not any(parts)
    return all(parts)


class Reference:
    """SimpleVectorStore, and exact cosine ranking for the nested filters it refuses."""

    def __init__(self, nodes: list[TextNode]) -> None:
        self.simple = SimpleVectorStore()
        self.simple.add(nodes)
        self.nodes = {n.node_id: n for n in nodes}

    def delete(self, ref_doc_id: str) -> None:
        self.simple.delete(ref_doc_id)
        self.nodes = {k: n for k, n in self.nodes.items() if n.ref_doc_id != ref_doc_id}

    def query(self, vector: list[float], filters: MetadataFilters) -> tuple[list[str], list[float]]:
        if not any(isinstance(f, MetadataFilters) for f in filters.filters):
            res = self.simple.query(
                VectorStoreQuery(query_embedding=vector, similarity_top_k=K, filters=filters)
            )
            return list(res.ids or []), list(res.similarities or [])
        q = np.asarray(vector, dtype=np.float64)
        scored = []
        for key, node in self.nodes.items():
            if _matches(filters, node.metadata):
                v = np.asarray(node.embedding, dtype=np.float64)
                scored.append((float(q @ v / (np.linalg.norm(q) * np.linalg.norm(v))), key))
        scored.sort(key=lambda t: (-t[0], t[1]))
        return [k for _, k in scored[:K]], [s for s, _ in scored[:K]]


def _same(got: tuple[list[str], list[float]], want: tuple[list[str], list[float]], label: str) -> None:
    """Same ids in the same order; where they differ, only by a tie (scores within 1e-5)."""
    ids, sims = got
    want_ids, want_sims = want
    assert len(ids) == len(want_ids), label
    if ids == want_ids:
        return
    assert np.allclose(sims, want_sims, atol=1e-5), f"{label}: {ids} != {want_ids}"
    cut = want_sims[-1] + 1e-5
    assert {k for k, s in zip(ids, sims, strict=True) if s > cut} == {
        k for k, s in zip(want_ids, want_sims, strict=True) if s > cut
    }, label


def _index(store: LlamaIndexStore, nodes: list[TextNode] | None = None) -> VectorStoreIndex:
    """LlamaIndex's own index over the store (the nodes carry their embeddings: the mock model
    is never asked for one; queries come with theirs)."""
    ctx = StorageContext.from_defaults(vector_store=store)
    embed = MockEmbedding(embed_dim=DIM)
    if nodes is None:
        return VectorStoreIndex.from_vector_store(store, embed_model=embed)
    return VectorStoreIndex(nodes, storage_context=ctx, embed_model=embed, insert_batch_size=400)


def _hits(found: list[Any]) -> tuple[list[str], list[float]]:
    return [h.node.node_id for h in found], [float(h.score) for h in found]


def _bundle(vector: list[float]) -> QueryBundle:
    return QueryBundle(query_str="(by vector)", embedding=vector)


QUERIES = [list(map(float, v)) for v in np.random.default_rng(31).normal(size=(3, DIM))]


@pytest.fixture(params=each_target(aconnect=True))
async def store(
    request: pytest.FixtureRequest, url_for: Callable[..., str]
) -> AsyncIterator[LlamaIndexStore]:
    async with opened_target(request.param, url_for, DIM) as target:
        li = LlamaIndexStore(target)
        yield li
        if isinstance(target, str):
            with contextlib.suppress(KeyError):
                li.client.drop()
        await li.aclose()


def _check_all(index: VectorStoreIndex, ref: Reference) -> int:
    checked = 0
    for label, filters in {**FLAT, **NESTED}.items():
        retriever = index.as_retriever(similarity_top_k=K, filters=filters)
        for vector in QUERIES:
            got = _hits(retriever.retrieve(_bundle(vector)))
            _same(got, ref.query(vector, filters), label)
            checked += len(got[0])
    return checked


def test_pipeline_matches_llamaindex(store: LlamaIndexStore) -> None:
    nodes = _nodes()
    assert store.add(nodes[:500]) == [n.node_id for n in nodes[:500]]
    index = _index(store, nodes[500:])
    ref = Reference(nodes)
    assert _check_all(index, ref) > 0

    index.delete_ref_doc("doc-2")
    ref.delete("doc-2")
    assert store.client.count() == N - N // 5
    assert _check_all(_index(store), ref) > 0  # an index opened again on the store agrees
    assert store.get_nodes(node_ids=["n0002", "n0003"])[0].node_id == "n0003"  # n0002 was doc-2's
    got = store.get_nodes(node_ids=["n0003"])[0]
    assert (got.ref_doc_id, got.get_content(), got.metadata) == (
        "doc-3",
        "chunk 3 of doc-3",
        nodes[3].metadata,
    )


async def _acheck_all(index: VectorStoreIndex, ref: Reference, vector: list[float]) -> None:
    for label, filters in {**FLAT, **NESTED}.items():
        found = await index.as_retriever(similarity_top_k=K, filters=filters).aretrieve(_bundle(vector))
        _same(_hits(found), ref.query(vector, filters), label)


async def test_pipeline_matches_llamaindex_async(store: LlamaIndexStore) -> None:
    nodes = _nodes()
    await store.async_add(nodes[:300])
    index = _index(store)
    await index.ainsert_nodes(nodes[300:])
    ref = Reference(nodes)
    await _acheck_all(index, ref, QUERIES[0])
    await index.adelete_ref_doc("doc-4")
    ref.delete("doc-4")
    await _acheck_all(index, ref, QUERIES[1])
    await store.adelete_nodes(node_ids=["n0000", "n0001"])
    assert [n.node_id for n in await store.aget_nodes(node_ids=["n0000", "n0001", "n0002"])] == ["n0002"]
    await store.aclear()
    assert store.client.count() == 0
