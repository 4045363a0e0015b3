"""Migrating framework-written bucket indexes: the chunk text arrives (and ``verify`` would
catch it if it did not), into pgvector and from one framework's layout into another's."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

import vectorport
from vectorport.migrate import run as migrate
from vectorport.migrate import verify

from ._corpus import DIM, QUERIES, corpus, node_order, vector_for

pytestmark = [pytest.mark.interop, pytest.mark.s3vectors]

boto3 = pytest.importorskip("boto3")
s3_vectors = pytest.importorskip("langchain_aws.vectorstores.s3_vectors")
s3_store = pytest.importorskip("llama_index.vector_stores.s3")
embeddings_mod = pytest.importorskip("langchain_core.embeddings")
types = pytest.importorskip("llama_index.core.vector_stores.types")

BUCKET = "interop-mig"
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
    """An s3vectors client of the local server; LlamaIndex's clients reach it through
    botocore's per-service endpoint variable (S3VectorStore takes no endpoint)."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3VECTORS", bucket_server.url)
    c = _session().client("s3vectors")
    with contextlib.suppress(c.exceptions.ConflictException):
        c.create_vector_bucket(vectorBucketName=BUCKET)
    return c


def _url(bucket_server: Any, index: str, extra: str = "") -> str:
    return f"s3vectors://{BUCKET}/{index}?endpoint_url={bucket_server.url}&write_rate=0{extra}"


def _langchain_index(client: Any) -> tuple[str, list[Any]]:
    index, chunks = f"lc-{next(_names)}", corpus(long_text=False)
    lc = s3_vectors.AmazonS3Vectors(
        vector_bucket_name=BUCKET, index_name=index, embedding=FixedEmbeddings(), client=client
    )
    lc.add_texts([c.text for c in chunks], [c.metadata for c in chunks], ids=[c.key for c in chunks])
    return index, chunks


def test_a_langchain_index_migrates_into_pgvector_with_its_text(
    client: Any, bucket_server: Any, pg_dir: Any
) -> None:
    index, chunks = _langchain_index(client)
    source, target = _url(bucket_server, index), f"pgvector://{pg_dir}?table=from_{index.replace('-', '_')}"
    report = migrate(source, target)
    assert report.ok, report.to_dict()
    with vectorport.connect(target) as store:
        got = {r.key: (r.text, r.metadata) for r in store.records()}
    assert got == {c.key: (c.text, c.metadata) for c in chunks}

    # Read as vectorport's own layout the source has no text: that copy fails verification.
    blind = f"pgvector://{pg_dir}?table=blind_{index.replace('-', '_')}"
    migrate(_url(bucket_server, index, "&layout=vectorport"), blind, verify=False)
    failed = verify(source, blind)
    assert not failed.ok
    assert failed.text.total == len(chunks)


def test_a_llamaindex_index_migrates_into_pgvector_with_its_text(
    client: Any, bucket_server: Any, pg_dir: Any
) -> None:
    schema = pytest.importorskip("llama_index.core.schema")
    index, chunks = f"li-{next(_names)}", corpus()
    li = s3_store.S3VectorStore.create_index_from_bucket(
        bucket_name_or_arn=BUCKET,
        index_name=index,
        dimension=DIM,
        sync_session=boto3.Session(
            aws_access_key_id="test", aws_secret_access_key="test", region_name="us-east-1"
        ),
    )
    li.add([schema.TextNode(id_=c.key, text=c.text, metadata=c.metadata, embedding=c.vector) for c in chunks])
    target = f"pgvector://{pg_dir}?table=from_{index.replace('-', '_')}"
    report = migrate(_url(bucket_server, index), target)
    assert report.ok, report.to_dict()
    with vectorport.connect(target) as store:
        got = {r.key: (r.text, r.metadata) for r in store.records()}
    # each record carries its node's metadata key order (LlamaIndex renders it; jsonb reorders)
    assert got == {c.key: (c.text, {**c.metadata, **node_order(c.metadata)}) for c in chunks}


def test_langchain_to_llamaindex_in_one_command(client: Any, bucket_server: Any) -> None:
    index, chunks = _langchain_index(client)
    target_index = f"li-{next(_names)}"
    report = migrate(_url(bucket_server, index), _url(bucket_server, target_index, "&layout=llamaindex"))
    assert report.ok, report.to_dict()
    li = s3_store.S3VectorStore(
        index_name_or_arn=target_index, bucket_name_or_arn=BUCKET, sync_session=_session()
    )
    by_key = {c.key: c for c in chunks}
    for q in QUERIES:
        found = li.query(types.VectorStoreQuery(query_embedding=q, similarity_top_k=10))
        with vectorport.connect(_url(bucket_server, index)) as source:
            assert found.ids == [m.key for m in source.query(q, k=10)]
        assert [n.get_content() for n in found.nodes] == [by_key[i].text for i in found.ids]
        assert [dict(n.metadata) for n in found.nodes] == [by_key[i].metadata for i in found.ids]
