"""LangChain's ``AmazonS3Vectors`` (langchain-aws) and vectorport on one bucket index, both ways.

LangChain keeps the text under ``_page_content`` beside the document's metadata and the
document id as the vector key. Both clients talk to vectorport's local S3 Vectors server.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

import vectorport

from ._corpus import DIM, QUERIES, corpus, vector_for

pytestmark = [pytest.mark.interop, pytest.mark.s3vectors]

boto3 = pytest.importorskip("boto3")
s3_vectors = pytest.importorskip("langchain_aws.vectorstores.s3_vectors")
embeddings_mod = pytest.importorskip("langchain_core.embeddings")
documents = pytest.importorskip("langchain_core.documents")


class FixedEmbeddings(embeddings_mod.Embeddings):  # type: ignore[misc]
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [vector_for(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return vector_for(text)


@pytest.fixture
def client(bucket_server: Any) -> Any:
    c = boto3.client(
        "s3vectors",
        endpoint_url=bucket_server.url,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )
    yield c
    c.close()


_names = iter(range(10_000))


@pytest.fixture
def index(client: Any) -> str:
    """A fresh index name in the bucket ``interop-lc`` (which LangChain expects to exist)."""
    with contextlib.suppress(client.exceptions.ConflictException):
        client.create_vector_bucket(vectorBucketName="interop-lc")
    return f"lc-{next(_names)}"


def _langchain(client: Any, index: str, **kw: Any) -> Any:
    return s3_vectors.AmazonS3Vectors(
        vector_bucket_name="interop-lc", index_name=index, embedding=FixedEmbeddings(), client=client, **kw
    )


def _url(bucket_server: Any, index: str, extra: str = "") -> str:
    return f"s3vectors://interop-lc/{index}?endpoint_url={bucket_server.url}&write_rate=0{extra}"


def test_an_index_langchain_wrote_reads_with_its_text_and_metadata(
    client: Any, index: str, bucket_server: Any
) -> None:
    chunks = corpus(long_text=False)  # LangChain's own index has a filterable _page_content (2 KB)
    lc = _langchain(client, index)
    lc.add_texts([c.text for c in chunks], [c.metadata for c in chunks], ids=[c.key for c in chunks])

    with vectorport.connect(_url(bucket_server, index)) as store:
        assert store.info()["layout"]["name"] == "langchain"
        got = {r.key: r for r in store.get([c.key for c in chunks])}
        for c in chunks:
            assert (got[c.key].text, got[c.key].metadata) == (c.text, c.metadata)
        for q in QUERIES:
            ours = store.query(q, k=10)
            theirs = lc.similarity_search_by_vector(q, k=10)
            assert [m.key for m in ours] == [d.id for d in theirs]
            assert [(m.text, m.metadata) for m in ours] == [(d.page_content, d.metadata) for d in theirs]


def test_vectorport_writes_what_langchain_reads(client: Any, index: str, bucket_server: Any) -> None:
    chunks = corpus()
    with vectorport.connect(_url(bucket_server, index, "&layout=langchain"), dimension=DIM) as store:
        store.upsert(vectorport.Record(c.key, c.vector, c.metadata, c.text) for c in chunks)
        config = client.get_index(vectorBucketName="interop-lc", indexName=index)["index"]
        assert config["metadataConfiguration"]["nonFilterableMetadataKeys"] == ["_page_content"]
        lc = _langchain(client, index)
        for q in QUERIES:
            ours = store.query(q, k=10)
            theirs = lc.similarity_search_by_vector(q, k=10)
            assert [d.id for d in theirs] == [m.key for m in ours]
            assert [(d.page_content, d.metadata) for d in theirs] == [(m.text, m.metadata) for m in ours]
        long = lc.get_by_ids(["k005"])[0]
        assert len(long.page_content.encode()) > 2048 and long.page_content == chunks[5].text
        hits = lc.similarity_search(chunks[7].text, k=1)
        assert hits[0].id == "k007"


def test_a_langchain_index_refuses_long_texts_before_writing(
    client: Any, index: str, bucket_server: Any
) -> None:
    lc = _langchain(client, index)
    lc.add_texts(["short"], [{"a": 1}], ids=["seed"])  # LangChain creates the index: no non-filterable key
    long = "x" * 3000
    with vectorport.connect(_url(bucket_server, index)) as store:
        with pytest.raises(vectorport.ValidationError, match=r"_page_content.*non-filterable") as err:
            store.upsert(
                [
                    vectorport.Record("ok", vector_for("ok"), {}, "fits"),
                    vectorport.Record("big", vector_for(long), {}, long),
                ]
            )
        assert "big" in str(err.value)
        assert sorted(r.key for r in store.records()) == ["seed"]  # nothing of the batch written


def test_a_filter_langchain_users_write_is_sent_as_aws_takes_it(
    client: Any, index: str, bucket_server: Any
) -> None:
    """AWS's guide gives one key per filter object ("Examples of valid filterable metadata",
    https://docs.aws.amazon.com/AmazonS3/latest/userguide/s3-vectors-metadata-filtering.html):
    several conditions go in ``$and``, several operators on one key in one object. A filter with
    two top-level keys is not in that grammar, and the service answers ``Invalid query filter``
    (as the local server does); vectorport sends the portable ``{"a": …, "b": …}`` as ``$and``."""
    chunks = corpus(long_text=False)
    lc = _langchain(client, index)
    lc.add_texts([c.text for c in chunks], [c.metadata for c in chunks], ids=[c.key for c in chunks])
    botocore = pytest.importorskip("botocore.exceptions")
    with pytest.raises(botocore.ClientError, match="Invalid query filter"):
        lc.similarity_search_by_vector(QUERIES[0], k=5, filter={"source": "doc1.md", "page": 4})
    explicit = {"$and": [{"source": "doc1.md"}, {"page": {"$gte": 4, "$lte": 10}}]}
    theirs = lc.similarity_search_by_vector(QUERIES[0], k=5, filter=explicit)
    with vectorport.connect(_url(bucket_server, index)) as store:
        ours = store.query(QUERIES[0], k=5, filter={"source": "doc1.md", "page": {"$gte": 4, "$lte": 10}})
    assert [m.key for m in ours] == [d.id for d in theirs]
    assert sorted(m.key for m in ours) == ["k004", "k007", "k010"]
