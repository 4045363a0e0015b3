"""The protocol with awaitable methods: :class:`AsyncStore`, what :func:`vectorport.aconnect`
returns.

One wrapper serves every backend: each call of the bound (sync) store runs off the event loop
(:func:`asyncio.to_thread`), so a slow backend never blocks the loop. A backend with an async
driver subclasses it and runs its hot paths natively (pgvector: psycopg's async connections
from a pool, no thread per call), reusing the sync store's statements and decoding.

>>> import asyncio, vectorport
>>> async def main():
...     async with await vectorport.aconnect("memory://doctest-async", dimension=2) as store:
...         await store.aupsert([vectorport.Record("a", [1.0, 0.0])])
...         found = await store.aquery([1.0, 0.0], k=1)
...         await store.adrop()
...         return found.keys
>>> asyncio.run(main())
['a']
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any, Generic, ParamSpec, Self, TypeVar

from ._capabilities import Capabilities
from ._models import CollectionSpec, QueryResult, Record, ScanPage
from ._protocol import FilterLike, VectorStore
from ._url import StoreURL
from .exceptions import UnsupportedFeatureError

__all__ = ["AsyncStore", "calling_loop", "off_loop"]

S = TypeVar("S", bound=VectorStore)
P = ParamSpec("P")
R = TypeVar("R")

_CALLER: contextvars.ContextVar[asyncio.AbstractEventLoop | None] = contextvars.ContextVar(
    "vectorport_calling_loop", default=None
)


async def off_loop(fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
    """``fn(*args, **kwargs)`` in a worker thread, as :func:`asyncio.to_thread` runs it (the
    caller's context variables included), and telling it the event loop that awaits it
    (:func:`calling_loop`): sync code lent an ``AsyncEngine``'s connection borrows it there."""
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    context.run(_CALLER.set, loop)
    return await loop.run_in_executor(None, partial(context.run, fn, *args, **kwargs))


def calling_loop() -> asyncio.AbstractEventLoop | None:
    """The running event loop awaiting this thread's work (:func:`off_loop`), or ``None``: a
    plain sync call, or one made on the loop's own thread (which must not wait on the loop)."""
    loop = _CALLER.get()
    if loop is None or loop.is_closed() or not loop.is_running():
        return None
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        return loop
    return None if running is loop else loop


class AsyncStore(Generic[S]):
    """A bound store whose methods are awaitable: ``aupsert``, ``aget``, ``adelete``,
    ``aquery``, ``atext_query`` and ``ahybrid_query`` (stores with text search), ``acount``,
    ``ascan`` (an async iterator of pages), ``adrop``,
    ``alist_collections``, ``ainfo`` and ``aclose`` (also ``async with``). The sync store it
    wraps is :attr:`sync`; the arguments and results are those of its methods."""

    def __init__(self, store: S) -> None:
        self.sync: S = store

    async def _off_loop(self, fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
        """Where a sync call runs: a worker thread (:func:`asyncio.to_thread`). A backend whose
        sync code borrows connections on the event loop that awaits it (pgvector on an
        ``AsyncEngine``) runs it with :func:`off_loop` instead; a wrapper made elsewhere (the
        framework adapters' handles, which LlamaIndex may await on a loop of its own) does not."""
        return await asyncio.to_thread(fn, *args, **kwargs)

    @property
    def name(self) -> str:
        return self.sync.name

    @property
    def capabilities(self) -> Capabilities:
        return self.sync.capabilities

    @property
    def url(self) -> StoreURL:
        return self.sync.url

    @property
    def collection(self) -> str:
        return self.sync.collection

    @property
    def spec(self) -> CollectionSpec:
        return self.sync.spec

    async def aupsert(self, records: Iterable[Record], *, batch_size: int | None = None) -> int:
        return await self._off_loop(self.sync.upsert, list(records), batch_size=batch_size)

    async def aget(self, keys: Iterable[str], *, include: Iterable[str] | None = None) -> list[Record]:
        return await self._off_loop(self.sync.get, list(keys), include=include)

    async def adelete(self, keys: Iterable[str] | None = None, *, filter: FilterLike = None) -> int:
        listed = None if keys is None else list(keys)
        return await self._off_loop(self.sync.delete, listed, filter=filter)

    async def aquery(
        self,
        vector: Sequence[float] | Any,
        k: int = 10,
        *,
        filter: FilterLike = None,
        include: Iterable[str] | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> QueryResult:
        return await self._off_loop(self.sync.query, vector, k, filter=filter, include=include, params=params)

    async def acount(self) -> int:
        return await self._off_loop(self.sync.count)

    async def atext_query(
        self,
        text: str,
        k: int = 10,
        *,
        filter: FilterLike = None,
        include: Iterable[str] | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> QueryResult:
        """``text_query`` of a store with text search (:class:`~vectorport.SupportsTextSearch`)."""
        search = self._feature("text_query")
        return await self._off_loop(search, text, k, filter=filter, include=include, params=params)

    async def ahybrid_query(
        self,
        vector: Sequence[float] | Any,
        text: str,
        k: int = 10,
        *,
        filter: FilterLike = None,
        weight: float = 0.5,
        rrf_k: int = 60,
        include: Iterable[str] | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> QueryResult:
        """``hybrid_query`` of a store with hybrid search (:class:`~vectorport.SupportsHybridSearch`)."""
        search = self._feature("hybrid_query")
        return await self._off_loop(
            search, vector, text, k, filter=filter, weight=weight, rrf_k=rrf_k, include=include, params=params
        )

    def _feature(self, method: str) -> Any:
        found = getattr(self.sync, method, None)
        if found is None:
            raise UnsupportedFeatureError(f"{self.sync.name} ({self.sync.url.masked}) has no {method}")
        return found

    async def ascan(
        self,
        *,
        batch_size: int | None = None,
        include: Iterable[str] | None = None,
        segment: tuple[int, int] = (0, 1),
        cursor: str | None = None,
    ) -> AsyncIterator[ScanPage]:
        pages = self.sync.scan(batch_size=batch_size, include=include, segment=segment, cursor=cursor)
        while True:
            page = await self._off_loop(next, pages, None)
            if page is None:
                return
            yield page

    async def adrop(self) -> None:
        await self._off_loop(self.sync.drop)

    async def alist_collections(self) -> list[str]:
        return await self._off_loop(self.sync.list_collections)

    async def ainfo(self) -> dict[str, Any]:
        return await self._off_loop(self.sync.info)

    async def aclose(self) -> None:
        await self._off_loop(self.sync.close)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {self.sync!r}>"
