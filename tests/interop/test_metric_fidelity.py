"""A euclidean langchain-chroma collection migrated into LangChain's PGVector table keeps its
metric: the collection opens as euclidean again (so ``sync`` and ``verify`` agree with the plan),
LangChain's own PGVector, searching by euclidean distance, finds what langchain-chroma finds, and
``verify`` fails when the target's metric is another one."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

import vectorport
from vectorport.cli import app
from vectorport.migrate import run as migrate
from vectorport.migrate import verify

from ._corpus import QUERIES, corpus, vector_for

pytestmark = [pytest.mark.interop, pytest.mark.chroma, pytest.mark.pgvector]

lc_chroma = pytest.importorskip("langchain_chroma")
lc_postgres = pytest.importorskip("langchain_postgres")
embeddings_mod = pytest.importorskip("langchain_core.embeddings")
chromadb = pytest.importorskip("chromadb")


class FixedEmbeddings(embeddings_mod.Embeddings):  # type: ignore[misc]
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [vector_for(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return vector_for(text)


def test_euclidean_langchain_chroma_into_langchain_pgvector(
    chroma_dir: str, pg_tables: Any, interop_uri: str, plain: Any, tmp_path: Any
) -> None:
    from chromadb.config import Settings

    name = "lc_euclidean"
    client = chromadb.PersistentClient(path=chroma_dir, settings=Settings(anonymized_telemetry=False))
    source_store = lc_chroma.Chroma(
        collection_name=name,
        embedding_function=FixedEmbeddings(),
        client=client,
        collection_metadata={"hnsw:space": "l2"},
    )
    chunks = corpus(long_text=False)
    source_store.add_texts(
        # keys of its own: LangChain's embedding table is shared by every collection of the
        # session's database, and its ids are unique across them
        [c.text for c in chunks],
        [c.metadata for c in chunks],
        ids=[f"{name}/{c.key}" for c in chunks],
    )
    source = f"chroma://{chroma_dir}?collection={name}"
    target = f"{pg_tables.url}&table={name}&layout=langchain"

    report = migrate(source, target)
    assert report.plan is not None and report.plan.target_spec.metric.value == "euclidean"
    assert report.status == "verified", report.to_json()
    with vectorport.connect(target) as opened:
        assert opened.spec.metric.value == "euclidean"
    # what LangChain's table holds for the collection, read with psycopg
    row = plain.execute("SELECT cmetadata FROM langchain_pg_collection WHERE name = %s", (name,)).fetchone()
    assert row is not None and row[0]["vectorport_metric"] == "euclidean"

    # LangChain's PGVector, told euclidean as its app would be, ranks as langchain-chroma does
    pg = lc_postgres.PGVector(
        embeddings=FixedEmbeddings(),
        collection_name=name,
        connection=interop_uri.replace("postgresql://", "postgresql+psycopg://", 1),
        distance_strategy=lc_postgres.vectorstores.DistanceStrategy.EUCLIDEAN,
        use_jsonb=True,
    )
    try:
        for query in QUERIES:
            want = [d.id for d in source_store.similarity_search_by_vector(query, k=5)]
            got = [d.id for d in pg.similarity_search_by_vector(query, k=5)]
            assert got == want, query
    finally:
        pg._engine.dispose()  # its pooled psycopg connections, closed now rather than at GC

    # the next sync and verify agree; a target searched by another metric is a difference
    state = str(tmp_path / "state.db")
    done = CliRunner().invoke(app, ["sync", source, target, "--state", state, "--json"])
    assert done.exit_code == 0, done.output
    assert verify(source, target).status == "verified"
    other = verify(source, f"{target}&metric=cosine")
    assert other.status == "differences"
    assert other.collection == ["metric: source euclidean, target cosine"]
    out = CliRunner().invoke(app, ["verify", source, f"{target}&metric=cosine", "--json"])
    assert out.exit_code == 1, out.output
    assert json.loads(out.stdout)["collection"] == ["metric: source euclidean, target cosine"]


def test_a_llamaindex_halfvec_table_opens_with_the_metric_llamaindex_searches_by(
    pg_tables: Any, interop_uri: str, plain: Any
) -> None:
    """LlamaIndex's ``use_halfvec=True`` makes a ``halfvec_l2_ops`` HNSW index by default, but its
    queries order by ``cosine_distance`` whatever the index: the table opens as cosine, as
    LlamaIndex searches it, not as the index's euclidean."""
    from llama_index.vector_stores.postgres import PGVectorStore

    from .pg_tables import _sa_url

    li = PGVectorStore.from_params(
        connection_string=_sa_url(interop_uri, "psycopg2"),
        async_connection_string=_sa_url(interop_uri, "psycopg"),
        table_name="li_half",
        embed_dim=4,
        use_halfvec=True,
        hnsw_kwargs={"hnsw_m": 16, "hnsw_ef_construction": 64, "hnsw_ef_search": 40},
    )
    li.add([])  # the first use creates the table and its index
    row = plain.execute(
        "SELECT opc.opcname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
        "JOIN pg_opclass opc ON opc.oid = i.indclass[0] WHERE c.relname = 'data_li_half_embedding_idx'"
    ).fetchone()
    assert row == ("halfvec_l2_ops",)
    try:
        with vectorport.connect(f"{pg_tables.url}&layout=llamaindex&table=data_li_half") as store:
            assert store.spec.metric.value == "cosine"
    finally:
        plain.execute("DROP TABLE IF EXISTS data_li_half")
