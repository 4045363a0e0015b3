"""LlamaIndex's vector store interface over any vectorport store."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.schema import BaseNode, MetadataMode
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
    VectorStoreQueryResult,
)
from llama_index.core.vector_stores.utils import metadata_dict_to_node, node_to_metadata_dict

from .._async import AsyncStore
from .._exact import ExactIndex
from .._handle import StoreHandle
from .._models import Match, Metric, Record, score_from_distance
from .._protocol import VectorStore
from ..alias._embedding import EmbedsText
from ..conventions.llamaindex import DOC_ID_KEYS, from_node_metadata, to_node_metadata
from ..exceptions import ConfigurationError, NotFoundError, UnsupportedFeatureError
from ..filters import evaluate, parse_filter
from ._filters import to_portable

__all__ = ["LlamaIndexStore"]

_REF_DOC = DOC_ID_KEYS[0]
"""The metadata key a record keeps its node's source document id under (``ref_doc_id``): the
key LlamaIndex's own stores write beside the node, and the one vectorport's LlamaIndex layout
reads back."""


class LlamaIndexStore(BasePydanticVectorStore):
    """A LlamaIndex vector store over any vectorport store or URL (``stores_text=True``).

    A node's id is the record key, its text the record's text, its metadata the record's
    metadata, and its source document's id (``node.ref_doc_id``) the metadata key
    ``ref_doc_id``, as LlamaIndex's own stores keep it: ``delete(ref_doc_id)`` and
    ``filters`` on ``ref_doc_id`` work on every backend. Relationships and the node's other
    fields travel as vectorport's LlamaIndex convention carries them
    (:mod:`vectorport.conventions.llamaindex`), so a node reads back as it was written.
    ``MetadataFilters`` become vectorport's portable filter
    (:func:`vectorport.llamaindex.to_portable`); what has no portable form, or what the backend
    cannot run, raises before any I/O. Similarities are
    vectorport's scores (cosine: ``1 - distance`` = cos).

    Parameters
    ----------
    store
        A store URL or a store from :func:`vectorport.connect`. A URL may name a missing
        collection: the first ``add`` creates it with the nodes' embedding dimension.
    metric, dimension, options
        As for :class:`vectorport.langchain.LangChainStore`.

    Examples
    --------
    >>> from llama_index.core.schema import TextNode
    >>> from llama_index.core.vector_stores import VectorStoreQuery
    >>> li = LlamaIndexStore("memory://doctest-llamaindex")
    >>> li.add([TextNode(id_="a", text="hi", embedding=[1.0, 0.0], metadata={"lang": "en"})])
    ['a']
    >>> li.query(VectorStoreQuery(query_embedding=[1.0, 0.1], similarity_top_k=1)).ids
    ['a']
    >>> li.client.drop()
    """

    stores_text: bool = True
    flat_metadata: bool = False
    _handle: StoreHandle = PrivateAttr()

    def __init__(
        self,
        store: VectorStore | AsyncStore[Any] | str | Any,
        *,
        metric: str | Metric | None = None,
        dimension: int | None = None,
        **options: Any,
    ) -> None:
        super().__init__(stores_text=True)
        self._handle = StoreHandle(store, metric=metric, dimension=dimension, options=options)

    @classmethod
    def class_name(cls) -> str:
        return "LlamaIndexStore"

    @property
    def client(self) -> VectorStore:
        """The vectorport store underneath (``NotFoundError`` until the first write created it)."""
        store = self._handle.current
        if store is None:
            raise NotFoundError(f"{self._handle.url}: the collection does not exist until the first add")
        return store

    def close(self) -> None:
        """Close the vectorport store when this object opened it from a URL."""
        self._handle.close()

    async def aclose(self) -> None:
        """:meth:`close`, awaitable: also closes the async connections (pgvector's pool)."""
        await self._handle.aclose()

    # ----------------------------------------------------------------- writes
    def add(self, nodes: Sequence[BaseNode], **add_kwargs: Any) -> list[str]:
        """Upsert the nodes (by node id, full replace); each needs its embedding."""
        records = [_record(node) for node in nodes]
        store = self._handle.current
        if records and isinstance(store, EmbedsText) and store.text_model:
            store.add_texts(
                [r.key for r in records], [r.text or "" for r in records], [r.metadata for r in records]
            )
        elif records:
            self._handle.for_write(_dimension(records)).upsert(records)
        return [r.key for r in records]

    async def async_add(self, nodes: Sequence[BaseNode], **add_kwargs: Any) -> list[str]:
        """:meth:`add`, awaitable."""
        records = [_record(node) for node in nodes]
        if records:
            await (await self._handle.afor_write(_dimension(records))).aupsert(records)
        return [r.key for r in records]

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Delete every node of the source document ``ref_doc_id``."""
        self.delete_nodes(filters=None, _source=ref_doc_id)

    async def adelete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """:meth:`delete`, awaitable."""
        await self.adelete_nodes(filters=None, _source=ref_doc_id)

    def delete_nodes(
        self,
        node_ids: list[str] | None = None,
        filters: MetadataFilters | None = None,
        **delete_kwargs: Any,
    ) -> None:
        """Delete the nodes with these ids and/or matching ``filters``."""
        flt = self._delete_filter(node_ids, filters, delete_kwargs)
        store = self._handle.current
        if store is None:
            return
        if node_ids is not None and flt is not None:
            node_ids = _matching(store.get(node_ids, include=["metadata"]), flt)
        store.delete(node_ids, filter=flt if node_ids is None else None)

    async def adelete_nodes(
        self,
        node_ids: list[str] | None = None,
        filters: MetadataFilters | None = None,
        **delete_kwargs: Any,
    ) -> None:
        """:meth:`delete_nodes`, awaitable."""
        flt = self._delete_filter(node_ids, filters, delete_kwargs)
        store = await self._handle.acurrent()
        if store is None:
            return
        if node_ids is not None and flt is not None:
            node_ids = _matching(await store.aget(node_ids, include=["metadata"]), flt)
        await store.adelete(node_ids, filter=flt if node_ids is None else None)

    def _delete_filter(
        self, node_ids: list[str] | None, filters: MetadataFilters | None, kwargs: dict[str, Any]
    ) -> dict[str, Any] | None:
        source = kwargs.pop("_source", None)
        flt = {_REF_DOC: {"$eq": source}} if source is not None else self._portable(filters)
        if node_ids is None and flt is None:
            raise ConfigurationError("delete_nodes() needs node_ids or filters; clear() deletes everything")
        self._handle.check_filter(flt)
        return flt

    def _portable(self, filters: MetadataFilters | None) -> dict[str, Any] | None:
        """``filters`` as a portable filter: EQ/NE/IN/NIN on whole values where the backend can
        tell a list from a scalar; else as LlamaIndex's own store for that service sends them."""
        return to_portable(filters, whole_values=self._handle.compiles("$is"))

    def clear(self) -> None:
        """Delete every node, keeping the (empty) collection."""
        store = self._handle.current
        if store is not None:
            store.delete_all()

    async def aclear(self) -> None:
        """:meth:`clear`, off the event loop."""
        await asyncio.to_thread(self.clear)

    # ----------------------------------------------------------------- reads
    def get_nodes(
        self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None
    ) -> list[BaseNode]:
        """The nodes with these ids (in that order) and/or matching ``filters``."""
        flt = self._portable(filters)
        self._handle.check_filter(flt)
        store = self._handle.current
        if store is None:
            return []
        if node_ids is not None:
            records = store.get(node_ids, include=_READ)
        else:
            records = [r for page in store.scan(include=_READ) for r in page]
        return _nodes(records, flt)

    async def aget_nodes(
        self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None
    ) -> list[BaseNode]:
        """:meth:`get_nodes`, awaitable."""
        flt = self._portable(filters)
        self._handle.check_filter(flt)
        store = await self._handle.acurrent()
        if store is None:
            return []
        if node_ids is not None:
            records = await store.aget(node_ids, include=_READ)
        else:
            records = [r async for page in store.ascan(include=_READ) for r in page]
        return _nodes(records, flt)

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """The ``similarity_top_k`` nodes nearest to ``query.query_embedding`` among those
        matching ``query.filters`` (and ``query.doc_ids``, and ``query.node_ids`` when given)."""
        vector, flt = _query_filter(query, self._portable(query.filters))
        self._handle.check_filter(flt)
        store = self._handle.current
        if store is None:
            return _result([])
        k = query.similarity_top_k
        if query.node_ids:
            among = store.get(query.node_ids, include=["vector", *_READ])
            return _result(_rank(among, store.spec.metric, vector, k, flt))
        if query.query_str and isinstance(store, EmbedsText) and store.text_model:
            return _result(store.query_text(query.query_str, k, filter=flt))
        return _result(store.query(vector, k, filter=flt))

    async def aquery(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """:meth:`query`, awaitable."""
        vector, flt = _query_filter(query, self._portable(query.filters))
        self._handle.check_filter(flt)
        store = await self._handle.acurrent()
        if store is None:
            return _result([])
        k = query.similarity_top_k
        if query.node_ids:
            among = await store.aget(query.node_ids, include=["vector", *_READ])
            return _result(_rank(among, store.spec.metric, vector, k, flt))
        return _result(await store.aquery(vector, k, filter=flt))


_READ = ("metadata", "text")


def _query_filter(
    query: VectorStoreQuery, flt: dict[str, Any] | None
) -> tuple[list[float], dict[str, Any] | None]:
    """The query vector and portable filter (``flt``: its ``filters``, translated) of a query,
    after refusing what this store does not do."""
    if query.mode != VectorStoreQueryMode.DEFAULT:
        raise UnsupportedFeatureError(
            f"LlamaIndexStore runs dense (DEFAULT) queries, not {query.mode.value!r}; "
            "use the default query mode"
        )
    if query.query_embedding is None:
        raise ConfigurationError("the query has no query_embedding; LlamaIndexStore searches by vector")
    if query.doc_ids:
        docs = {_REF_DOC: {"$in": list(query.doc_ids)}}
        flt = docs if flt is None else {"$and": [flt, docs]}
    return query.query_embedding, flt


def _rank(
    records: Sequence[Record], metric: Metric, vector: list[float], k: int, flt: dict[str, Any] | None
) -> list[Match]:
    """Exact search among ``records`` (a query restricted to ``node_ids``, as a retriever over a
    list of nodes asks), by the exact search the memory store uses."""
    if not records:
        return []
    keys, distances, _ = ExactIndex.from_records(metric, records).top_k(vector, k, parse_filter(flt))
    by_key = {r.key: r for r in records}
    return [
        Match(key, float(d), score_from_distance(metric, float(d)), by_key[key].metadata, by_key[key].text)
        for key, d in zip(keys, distances, strict=True)
    ]


def _result(matches: Sequence[Match]) -> VectorStoreQueryResult:
    return VectorStoreQueryResult(
        nodes=[_node(m.key, m.text, m.metadata or {}) for m in matches],
        similarities=[m.score for m in matches],
        ids=[m.key for m in matches],
    )


def _matching(records: Sequence[Record], flt: dict[str, Any]) -> list[str]:
    where = parse_filter(flt)
    return [r.key for r in records if evaluate(where, r.metadata)]


def _nodes(records: Sequence[Record], flt: dict[str, Any] | None) -> list[BaseNode]:
    where = parse_filter(flt)
    return [_node(r.key, r.text, r.metadata) for r in records if evaluate(where, r.metadata)]


def _dimension(records: Sequence[Record]) -> int:
    assert records[0].vector is not None
    return len(records[0].vector)


def _record(node: BaseNode) -> Record:
    """The record of a node, by vectorport's LlamaIndex convention: LlamaIndex's own
    ``node_to_metadata_dict`` read back by :func:`~vectorport.conventions.llamaindex.from_node_metadata`
    (the source document as ``ref_doc_id``; relationships and other node fields, when there are
    any, under ``_llamaindex_node``)."""
    embedding = node.embedding
    if embedding is None:
        raise ConfigurationError(
            f"node {node.node_id!r} has no embedding; embed nodes before adding them "
            "(VectorStoreIndex does this with its embed_model)"
        )
    _, metadata = from_node_metadata(node_to_metadata_dict(node, remove_text=True, flat_metadata=False))
    return Record(node.node_id, embedding, metadata, node.get_content(metadata_mode=MetadataMode.NONE))


def _node(key: str, text: str | None, metadata: dict[str, Any]) -> BaseNode:
    """The node of a record: the convention's node metadata, read by LlamaIndex's own
    ``metadata_dict_to_node``."""
    return metadata_dict_to_node(to_node_metadata(key, text, metadata, text_in_node=True), text=text or "")
