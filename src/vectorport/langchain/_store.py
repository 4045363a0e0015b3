"""LangChain's ``VectorStore`` over any vectorport store."""

from __future__ import annotations

import asyncio
import math
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Self

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore as LangChainVectorStore
from langchain_core.vectorstores.utils import maximal_marginal_relevance

from .._async import AsyncStore
from .._handle import StoreHandle
from .._models import Match, Metric, Record, score_from_distance
from .._protocol import VectorStore
from ..exceptions import ConfigurationError, NotFoundError, Problem, ValidationError

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


class LangChainStore(LangChainVectorStore):
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

    async def aclose(self) -> None:
        """:meth:`close`, awaitable: also closes the async connections (pgvector's pool)."""
        await self._handle.aclose()

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
        batch = _Batch.of(texts, metadatas, ids)
        if not batch.texts:
            return []
        vectors = _embedded(self._embedding, "embed_documents", self._embedding.embed_documents(batch.texts))
        self._handle.for_write(len(vectors[0])).upsert(batch.records(vectors))
        return batch.keys

    async def aadd_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """:meth:`add_texts`, awaitable."""
        self._handle.check_writable()
        batch = _Batch.of(texts, metadatas, ids)
        if not batch.texts:
            return []
        rows = await self._embedding.aembed_documents(batch.texts)
        vectors = _embedded(self._embedding, "aembed_documents", rows)
        store = await self._handle.afor_write(len(vectors[0]))
        await store.aupsert(batch.records(vectors))
        return batch.keys

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        """Delete by ids, or every document matching ``filter=`` (missing ids are no error)."""
        flt = self._delete_filter(ids, kwargs)
        store = self._handle.current
        if store is not None:
            store.delete(ids, filter=flt)
        return True

    async def adelete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        """:meth:`delete`, awaitable."""
        flt = self._delete_filter(ids, kwargs)
        store = await self._handle.acurrent()
        if store is not None:
            await store.adelete(ids, filter=flt)
        return True

    def _delete_filter(self, ids: list[str] | None, kwargs: dict[str, Any]) -> Any:
        flt = kwargs.pop("filter", None)
        if kwargs:
            raise ConfigurationError(f"delete() takes ids or filter=, not {', '.join(sorted(kwargs))}")
        if (ids is None) == (flt is None):
            raise ConfigurationError("delete() takes either ids or filter=, not both or neither")
        self._handle.check_filter(flt)
        return flt

    # ----------------------------------------------------------------- reads
    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """The documents with these ids, in the order asked; missing ids are skipped."""
        store = self._handle.current
        if store is None or not ids:
            return []
        return [_document(r.key, r.text, r.metadata) for r in store.get(ids, include=_READ)]

    async def aget_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """:meth:`get_by_ids`, awaitable."""
        store = await self._handle.acurrent()
        if store is None or not ids:
            return []
        return [_document(r.key, r.text, r.metadata) for r in await store.aget(ids, include=_READ)]

    def similarity_search(self, query: str, k: int = 4, filter: Any = None, **kwargs: Any) -> list[Document]:
        """The ``k`` documents nearest to ``query`` among those matching ``filter``."""
        return [doc for doc, _ in self.similarity_search_with_score(query, k, filter=filter, **kwargs)]

    async def asimilarity_search(
        self, query: str, k: int = 4, filter: Any = None, **kwargs: Any
    ) -> list[Document]:
        """:meth:`similarity_search`, awaitable."""
        pairs = await self.asimilarity_search_with_score(query, k, filter=filter, **kwargs)
        return [doc for doc, _ in pairs]

    def similarity_search_with_score(
        self, query: str, k: int = 4, filter: Any = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """Documents and their canonical distance to ``query`` (lower is nearer)."""
        self._handle.check_filter(filter)
        vector = _embedded(self._embedding, "embed_query", [self._embedding.embed_query(query)])[0]
        return self.similarity_search_with_score_by_vector(vector, k, filter=filter, **kwargs)

    async def asimilarity_search_with_score(
        self, query: str, k: int = 4, filter: Any = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """:meth:`similarity_search_with_score`, awaitable."""
        self._handle.check_filter(filter)
        vector = _embedded(self._embedding, "aembed_query", [await self._embedding.aembed_query(query)])[0]
        return await self.asimilarity_search_with_score_by_vector(vector, k, filter=filter, **kwargs)

    def similarity_search_by_vector(
        self, embedding: list[float], k: int = 4, filter: Any = None, **kwargs: Any
    ) -> list[Document]:
        """The ``k`` documents nearest to ``embedding`` among those matching ``filter``."""
        pairs = self.similarity_search_with_score_by_vector(embedding, k, filter=filter, **kwargs)
        return [doc for doc, _ in pairs]

    async def asimilarity_search_by_vector(
        self, embedding: list[float], k: int = 4, filter: Any = None, **kwargs: Any
    ) -> list[Document]:
        """:meth:`similarity_search_by_vector`, awaitable."""
        pairs = await self.asimilarity_search_with_score_by_vector(embedding, k, filter=filter, **kwargs)
        return [doc for doc, _ in pairs]

    def similarity_search_with_score_by_vector(
        self, embedding: list[float], k: int = 4, filter: Any = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """Documents and their canonical distance to ``embedding`` (lower is nearer)."""
        search = _Search.of(embedding, k, filter, kwargs, self._handle, vectors=False)
        store = self._handle.current
        return [] if store is None else search.pairs(store.query(**search.arguments))

    async def asimilarity_search_with_score_by_vector(
        self, embedding: list[float], k: int = 4, filter: Any = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """:meth:`similarity_search_with_score_by_vector`, awaitable."""
        search = _Search.of(embedding, k, filter, kwargs, self._handle, vectors=False)
        store = await self._handle.acurrent()
        return [] if store is None else search.pairs(await store.aquery(**search.arguments))

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
        vector = _embedded(self._embedding, "embed_query", [self._embedding.embed_query(query)])[0]
        return self.max_marginal_relevance_search_by_vector(
            vector, k, fetch_k, lambda_mult, filter=filter, **kwargs
        )

    async def amax_marginal_relevance_search(
        self,
        query: str,
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        filter: Any = None,
        **kwargs: Any,
    ) -> list[Document]:
        """:meth:`max_marginal_relevance_search`, awaitable."""
        self._handle.check_filter(filter)
        vector = _embedded(self._embedding, "aembed_query", [await self._embedding.aembed_query(query)])[0]
        return await self.amax_marginal_relevance_search_by_vector(
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
        search = _Search.of(embedding, max(k, fetch_k), filter, kwargs, self._handle, vectors=True)
        store = self._handle.current
        return [] if store is None else search.diverse(store.query(**search.arguments), k, lambda_mult)

    async def amax_marginal_relevance_search_by_vector(
        self,
        embedding: list[float],
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        filter: Any = None,
        **kwargs: Any,
    ) -> list[Document]:
        """:meth:`max_marginal_relevance_search_by_vector`, awaitable."""
        search = _Search.of(embedding, max(k, fetch_k), filter, kwargs, self._handle, vectors=True)
        store = await self._handle.acurrent()
        if store is None:
            return []
        return search.diverse(await store.aquery(**search.arguments), k, lambda_mult)

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
        out = cls(_target(kwargs, "from_texts"), embedding, **kwargs)
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
        target = _target(kwargs, "afrom_texts")
        out = await asyncio.to_thread(lambda: cls(target, embedding, **kwargs))
        await out.aadd_texts(texts, metadatas, ids=ids)
        return out


def _target(kwargs: dict[str, Any], method: str) -> Any:
    """The ``store=`` a constructor method was given (taken out of ``kwargs``)."""
    if "store" not in kwargs:
        raise ConfigurationError(
            f"{method} needs store= (a vectorport URL such as 'memory://docs', or a store)"
        )
    return kwargs.pop("store")


_READ = ("metadata", "text")


@dataclass(frozen=True)
class _Batch:
    """Texts to write, with their keys and metadata, checked before anything is embedded."""

    texts: list[str]
    metadatas: list[dict[str, Any]]
    keys: list[str]

    @classmethod
    def of(
        cls, texts: Iterable[str], metadatas: list[dict[str, Any]] | None, ids: Sequence[str | None] | None
    ) -> _Batch:
        if isinstance(texts, str | bytes):
            # iterated, one string is one document per character
            raise ConfigurationError(
                f"add_texts takes a list of texts, not one {type(texts).__name__}: add_texts([text], …)"
            )
        listed = list(texts)
        metas = [dict(m or {}) for m in metadatas] if metadatas is not None else [{} for _ in listed]
        if len(metas) != len(listed):
            raise ConfigurationError(f"got {len(listed)} texts but {len(metas)} metadatas")
        batch = cls(listed, metas, _keys(ids, len(listed)))
        problems = [
            Problem(
                key, "text", f"is {type(text).__name__}, not a string: a LangChain document's page_content"
            )
            for key, text in zip(batch.keys, listed, strict=True)
            if not isinstance(text, str)
        ]
        if problems:
            raise ValidationError(
                problems[:20], backend="langchain", outcome="nothing was embedded or written"
            )
        return batch

    def records(self, vectors: Sequence[Sequence[float]]) -> list[Record]:
        if len(vectors) != len(self.texts):
            raise ConfigurationError(
                f"the embedding function returned {len(vectors)} vectors for {len(self.texts)} texts"
            )
        rows = zip(self.keys, vectors, self.metadatas, self.texts, strict=True)
        return [Record(key, vector, meta, text) for key, vector, meta, text in rows]


@dataclass(frozen=True)
class _Search:
    """One search's arguments for the store, checked (filter included) before any I/O."""

    arguments: dict[str, Any]

    @classmethod
    def of(
        cls,
        vector: Sequence[float],
        k: int,
        filter: Any,
        options: Mapping[str, Any],
        handle: StoreHandle,
        *,
        vectors: bool,
    ) -> _Search:
        unknown = sorted(set(options) - {"params"})
        if unknown:
            raise ConfigurationError(f"unknown search options: {', '.join(unknown)} (known: filter, params)")
        handle.check_filter(filter)
        include = [*_READ, "vector"] if vectors else list(_READ)
        params = options.get("params")
        return cls({"vector": vector, "k": k, "filter": filter, "include": include, "params": params})

    @staticmethod
    def pairs(matches: Sequence[Match]) -> list[tuple[Document, float]]:
        return [(_document(m.key, m.text, m.metadata or {}), m.distance) for m in matches]

    def diverse(self, matches: Sequence[Match], k: int, lambda_mult: float) -> list[Document]:
        if not matches:
            return []
        picked = maximal_marginal_relevance(
            np.asarray(self.arguments["vector"], dtype=np.float32),
            [[float(x) for x in np.asarray(m.vector)] for m in matches],
            lambda_mult=lambda_mult,
            k=k,
        )
        return [_document(matches[i].key, matches[i].text, matches[i].metadata or {}) for i in picked]


def _embedded(embedding: Embeddings, method: str, rows: Any) -> list[list[float]]:
    """``rows`` the embedding function returned, checked: one row of numbers per text (a
    ``None`` once reached the store as a raw ``TypeError``)."""
    where = f"the embedding function {type(embedding).__name__}.{method}"
    if not isinstance(rows, Sequence) or isinstance(rows, str):
        raise ConfigurationError(f"{where} returned {type(rows).__name__}, not a list of vectors")
    if not rows:
        raise ConfigurationError(f"{where} returned no vectors")
    for i, row in enumerate(rows):
        if not isinstance(row, Sequence | np.ndarray) or isinstance(row, str) or not len(row):
            raise ConfigurationError(f"{where} returned {type(row).__name__} for text {i}, not a vector")
    return list(rows)


def _keys(ids: Sequence[str | None] | None, n: int) -> list[str]:
    if ids is None:
        return [str(uuid.uuid4()) for _ in range(n)]
    if len(ids) != n:
        raise ConfigurationError(f"got {n} texts but {len(ids)} ids")
    return [str(uuid.uuid4()) if i is None else i for i in ids]


def _document(key: str, text: str | None, metadata: Mapping[str, Any]) -> Document:
    return Document(id=key, page_content=text or "", metadata=dict(metadata))
