"""LlamaIndexStore inside LlamaIndex's own machinery on every backend: ``VectorStoreIndex`` built
from documents into it, reopened with ``from_vector_store``, its retriever (with
``MetadataFilters``) and its query engine, ``delete_ref_doc``; sync and async."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterator

import pytest

from tests._frameworks import each_target

pytest.importorskip("llama_index.core")

from llama_index.core import Document, StorageContext, VectorStoreIndex
from llama_index.core.llms.mock import MockLLM
from llama_index.core.vector_stores import MetadataFilter, MetadataFilters

from vectorport.llamaindex import LlamaIndexEmbedding, LlamaIndexStore

pytestmark = pytest.mark.llamaindex

DOCS = [
    Document(
        text="Postgres keeps vectors in tables. pgvector adds HNSW indexes to tables.",
        id_="pg",
        metadata={"kind": "db"},
    ),
    Document(
        text="Chroma keeps collections on disk. Chroma runs embedded or as a server.",
        id_="chroma",
        metadata={"kind": "db"},
    ),
    Document(
        text="Buckets hold vector indexes. A bucket index answers queries with metadata filters.",
        id_="bucket",
        metadata={"kind": "object"},
    ),
]


@pytest.fixture
def embed() -> LlamaIndexEmbedding:
    return LlamaIndexEmbedding("hash:64")


@pytest.fixture(params=each_target())
def url(request: pytest.FixtureRequest, url_for: Callable[..., str]) -> Iterator[str]:
    target = url_for(request.param)
    yield target
    store = LlamaIndexStore(target)
    with contextlib.suppress(KeyError):
        store.client.drop()
    store.close()


@pytest.fixture
async def opened(url: str) -> AsyncIterator[Callable[[], LlamaIndexStore]]:
    """``opened()``: a new LlamaIndexStore on the test's URL, closed at the end."""
    made: list[LlamaIndexStore] = []

    def make() -> LlamaIndexStore:
        made.append(LlamaIndexStore(url))
        return made[-1]

    yield make
    for store in made:
        await store.aclose()


def test_vector_store_index_retriever_and_query_engine(
    opened: Callable[[], LlamaIndexStore], embed: LlamaIndexEmbedding
) -> None:
    ctx = StorageContext.from_defaults(vector_store=opened())
    VectorStoreIndex.from_documents(DOCS, storage_context=ctx, embed_model=embed)
    reopened = VectorStoreIndex.from_vector_store(opened(), embed_model=embed)
    hits = reopened.as_retriever(similarity_top_k=2).retrieve("which bucket index answers queries")
    assert hits[0].node.ref_doc_id == "bucket"
    assert "Buckets hold vector indexes" in hits[0].node.get_content()
    assert hits[0].score is not None and hits[0].score >= hits[1].score

    only_db = MetadataFilters(filters=[MetadataFilter(key="kind", value="db")])
    hits = reopened.as_retriever(similarity_top_k=3, filters=only_db).retrieve("bucket index queries")
    assert {h.node.ref_doc_id for h in hits} == {"pg", "chroma"}

    answer = reopened.as_query_engine(llm=MockLLM(), similarity_top_k=1).query("Chroma server")
    assert [n.node.ref_doc_id for n in answer.source_nodes] == ["chroma"]

    reopened.delete_ref_doc("chroma")
    hits = reopened.as_retriever(similarity_top_k=3).retrieve("Chroma server")
    assert "chroma" not in {h.node.ref_doc_id for h in hits}


async def test_vector_store_index_async(
    opened: Callable[[], LlamaIndexStore], embed: LlamaIndexEmbedding
) -> None:
    store = opened()
    index = VectorStoreIndex.from_documents(
        DOCS,
        storage_context=StorageContext.from_defaults(vector_store=store),
        embed_model=embed,
        use_async=True,
    )
    hits = await index.as_retriever(similarity_top_k=1).aretrieve("pgvector HNSW tables")
    assert hits[0].node.ref_doc_id == "pg"
    answer = await index.as_query_engine(llm=MockLLM(), similarity_top_k=1).aquery("pgvector HNSW tables")
    assert [n.node.ref_doc_id for n in answer.source_nodes] == ["pg"]
    await index.adelete_ref_doc("pg")
    hits = await index.as_retriever(similarity_top_k=3).aretrieve("pgvector HNSW tables")
    assert "pg" not in {h.node.ref_doc_id for h in hits}
