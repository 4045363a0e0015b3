"""Bucket indexes LangChain and LlamaIndex wrote, migrated into Chroma in LlamaIndex's layout and
in the plain one (text in ``documents``, as langchain-chroma keeps it), and read back through
llama-index's ``ChromaVectorStore`` and langchain-chroma: the same top-10 as the source index,
with the same text and metadata."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

import vectorport
from vectorport.migrate import run as migrate

from ._corpus import DIM, QUERIES, Chunk, corpus, node_order, vector_for

pytestmark = [pytest.mark.interop, pytest.mark.s3vectors, pytest.mark.chroma]

boto3 = pytest.importorskip("boto3")
chromadb = pytest.importorskip("chromadb")
s3_vectors = pytest.importorskip("langchain_aws.vectorstores.s3_vectors")
s3_store = pytest.importorskip("llama_index.vector_stores.s3")
li_chroma = pytest.importorskip("llama_index.vector_stores.chroma")
lc_chroma = pytest.importorskip("langchain_chroma")
schema = pytest.importorskip("llama_index.core.schema")
types = pytest.importorskip("llama_index.core.vector_stores.types")
embeddings_mod = pytest.importorskip("langchain_core.embeddings")

BUCKET = "interop-to-chroma"
_names = iter(range(10_000))


class FixedEmbeddings(embeddings_mod.Embeddings):  # type: ignore[misc]
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [vector_for(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return vector_for(text)


def _session() -> Any:
    return boto3.Session(aws_access_key_id="test", aws_secret_access_key="test", region_name="us-east-1")


@pytest.fixture
def client(bucket_server: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """An s3vectors client of the local server (LlamaIndex's S3VectorStore reaches it through
    botocore's per-service endpoint variable)."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3VECTORS", bucket_server.url)
    c = _session().client("s3vectors")
    with contextlib.suppress(c.exceptions.ConflictException):
        c.create_vector_bucket(vectorBucketName=BUCKET)
    return c


@pytest.fixture
def chroma(chroma_dir: str) -> Any:
    from chromadb.config import Settings

    return chromadb.PersistentClient(path=chroma_dir, settings=Settings(anonymized_telemetry=False))


def _bucket_url(bucket_server: Any, index: str) -> str:
    return f"s3vectors://{BUCKET}/{index}?endpoint_url={bucket_server.url}&write_rate=0"


def _langchain_index(client: Any) -> tuple[str, list[Chunk]]:
    index, chunks = f"lc-{next(_names)}", corpus(long_text=False)
    lc = s3_vectors.AmazonS3Vectors(
        vector_bucket_name=BUCKET, index_name=index, embedding=FixedEmbeddings(), client=client
    )
    lc.add_texts([c.text for c in chunks], [c.metadata for c in chunks], ids=[c.key for c in chunks])
    return index, chunks


def _llamaindex_index() -> tuple[str, list[Chunk]]:
    index, chunks = f"li-{next(_names)}", corpus()
    li = s3_store.S3VectorStore.create_index_from_bucket(
        bucket_name_or_arn=BUCKET, index_name=index, dimension=DIM, sync_session=_session()
    )
    li.add([schema.TextNode(id_=c.key, text=c.text, metadata=c.metadata, embedding=c.vector) for c in chunks])
    return index, chunks


WRITERS = {
    "langchain": lambda client: _langchain_index(client),
    "llamaindex": lambda client: _llamaindex_index(),
}


def _source_top10(source_url: str) -> list[list[str]]:
    with vectorport.connect(source_url) as source:
        return [[m.key for m in source.query(q, k=10)] for q in QUERIES]


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_framework_index_migrates_into_chromas_llamaindex_layout(
    writer: str, client: Any, bucket_server: Any, chroma: Any, chroma_dir: str
) -> None:
    index, chunks = WRITERS[writer](client)
    source = _bucket_url(bucket_server, index)
    name = f"to_li_{index}"
    report = migrate(source, f"chroma://{chroma_dir}?collection={name}&layout=llamaindex")
    assert report.ok, report.to_dict()
    li = li_chroma.ChromaVectorStore(chroma_collection=chroma.get_collection(name))
    by_key = {c.key: c for c in chunks}
    for q, expected in zip(QUERIES, _source_top10(source), strict=True):
        found = li.query(types.VectorStoreQuery(query_embedding=q, similarity_top_k=10))
        assert found.ids == expected
        assert [n.get_content() for n in found.nodes] == [by_key[i].text for i in found.ids]
        assert [dict(n.metadata) for n in found.nodes] == [by_key[i].metadata for i in found.ids]


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_framework_index_migrates_into_plain_chroma_for_langchain_chroma(
    writer: str, client: Any, bucket_server: Any, chroma: Any, chroma_dir: str
) -> None:
    index, chunks = WRITERS[writer](client)
    source = _bucket_url(bucket_server, index)
    # the target URL names no collection: the index's name is a valid Chroma name and is used
    report = migrate(source, f"chroma://{chroma_dir}")
    assert report.ok, report.to_dict()
    assert report.plan is not None and report.plan.target_spec.name == index
    lc = lc_chroma.Chroma(collection_name=index, embedding_function=FixedEmbeddings(), client=chroma)
    by_key = {c.key: c for c in chunks}
    for q, expected in zip(QUERIES, _source_top10(source), strict=True):
        found = lc.similarity_search_by_vector(q, k=10)
        assert [d.id for d in found] == expected
        # a LlamaIndex node's record carries its metadata's key order (LlamaIndex renders it)
        order = node_order if writer == "llamaindex" else (lambda _: {})
        assert [(d.page_content, d.metadata) for d in found] == [
            (by_key[d.id].text, {**by_key[d.id].metadata, **order(by_key[d.id].metadata)}) for d in found
        ]
