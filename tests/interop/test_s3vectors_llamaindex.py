"""LlamaIndex's ``S3VectorStore`` (llama-index-vector-stores-s3) and vectorport on one bucket
index, both ways.

LlamaIndex keeps the whole node as JSON under ``_node_content`` (its text inside), the node
class under ``_node_type`` and the source document's id under ``ref_doc_id``, beside the
node's metadata; it creates indexes with ``_node_content`` and ``_node_type`` non-filterable.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest

import vectorport

from ._corpus import DIM, QUERIES, corpus, node_order

pytestmark = [pytest.mark.interop, pytest.mark.s3vectors]

boto3 = pytest.importorskip("boto3")
s3_store = pytest.importorskip("llama_index.vector_stores.s3")
schema = pytest.importorskip("llama_index.core.schema")
types = pytest.importorskip("llama_index.core.vector_stores.types")

BUCKET = "interop-li"
_names = iter(range(10_000))


@pytest.fixture
def session(bucket_server: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A boto3 session whose ``s3vectors`` clients reach the local server: S3VectorStore makes
    its clients from a session and takes no endpoint, so botocore's per-service endpoint
    variable points them there."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3VECTORS", bucket_server.url)
    sess = boto3.Session(aws_access_key_id="test", aws_secret_access_key="test", region_name="us-east-1")
    client = sess.client("s3vectors")
    with contextlib.suppress(client.exceptions.ConflictException):
        client.create_vector_bucket(vectorBucketName=BUCKET)
    return sess


def _url(bucket_server: Any, index: str, extra: str = "") -> str:
    return f"s3vectors://{BUCKET}/{index}?endpoint_url={bucket_server.url}&write_rate=0{extra}"


def _nodes(chunks: Any) -> list[Any]:
    rel = schema.NodeRelationship.SOURCE
    return [
        schema.TextNode(
            id_=c.key,
            text=c.text,
            metadata=c.metadata,
            embedding=c.vector,
            relationships={rel: schema.RelatedNodeInfo(node_id=str(c.metadata["source"]))},
        )
        for c in chunks
    ]


def _query(store: Any, vector: list[float], k: int) -> Any:
    return store.query(types.VectorStoreQuery(query_embedding=vector, similarity_top_k=k))


def test_an_index_llamaindex_wrote_reads_with_its_text_and_metadata(session: Any, bucket_server: Any) -> None:
    index = f"li-{next(_names)}"
    chunks = corpus()
    li = s3_store.S3VectorStore.create_index_from_bucket(
        bucket_name_or_arn=BUCKET, index_name=index, dimension=DIM, sync_session=session
    )
    li.add(_nodes(chunks))

    with vectorport.connect(_url(bucket_server, index)) as store:
        assert store.info()["layout"] == {
            "name": "llamaindex",
            "text_key": "_node_content",
            "detected": "20 of 20 sampled vectors",
        }
        got = {r.key: r for r in store.records()}
        for c in chunks:
            # the user's metadata, and the node's source document once, as ref_doc_id
            assert got[c.key].text == c.text
            want = {**c.metadata, "ref_doc_id": c.metadata["source"], **node_order(c.metadata)}
            assert got[c.key].metadata == want
        for q in QUERIES:
            ours = store.query(q, k=10)
            theirs = _query(li, q, 10)
            assert [m.key for m in ours] == theirs.ids
            assert [m.text for m in ours] == [n.get_content() for n in theirs.nodes]


def test_vectorport_writes_what_llamaindex_reads(session: Any, bucket_server: Any) -> None:
    index = f"li-{next(_names)}"
    chunks = corpus()
    with vectorport.connect(_url(bucket_server, index, "&layout=llamaindex"), dimension=DIM) as store:
        store.upsert(
            vectorport.Record(c.key, c.vector, {**c.metadata, "ref_doc_id": c.metadata["source"]}, c.text)
            for c in chunks
        )
        config = session.client("s3vectors").get_index(vectorBucketName=BUCKET, indexName=index)["index"]
        assert config["metadataConfiguration"]["nonFilterableMetadataKeys"] == ["_node_content", "_node_type"]
        li = s3_store.S3VectorStore(index_name_or_arn=index, bucket_name_or_arn=BUCKET, sync_session=session)
        for q in QUERIES:
            ours = store.query(q, k=10)
            theirs = _query(li, q, 10)
            assert theirs.ids == [m.key for m in ours]
            assert [n.get_content() for n in theirs.nodes] == [m.text for m in ours]
            assert [n.ref_doc_id for n in theirs.nodes] == [m.metadata["ref_doc_id"] for m in ours]
            # the source document is the node's relationship, not a key of its metadata (where
            # it would show in get_content() and the LLM's prompt)
            assert [{**n.metadata} for n in theirs.nodes] == [
                {k: v for k, v in m.metadata.items() if k != "ref_doc_id"} for m in ours
            ]
        nodes = li.get_nodes(node_ids=["k005"])
        assert nodes[0].get_content() == chunks[5].text and len(chunks[5].text.encode()) > 2048
        li.delete(ref_doc_id="doc1.md")  # LlamaIndex finds the document's nodes by ref_doc_id
        assert store.count() == len([c for c in chunks if c.metadata["source"] != "doc1.md"])


def test_the_node_vectorport_writes_is_the_one_llamaindex_writes(session: Any, bucket_server: Any) -> None:
    """Same node, same vector metadata, byte for byte, whichever client wrote it."""
    chunk = corpus(3)[1]
    li_index, vp_index = f"li-{next(_names)}", f"li-{next(_names)}"
    li = s3_store.S3VectorStore.create_index_from_bucket(
        bucket_name_or_arn=BUCKET, index_name=li_index, dimension=DIM, sync_session=session
    )
    li.add(_nodes([chunk]))
    with vectorport.connect(_url(bucket_server, vp_index, "&layout=llamaindex"), dimension=DIM) as store:
        store.upsert(
            [
                vectorport.Record(
                    chunk.key, chunk.vector, {**chunk.metadata, "ref_doc_id": "doc1.md"}, chunk.text
                )
            ]
        )
    client = session.client("s3vectors")
    theirs, ours = (
        client.get_vectors(vectorBucketName=BUCKET, indexName=i, keys=[chunk.key], returnMetadata=True)[
            "vectors"
        ][0]["metadata"]
        for i in (li_index, vp_index)
    )
    node_theirs, node_ours = json.loads(theirs.pop("_node_content")), json.loads(ours.pop("_node_content"))
    assert node_ours == node_theirs  # the source is the node's relationship, not in its metadata
    assert ours == theirs  # user metadata, _node_type and ref_doc_id
    assert theirs["ref_doc_id"] == "doc1.md"
