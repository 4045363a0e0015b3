"""The awaitable half of :class:`~vectorport.langchain.LangChainStore`: each LangChain ``a…``
method on the store's own async connections (pgvector's pool) when it came from
:func:`vectorport.aconnect`, instead of LangChain's default of the sync method in a thread."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from .._handle import StoreHandle
from ._documents import READ, Batch, Search, delete_filter, document, embedded

__all__ = ["AwaitableMethods"]


class AwaitableMethods:
    """LangChain's awaitable store methods over a :class:`StoreHandle`; mixed into
    :class:`~vectorport.langchain.LangChainStore` before LangChain's base class."""

    _embedding: Embeddings
    _handle: StoreHandle

    async def aclose(self) -> None:
        """:meth:`close`, awaitable: also closes the async connections (pgvector's pool)."""
        await self._handle.aclose()

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
        batch = Batch.of(texts, metadatas, ids)
        if not batch.texts:
            return []
        vectors = embedded(
            self._embedding, "aembed_documents", await self._embedding.aembed_documents(batch.texts)
        )
        store = await self._handle.afor_write(len(vectors[0]))
        await store.aupsert(batch.records(vectors))
        return batch.keys

    async def adelete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        """:meth:`delete`, awaitable."""
        flt = delete_filter(ids, kwargs, self._handle)
        store = await self._handle.acurrent()
        if store is not None:
            await store.adelete(ids, filter=flt)
        return True

    async def aget_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """:meth:`get_by_ids`, awaitable."""
        store = await self._handle.acurrent()
        if store is None or not ids:
            return []
        return [document(r.key, r.text, r.metadata) for r in await store.aget(ids, include=READ)]

    async def asimilarity_search(
        self, query: str, k: int = 4, filter: Any = None, **kwargs: Any
    ) -> list[Document]:
        """:meth:`similarity_search`, awaitable."""
        pairs = await self.asimilarity_search_with_score(query, k, filter=filter, **kwargs)
        return [doc for doc, _ in pairs]

    async def asimilarity_search_with_score(
        self, query: str, k: int = 4, filter: Any = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """:meth:`similarity_search_with_score`, awaitable."""
        self._handle.check_filter(filter)
        vector = embedded(self._embedding, "aembed_query", [await self._embedding.aembed_query(query)])[0]
        return await self.asimilarity_search_with_score_by_vector(vector, k, filter=filter, **kwargs)

    async def asimilarity_search_by_vector(
        self, embedding: list[float], k: int = 4, filter: Any = None, **kwargs: Any
    ) -> list[Document]:
        """:meth:`similarity_search_by_vector`, awaitable."""
        pairs = await self.asimilarity_search_with_score_by_vector(embedding, k, filter=filter, **kwargs)
        return [doc for doc, _ in pairs]

    async def asimilarity_search_with_score_by_vector(
        self, embedding: list[float], k: int = 4, filter: Any = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """:meth:`similarity_search_with_score_by_vector`, awaitable."""
        search = Search.of(embedding, k, filter, kwargs, self._handle, vectors=False)
        store = await self._handle.acurrent()
        return [] if store is None else search.pairs(await store.aquery(**search.arguments))

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
        vector = embedded(self._embedding, "aembed_query", [await self._embedding.aembed_query(query)])[0]
        return await self.amax_marginal_relevance_search_by_vector(
            vector, k, fetch_k, lambda_mult, filter=filter, **kwargs
        )

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
        search = Search.of(embedding, max(k, fetch_k), filter, kwargs, self._handle, vectors=True)
        store = await self._handle.acurrent()
        if store is None:
            return []
        return search.diverse(await store.aquery(**search.arguments), k, lambda_mult)
