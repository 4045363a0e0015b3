"""What LangChain's standard suite does not exercise, on every backend, sync and async, judged
against LangChain's own ``InMemoryVectorStore`` holding the same documents (exact cosine
search): ``from_documents``/``afrom_texts``, ``similarity_search_with_score`` (canonical
distance: 1 - its cosine), ``similarity_search_with_relevance_scores`` with a threshold,
``max_marginal_relevance_search`` with and without a filter, and ``as_retriever`` in each of its
search types. Relevance scores per metric follow the published score formula."""

from __future__ import annotations

import contextlib
import hashlib
import math
from collections.abc import AsyncIterator, Callable
from typing import Any

import numpy as np
import pytest

from tests._frameworks import each_target, opened_target

pytest.importorskip("langchain_core")

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore

import vectorport
from vectorport.exceptions import NotFoundError
from vectorport.langchain import LangChainStore

pytestmark = pytest.mark.langchain

DIM = 12
WORDS = ["tables", "buckets", "collections", "indexes", "filters", "vectors"]
DOCS = [
    Document(
        id=f"d{i:02d}",
        page_content=f"note {i} on {WORDS[i % 6]} and {WORDS[(i * 5) % 6]}",
        metadata={"lang": ["en", "fr"][i % 2], "stars": i},
    )
    for i in range(36)
]
QUERIES = ["tables and filters", "buckets", "note 7 on vectors"]
ENGLISH = {"lang": "en"}


class Spread(Embeddings):
    """A unit vector per text, drawn from a generator seeded by the text: no two texts tie and
    every cosine is positive (non-negative components), so relevance scores lie in [0, 1]."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        v = np.abs(np.random.default_rng(seed).normal(size=DIM))
        return [float(x) for x in v / np.linalg.norm(v)]


def _english(doc: Document) -> bool:
    return bool(doc.metadata["lang"] == "en")


@pytest.fixture(scope="module")
def reference() -> InMemoryVectorStore:
    return InMemoryVectorStore.from_documents(DOCS, Spread())


@pytest.fixture(params=each_target(aconnect=True))
async def target(request: pytest.FixtureRequest, url_for: Callable[..., str]) -> AsyncIterator[Any]:
    """A URL whose collection the first write creates, or a store from ``vectorport.aconnect``."""
    async with opened_target(request.param, url_for, DIM) as made:
        yield made
        if isinstance(made, str):
            with contextlib.suppress(NotFoundError), vectorport.connect(made) as store:
                store.drop()


def _above(reference: InMemoryVectorStore, query: str, k: int, threshold: float) -> list[Any]:
    """LangChain's thresholded relevance search on its own store, whose score is the cosine
    (the relevance of a cosine store; it declares no relevance function of its own)."""
    return [(d, s) for d, s in reference.similarity_search_with_score(query, k=k) if s >= threshold]


def _ids(docs: list[Document]) -> list[str | None]:
    return [d.id for d in docs]


def test_searches_match_langchains_own_store(target: Any, reference: InMemoryVectorStore) -> None:
    lc = LangChainStore.from_documents(DOCS, Spread(), store=target)
    try:
        assert lc.get_by_ids(["d03", "d35"]) == reference.get_by_ids(["d03", "d35"])
        for q in QUERIES:
            ours = lc.similarity_search_with_score(q, k=5)
            theirs = reference.similarity_search_with_score(q, k=5)
            assert [d for d, _ in ours] == [d for d, _ in theirs]
            assert [s for _, s in ours] == pytest.approx([1 - s for _, s in theirs], abs=1e-5)
            ours_r = lc.similarity_search_with_relevance_scores(q, k=6, score_threshold=0.75)
            theirs_r = _above(reference, q, 6, 0.75)
            assert _ids([d for d, _ in ours_r]) == _ids([d for d, _ in theirs_r]) and theirs_r
            assert [s for _, s in ours_r] == pytest.approx([s for _, s in theirs_r], abs=1e-5)
            mmr = lc.max_marginal_relevance_search(q, k=4, fetch_k=12, lambda_mult=0.3)
            assert _ids(mmr) == _ids(reference.max_marginal_relevance_search(q, 4, 12, 0.3))
            mmr = lc.max_marginal_relevance_search(q, k=3, fetch_k=8, filter=ENGLISH)
            assert _ids(mmr) == _ids(reference.max_marginal_relevance_search(q, 3, 8, filter=_english))
        for search_type, kwargs in _RETRIEVERS:
            ours_docs = lc.as_retriever(search_type=search_type, search_kwargs=kwargs).invoke(QUERIES[0])
            assert _ids(ours_docs) == _expected(reference, search_type, kwargs, QUERIES[0]), search_type
            assert ours_docs
    finally:
        lc.close()


_RETRIEVERS: list[tuple[str, dict[str, Any]]] = [
    ("similarity", {"k": 3, "filter": ENGLISH}),
    ("mmr", {"k": 3, "fetch_k": 10, "lambda_mult": 0.4}),
    ("similarity_score_threshold", {"k": 8, "score_threshold": 0.8}),
]


def _expected(
    reference: InMemoryVectorStore, search_type: str, kwargs: dict[str, Any], query: str
) -> list[str | None]:
    """What LangChain's own store's retriever returns for the same search."""
    if search_type == "similarity_score_threshold":
        return _ids([d for d, _ in _above(reference, query, kwargs["k"], kwargs["score_threshold"])])
    theirs = {**kwargs, "filter": _english} if "filter" in kwargs else kwargs
    return _ids(reference.as_retriever(search_type=search_type, search_kwargs=theirs).invoke(query))


async def test_async_searches_match_langchains_own_store(target: Any, reference: InMemoryVectorStore) -> None:
    texts = [d.page_content for d in DOCS]
    metas = [d.metadata for d in DOCS]
    lc = await LangChainStore.afrom_texts(texts, Spread(), metas, ids=[d.id for d in DOCS], store=target)
    try:
        assert await lc.aget_by_ids(["d03", "d35"]) == reference.get_by_ids(["d03", "d35"])
        for q in QUERIES:
            ours_r = await lc.asimilarity_search_with_relevance_scores(q, k=6, score_threshold=0.75)
            assert _ids([d for d, _ in ours_r]) == _ids([d for d, _ in _above(reference, q, 6, 0.75)])
            mmr = await lc.amax_marginal_relevance_search(q, k=3, fetch_k=8, filter=ENGLISH)
            assert _ids(mmr) == _ids(reference.max_marginal_relevance_search(q, 3, 8, filter=_english))
        for search_type, kwargs in _RETRIEVERS:
            retriever = lc.as_retriever(search_type=search_type, search_kwargs=kwargs)
            ours_docs = await retriever.ainvoke(QUERIES[1])
            assert _ids(ours_docs) == _expected(reference, search_type, kwargs, QUERIES[1]), search_type
            assert ours_docs
    finally:
        await lc.aclose()


@pytest.mark.memory
@pytest.mark.parametrize("metric", ["cosine", "euclidean", "dot"])
def test_relevance_follows_the_published_score(metric: str) -> None:
    """Relevance is a function of vectorport's score (cosine ``1 - d``, euclidean ``-d``, dot
    ``-d``) that keeps its order: cosine and dot give the score itself (the cosine, for the unit
    vectors LangChain's scale assumes), euclidean LangChain's ``1 + score / sqrt(2)``."""
    published = {
        "cosine": lambda score: score,
        "dot": lambda score: score,
        "euclidean": lambda score: 1 + score / math.sqrt(2),
    }[metric]
    lc = LangChainStore.from_documents(DOCS, Spread(), store=f"memory://lc-relevance-{metric}", metric=metric)
    try:
        for q in QUERIES:
            vector = Spread().embed_query(q)
            matches = lc.store.query(vector, 10)
            relevance = lc.similarity_search_with_relevance_scores(q, k=10)
            assert [d.id for d, _ in relevance] == [m.key for m in matches]
            assert [r for _, r in relevance] == pytest.approx([published(m.score) for m in matches])
            assert [r for _, r in relevance] == sorted((r for _, r in relevance), reverse=True)
            if metric != "euclidean":  # unit vectors: the cosine, whatever the metric
                cosines = reference_cosines(vector, [str(d.id) for d, _ in relevance])
                assert [r for _, r in relevance] == pytest.approx(cosines, abs=1e-5)
    finally:
        lc.store.drop()


def reference_cosines(vector: list[float], ids: list[str]) -> list[float]:
    by_id = {d.id: d for d in DOCS}
    emb = Spread()
    return [float(np.dot(vector, emb.embed_query(by_id[i].page_content))) for i in ids]


class Fixed(Embeddings):
    """Every text on the first axis."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return [1.0, 0.0]


@pytest.mark.memory
def test_dot_relevance_keeps_the_order_of_negative_products() -> None:
    """A document pointing away from the query is less relevant than one orthogonal to it (the
    inner-product scale ``1 - distance`` for a positive distance would give it 0.9)."""
    store = vectorport.connect("memory://lc-relevance-dot-negative", dimension=2, metric="dot")
    lc = LangChainStore(store, embedding=Fixed())
    try:
        store.upsert(
            [
                vectorport.Record("same", [1.0, 0.0], {}, "same"),
                vectorport.Record("orthogonal", [0.0, 1.0], {}, "orthogonal"),
                vectorport.Record("away", [-0.1, 0.995], {}, "away"),
            ]
        )
        with pytest.warns(UserWarning, match="Relevance scores must be between 0 and 1"):
            pairs = lc.similarity_search_with_relevance_scores("q", k=3)  # LangChain's own warning
    finally:
        store.drop()
        lc.close()
    assert [d.id for d, _ in pairs] == ["same", "orthogonal", "away"]
    assert [r for _, r in pairs] == pytest.approx([1.0, 0.0, -0.1])


@pytest.mark.memory
async def test_the_constructors_need_a_store() -> None:
    with pytest.raises(vectorport.ConfigurationError, match="from_texts needs store="):
        LangChainStore.from_texts(["a"], Spread())
    with pytest.raises(vectorport.ConfigurationError, match="afrom_texts needs store="):
        await LangChainStore.afrom_documents([Document(page_content="a")], Spread())
