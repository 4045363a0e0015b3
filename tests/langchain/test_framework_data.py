"""LangChainStore on data LangChain's own stores wrote, and LangChain's own stores on data
LangChainStore wrote: langchain-postgres ``PGVector`` (the shared ``langchain_pg_embedding``
table), langchain-aws ``AmazonS3Vectors`` (``_page_content`` beside the metadata) and
langchain-chroma ``Chroma``. Each side returns the same documents: id, ``page_content``,
metadata, in the same order for the same vector and filter."""

from __future__ import annotations

import contextlib
import itertools
from typing import Any

import pytest

from tests.interop._corpus import DIM, QUERIES, corpus
from tests.interop.pg_tables import Tables, run_builder

pytest.importorskip("langchain_core")

from langchain_core.documents import Document

from vectorport.langchain import LangChainEmbeddings, LangChainStore

pytestmark = [pytest.mark.langchain, pytest.mark.interop]

_names = itertools.count()
FILTER = {"lang": "en", "page": {"$gte": 5}}
"""The portable filter; LangChain's PGVector reads the same dict with the same meaning."""


def _view(doc: Document) -> dict[str, Any]:
    return {"id": str(doc.id), "text": doc.page_content, "metadata": dict(doc.metadata)}


def _embeddings() -> LangChainEmbeddings:
    return LangChainEmbeddings(f"hash:{DIM}")


# ------------------------------------------------------------------ PostgreSQL: PGVector
@pytest.mark.pgvector
def test_what_langchain_pgvector_wrote_reads_the_same(pg_tables: Tables, interop_uri: str) -> None:
    pytest.importorskip("langchain_postgres")
    built = pg_tables.get("langchain-docs")
    ids = [r.key for r in built.rows[:30]] + ["no-such-id"]
    theirs = run_builder("langchain_read", interop_uri, "docs", ids, QUERIES, FILTER, module="pg_clients")
    lc = LangChainStore(built.spec.url(pg_tables.url), embedding=_embeddings())
    try:
        assert {d.id: _view(d) for d in lc.get_by_ids(ids)} == theirs["get"]
        for q, want in zip(QUERIES, theirs["search"], strict=True):
            got = lc.similarity_search_by_vector(q, k=10, filter=FILTER)
            assert [_view(d) for d in got] == want
            assert got, "the filter selects documents"
    finally:
        lc.close()


@pytest.mark.pgvector
def test_what_langchainstore_writes_langchain_pgvector_reads(pg_tables: Tables, interop_uri: str) -> None:
    pytest.importorskip("langchain_postgres")
    collection = f"lcs_{next(_names)}"
    run_builder("langchain_create", interop_uri, collection, DIM, module="pg_clients")
    chunks = corpus()
    url = f"{pg_tables.url}&layout=langchain&collection={collection}"
    lc = LangChainStore(url, embedding=_embeddings())
    try:
        lc.add_texts(
            [c.text for c in chunks],
            [{**c.metadata, "lang": ["en", "fr"][i % 2]} for i, c in enumerate(chunks)],
            ids=[c.key for c in chunks],
        )
        lc.delete(["k001"])
        ids = [c.key for c in chunks]
        flt = {"lang": "en", "page": {"$gte": 5}}
        theirs = run_builder(
            "langchain_read", interop_uri, collection, ids, QUERIES, flt, module="pg_clients"
        )
        assert sorted(theirs["get"]) == sorted(set(ids) - {"k001"})
        assert {d.id: _view(d) for d in lc.get_by_ids(ids)} == theirs["get"]
        for q, want in zip(QUERIES, theirs["search"], strict=True):
            assert [_view(d) for d in lc.similarity_search_by_vector(q, k=10, filter=flt)] == want
    finally:
        lc.close()


# ------------------------------------------------------------------ S3 Vectors: AmazonS3Vectors
@pytest.fixture
def s3client(bucket_server: Any) -> Any:
    boto3 = pytest.importorskip("boto3")
    client = boto3.client(
        "s3vectors",
        endpoint_url=bucket_server.url,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )
    with contextlib.suppress(client.exceptions.ConflictException):
        client.create_vector_bucket(vectorBucketName="frameworks-lc")
    yield client
    client.close()


def _amazon(client: Any, index: str) -> Any:
    s3 = pytest.importorskip("langchain_aws.vectorstores.s3_vectors")
    return s3.AmazonS3Vectors(
        vector_bucket_name="frameworks-lc", index_name=index, embedding=_embeddings(), client=client
    )


@pytest.mark.s3vectors
def test_langchainstore_and_amazon_s3_vectors_read_each_others_buckets(
    s3client: Any, bucket_server: Any
) -> None:
    chunks = corpus()
    ours_index, theirs_index = f"lcs-{next(_names)}", f"lcs-{next(_names)}"
    base = f"s3vectors://frameworks-lc/{{}}?endpoint_url={bucket_server.url}&write_rate=0"
    lc = LangChainStore(base.format(ours_index) + "&layout=langchain", embedding=_embeddings())
    amazon_theirs = _amazon(s3client, theirs_index)
    amazon_theirs.add_texts(  # LangChain's own index: its _page_content is filterable, 2 KB at most
        [c.text for c in corpus(long_text=False)],
        [c.metadata for c in corpus(long_text=False)],
        ids=[c.key for c in chunks],
    )
    lc_theirs = LangChainStore(base.format(theirs_index), embedding=_embeddings())
    try:
        lc.add_texts([c.text for c in chunks], [c.metadata for c in chunks], ids=[c.key for c in chunks])
        amazon = _amazon(s3client, ours_index)
        flt = {"source": "doc1.md", "page": {"$gte": 4}}
        for mine, reference in ((lc, amazon), (lc_theirs, amazon_theirs)):
            keys = [c.key for c in chunks]
            assert [_view(d) for d in mine.get_by_ids(keys)] == [_view(d) for d in reference.get_by_ids(keys)]
            for q in QUERIES:
                got = mine.similarity_search_by_vector(q, k=10)
                assert [_view(d) for d in got] == [
                    _view(d) for d in reference.similarity_search_by_vector(q, k=10)
                ]
                # AWS takes one key per filter object: LangChain's user writes $and
                explicit = {"$and": [{"source": "doc1.md"}, {"page": {"$gte": 4}}]}
                assert [d.id for d in mine.similarity_search_by_vector(q, k=10, filter=flt)] == [
                    d.id for d in reference.similarity_search_by_vector(q, k=10, filter=explicit)
                ]
        long = amazon.get_by_ids(["k005"])[0]
        assert long.page_content == chunks[5].text and len(long.page_content.encode()) > 2048
    finally:
        lc.close()
        lc_theirs.close()


# ------------------------------------------------------------------ Chroma: langchain-chroma
@pytest.mark.chroma
def test_langchainstore_and_langchain_chroma_read_each_others_collections(chroma_dir: str) -> None:
    lc_chroma = pytest.importorskip("langchain_chroma")
    chromadb = pytest.importorskip("chromadb")
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=chroma_dir, settings=Settings(anonymized_telemetry=False))
    chunks = corpus()
    theirs_name, ours_name = f"lcs_{next(_names)}", f"lcs_{next(_names)}"
    chroma_theirs = lc_chroma.Chroma(
        theirs_name,
        embedding_function=_embeddings(),
        client=client,
        collection_metadata={"hnsw:space": "cosine"},
    )
    chroma_theirs.add_texts(
        [c.text for c in chunks], [c.metadata for c in chunks], ids=[c.key for c in chunks]
    )
    lc_theirs = LangChainStore(f"chroma://{chroma_dir}?collection={theirs_name}", embedding=_embeddings())
    lc = LangChainStore(f"chroma://{chroma_dir}?collection={ours_name}", embedding=_embeddings())
    try:
        lc.add_texts([c.text for c in chunks], [c.metadata for c in chunks], ids=[c.key for c in chunks])
        chroma_ours = lc_chroma.Chroma(ours_name, embedding_function=_embeddings(), client=client)
        keys = [c.key for c in chunks]
        for mine, reference in ((lc, chroma_ours), (lc_theirs, chroma_theirs)):
            assert [_view(d) for d in mine.get_by_ids(keys)] == [_view(d) for d in reference.get_by_ids(keys)]
            for q in QUERIES:
                assert [_view(d) for d in mine.similarity_search_by_vector(q, k=8)] == [
                    _view(d) for d in reference.similarity_search_by_vector(q, k=8)
                ]
                flt = {"$and": [{"source": "doc2.md"}, {"page": {"$lt": 15}}]}  # Chroma's where, as is
                assert [d.id for d in mine.similarity_search_by_vector(q, k=5, filter=flt)] == [
                    d.id for d in reference.similarity_search_by_vector(q, k=5, filter=flt)
                ]
    finally:
        lc.close()
        lc_theirs.close()
