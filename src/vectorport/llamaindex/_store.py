"""LlamaIndex's vector store interface over any vectorport store."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.schema import BaseNode, MetadataMode, NodeRelationship, RelatedNodeInfo, TextNode
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
    VectorStoreQueryResult,
)

from .._base import BaseStore
from .._exact import ExactIndex
from .._handle import StoreHandle
from .._models import Match, Metric, Record, score_from_distance
from .._protocol import VectorStore
from ..conventions.llamaindex import DOC_ID_KEYS
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
    ``filters`` on ``ref_doc_id`` work on every backend. ``MetadataFilters`` become
    vectorport's portable filter (:func:`vectorport.llamaindex.to_portable`); what has no
    portable form, or what the backend cannot run, raises before any I/O. Similarities are
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
        store: VectorStore | str,
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

    # ----------------------------------------------------------------- writes
    def add(self, nodes: Sequence[BaseNode], **add_kwargs: Any) -> list[str]:
        """Upsert the nodes (by node id, full replace); each needs its embedding."""
        if not nodes:
            return []
        records = [_record(node) for node in nodes]
        store = self._handle.for_write(len(records[0].vector))  # type: ignore[arg-type]
        store.upsert(records)
        return [r.key for r in records]

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Delete every node of the source document ``ref_doc_id``."""
        self._delete(None, {_REF_DOC: {"$eq": ref_doc_id}})

    def delete_nodes(
        self,
        node_ids: list[str] | None = None,
        filters: MetadataFilters | None = None,
        **delete_kwargs: Any,
    ) -> None:
        """Delete the nodes with these ids and/or matching ``filters``."""
        flt = to_portable(filters)
        if node_ids is None and flt is None:
            raise ConfigurationError("delete_nodes() needs node_ids or filters; clear() deletes everything")
        self._delete(node_ids, flt)

    def _delete(self, node_ids: list[str] | None, flt: dict[str, Any] | None) -> None:
        self._handle.check_filter(flt)
        store = self._handle.current
        if store is None:
            return
        if node_ids is None:
            store.delete(filter=flt)
        elif flt is None:
            store.delete(node_ids)
        else:
            where = parse_filter(flt)
            doomed = [r.key for r in store.get(node_ids, include=["metadata"]) if evaluate(where, r.metadata)]
            store.delete(doomed)

    def clear(self) -> None:
        """Delete every node, keeping the (empty) collection."""
        store = self._handle.current
        if isinstance(store, BaseStore):
            store.delete_all()
        elif store is not None:
            store.delete([r.key for page in store.scan(include=[]) for r in page])

    # ----------------------------------------------------------------- reads
    def get_nodes(
        self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None
    ) -> list[BaseNode]:
        """The nodes with these ids (in that order) and/or matching ``filters``."""
        flt = to_portable(filters)
        self._handle.check_filter(flt)
        store = self._handle.current
        if store is None:
            return []
        where = parse_filter(flt)
        if node_ids is not None:
            records = store.get(node_ids, include=["metadata", "text"])
        else:
            records = [r for page in store.scan(include=["metadata", "text"]) for r in page]
        return [_node(r.key, r.text, r.metadata) for r in records if evaluate(where, r.metadata)]

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """The ``similarity_top_k`` nodes nearest to ``query.query_embedding`` among those
        matching ``query.filters`` (and ``query.doc_ids``, and ``query.node_ids`` when given)."""
        flt = _query_filter(query)
        self._handle.check_filter(flt)
        store = self._handle.current
        if store is None:
            return VectorStoreQueryResult(nodes=[], similarities=[], ids=[])
        assert query.query_embedding is not None
        if query.node_ids:
            matches = _among(store, query.node_ids, query.query_embedding, query.similarity_top_k, flt)
        else:
            matches = list(store.query(query.query_embedding, query.similarity_top_k, filter=flt))
        return VectorStoreQueryResult(
            nodes=[_node(m.key, m.text, m.metadata or {}) for m in matches],
            similarities=[m.score for m in matches],
            ids=[m.key for m in matches],
        )

    # ----------------------------------------------------------------- async: off the event loop
    async def async_add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[str]:
        return await asyncio.to_thread(self.add, nodes, **kwargs)

    async def adelete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        await asyncio.to_thread(self.delete, ref_doc_id, **delete_kwargs)

    async def adelete_nodes(
        self,
        node_ids: list[str] | None = None,
        filters: MetadataFilters | None = None,
        **delete_kwargs: Any,
    ) -> None:
        await asyncio.to_thread(self.delete_nodes, node_ids, filters, **delete_kwargs)

    async def aclear(self) -> None:
        await asyncio.to_thread(self.clear)

    async def aget_nodes(
        self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None
    ) -> list[BaseNode]:
        return await asyncio.to_thread(self.get_nodes, node_ids, filters)

    async def aquery(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        return await asyncio.to_thread(self.query, query, **kwargs)


def _query_filter(query: VectorStoreQuery) -> dict[str, Any] | None:
    """The portable filter of a query, after refusing what this store does not do."""
    if query.mode != VectorStoreQueryMode.DEFAULT:
        raise UnsupportedFeatureError(
            f"LlamaIndexStore runs dense (DEFAULT) queries, not {query.mode.value!r}; "
            "use the default query mode"
        )
    if query.query_embedding is None:
        raise ConfigurationError("the query has no query_embedding; LlamaIndexStore searches by vector")
    flt = to_portable(query.filters)
    if query.doc_ids:
        docs = {_REF_DOC: {"$in": list(query.doc_ids)}}
        flt = docs if flt is None else {"$and": [flt, docs]}
    return flt


def _among(
    store: VectorStore, node_ids: list[str], vector: list[float], k: int, flt: dict[str, Any] | None
) -> list[Match]:
    """Exact search restricted to ``node_ids`` (what a retriever over a list of nodes asks):
    those records are read by key and ranked by the exact search the memory store uses."""
    records = store.get(node_ids, include=["vector", "metadata", "text"])
    if not records:
        return []
    metric = store.spec.metric
    index = ExactIndex.from_records(metric, records)
    keys, distances, _ = index.top_k(vector, k, parse_filter(flt))
    by_key = {r.key: r for r in records}
    return [
        Match(key, float(d), score_from_distance(metric, float(d)), by_key[key].metadata, by_key[key].text)
        for key, d in zip(keys, distances, strict=True)
    ]


def _record(node: BaseNode) -> Record:
    embedding = node.embedding
    if embedding is None:
        raise ConfigurationError(
            f"node {node.node_id!r} has no embedding; embed nodes before adding them "
            "(VectorStoreIndex does this with its embed_model)"
        )
    metadata = dict(node.metadata)
    if node.ref_doc_id is not None:
        metadata[_REF_DOC] = node.ref_doc_id
    return Record(node.node_id, embedding, metadata, node.get_content(metadata_mode=MetadataMode.NONE))


def _node(key: str, text: str | None, metadata: dict[str, Any]) -> TextNode:
    meta = dict(metadata)
    source = meta.pop(_REF_DOC, None)
    relationships = {}
    if isinstance(source, str):
        relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=source)
    return TextNode(id_=key, text=text or "", metadata=meta, relationships=relationships)
