"""The framework adapters' hold on one vectorport store (``vectorport.langchain``,
``vectorport.llamaindex``).

An adapter is made from a store an application already opened (sync, or from
:func:`vectorport.aconnect`), or from a URL. A URL may name a collection that does not exist
yet: LangChain and LlamaIndex stores are made before the first text is embedded, so the
collection's dimension is known only at the first write. Until then the adapter reads as an
empty store and the first write creates the collection through :func:`vectorport.connect` (the
one way a URL is opened) with the embedding's dimension.

The adapters' async methods run on the awaitable store the application passed (from
:func:`vectorport.aconnect`: pgvector on psycopg's async pool), or else off the event loop. A
store the application passed in is its own to close.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from typing import Any

from ._async import AsyncStore
from ._features import Feature
from ._models import Metric
from ._protocol import VectorStore
from ._registry import connect, open_unbound
from ._url import mask_url
from .exceptions import ConfigurationError, NotFoundError, UnsupportedFeatureError
from .filters import parse_filter

__all__ = ["StoreHandle"]


class StoreHandle:
    """A bound store, or a URL whose collection the first write creates.

    Parameters
    ----------
    store
        A store returned by :func:`vectorport.connect` or :func:`vectorport.aconnect`, or what
        :func:`vectorport.connect` opens: a store URL, a SQLAlchemy ``Engine`` (with
        ``table=``), a mapped class (with ``bind=``).
    metric
        The metric of a collection created by the first write (default cosine); an existing
        collection is checked against it.
    dimension
        Create the collection now with this dimension when it is missing.
    options
        Backend options passed to :func:`vectorport.connect` with the URL.
    """

    def __init__(
        self,
        store: VectorStore | AsyncStore[Any] | str | Any,
        *,
        metric: str | Metric | None = None,
        dimension: int | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._metric = metric
        self._options = dict(options or {})
        self._async: AsyncStore[Any] | None = None
        self._checker: VectorStore | None = None
        if isinstance(store, AsyncStore):
            self._async = store
            store = store.sync
        if isinstance(store, VectorStore):
            if self._options or dimension is not None:
                raise ConfigurationError(
                    "dimension= and connection options apply to a URL, not to a store that is already open"
                )
            self._target: Any = None
            self.owned = False
            self._store: VectorStore | None = store
        elif store is None or isinstance(store, int | float | bytes):
            raise ConfigurationError(
                "expected a vectorport store or a store URL such as 'memory://docs', "
                f"got {type(store).__name__}"
            )
        else:
            # a URL, or what vectorport.connect takes from a SQLAlchemy app (an Engine, a
            # mapped class with bind=)
            self._target = store
            self.owned = True
            self._store = None
            self._open(dimension)

    @property
    def url(self) -> str:
        """The store's URL, passwords masked (what the adapter was given, until it connects)."""
        if self._store is not None:
            return self._store.url.masked
        return mask_url(self._target) if isinstance(self._target, str) else f"<{type(self._target).__name__}>"

    def _open(self, dimension: int | None) -> VectorStore | None:
        try:
            self._store = connect(self._target, dimension=dimension, metric=self._metric, **self._options)
        except NotFoundError:
            if dimension is not None:
                raise
            if self._checker is None:
                # the backend's own filter check, while there is no collection to search
                self._checker = open_unbound(self._target, **self._options)
            return None
        self._close_checker()
        return self._store

    def _close_checker(self) -> None:
        checker, self._checker = self._checker, None
        if checker is not None:
            checker.close()

    @property
    def current(self) -> VectorStore | None:
        """The store, or ``None`` while its collection does not exist (looked up again each time,
        so a collection another process created is found)."""
        if self._store is None:
            with self._lock:
                if self._store is None:
                    self._open(None)
        return self._store

    @property
    def metric(self) -> Metric:
        """The collection's metric (the one the first write will give it while it is missing)."""
        store = self.current
        return store.spec.metric if store is not None else Metric.parse(self._metric or Metric.COSINE)

    def for_write(self, dimension: int) -> VectorStore:
        """The store, its collection created with ``dimension`` when missing."""
        if self._store is None:
            with self._lock:
                if self._store is None:
                    self._open(dimension)
        assert self._store is not None
        return self._store

    def check_writable(self) -> None:
        """Raise before anything is embedded when the store cannot be written (no
        :attr:`~vectorport.Feature.WRITE`: a ``parquet://`` snapshot pinned by ``expect_digest``)."""
        store = self._store
        if store is not None and Feature.WRITE not in store.capabilities.features:
            raise UnsupportedFeatureError(
                f"{store.name} store {store.url.masked} is read-only; nothing was embedded or written "
                "(open it without what pins it, such as a snapshot's expect_digest, or write to "
                "another store)"
            )

    def compiles(self, operator: str) -> bool:
        """Whether the backend runs the filter ``operator`` (known before its collection exists;
        ``True`` when nothing tells)."""
        store = self._store if self._store is not None else self._checker
        return store is None or operator in store.capabilities.filter_operators

    def check_filter(self, filter: Any) -> None:
        """Raise before any I/O when ``filter`` is malformed or the backend cannot run it
        (:class:`~vectorport.exceptions.FilterError`,
        :class:`~vectorport.exceptions.UnsupportedFilterError`)."""
        if filter is None:
            return
        # a URL whose collection does not exist yet is checked by its backend all the same, so
        # a filter is refused whether or not anything was written
        store = self._store if self._store is not None else self._checker
        if store is not None:
            store.check_filter(filter)
        else:
            parse_filter(filter)

    # ----------------------------------------------------------------- async
    async def acurrent(self) -> AsyncStore[Any] | None:
        """:attr:`current`, awaitable (``None`` while the collection does not exist)."""
        store = self._store if self._store is not None else await asyncio.to_thread(lambda: self.current)
        return None if store is None else self._asynchronous(store)

    async def afor_write(self, dimension: int) -> AsyncStore[Any]:
        """:meth:`for_write`, awaitable."""
        store = self._store if self._store is not None else await asyncio.to_thread(self.for_write, dimension)
        return self._asynchronous(store)

    def _asynchronous(self, store: VectorStore) -> AsyncStore[Any]:
        if self._async is None:
            # A URL's store runs its async calls off the event loop: a driver's async pool
            # belongs to one event loop, and LlamaIndex runs nested loops of its own (asyncio.run
            # in a thread), which would strand it. The application that wants psycopg's async
            # pool passes the store from vectorport.aconnect, on its own loop.
            self._async = AsyncStore(store)
        return self._async

    async def aclose(self) -> None:
        """:meth:`close`, off the event loop."""
        await asyncio.to_thread(self.close)

    def close(self) -> None:
        """Close the store when this handle opened it from a URL."""
        self._close_checker()
        if self.owned and self._store is not None:
            self._store.close()
