"""One filter, two frameworks, every backend: ``{"lang": "en", "stars": {"$gte": 10}}`` through
LangChainStore and the same condition as LlamaIndex ``MetadataFilters`` through LlamaIndexStore
return the same documents, those the filter oracle selects; and a filter the backend cannot run
is refused before anything is embedded or sent."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import vectorport
from tests._frameworks import each_target
from vectorport.filters import ALL_OPERATORS, evaluate, parse_filter
from vectorport.testing.backends import targets

pytest.importorskip("langchain_core")
pytest.importorskip("llama_index.core")

from langchain_core.embeddings import Embeddings
from llama_index.core.vector_stores import (
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
)

from vectorport.langchain import LangChainEmbeddings, LangChainStore
from vectorport.llamaindex import LlamaIndexStore

pytestmark = [pytest.mark.langchain, pytest.mark.llamaindex]

PORTABLE = {"lang": "en", "stars": {"$gte": 10}}
LLAMA = MetadataFilters(
    filters=[
        MetadataFilter(key="lang", value="en"),
        MetadataFilter(key="stars", value=10, operator=FilterOperator.GTE),
    ]
)
TEXTS = [f"note {i} about {['vectors', 'tables', 'buckets'][i % 3]} and search" for i in range(30)]
METAS: list[dict[str, Any]] = [
    {"lang": ["en", "fr", "en"][i % 3], **({"stars": i} if i % 4 else {})} for i in range(30)
]
# one example per portable operator, for the backends that lack it
SAMPLES = {
    "$exists": {"stars": {"$exists": True}},
    "$not": {"$not": {"lang": "en"}},
    "$ne": {"lang": {"$ne": "en"}},
    "$nin": {"lang": {"$nin": ["en"]}},
    "$in": {"lang": {"$in": ["en"]}},
    "$is": {"lang": {"$is": "en"}},
    "$is_not": {"lang": {"$is_not": "en"}},
    "$or": {"$or": [{"lang": "en"}, {"stars": 3}]},
}


class Counting(Embeddings):
    """vectorport's hash embedder, counting the texts it embeds."""

    def __init__(self) -> None:
        self.inner = LangChainEmbeddings("hash:32")
        self.calls = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += len(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        self.calls += 1
        return self.inner.embed_query(text)


@pytest.fixture(params=each_target())
def stores(
    request: pytest.FixtureRequest, url_for: Callable[..., str]
) -> Iterator[tuple[LangChainStore, LlamaIndexStore, Counting]]:
    emb = Counting()
    lc = LangChainStore(url_for(request.param), embedding=emb)
    lc.add_texts(TEXTS, METAS, ids=[f"d{i:02d}" for i in range(30)])
    li = LlamaIndexStore(lc.store)
    yield lc, li, emb
    with contextlib.suppress(KeyError):
        lc.store.drop()
    lc.close()


def test_the_same_filter_returns_the_same_documents(
    stores: tuple[LangChainStore, LlamaIndexStore, Counting],
) -> None:
    lc, li, emb = stores
    want = {f"d{i:02d}" for i in range(30) if evaluate(parse_filter(PORTABLE), METAS[i])}
    assert len(want) == 10
    query = "search about tables"
    ours = lc.similarity_search(query, k=20, filter=PORTABLE)
    theirs = li.query(
        VectorStoreQuery(query_embedding=emb.embed_query(query), similarity_top_k=20, filters=LLAMA)
    )
    assert {d.id for d in ours} == want
    assert [d.id for d in ours] == theirs.ids
    assert [d.page_content for d in ours] == [n.get_content() for n in theirs.nodes]
    assert [d.metadata for d in ours] == [n.metadata for n in theirs.nodes]


async def test_the_same_filter_returns_the_same_documents_async(
    stores: tuple[LangChainStore, LlamaIndexStore, Counting],
) -> None:
    lc, li, emb = stores
    query = "notes on buckets"
    ours = await lc.asimilarity_search(query, k=20, filter=PORTABLE)
    theirs = await li.aquery(
        VectorStoreQuery(query_embedding=emb.embed_query(query), similarity_top_k=20, filters=LLAMA)
    )
    want = {f"d{i:02d}" for i in range(30) if evaluate(parse_filter(PORTABLE), METAS[i])}
    assert {d.id for d in ours} == want
    assert [d.id for d in ours] == theirs.ids
    assert ours == lc.similarity_search(query, k=20, filter=PORTABLE)


def test_what_the_backend_cannot_run_is_refused_before_any_io(
    stores: tuple[LangChainStore, LlamaIndexStore, Counting],
) -> None:
    lc, li, emb = stores
    before = emb.calls
    # LangChain PGVector's $like is no portable operator: refused on every backend
    with pytest.raises(vectorport.FilterError, match=r"unknown operator '\$like'"):
        lc.similarity_search("tables", k=3, filter={"lang": {"$like": "e%"}})
    with pytest.raises(vectorport.UnsupportedFilterError, match="TEXT_MATCH"):
        li.query(
            VectorStoreQuery(
                query_embedding=[0.0] * 31 + [1.0],
                similarity_top_k=3,
                filters=MetadataFilters(
                    filters=[MetadataFilter(key="lang", value="e", operator=FilterOperator.TEXT_MATCH)]
                ),
            )
        )
    # $not is rewritten (De Morgan) where the backend lacks it, so it is never refused alone
    missing = sorted(set(ALL_OPERATORS) - lc.store.capabilities.filter_operators - {"$and", "$not"})
    for op in missing:  # e.g. Chroma has no $exists
        with pytest.raises(vectorport.UnsupportedFilterError):
            lc.similarity_search("tables", k=3, filter=SAMPLES[op])
        with pytest.raises(vectorport.UnsupportedFilterError):
            lc.delete(filter=SAMPLES[op])
    assert emb.calls == before  # nothing was embedded: the filter was refused first
    assert lc.store.count() == 30


@pytest.mark.parametrize("name", each_target())
def test_a_collection_not_made_yet_refuses_the_same_filters(name: str, url_for: Callable[..., str]) -> None:
    """Before the first write (no collection: nothing to search) the backend refuses what it
    cannot run all the same, so the application sees the same error whether or not it wrote."""
    emb = Counting()
    lc = LangChainStore(url_for(name), embedding=emb)
    try:
        owner, _ = targets()[name]
        missing = sorted(set(ALL_OPERATORS) - owner.load().capabilities.filter_operators - {"$and", "$not"})
        for op in missing:
            with pytest.raises(vectorport.UnsupportedFilterError):
                lc.similarity_search("tables", k=3, filter=SAMPLES[op])
            with pytest.raises(vectorport.UnsupportedFilterError):
                lc.delete(filter=SAMPLES[op])
        with pytest.raises(vectorport.FilterError, match=r"unknown operator '\$like'"):
            lc.similarity_search("tables", k=3, filter={"lang": {"$like": "e%"}})
        assert lc.similarity_search("tables", k=3, filter=PORTABLE) == []
        assert emb.calls == 1  # only the search that could run embedded its query
        with pytest.raises(vectorport.NotFoundError):
            _ = lc.store  # nothing was made
        lc.add_texts(TEXTS[:3], METAS[:3], ids=["d00", "d01", "d02"])
        for op in missing:  # and the same once it exists
            with pytest.raises(vectorport.UnsupportedFilterError):
                lc.similarity_search("tables", k=3, filter=SAMPLES[op])
        assert [d.id for d in lc.similarity_search("tables", k=3, filter={"lang": "fr"})] == ["d01"]
    finally:
        with contextlib.suppress(vectorport.NotFoundError):
            lc.store.drop()
        lc.close()
