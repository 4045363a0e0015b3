"""A LlamaIndex hybrid table (``PGVectorStore(hybrid_search=True)``) is text-searched the way
LlamaIndex searches it, its words OR-ed: vectorport's text search finds what LlamaIndex's own
sparse query finds, and ``info`` says which semantics it uses."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import vectorport

from ._corpus import DIM, vector_for

pytestmark = [pytest.mark.interop, pytest.mark.pgvector]

li_pg = pytest.importorskip("llama_index.vector_stores.postgres")
schema = pytest.importorskip("llama_index.core.schema")
types = pytest.importorskip("llama_index.core.vector_stores.types")

TEXTS = [
    "The river runs past the old mill",
    "Mountains rise above the valley",
    "A harbour full of fishing boats",
    "The city wakes before dawn",
    "Rivers and mountains of the north",
]


def test_llamaindex_hybrid_table_text_search_ors_the_words(interop_uri: str, pg_tables: Any) -> None:
    store = li_pg.PGVectorStore.from_params(
        connection_string=interop_uri.replace("postgresql://", "postgresql+psycopg2://", 1),
        async_connection_string=interop_uri.replace("postgresql://", "postgresql+psycopg://", 1),
        table_name="li_sparse",
        embed_dim=DIM,
        hybrid_search=True,
        text_search_config="english",
    )
    try:
        store.add(
            [schema.TextNode(id_=f"n{i}", text=t, embedding=vector_for(t)) for i, t in enumerate(TEXTS)]
        )
        query = "river harbour"
        theirs = store.query(
            types.VectorStoreQuery(query_str=query, mode=types.VectorStoreQueryMode.SPARSE, sparse_top_k=5)
        )
    finally:
        asyncio.run(store.close())  # its engines' pooled connections
    want = sorted(n.node_id for n in theirs.nodes or [])
    assert want == ["n0", "n2", "n4"]
    with vectorport.connect(f"{pg_tables.url}&table=data_li_sparse") as ours:
        info = ours.info()["pgvector"]["text_search"]
        assert info["parser"] == "any" and "OR" in info["semantics"] and info["language"] == "english"
        assert sorted(ours.text_query(query, k=5).keys) == want  # type: ignore[attr-defined]
