"""A pgvector store for asyncio: queries, reads, counts and upserts on psycopg's async
connections from a :class:`psycopg_pool.AsyncConnectionPool` (no thread per call).

The statements, their parameters and the decoding of rows are the sync store's (the one
:func:`vectorport.connect` bound), built by its collaborators: the searcher's, the reader's
(``read_sql``, ``count_sql``, ``scan_sql``) and the writer's (``payload``, the merge and delete
statements). Only where they run differs. Each pooled
connection keeps its own session state (``hnsw.*`` settings sent only when they change, the
staging table), as the sync store's connections do. Every operation of the protocol runs
there (queries, text and hybrid search, get, count, scan pages, deletes, upserts); searches
awaited at the same time are sent a few to a connection in one pipeline (:mod:`._pipelined`); what
happens once (opening, creating, dropping, the first write's catalog preparation, a foreign
table's key check before its first scan) runs the sync store's code off the event loop
(:func:`~vectorport._async.off_loop`; on an ``AsyncEngine``'s connection when it has one).
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from functools import partial
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import psycopg
from psycopg import sql

from ..._async import AsyncStore, off_loop
from ..._deleting import delete_args
from ..._models import ALL_INCLUDES, Include, QueryResult, Record, ScanPage
from ..._paging import page_of, scan_args
from ..._protocol import FilterLike
from ..._querying import prepare_query
from ..._validate import check_batch_size, validate_keys, validate_records
from ...exceptions import BackendError, BackendUnavailableError, TransientError
from ._codec import aregister_vector_types
from ._connections import SessionState, connection_defaults, open_connection
from ._embedded import connect_embedded
from ._engine import AsyncEngineBridge, borrows_from
from ._options import local_gucs_sql, set_gucs_sql
from ._pipelined import Pipelined
from ._search import SearchCall
from .errors import pg_errors

if TYPE_CHECKING:
    from psycopg_pool import AsyncConnectionPool

    from ._server import Server
    from .store import PgVectorStore

__all__ = ["AsyncPgVectorStore", "asynchronous"]

P = ParamSpec("P")
R = TypeVar("R")
_IDLE = psycopg.pq.TransactionStatus.IDLE
_WAIT = 10.0
"""Seconds a call waits for a pooled connection (then the server is probed, the pool renewed)."""
log = logging.getLogger("vectorport.pgvector")


class AsyncPgVectorStore(AsyncStore["PgVectorStore"]):
    """:class:`~vectorport.backends.pgvector.PgVectorStore` with awaitable methods; the pool
    holds up to ``pool_size`` connections (an option of the store, default 10)."""

    def __init__(self, store: PgVectorStore) -> None:
        super().__init__(store)
        self._pool: AsyncConnectionPool[Any] | None = None
        self._opening: asyncio.Lock | None = None
        self._sessions: weakref.WeakKeyDictionary[psycopg.AsyncConnection[Any], SessionState] = (
            weakref.WeakKeyDictionary()
        )
        self._lender = store.server.pool.lender if isinstance(store.server.pool, AsyncEngineBridge) else None
        """The application's ``AsyncEngine``, whose pool lends the connections (else our own pool)."""
        self._recovering: asyncio.Lock | None = None
        self._recovered = 0.0
        self._searches: Pipelined[SearchCall, list[Any]] = Pipelined(
            self._rows, self._pipelined_rows, lambda: store.server.pool_size
        )
        """Concurrent searches, sent a few to a connection (not on a lent connection)."""

    async def _off_loop(self, fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
        """The sync store's code off the loop, told this loop: on an ``AsyncEngine`` it borrows
        the engine's connections here (:class:`~._engine.AsyncEngineBridge`)."""
        return await off_loop(fn, *args, **kwargs)

    async def _connections(self) -> AsyncConnectionPool[Any]:
        if self._pool is not None:
            return self._pool
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._pool is None:
                from psycopg_pool import AsyncConnectionPool

                store = self.sync
                conninfo = store.server.conninfo
                assert conninfo is not None  # the store connected when it was bound
                pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
                    conninfo,
                    kwargs={"autocommit": True, **connection_defaults(conninfo)},
                    min_size=store.server.pool_size,
                    max_size=store.server.pool_size,
                    configure=partial(_configure, store.server.session_setup()),
                    name=f"vectorport {store.schema}.{store.table}",
                    timeout=_WAIT,
                    open=False,
                )
                with store.server.errors("connect"):
                    await pool.open(wait=True)
                self._pool = pool
        return self._pool

    def _session(self, conn: psycopg.AsyncConnection[Any]) -> SessionState:
        state = self._sessions.get(conn)
        if state is None:
            state = self._sessions[conn] = SessionState()
        return state

    @asynccontextmanager
    async def _borrowed(self, what: str) -> AsyncIterator[tuple[psycopg.AsyncConnection[Any], SessionState]]:
        """A pooled connection and its session, with driver errors mapped as the sync store maps
        them. One that broke (server restarted, session terminated) makes the error transient
        after :meth:`_recover` (a new pool, the embedded server started again), so the retry
        runs on a new connection; a server that is gone is a one-line
        :class:`~vectorport.exceptions.BackendUnavailableError`."""
        store = self.sync
        if self._lender is not None:
            with store.server.errors(what):
                async with self._lender.borrowed() as (conn, state):
                    with pg_errors(what, store._where, store.server.password, lost=_lost(conn)):
                        yield conn, state
            return
        started = time.monotonic()
        broken = False
        pool = self._pool or await self._connections()
        held: list[psycopg.AsyncConnection[Any]] = []
        try:
            # one mapping for the checkout and the use (getconn/putconn, not connection(): its
            # commit on exit has nothing to do on an autocommit connection)
            with pg_errors(what, store._where, store.server.password, lost=lambda: any(map(_broken, held))):
                conn = await pool.getconn()
                held.append(conn)
                try:
                    yield conn, self._session(conn)
                except psycopg.Error:
                    broken = _broken(conn)
                    raise
                finally:
                    await pool.putconn(conn)
        except TransientError:
            if broken:
                await self._recover(what, started)
            raise
        except BackendError as exc:
            from psycopg_pool import PoolClosed, PoolTimeout

            # no connection came (the server is down) or the pool was replaced while waiting
            if not isinstance(exc.__cause__, PoolTimeout | PoolClosed):
                raise
            await self._recover(what, started)
            raise TransientError(
                f"pgvector {what} on {store._where}: no pooled connection came (the server restarted); "
                "the call is retried on the renewed pool"
            ) from exc

    async def _recover(self, what: str, since: float) -> None:
        """After a lost connection: start the embedded server again (or check that the server
        answers), then replace the pool, whose other connections died too. Once for the many
        calls that lose their connections at the same time."""
        if self._recovering is None:
            self._recovering = asyncio.Lock()
        async with self._recovering:
            if self._recovered > since:
                return
            store = self.sync
            if store.server.data_dir is not None:
                store.server.conninfo = await asyncio.to_thread(_revive, store.server)
            else:
                await _probe(store, what)
            pool, self._pool = self._pool, None
            self._recovered = time.monotonic()
            log.info("pgvector: %s lost its connections; the async pool is opened again", store._where)
        if pool is not None:
            await pool.close(timeout=1.0)

    async def _rows(self, call: SearchCall) -> list[Any]:
        """The rows of a search. When the connection's ``hnsw.*`` settings must change first,
        the settings and the search go out in one pipeline: one round trip instead of two (a
        mix of filtered and plain searches changes them on most calls). The pipeline is one
        implicit transaction, so a failed search undoes the settings too: the session's
        record is settled only after both succeeded."""
        store = self.sync
        async with self._borrowed(call.what) as (conn, state):
            query = store.searcher._statement(conn, call.key, call.build)
            if call.gucs and state.lent:  # as the sync store's search on a lent connection
                async with conn.pipeline():
                    await conn.execute(*local_gucs_sql(call.gucs), prepare=True)
                    cur = await conn.execute(query, call.params, binary=True, prepare=True)
                lent: list[Any] = await cur.fetchall()
                return lent
            changed = state.changes(call.gucs) if call.gucs else []
            if not changed:
                cur = await conn.execute(query, call.params, binary=True, prepare=True)
            else:
                async with conn.pipeline():
                    await conn.execute(
                        set_gucs_sql([n for n, _ in changed]).encode("ascii"),
                        [x for pair in changed for x in pair],
                        prepare=True,
                    )
                    cur = await conn.execute(query, call.params, binary=True, prepare=True)
                assert call.gucs is not None
                state.settled(call.gucs, changed, conn.info.transaction_status == _IDLE)
            rows: list[Any] = await cur.fetchall()
            return rows

    async def _search(self, call: SearchCall) -> list[Any]:
        """The rows of a search: queued with the searches awaited beside it, so that a
        connection is sent several at once (:mod:`._pipelined`); on a lent connection alone."""
        if self._lender is not None:
            return await self._rows(call)
        return await self._searches.run(call)

    async def _pipelined_rows(self, calls: Sequence[SearchCall]) -> list[list[Any]]:
        """The rows of several searches, sent in one pipeline on one connection. Those that
        need the same ``hnsw.*`` settings go together, the settings the session holds first,
        so a setting is sent only where it changes. The pipeline is one implicit transaction:
        the session's settings are known again only once it succeeded."""
        store = self.sync
        async with self._borrowed(calls[0].what) as (conn, state):
            held = state.unsettle()
            order = sorted(
                range(len(calls)), key=lambda i: (_changes(held, calls[i]) > 0, calls[i].gucs or ())
            )
            cursors: dict[int, psycopg.AsyncCursor[Any]] = {}
            async with conn.pipeline():
                for i in order:
                    call = calls[i]
                    changed = [(n, v) for n, v in call.gucs or () if held.get(n) != v]
                    if changed:
                        names, values = [n for n, _ in changed], [x for pair in changed for x in pair]
                        await conn.execute(set_gucs_sql(names).encode("ascii"), values, prepare=True)
                        held.update(changed)
                    query = store.searcher._statement(conn, call.key, call.build)
                    cursors[i] = await conn.execute(query, call.params, binary=True, prepare=True)
            state.hold(held)
            return [await cursors[i].fetchall() for i in range(len(calls))]

    async def _fetch(self, what: str, query: sql.Composed, params: Mapping[str, Any]) -> list[Any]:
        async with self._borrowed(what) as (conn, _):
            cur = await conn.execute(query, params, binary=True)
            rows: list[Any] = await cur.fetchall()
            return rows

    # ------------------------------------------------------------------ the protocol
    async def aquery(
        self,
        vector: Sequence[float] | Any,
        k: int = 10,
        *,
        filter: FilterLike = None,
        include: Iterable[str] | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> QueryResult:
        store = self.sync
        q = prepare_query(store, vector, k, filter, include, params)
        assert q.vector is not None
        call = store.searcher._search_call(q.vector, q.k, q.where, q.include, q.params)

        async def search() -> list[Any]:
            rows = await self._search(call)
            exact = call.short(rows)
            return rows if exact is None else await self._search(exact)

        rows = await store.retry.acall(search, f"{store.name}: query")
        return QueryResult(tuple(store.searcher._matches(rows, q.include)[: q.k]), q.k)

    async def aget(self, keys: Iterable[str], *, include: Iterable[str] | None = None) -> list[Record]:
        store = self.sync
        wanted = validate_keys(keys, store.capabilities.max_key_bytes)
        inc = Include.parse(include, ALL_INCLUDES)
        found: dict[str, Record] = {}
        step = store.capabilities.max_read_batch
        for start in range(0, len(wanted), step):
            query, params = store.reader.read_sql(wanted[start : start + step], inc)
            rows = await store.retry.acall(partial(self._fetch, "get", query, params), "pgvector: get")
            for row in rows:
                rec = store.reader.record(row, inc)
                found[rec.key] = rec
        return [found[k] for k in wanted if k in found]

    async def acount(self) -> int:
        store = self.sync
        query, params = store.reader.count_sql()
        rows = await store.retry.acall(lambda: self._fetch("count", query, params), "pgvector: count")
        return int(rows[0][0]) if rows else 0

    async def atext_query(
        self,
        text: str,
        k: int = 10,
        *,
        filter: FilterLike = None,
        include: Iterable[str] | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> QueryResult:
        store = self.sync
        query, values, inc, k = store.searcher._text_call(text, k, filter, include, params)
        fetch = partial(self._fetch, "text query", query, values)
        return store.searcher._text_result(await store.retry.acall(fetch, "pgvector: text query"), inc, k)

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
        store = self.sync
        call, inc, k = store.searcher._hybrid_call(vector, text, k, filter, weight, rrf_k, include, params)
        rows = await store.retry.acall(lambda: self._search(call), "pgvector: hybrid query")
        return store.searcher._hybrid_result(rows, inc, k)

    async def ascan(
        self,
        *,
        batch_size: int | None = None,
        include: Iterable[str] | None = None,
        segment: tuple[int, int] = (0, 1),
        cursor: str | None = None,
    ) -> AsyncIterator[ScanPage]:
        store = self.sync
        limit, inc, part, position = scan_args(store, batch_size, include, segment, cursor)
        if position is None and not store.foreign.keys_checked:
            await self._off_loop(store.check_keys)  # once: a table made elsewhere
        while True:
            query, params = store.reader.scan_sql(limit, inc, part, position)
            rows = await store.retry.acall(partial(self._fetch, "scan", query, params), "pgvector: scan")
            records, position = store.reader.scan_rows(rows, limit, inc)
            page = page_of(store.name, records, position, part)
            if page.records or page.cursor is None:
                yield page
            if page.cursor is None:
                return

    async def adelete(self, keys: Iterable[str] | None = None, *, filter: FilterLike = None) -> int:
        store = self.sync
        doomed, where = delete_args(store, keys, filter)
        await self._ready_to_write()
        if doomed is None:
            query, params = store.writer.delete_sql(where)
            return max(await store.retry.acall(partial(self._run, query, params), "pgvector: delete"), 0)
        step = store.capabilities.max_delete_batch
        for start in range(0, len(doomed), step):
            query, params = store.writer.remove_sql(doomed[start : start + step])
            await store.retry.acall(partial(self._run, query, params), "pgvector: delete")
        return len(doomed)

    async def _run(self, query: sql.Composed, params: Mapping[str, Any]) -> int:
        async with self._borrowed("delete") as (conn, _):
            return (await conn.execute(query, params)).rowcount

    async def _ready_to_write(self) -> None:
        store = self.sync
        if not store.catalog.write_ready or store.indexing.missing:
            await self._off_loop(store.indexing.prepare_writes)  # once: catalog, adopted table, index

    async def aupsert(self, records: Iterable[Record], *, batch_size: int | None = None) -> int:
        store = self.sync
        batch = validate_records(records, store.spec, store.capabilities, store.name)
        await self._ready_to_write()
        size = check_batch_size(batch_size, store.capabilities.max_write_batch)
        for chunk in batch.chunks(size):
            write = partial(self._write, store.writer.payload(chunk), len(chunk))
            await store.retry.acall(write, "pgvector: upsert")
        return len(batch)

    async def _write(self, payload: bytes, n: int) -> None:
        store = self.sync
        async with self._borrowed("upsert") as (conn, state):
            stage, create = store.writer.stage_sql(state.staged)
            try:
                async with conn.transaction():
                    if create is not None:
                        await conn.execute(create)
                    async with conn.cursor() as copying, copying.copy(store.writer.copy_sql(stage)) as pipe:
                        await pipe.write(payload)
                    rowcount = None
                    for statement in store.writer.merge_statements(stage):
                        rowcount = (await conn.execute(statement, store.writer.merge_params())).rowcount
                    store.writer.check_merged(rowcount, n)
            except psycopg.errors.UndefinedTable:
                state.staged.clear()
                raise
            store.writer.staged(stage, state.staged)

    async def aclose(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()
        await super().aclose()


def _revive(server: Server) -> str:
    """The embedded server's URI, the server started again when it is down (what the sync
    store's next connection does); a server that does not come back raises
    :class:`~vectorport.exceptions.BackendUnavailableError`."""
    assert server.data_dir is not None
    conn, uri = connect_embedded(
        server.data_dir, open_connection, keep=server.keep, database=server.database, module=server.provider
    )
    conn.close()
    return uri


async def _probe(store: PgVectorStore, what: str) -> None:
    """Whether the server answers a new connection; if not, a one-line error saying so."""
    conninfo = store.server.conninfo
    assert conninfo is not None
    try:
        conn = await psycopg.AsyncConnection.connect(conninfo, **connection_defaults(conninfo))
    except psycopg.OperationalError as exc:
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise BackendUnavailableError(
            f"pgvector {what} on {store._where} failed: the server no longer answers ({detail}); "
            "start it again (the store reconnects on its next call) or check the URL"
        ) from exc
    await conn.close()


def _changes(held: Mapping[str, str], call: SearchCall) -> int:
    """How many of the settings ``call`` needs differ from those ``held``."""
    return sum(held.get(name) != value for name, value in call.gucs or ())


def _lost(conn: psycopg.AsyncConnection[Any]) -> Callable[[], bool]:
    return lambda: _broken(conn)


def _broken(conn: psycopg.AsyncConnection[Any]) -> bool:
    return conn.closed or conn.broken


def asynchronous(store: PgVectorStore) -> AsyncStore[PgVectorStore]:
    """``store`` with awaitable methods: on psycopg's async connections (a pool of its own, or
    an ``AsyncEngine``'s), or off the event loop when it borrows a sync ``Engine``'s
    connections (they are not async ones)."""
    if store.server.engine is not None and borrows_from(store.server.engine) == "sync":
        return AsyncStore(store)
    return AsyncPgVectorStore(store)


async def _configure(setup: list[str], conn: psycopg.AsyncConnection[Any]) -> None:
    """The pool's ``configure``: vectorport's vector codecs and the store's session setup on
    each new connection (as the sync store's connections get them)."""
    await aregister_vector_types(conn)
    for statement in setup:
        await conn.execute(statement.encode())
