"""LangChain's ``VectorStore`` over any vectorport store."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Self

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore as LangChainVectorStore

from .._async import AsyncStore
from .._handle import StoreHandle
from .._models import Metric, score_from_distance
from .._protocol import VectorStore
from ..alias._embedding import EmbedsText
from ..exceptions import NotFoundError
from ._awaitable import AwaitableMethods
from ._documents import READ, Batch, Search, delete_filter, document, embedded, store_argument

__all__ = ["LangChainStore"]


def _euclidean_relevance(distance: float) -> float:
    # LangChain's own scale for L2 between unit vectors (0 … sqrt(2) → 1 … 0): 1 + score / sqrt(2)
    return 1.0 - distance / math.sqrt(2)


_RELEVANCE: Mapping[Metric, Callable[[float], float]] = {
    Metric.COSINE: lambda d: score_from_distance(Metric.COSINE, d),
    Metric.DOT: lambda d: score_from_distance(Metric.DOT, d),
    Metric.EUCLIDEAN: _euclidean_relevance,
}
"""Metric → relevance of a canonical distance, a function of vectorport's score that keeps its
order. Cosine and dot: the score itself (the cosine; for dot, the cosine of the unit vectors
LangChain's [0, 1] scale assumes). LangChain's max-inner-product scale is not used: on a
canonical ``-dot`` it maps a slightly negative product to nearly 1, above an orthogonal one.
Euclidean: LangChain's own normalisation of the distance (exact for unit vectors)."""


class LangChainStore(AwaitableMethods, LangChainVectorStore):
    """A LangChain ``VectorStore`` over any vectorport store or URL.

    Document ids are vectorport keys, ``page_content`` the chunk text and ``metadata`` the
    record's metadata. ``filter=`` is vectorport's portable filter (Mongo-style, the same meaning
    on every backend); a filter the backend cannot run raises
    :class:`~vectorport.UnsupportedFilterError` before anything is embedded or sent.
    ``similarity_search_with_score`` gives the canonical distance (lower is better, as
    LangChain's PGVector and Chroma stores do); relevance scores follow :data:`_RELEVANCE`.

    Parameters
    ----------
    store
        A store URL (``"chroma:///srv/chroma?collection=docs"``, ``"memory://docs"`` …) or a
        store from :func:`vectorport.connect` or :func:`vectorport.aconnect`. A URL may name a
        missing collection: the first write creates it with the embedding's dimension.
    embedding
        The LangChain embeddings that turn texts into vectors.
    metric
        Metric of a collection the first write creates (default cosine).
    dimension
        Create a missing collection now, with this dimension.
    options
        Backend options for :func:`vectorport.connect`.

    Examples
    --------
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> lc = LangChainStore("memory://doctest-langchain", embedding=DeterministicFakeEmbedding(size=8))
    >>> lc.add_texts(["hello", "world"], [{"lang": "en"}, {"lang": "fr"}], ids=["a", "b"])
    ['a', 'b']
    >>> [d.id for d in lc.similarity_search("hello", k=2, filter={"lang": "fr"})]
    ['b']
    >>> lc.store.drop()
    """

    def __init__(
        self,
        store: VectorStore | AsyncStore[Any] | str | Any,
        embedding: Embeddings,
        *,
        metric: str | Metric | None = None,
        dimension: int | None = None,
        **options: Any,
    ) -> None:
        self._embedding = embedding
        self._handle = StoreHandle(store, metric=metric, dimension=dimension, options=options)

    # ----------------------------------------------------------------- the store
    @property
    def embeddings(self) -> Embeddings:
        """The embeddings this store embeds texts and queries with."""
        return self._embedding

    @property
    def store(self) -> VectorStore:
        """The vectorport store underneath.

        Raises
        ------
        NotFoundError
            The URL's collection does not exist yet (nothing was written).
        """
        store = self._handle.current
        if store is None:
            raise NotFoundError(f"{self._handle.url}: the collection does not exist until the first write")
        return store

    def close(self) -> None:
        """Close the vectorport store when this object opened it from a URL."""
        self._handle.close()

    def __repr__(self) -> str:
        return f"LangChainStore({self._handle.url!r})"

    # ----------------------------------------------------------------- writes
    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Embed ``texts`` and upsert them by id (full replace); missing ids get a UUID."""
        self._handle.check_writable()
        batch = Batch.of(texts, metadatas, ids)
        if not batch.texts:
            return []
        store = self._handle.current
        if isinstance(store, EmbedsText) and store.text_model:  # an alias: each member embeds it
            store.add_texts(batch.keys, batch.texts, batch.metadatas)
            return batch.keys
        vectors = embedded(self._embedding, "embed_documents", self._embedding.embed_documents(batch.texts))
        self._handle.for_write(len(vectors[0])).upsert(batch.records(vectors))
        return batch.keys

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        """Delete by ids, or every document matching ``filter=`` (missing ids are no error)."""
        flt = delete_filter(ids, kwargs, self._handle)
        store = self._handle.current
        if store is not None:
            store.delete(ids, filter=flt)
        return True

    # ----------------------------------------------------------------- reads
    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """The documents with these ids, in the order asked; missing ids are skipped."""
        store = self._handle.current
        if store is None or not ids:
            return []
        return [document(r.key, r.text, r.metadata) for r in store.get(ids, include=READ)]

    def similarity_search(self, query: str, k: int = 4, filter: Any = None, **kwargs: Any) -> list[Document]:
        """The ``k`` documents nearest to ``query`` among those matching ``filter``."""
        return [doc for doc, _ in self.similarity_search_with_score(query, k, filter=filter, **kwargs)]

    def similarity_search_with_score(
        self, query: str, k: int = 4, filter: Any = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """Documents and their canonical distance to ``query`` (lower is nearer)."""
        self._handle.check_filter(filter)
        store = self._handle.current
        if isinstance(store, EmbedsText) and store.text_model:
            return Search.pairs(store.query_text(query, k, filter=filter, include=READ))
        vector = embedded(self._embedding, "embed_query", [self._embedding.embed_query(query)])[0]
        return self.similarity_search_with_score_by_vector(vector, k, filter=filter, **kwargs)

    def similarity_search_by_vector(
        self, embedding: list[float], k: int = 4, filter: Any = None, **kwargs: Any
    ) -> list[Document]:
        """The ``k`` documents nearest to ``embedding`` among those matching ``filter``."""
        pairs = self.similarity_search_with_score_by_vector(embedding, k, filter=filter, **kwargs)
        return [doc for doc, _ in pairs]

    def similarity_search_with_score_by_vector(
        self, embedding: list[float], k: int = 4, filter: Any = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """Documents and their canonical distance to ``embedding`` (lower is nearer)."""
        search = Search.of(embedding, k, filter, kwargs, self._handle, vectors=False)
        store = self._handle.current
        return [] if store is None else search.pairs(store.query(**search.arguments))

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        return _RELEVANCE[self._handle.metric]

    def max_marginal_relevance_search(
        self,
        query: str,
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        filter: Any = None,
        **kwargs: Any,
    ) -> list[Document]:
        """``k`` documents picked among the ``fetch_k`` nearest for relevance and diversity."""
        self._handle.check_filter(filter)
        vector = embedded(self._embedding, "embed_query", [self._embedding.embed_query(query)])[0]
        return self.max_marginal_relevance_search_by_vector(
            vector, k, fetch_k, lambda_mult, filter=filter, **kwargs
        )

    def max_marginal_relevance_search_by_vector(
        self,
        embedding: list[float],
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        filter: Any = None,
        **kwargs: Any,
    ) -> list[Document]:
        """``k`` documents picked among the ``fetch_k`` nearest to ``embedding`` (MMR)."""
        search = Search.of(embedding, max(k, fetch_k), filter, kwargs, self._handle, vectors=True)
        store = self._handle.current
        return [] if store is None else search.diverse(store.query(**search.arguments), k, lambda_mult)

    # ----------------------------------------------------------------- constructors
    @classmethod
    def from_texts(
        cls,
        texts: list[str],
        embedding: Embeddings,
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> Self:
        """A store at ``store=`` (a URL or an open store) holding ``texts``.

        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> lc = LangChainStore.from_texts(["hi"], DeterministicFakeEmbedding(size=4),
        ...                                store="memory://doctest-from-texts", ids=["h"])
        >>> lc.get_by_ids(["h"])[0].page_content
        'hi'
        >>> lc.store.drop()
        """
        out = cls(store_argument(kwargs, "from_texts"), embedding, **kwargs)
        out.add_texts(texts, metadatas, ids=ids)
        return out

    @classmethod
    async def afrom_texts(
        cls,
        texts: list[str],
        embedding: Embeddings,
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> Self:
        """:meth:`from_texts`, awaitable: the texts are embedded and written by
        :meth:`aadd_texts` (on the store's async connections when it came from
        :func:`vectorport.aconnect`); a URL is opened off the event loop."""
        target = store_argument(kwargs, "afrom_texts")
        out = await asyncio.to_thread(lambda: cls(target, embedding, **kwargs))
        await out.aadd_texts(texts, metadatas, ids=ids)
        return out
