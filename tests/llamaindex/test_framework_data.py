"""LlamaIndexStore on data LlamaIndex's own stores wrote, and LlamaIndex's own stores on data
LlamaIndexStore wrote: ``PGVectorStore`` (``data_<table>``, node JSON in ``metadata_``),
``S3VectorStore`` (``_node_content`` beside the metadata) and ``ChromaVectorStore``. Each side
returns the same nodes: id, text, metadata and source document, in the same order."""

from __future__ import annotations

import contextlib
import itertools
from typing import Any

import pytest

from tests.interop._corpus import DIM, QUERIES, corpus
from tests.interop.pg_tables import Tables, run_builder

pytest.importorskip("llama_index.core")

from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
from llama_index.core.vector_stores import MetadataFilter, MetadataFilters, VectorStoreQuery

from vectorport.llamaindex import LlamaIndexStore

pytestmark = [pytest.mark.llamaindex, pytest.mark.interop]

_names = itertools.count()


def _nodes(*, flat: bool = False) -> list[TextNode]:
    """The corpus as nodes of three source documents; ``flat``: without the list-valued
    metadata LlamaIndex's ChromaVectorStore refuses."""
    return [
        TextNode(
            id_=c.key,
            text=c.text,
            metadata={k: v for k, v in c.metadata.items() if not (flat and isinstance(v, list))},
            embedding=c.vector,
            relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=str(c.metadata["source"]))},
        )
        for c in corpus()
    ]


def _view(node: Any) -> dict[str, Any]:
    return {"id": node.node_id, "text": node.get_content(), "metadata": node.metadata, "doc": node.ref_doc_id}


def _query(store: Any, vector: list[float], k: int, filters: MetadataFilters | None = None) -> Any:
    return store.query(VectorStoreQuery(query_embedding=vector, similarity_top_k=k, filters=filters))


def _same_reads(mine: LlamaIndexStore, reference: Any, keys: list[str]) -> None:
    """Both stores give the same nodes for the same ids, vectors and filter."""
    ours = {n.node_id: _view(n) for n in mine.get_nodes(node_ids=keys)}
    theirs = {n.node_id: _view(n) for n in reference.get_nodes(node_ids=keys)}
    assert ours == theirs and len(ours) == len(keys)
    only = MetadataFilters(filters=[MetadataFilter(key="source", value="doc1.md")])
    for q in QUERIES:
        for flt in (None, only):
            got, want = _query(mine, q, 8, flt), _query(reference, q, 8, flt)
            assert got.ids == want.ids and got.ids
            assert [_view(n) for n in got.nodes] == [_view(n) for n in want.nodes]


# ------------------------------------------------------------------ PostgreSQL: PGVectorStore
def _pg_view(node: TextNode) -> dict[str, Any]:
    return {"id": node.node_id, "text": node.get_content(), "metadata": dict(node.metadata)}


@pytest.mark.pgvector
def test_what_llamaindex_pgvectorstore_wrote_reads_the_same(pg_tables: Tables, interop_uri: str) -> None:
    pytest.importorskip("llama_index.vector_stores.postgres")
    built = pg_tables.get("llamaindex-jsonb")
    ids = [r.key for r in built.rows[:30]]
    flt = {"lang": "en"}
    theirs = run_builder(
        "llamaindex_read", interop_uri, "li_jsonb", DIM, True, ids, QUERIES, flt, module="pg_clients"
    )
    li = LlamaIndexStore(built.spec.url(pg_tables.url))
    try:
        assert {n.node_id: _pg_view(n) for n in li.get_nodes(node_ids=ids)} == theirs["get"]
        filters = MetadataFilters(filters=[MetadataFilter(key="lang", value="en")])
        for q, want in zip(QUERIES, theirs["search"], strict=True):
            got = _query(li, q, 10, filters)
            assert [_pg_view(n) for n in got.nodes] == want and want
    finally:
        li.close()


@pytest.mark.pgvector
def test_what_llamaindexstore_writes_llamaindex_pgvectorstore_reads(
    pg_tables: Tables, interop_uri: str
) -> None:
    pytest.importorskip("llama_index.vector_stores.postgres")
    table = f"lis_{next(_names)}"
    run_builder("llamaindex_create", interop_uri, table, DIM, False, module="pg_clients")
    li = LlamaIndexStore(f"{pg_tables.url}&layout=llamaindex&table=data_{table}")
    try:
        nodes = _nodes()
        li.add(nodes)
        li.delete("doc2.md")
        keys = [n.node_id for n in nodes]
        theirs = run_builder(
            "llamaindex_read",
            interop_uri,
            table,
            DIM,
            False,
            keys,
            QUERIES,
            {"source": "doc1.md"},
            module="pg_clients",
        )
        kept = {n.node_id for n in nodes if n.ref_doc_id != "doc2.md"}
        assert set(theirs["get"]) == kept
        for key, view in theirs["get"].items():
            assert view == _pg_view(next(n for n in nodes if n.node_id == key))
        only = MetadataFilters(filters=[MetadataFilter(key="source", value="doc1.md")])
        for q, want in zip(QUERIES, theirs["search"], strict=True):
            got = [_pg_view(n) for n in _query(li, q, 10, only).nodes]
            assert [w["id"] for w in want] == [g["id"] for g in got] and got
    finally:
        li.close()


# ------------------------------------------------------------------ S3 Vectors: S3VectorStore
@pytest.fixture
def session(bucket_server: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """boto3 session whose s3vectors clients reach the local server (S3VectorStore takes no
    endpoint: botocore's per-service endpoint variable points it there)."""
    boto3 = pytest.importorskip("boto3")
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3VECTORS", bucket_server.url)
    sess = boto3.Session(aws_access_key_id="test", aws_secret_access_key="test", region_name="us-east-1")
    client = sess.client("s3vectors")
    with contextlib.suppress(client.exceptions.ConflictException):
        client.create_vector_bucket(vectorBucketName="frameworks-li")
    return sess


@pytest.mark.s3vectors
def test_llamaindexstore_and_s3vectorstore_read_each_others_indexes(session: Any, bucket_server: Any) -> None:
    s3 = pytest.importorskip("llama_index.vector_stores.s3")
    ours_index, theirs_index = f"lis-{next(_names)}", f"lis-{next(_names)}"
    base = f"s3vectors://frameworks-li/{{}}?endpoint_url={bucket_server.url}&write_rate=0"
    theirs = s3.S3VectorStore.create_index_from_bucket(
        bucket_name_or_arn="frameworks-li", index_name=theirs_index, dimension=DIM, sync_session=session
    )
    theirs.add(_nodes())
    li_theirs = LlamaIndexStore(base.format(theirs_index))
    li = LlamaIndexStore(base.format(ours_index) + "&layout=llamaindex")
    try:
        li.add(_nodes())
        ours = s3.S3VectorStore(
            index_name_or_arn=ours_index, bucket_name_or_arn="frameworks-li", sync_session=session
        )
        keys = [n.node_id for n in _nodes()]
        _same_reads(li, ours, keys)
        _same_reads(li_theirs, theirs, keys)
    finally:
        li.close()
        li_theirs.close()


# ------------------------------------------------------------------ Chroma: ChromaVectorStore
@pytest.mark.chroma
def test_llamaindexstore_and_chromavectorstore_read_each_others_collections(chroma_dir: str) -> None:
    li_chroma = pytest.importorskip("llama_index.vector_stores.chroma")
    chromadb = pytest.importorskip("chromadb")
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=chroma_dir, settings=Settings(anonymized_telemetry=False))
    theirs_name, ours_name = f"lis_{next(_names)}", f"lis_{next(_names)}"
    coll = client.create_collection(
        theirs_name, configuration={"hnsw": {"space": "cosine"}}, embedding_function=None
    )
    theirs = li_chroma.ChromaVectorStore(chroma_collection=coll)
    theirs.add(_nodes(flat=True))
    li_theirs = LlamaIndexStore(f"chroma://{chroma_dir}?collection={theirs_name}")
    li = LlamaIndexStore(f"chroma://{chroma_dir}?collection={ours_name}&layout=llamaindex")
    try:
        li.add(_nodes(flat=True))
        ours = li_chroma.ChromaVectorStore(chroma_collection=client.get_collection(ours_name))
        keys = [n.node_id for n in _nodes(flat=True)]
        _same_reads(li, ours, keys)
        _same_reads(li_theirs, theirs, keys)
    finally:
        li.close()
        li_theirs.close()
