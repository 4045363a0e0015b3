"""A LangChain PGVectorStore table made for hybrid search (``content_tsv TSVECTOR NOT NULL``, which
LangChain's INSERT fills with ``to_tsvector``) is written by a migration, and LangChain's own
hybrid search (dense + full text) finds the migrated documents afterwards."""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import pytest

import vectorport
from vectorport.migrate import run as migrate

from ._corpus import DIM, vector_for

pytestmark = [pytest.mark.interop, pytest.mark.pgvector]

lc_postgres = pytest.importorskip("langchain_postgres")
hybrid = pytest.importorskip("langchain_postgres.v2.hybrid_search_config")
embeddings_mod = pytest.importorskip("langchain_core.embeddings")


class FixedEmbeddings(embeddings_mod.Embeddings):  # type: ignore[misc]
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [vector_for(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return vector_for(text)


TEXTS = [
    "The river runs past the old mill",
    "Mountains rise above the valley",
    "A harbour full of fishing boats",
    "The city wakes before dawn",
    "Rivers and streams feed the lake",
]


def test_a_hybrid_table_is_written_and_searched_by_langchain(
    interop_uri: str, pg_tables: Any, plain: Any
) -> None:
    url_sa = interop_uri.replace("postgresql://", "postgresql+psycopg://", 1)
    engine = lc_postgres.PGEngine.from_connection_string(url=url_sa)
    config = hybrid.HybridSearchConfig(tsv_column="content_tsv")
    engine.init_vectorstore_table(
        table_name="lc_hybrid", vector_size=DIM, hybrid_search_config=config, overwrite_existing=True
    )
    (notnull,) = plain.execute(
        "SELECT attnotnull FROM pg_attribute "
        "WHERE attrelid = 'lc_hybrid'::regclass AND attname = 'content_tsv'"
    ).fetchone()
    assert notnull

    keys = [str(uuid.uuid4()) for _ in TEXTS]
    with vectorport.connect("memory://lc-hybrid-src", dimension=DIM) as src:
        src.upsert(
            vectorport.Record(k, np.asarray(vector_for(t), dtype=np.float32), {"n": i}, t)
            for i, (k, t) in enumerate(zip(keys, TEXTS, strict=True))
        )
        report = migrate("memory://lc-hybrid-src", f"{pg_tables.url}&table=lc_hybrid&layout=langchain-v2")
        src.drop()
    assert report.status == "verified", report.to_json()

    # the tsvector LangChain's own INSERT would have made, read with psycopg
    rows = dict(plain.execute("SELECT langchain_id::text, content_tsv::text FROM lc_hybrid").fetchall())
    for key, text in zip(keys, TEXTS, strict=True):
        (want,) = plain.execute("SELECT to_tsvector('pg_catalog.english', %s)::text", (text,)).fetchone()
        assert rows[key] == want
    store = lc_postgres.PGVectorStore.create_sync(
        engine=engine,
        embedding_service=FixedEmbeddings(),
        table_name="lc_hybrid",
        hybrid_search_config=config,
    )
    try:
        found = store.similarity_search("river", k=3)
    finally:
        engine._run_as_sync(engine._pool.dispose())  # the pool's connections, on its own loop
    assert {d.page_content for d in found} >= {TEXTS[0], TEXTS[4]}


def test_a_hybrid_table_is_text_searched_as_langchain_searches_it(
    interop_uri: str, pg_tables: Any, plain: Any
) -> None:
    """LangChain's sparse query wants every word (``plainto_tsquery``): vectorport's text search
    of the table (what ``vectorport search --mode text`` and ``compare`` run) finds the same rows,
    not those an OR of the words would add."""
    url_sa = interop_uri.replace("postgresql://", "postgresql+psycopg://", 1)
    engine = lc_postgres.PGEngine.from_connection_string(url=url_sa)
    config = hybrid.HybridSearchConfig(tsv_column="content_tsv")
    try:
        engine.init_vectorstore_table(
            table_name="lc_hybrid_and", vector_size=DIM, hybrid_search_config=config, overwrite_existing=True
        )
    finally:
        engine._run_as_sync(engine._pool.dispose())
    for i, text in enumerate(TEXTS):
        plain.execute(
            "INSERT INTO lc_hybrid_and (langchain_id, content, embedding, langchain_metadata, content_tsv)"
            " VALUES (%s, %s, %s::vector, '{}', to_tsvector('pg_catalog.english', %s))",
            (str(uuid.UUID(int=i)), text, str(vector_for(text)), text),
        )
    query = "river or mill"  # a web search would OR them; plainto_tsquery drops "or", a stop word
    # the statement LangChain's hybrid search runs for its sparse side
    want = sorted(
        r[0]
        for r in plain.execute(
            "SELECT langchain_id::text FROM lc_hybrid_and"
            " WHERE content_tsv @@ plainto_tsquery('pg_catalog.english', %s)",
            (query,),
        ).fetchall()
    )
    assert want == [str(uuid.UUID(int=0))]  # "Rivers and streams …" holds one word only
    with vectorport.connect(f"{pg_tables.url}&table=lc_hybrid_and&layout=langchain-v2") as ours:
        info = ours.info()["pgvector"]["text_search"]
        assert info["parser"] == "plain" and info["language"] == "english"
        assert sorted(ours.text_query(query, k=5).keys) == want  # type: ignore[attr-defined]
        assert len(ours.text_query(query, k=5, params={"text_parser": "any"}).keys) == 2  # type: ignore[attr-defined]
