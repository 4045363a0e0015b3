"""Both adapters on a ``parquet://`` snapshot, which is read-only: LangChain's standard suite
cannot run there (every one of its tests writes), so this checks what a snapshot offers. The
adapters read a snapshot exactly as they read the store it was exported from (documents,
searches, filters, MMR, LlamaIndex nodes), and a write is refused before anything happens."""

from __future__ import annotations

from pathlib import Path

import pytest

import vectorport

pytest.importorskip("pyarrow")
pytest.importorskip("langchain_core")
pytest.importorskip("llama_index.core")

from llama_index.core.vector_stores import MetadataFilter, MetadataFilters, VectorStoreQuery

from vectorport.langchain import LangChainEmbeddings, LangChainStore
from vectorport.llamaindex import LlamaIndexStore
from vectorport.snapshot import export

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

        emb.embed_documents = None  # type: ignore[method-assign]  # refused before embedding
        with pytest.raises(vectorport.UnsupportedFeatureError, match="read-only; nothing was embedded"):
            snap.add_texts(["new"], ids=["n99"])
        with pytest.raises(vectorport.UnsupportedFeatureError, match="read-only"):
            li_snap.delete("doc1")
        assert snap.store.count() == 40
    finally:
        snap.close()
        source.store.drop()
