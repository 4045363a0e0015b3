"""LlamaIndex's ``ChromaVectorStore`` and langchain-chroma's ``Chroma`` beside vectorport on
one embedded Chroma collection, both ways.

LlamaIndex keeps the text in ``documents`` and the node in the metadata (``_node_content``
with its text emptied, ``_node_type``, the three document-id copies); langchain-chroma keeps
``page_content`` in ``documents`` and ``Document.metadata`` as the metadata, as vectorport does.
"""

from __future__ import annotations

from typing import Any

import pytest

import vectorport

from ._corpus import DIM, QUERIES, corpus, node_order, vector_for

pytestmark = [pytest.mark.interop, pytest.mark.chroma]

chromadb = pytest.importorskip("chromadb")
li_chroma = pytest.importorskip("llama_index.vector_stores.chroma")
schema = pytest.importorskip("llama_index.core.schema")
types = pytest.importorskip("llama_index.core.vector_stores.types")
lc_chroma = pytest.importorskip("langchain_chroma")
embeddings_mod = pytest.importorskip("langchain_core.embeddings")

_names = iter(range(10_000))


class FixedEmbeddings(embeddings_mod.Embeddings):  # type: ignore[misc]
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [vector_for(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return vector_for(text)


@pytest.fixture
def client(chroma_dir: str) -> Any:
    from chromadb.config import Settings

    return chromadb.PersistentClient(path=chroma_dir, settings=Settings(anonymized_telemetry=False))


def _url(chroma_dir: str, name: str, extra: str = "") -> str:
    return f"chroma://{chroma_dir}?collection={name}{extra}"


def test_a_collection_llamaindex_wrote_reads_with_its_text_and_metadata(client: Any, chroma_dir: str) -> None:
    name, chunks = f"li_{next(_names)}", corpus()
    coll = client.create_collection(
        name, configuration={"hnsw": {"space": "cosine"}}, embedding_function=None
    )
    li = li_chroma.ChromaVectorStore(chroma_collection=coll)
    rel = schema.NodeRelationship.SOURCE
    li.add(
        [
            schema.TextNode(
                id_=c.key,
                text=c.text,
                metadata={
                    k: v for k, v in c.metadata.items() if k != "tags"
                },  # LlamaIndex's Chroma metadata is flat
                embedding=c.vector,
                relationships={rel: schema.RelatedNodeInfo(node_id=c.metadata["source"])},
            )
            for c in chunks
        ]
    )
    with vectorport.connect(_url(chroma_dir, name)) as store:
        assert store.info()["layout"]["name"] == "llamaindex"
        got = {r.key: (r.text, r.metadata) for r in store.records()}
        assert got == {
            c.key: (
                c.text,
                {
                    "source": c.metadata["source"],
                    "page": c.metadata["page"],
                    "ref_doc_id": c.metadata["source"],
                    **node_order({k: v for k, v in c.metadata.items() if k != "tags"}),
                },
            )
            for c in chunks
        }
        for q in QUERIES:
            ours = store.query(q, k=10)
            theirs = li.query(types.VectorStoreQuery(query_embedding=q, similarity_top_k=10))
            assert [m.key for m in ours] == theirs.ids
            assert [m.text for m in ours] == [n.get_content() for n in theirs.nodes]


def test_vectorport_writes_what_llamaindex_reads(client: Any, chroma_dir: str) -> None:
    name, chunks = f"li_{next(_names)}", corpus()
    url = _url(chroma_dir, name, "&layout=llamaindex")
    with vectorport.connect(url, dimension=DIM, metric="cosine") as store:
        store.upsert(vectorport.Record(c.key, c.vector, c.metadata, c.text) for c in chunks)
        li = li_chroma.ChromaVectorStore(chroma_collection=client.get_collection(name))
        for q in QUERIES:
            ours = store.query(q, k=10)
            theirs = li.query(types.VectorStoreQuery(query_embedding=q, similarity_top_k=10))
            assert theirs.ids == [m.key for m in ours]
            assert [n.get_content() for n in theirs.nodes] == [m.text for m in ours]
            assert [dict(n.metadata) for n in theirs.nodes] == [m.metadata for m in ours]
    with vectorport.connect(_url(chroma_dir, name)) as again:  # and it is detected on the next open
        assert again.info()["layout"] == {"name": "llamaindex", "detected": "20 of 20 sampled records"}


def test_langchain_chroma_and_vectorport_read_each_other(client: Any, chroma_dir: str) -> None:
    name, chunks = f"lc_{next(_names)}", corpus()
    lc = lc_chroma.Chroma(
        collection_name=name,
        embedding_function=FixedEmbeddings(),
        client=client,
        collection_configuration={"hnsw": {"space": "cosine"}},
    )
    lc.add_texts([c.text for c in chunks], [c.metadata for c in chunks], ids=[c.key for c in chunks])
    with vectorport.connect(_url(chroma_dir, name)) as store:
        assert store.info()["layout"]["name"] == "vectorport"
        for q in QUERIES:
            ours = store.query(q, k=10)
            theirs = lc.similarity_search_by_vector(q, k=10)
            assert [m.key for m in ours] == [d.id for d in theirs]
            assert [(m.text, m.metadata) for m in ours] == [(d.page_content, d.metadata) for d in theirs]
        store.upsert([vectorport.Record("new", vector_for("new text"), {"source": "x"}, "new text")])
    assert lc.get_by_ids(["new"])[0].page_content == "new text"
