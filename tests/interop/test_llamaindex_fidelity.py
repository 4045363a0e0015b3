"""Nodes a LlamaIndex node parser made survive LlamaIndex → bucket → LlamaIndex on every backend:
written by LlamaIndex's own ``S3VectorStore``, migrated into a bucket index in vectorport's layout,
then into each backend's LlamaIndex layout, and read back by LlamaIndex's own store for that
backend (``PGVectorStore``, ``ChromaVectorStore``, ``S3VectorStore``). Each node keeps its
PREVIOUS/NEXT/SOURCE relationships, ``start_char_idx``/``end_char_idx`` and excluded metadata
keys, so ``get_content(mode)`` is identical for every ``MetadataMode``; the node's metadata
gains no ``ref_doc_id``."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import numpy as np
import pytest

from vectorport.migrate import run as migrate

pytestmark = [pytest.mark.interop, pytest.mark.s3vectors, pytest.mark.chroma, pytest.mark.pgvector]

boto3 = pytest.importorskip("boto3")
schema = pytest.importorskip("llama_index.core.schema")
parser_mod = pytest.importorskip("llama_index.core.node_parser")
s3_store = pytest.importorskip("llama_index.vector_stores.s3")
li_chroma = pytest.importorskip("llama_index.vector_stores.chroma")
li_pg = pytest.importorskip("llama_index.vector_stores.postgres")
chromadb = pytest.importorskip("chromadb")

BUCKET = "interop-li-fidelity"
DIM = 8
TEXT = " ".join(
    f"Sentence number {i} tells of the {['river', 'mountain', 'city', 'harbour'][i % 4]} and its people."
    for i in range(60)
)


def _nodes() -> list[Any]:
    doc = schema.Document(
        text=TEXT,
        id_="handbook",
        metadata={"title": "Handbook", "author": "Ada", "year": 1843},
        excluded_llm_metadata_keys=["year"],
        excluded_embed_metadata_keys=["author"],
    )
    nodes = parser_mod.SentenceSplitter(chunk_size=60, chunk_overlap=0).get_nodes_from_documents([doc])
    rng = np.random.default_rng(3)
    for node in nodes:
        node.embedding = [float(x) for x in rng.standard_normal(DIM)]
    assert len(nodes) > 3 and all(schema.NodeRelationship.NEXT in n.relationships for n in nodes[:-1])
    return nodes


def _view(node: Any) -> dict[str, Any]:
    """What LlamaIndex (and the LLM) sees of a node."""
    modes = schema.MetadataMode
    return {
        "content": {m.value: node.get_content(metadata_mode=m) for m in modes},
        "metadata": dict(node.metadata),
        "relationships": {
            str(k): (v.node_id if not isinstance(v, list) else [r.node_id for r in v])
            for k, v in node.relationships.items()
        },
        "ref_doc_id": node.ref_doc_id,
        "span": (node.start_char_idx, node.end_char_idx),
        "excluded": (node.excluded_embed_metadata_keys, node.excluded_llm_metadata_keys),
    }


@pytest.fixture
def session(bucket_server: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3VECTORS", bucket_server.url)
    sess = boto3.Session(aws_access_key_id="test", aws_secret_access_key="test", region_name="us-east-1")
    client = sess.client("s3vectors")
    with contextlib.suppress(client.exceptions.ConflictException):
        client.create_vector_bucket(vectorBucketName=BUCKET)
    return sess


def _bucket(bucket_server: Any, index: str, extra: str = "") -> str:
    return f"s3vectors://{BUCKET}/{index}?endpoint_url={bucket_server.url}&write_rate=0{extra}"


def test_node_parser_nodes_survive_every_backend(
    session: Any, bucket_server: Any, chroma_dir: str, pg_tables: Any, interop_uri: str
) -> None:
    from chromadb.config import Settings

    nodes = _nodes()
    want = {n.node_id: _view(n) for n in nodes}
    ids = list(want)
    li_source = s3_store.S3VectorStore.create_index_from_bucket(
        bucket_name_or_arn=BUCKET, index_name="li-fid-src", dimension=DIM, sync_session=session
    )
    li_source.add(nodes)
    middle = _bucket(bucket_server, "li-fid-mid", "&layout=vectorport")
    assert migrate(_bucket(bucket_server, "li-fid-src"), middle).status == "verified"

    # back into LlamaIndex's layout on each backend, read by LlamaIndex's store for it
    assert migrate(middle, _bucket(bucket_server, "li-fid-s3", "&layout=llamaindex")).status == "verified"
    s3_back = s3_store.S3VectorStore(
        bucket_name_or_arn=BUCKET, index_name_or_arn="li-fid-s3", sync_session=session
    )
    got_s3 = {n.node_id: _view(n) for n in s3_back.get_nodes(node_ids=ids)}

    assert migrate(middle, f"chroma://{chroma_dir}?collection=li_fid&layout=llamaindex").status == "verified"
    client = chromadb.PersistentClient(path=chroma_dir, settings=Settings(anonymized_telemetry=False))
    chroma_back = li_chroma.ChromaVectorStore(chroma_collection=client.get_collection("li_fid"))
    got_chroma = {n.node_id: _view(n) for n in chroma_back.get_nodes(node_ids=ids)}

    assert migrate(middle, f"{pg_tables.url}&table=li_fid&layout=llamaindex").status == "verified"
    pg_back = li_pg.PGVectorStore.from_params(
        connection_string=interop_uri.replace("postgresql://", "postgresql+psycopg2://", 1),
        async_connection_string=interop_uri.replace("postgresql://", "postgresql+psycopg://", 1),
        table_name="li_fid",
        embed_dim=DIM,
        use_jsonb=True,
    )
    try:
        got_pg = {n.node_id: _view(n) for n in pg_back.get_nodes(node_ids=ids)}
    finally:
        asyncio.run(pg_back.close())  # its engines' pooled connections

    for name, got in (("s3vectors", got_s3), ("chroma", got_chroma), ("pgvector", got_pg)):
        assert got.keys() == want.keys(), name
        for key, view in want.items():
            assert got[key] == view, (name, key)
            assert "ref_doc_id" not in got[key]["metadata"], (name, key)
