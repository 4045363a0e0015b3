"""The frameworks' own clients, creating an empty table and then reading and searching what
vectorport wrote into it, for the write half of issue 13 (``test_pg_layouts.py``).

Each function runs in a fresh interpreter (``pg_tables.run_builder(..., module="pg_clients")``,
for the reasons given in ``pg_tables.py``) and takes and returns JSON. A reader returns the
client's own view: ``{"get": {id: view}, "search": [[view, …] per query]}``, a view being
``{"id", "text", "metadata"}`` exactly as the client hands it to its user.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "langchain_create",
    "langchain_read",
    "langchain_v2_create",
    "langchain_v2_read",
    "llamaindex_create",
    "llamaindex_read",
    "vecs_create",
    "vecs_read",
]


def _sa_url(uri: str, driver: str) -> str:
    return uri.replace("postgresql://", f"postgresql+{driver}://", 1)


def _no_embeddings() -> Any:
    """Searches go by vector: the client never embeds a text here."""
    from langchain_core.embeddings import Embeddings

    class NoEmbeddings(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            raise AssertionError("searches go by vector")

        def embed_query(self, text: str) -> list[float]:
            raise AssertionError("searches go by vector")

    return NoEmbeddings()


def _doc(doc: Any) -> dict[str, Any]:
    return {"id": str(doc.id), "text": doc.page_content, "metadata": dict(doc.metadata)}


# ------------------------------------------------------------------ LangChain PGVector
def _langchain(uri: str, collection: str, dim: int | None) -> Any:
    from langchain_postgres import PGVector

    return PGVector(
        embeddings=_no_embeddings(),
        collection_name=collection,
        connection=_sa_url(uri, "psycopg"),
        embedding_length=dim,
        use_jsonb=True,
    )


def langchain_create(uri: str, collection: str, dim: int) -> None:
    """``PGVector(...)`` creates the shared tables when missing and the collection's row."""
    _langchain(uri, collection, dim)


def langchain_read(
    uri: str, collection: str, ids: list[str], queries: list[list[float]], flt: dict[str, Any] | None
) -> dict[str, Any]:
    store = _langchain(uri, collection, None)
    got = {str(d.id): _doc(d) for d in store.get_by_ids(ids)}
    search = [
        [_doc(d) for d, _ in store.similarity_search_with_score_by_vector(q, k=10, filter=flt)]
        for q in queries
    ]
    return {"get": got, "search": search}


# ------------------------------------------------------------- LangChain PGVectorStore
def langchain_v2_create(uri: str, table: str, dim: int, columns: list[list[str]]) -> None:
    from langchain_postgres import Column, PGEngine

    engine = PGEngine.from_connection_string(url=_sa_url(uri, "psycopg"))
    engine.init_vectorstore_table(
        table_name=table,
        vector_size=dim,
        metadata_columns=[Column(name, kind) for name, kind in columns],
        overwrite_existing=True,
    )


def langchain_v2_read(
    uri: str,
    table: str,
    columns: list[str],
    ids: list[str],
    queries: list[list[float]],
    flt: dict[str, Any] | None,
) -> dict[str, Any]:
    from langchain_postgres import PGEngine, PGVectorStore

    engine = PGEngine.from_connection_string(url=_sa_url(uri, "psycopg"))
    store = PGVectorStore.create_sync(
        engine=engine, embedding_service=_no_embeddings(), table_name=table, metadata_columns=columns
    )
    got = {str(d.id): _doc(d) for d in store.get_by_ids(ids)}
    search = [
        [_doc(d) for d, _ in store.similarity_search_with_score_by_vector(q, k=10, filter=flt)]
        for q in queries
    ]
    return {"get": got, "search": search}


# ------------------------------------------------------------------ LlamaIndex
def _llamaindex(uri: str, table: str, dim: int, jsonb: bool) -> Any:
    from llama_index.vector_stores.postgres import PGVectorStore

    return PGVectorStore.from_params(
        connection_string=_sa_url(uri, "psycopg2"),
        async_connection_string=_sa_url(uri, "psycopg"),
        table_name=table,
        embed_dim=dim,
        use_jsonb=jsonb,
    )


def llamaindex_create(uri: str, table: str, dim: int, jsonb: bool) -> None:
    """The store creates ``data_<table>`` on first use; adding no nodes is a first use."""
    _llamaindex(uri, table, dim, jsonb).add([])


def _node(node: Any) -> dict[str, Any]:
    return {"id": node.node_id, "text": node.get_content(), "metadata": dict(node.metadata)}


def llamaindex_read(
    uri: str,
    table: str,
    dim: int,
    jsonb: bool,
    ids: list[str],
    queries: list[list[float]],
    flt: dict[str, Any] | None,
) -> dict[str, Any]:
    from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters, VectorStoreQuery

    store = _llamaindex(uri, table, dim, jsonb)
    got = {n.node_id: _node(n) for n in store.get_nodes(node_ids=ids)}
    filters = (
        MetadataFilters(filters=[MetadataFilter(key=k, value=v) for k, v in flt.items()]) if flt else None
    )
    search = []
    for q in queries:
        found = store.query(VectorStoreQuery(query_embedding=q, similarity_top_k=10, filters=filters))
        assert found.nodes is not None and found.ids == [n.node_id for n in found.nodes]
        search.append([_node(n) for n in found.nodes])
    return {"get": got, "search": search}


# ------------------------------------------------------------------ vecs
def vecs_create(uri: str, name: str, dim: int) -> None:
    import vecs

    vx = vecs.create_client(uri)
    try:
        vx.get_or_create_collection(name=name, dimension=dim)
    finally:
        vx.disconnect()


def vecs_read(
    uri: str, name: str, dim: int, ids: list[str], queries: list[list[float]], flt: dict[str, Any] | None
) -> dict[str, Any]:
    """vecs keeps no text: the view's text is ``None``, the metadata as vecs returns it."""
    import warnings

    import vecs

    vx = vecs.create_client(uri)
    try:
        docs = vx.get_or_create_collection(name=name, dimension=dim)
        got = {k: {"id": k, "text": None, "metadata": dict(m)} for k, _, m in docs.fetch(ids=ids)}
        search = []
        with warnings.catch_warnings():
            # "Query does not have a covering index": without one vecs searches exactly
            warnings.simplefilter("ignore", UserWarning)
            for q in queries:
                found = docs.query(data=q, limit=10, filters=flt, include_value=True, include_metadata=True)
                search.append([{"id": k, "text": None, "metadata": dict(m)} for k, _, m in found])
        return {"get": got, "search": search}
    finally:
        vx.disconnect()
