"""Both adapters on a snapshot ``vectorport export`` wrote (LangChain's standard suite and the
LlamaIndex pipeline run on ``parquet://`` like on every backend, from an empty directory): they
read an exported snapshot exactly as they read the store it was exported from (documents,
searches, filters, MMR, LlamaIndex nodes), the filter of ``test_same_filter`` and the LlamaIndex
pipeline's queries give the same answers there (sync and async), writes through an adapter leave
a snapshot whose digests check, and a snapshot pinned by ``expect_digest`` refuses a write
before anything is embedded."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import vectorport

pytest.importorskip("pyarrow")
pytest.importorskip("langchain_core")
pytest.importorskip("llama_index.core")

from llama_index.core.schema import TextNode
from llama_index.core.vector_stores import MetadataFilter, MetadataFilters, VectorStoreQuery

import tests.langchain.test_same_filter as same
import tests.llamaindex.test_pipeline as pipeline
from vectorport.filters import evaluate, parse_filter
from vectorport.langchain import LangChainEmbeddings, LangChainStore
from vectorport.llamaindex import LlamaIndexStore
from vectorport.snapshot import export, snapshot_url

pytestmark = [pytest.mark.parquet, pytest.mark.langchain, pytest.mark.llamaindex]

TOPICS = ["tables", "buckets", "collections"]
FILTER = {"lang": "en", "stars": {"$gte": 10}}


def test_a_snapshot_reads_as_its_source(tmp_path: Path) -> None:
    emb = LangChainEmbeddings("hash:32")
    source = LangChainStore.from_texts(
        [f"note {i} on {TOPICS[i % 3]} and search" for i in range(40)],
        emb,
        metadatas=[{"lang": ["en", "fr"][i % 2], "stars": i, "ref_doc_id": f"doc{i % 4}"} for i in range(40)],
        ids=[f"n{i:02d}" for i in range(40)],
        store="memory://frameworks-parquet",
    )
    export("memory://frameworks-parquet", tmp_path / "snap")
    snap = LangChainStore(f"parquet://{tmp_path / 'snap'}", embedding=emb)
    try:
        ids = [f"n{i:02d}" for i in range(0, 40, 3)]
        assert snap.get_by_ids(ids) == source.get_by_ids(ids) and len(ids) == 14
        for query in ("search on buckets", "tables"):
            assert snap.similarity_search_with_score(query, k=6, filter=FILTER) == (
                source.similarity_search_with_score(query, k=6, filter=FILTER)
            )
            assert snap.max_marginal_relevance_search(query, k=3, fetch_k=10) == (
                source.max_marginal_relevance_search(query, k=3, fetch_k=10)
            )
        li_snap, li_source = LlamaIndexStore(snap.store), LlamaIndexStore(source.store)
        flt = MetadataFilters(filters=[MetadataFilter(key="lang", value="fr")])
        q = VectorStoreQuery(query_embedding=emb.embed_query("collections"), similarity_top_k=5, filters=flt)
        assert li_snap.query(q).ids == li_source.query(q).ids and li_snap.query(q).ids
        assert [n.ref_doc_id for n in li_snap.get_nodes(node_ids=["n05"])] == ["doc1"]

        # written through the adapters: still a snapshot whose digests check
        assert snap.add_texts(["new note on tables"], ids=["n99"]) == ["n99"]
        li_snap.delete("doc1")
        assert snap.store.count() == 40 + 1 - 10
        snap.store.check_integrity()  # type: ignore[attr-defined]

        pinned = LangChainStore(snapshot_url(tmp_path / "snap", snap.store.digest), embedding=emb)  # type: ignore[attr-defined]
        emb.embed_documents = None  # type: ignore[method-assign]  # refused before embedding
        with pytest.raises(vectorport.UnsupportedFeatureError, match="read-only; nothing was embedded"):
            pinned.add_texts(["new"], ids=["n98"])
        with pytest.raises(vectorport.UnsupportedFeatureError, match="read-only"):
            LlamaIndexStore(pinned.store).delete("doc2")
        assert pinned.store.count() == 31
        pinned.close()
    finally:
        snap.close()
        source.store.drop()


def test_the_same_filter_through_both_adapters_on_a_snapshot(tmp_path: Path) -> None:
    """The filter of ``test_same_filter`` on a snapshot: both adapters, sync and async, return
    the documents the filter oracle selects; a non-portable filter is refused before any I/O."""
    emb = LangChainEmbeddings("hash:32")
    source = LangChainStore.from_texts(
        same.TEXTS,
        emb,
        same.METAS,
        ids=[f"d{i:02d}" for i in range(30)],
        store="memory://frameworks-pq-filter",
    )
    export("memory://frameworks-pq-filter", tmp_path / "snap")
    lc = LangChainStore(f"parquet://{tmp_path / 'snap'}", embedding=emb)
    li = LlamaIndexStore(lc.store)
    try:
        want = {f"d{i:02d}" for i in range(30) if evaluate(parse_filter(same.PORTABLE), same.METAS[i])}
        query = VectorStoreQuery(
            query_embedding=emb.embed_query("tables"), similarity_top_k=20, filters=same.LLAMA
        )
        ours, theirs = lc.similarity_search("tables", k=20, filter=same.PORTABLE), li.query(query)
        assert {d.id for d in ours} == want and [d.id for d in ours] == theirs.ids
        assert ours == source.similarity_search("tables", k=20, filter=same.PORTABLE)

        async def both() -> tuple[list[str | None], list[str]]:
            found = await lc.asimilarity_search("tables", k=20, filter=same.PORTABLE)
            return [d.id for d in found], (await li.aquery(query)).ids or []

        assert asyncio.run(both()) == ([d.id for d in ours], theirs.ids)
        with pytest.raises(vectorport.FilterError, match=r"unknown operator '\$like'"):
            lc.similarity_search("tables", k=3, filter={"lang": {"$like": "e%"}})
    finally:
        lc.close()
        source.store.drop()


def _snapshot_of_the_pipeline(tmp_path: Path) -> tuple[LlamaIndexStore, list[TextNode]]:
    nodes = pipeline._nodes()
    source = LlamaIndexStore("memory://frameworks-pq-pipeline")
    try:
        source.add(nodes)
        export("memory://frameworks-pq-pipeline", tmp_path / "snap")
    finally:
        source.client.drop()
    return LlamaIndexStore(f"parquet://{tmp_path / 'snap'}"), nodes


def test_the_llamaindex_pipeline_reads_a_snapshot_as_simplevectorstore(tmp_path: Path) -> None:
    """The pipeline's 1,000 nodes exported: a ``VectorStoreIndex`` over the snapshot answers every
    filter as ``SimpleVectorStore`` does, sync and async; pinned, ``delete_ref_doc`` is refused."""
    snap, nodes = _snapshot_of_the_pipeline(tmp_path)
    try:
        index = pipeline._index(snap)
        ref = pipeline.Reference(nodes)
        assert pipeline._check_all(index, ref) > 0
        asyncio.run(pipeline._acheck_all(index, ref, pipeline.QUERIES[2]))
        pinned = LlamaIndexStore(snapshot_url(tmp_path / "snap", snap.client.digest))  # type: ignore[attr-defined]
        with pytest.raises(vectorport.UnsupportedFeatureError, match="read-only"):
            pipeline._index(pinned).delete_ref_doc("doc-2")
        assert pinned.client.count() == pipeline.N
        pinned.close()
    finally:
        snap.close()
