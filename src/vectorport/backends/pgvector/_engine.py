"""A SQLAlchemy application's own connections: a store opened from an ``Engine`` (or, for the
async store, an ``AsyncEngine``) on the psycopg driver borrows connections from the engine's
pool for each operation and gives them back, instead of opening a pool of its own.

A borrowed connection is the application's, so it is handed back as it was lent:

- autocommit as vectorport's statements need it during the operation, the application's
  setting again before the pool takes it back (the pool's reset-on-return then runs as usual);
- a search's ``hnsw.*`` settings are local to its own round trip (settings and search in one
  pipeline, one implicit transaction: :func:`~._options.local_gucs_sql`) and the session's
  staging table is dropped, so nothing of vectorport's lingers in the application's sessions;
- a connection that broke during the operation is invalidated in the pool (the pool opens a
  new one), and the error is transient so the retry borrows another;
- the engine is never disposed: closing the store gives nothing back but what it holds.

vectorport's ``vector``/``halfvec`` loaders (float32 numpy arrays, as pgvector-python's) live
in its own cursors: a borrowed connection's ``cursor_factory`` is, during the operation, a
subclass of the application's whose cursors have them (:func:`~._codec.vector_cursors`), so
the application's own ``SELECT embedding`` returns what it returned before; and nothing is
prepared in its session (``prepare_threshold`` is ``None`` during the operation).

The sync store of an ``AsyncEngine`` runs its rare operations (opening, creating, the first
write's catalog preparation, dropping) on the engine's connections too
(:class:`AsyncEngineBridge`). An engine on another driver
(``+psycopg2``, ``+asyncpg``) holds connections vectorport cannot drive: the store then opens
its own from the engine's URL and credentials (:func:`borrows_from`).
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

import psycopg

from ..._async import calling_loop
from ...exceptions import BackendUnavailableError
from ._codec import avector_cursors, register_vector_types, vector_cursors
from ._connections import Connections, Session, SessionState, usable

__all__ = [
    "AsyncEngineBridge",
    "AsyncEngineConnections",
    "EngineConnections",
    "borrows_from",
    "connections_said",
]

R = TypeVar("R")

log = logging.getLogger("vectorport.pgvector")

_UNDO = {"SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY": "RESET default_transaction_read_only"}
"""How to take back each statement of a store's session setup."""


def borrows_from(engine: Any) -> str | None:
    """``"sync"`` or ``"async"``: the store borrows ``engine``'s connections (psycopg 3, sync
    or async); ``None``: another driver, whose connections vectorport cannot drive."""
    dialect = getattr(engine, "sync_engine", engine).dialect
    if dialect.driver != "psycopg":
        return None
    return "async" if dialect.is_async else "sync"


def connections_said(engine: Any) -> str:
    """Whose connections a store runs on, as ``info`` says it."""
    if engine is None:
        return "its own"
    lent = borrows_from(engine)
    if lent == "sync":
        return "the SQLAlchemy engine's pool"
    if lent == "async":
        return "the SQLAlchemy engine's pool (aconnect's operations); its own for the sync API outside them"
    driver = getattr(engine, "sync_engine", engine).dialect.driver
    return f"its own, from the engine's URL (the engine's driver, {driver}, is not psycopg 3)"


@contextmanager
def _engine_errors(engine: Any) -> Iterator[None]:
    """SQLAlchemy's errors of a checkout as the store's: the driver's error it wraps (mapped
    like any psycopg error by the caller), or the pool's timeout as a
    :class:`~vectorport.exceptions.BackendUnavailableError`: not transient, as the pool already
    waited the application's ``pool_timeout`` (retried, ``pool_timeout=3`` failed after 30 s)."""
    try:
        yield
    except Exception as exc:
        orig = getattr(exc, "orig", None)
        if isinstance(orig, psycopg.Error):
            raise orig from exc
        if type(exc).__module__.startswith("sqlalchemy") and type(exc).__name__ == "TimeoutError":
            pool = getattr(engine, "sync_engine", engine).pool
            raise BackendUnavailableError(
                f"pgvector: the SQLAlchemy engine's pool lent no connection within its pool_timeout "
                f"({pool.status()}); "
                "the application holds them all: give the engine a larger pool_size or max_overflow"
            ) from exc
        raise


def _take_back(session: SessionState, setup: list[str]) -> list[bytes]:
    """What returns a borrowed session to the application as it was lent: one string of
    statements (no parameters: sent in one round trip), or none."""
    out = [_UNDO[s].encode("ascii") for s in setup if s in _UNDO]
    out += [b"DROP TABLE IF EXISTS pg_temp." + name.encode() for name in sorted(session.staged)]
    return [b"; ".join(out)] if out else []


@dataclass(frozen=True)
class _AsLent:
    """What vectorport changes on a borrowed connection during an operation, as the
    application had it: the connection goes back with these."""

    autocommit: bool
    cursor_factory: type[Any]
    prepare_threshold: int | None

    @classmethod
    def of(cls, conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> _AsLent:
        return cls(conn.autocommit, conn.cursor_factory, conn.prepare_threshold)

    def mine(self, cursors: type[Any] | None) -> bool:
        """Whether ``cursors`` (made at an earlier loan) derive from the application's factory."""
        return cursors is not None and cursors.__base__ is self.cursor_factory

    def lend(self, conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any], cursors: type[Any]) -> None:
        """vectorport's cursors (its loaders) for the operation, nothing prepared in the session."""
        conn.cursor_factory = cursors
        conn.prepare_threshold = None

    def restore(self, conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> None:
        """The application's cursor factory and prepare threshold again (autocommit apart: the
        async connection sets it by an awaited call)."""
        conn.cursor_factory = self.cursor_factory
        conn.prepare_threshold = self.prepare_threshold


class EngineConnections(Connections):
    """:class:`Connections` borrowed from a sync ``Engine``'s pool, one per operation (the
    outermost :meth:`using` block of a thread) and returned at its end."""

    def __init__(
        self, engine: Any, first: Callable[[psycopg.Connection[Any]], None], setup: list[str]
    ) -> None:
        super().__init__(self._refuse)
        self.engine = engine
        self._first = first
        self._setup = setup
        self._cursors: weakref.WeakKeyDictionary[psycopg.Connection[Any], type[psycopg.Cursor[Any]]] = (
            weakref.WeakKeyDictionary()
        )

    @staticmethod
    def _refuse() -> psycopg.Connection[Any]:
        raise RuntimeError("a pgvector store on a SQLAlchemy engine uses a connection outside an operation")

    @contextmanager
    def using(self) -> Iterator[None]:
        local = self._local
        depth: int = getattr(local, "depth", 0)
        local.depth = depth + 1
        try:
            yield
        finally:
            local.depth = depth
            if depth == 0:
                self._give_back()

    def get(self) -> Session:
        session: Session | None = getattr(self._local, "session", None)
        if session is not None:
            return session
        if not getattr(self._local, "depth", 0):
            self._refuse()
        conn, self._local.back = self._lend()
        session = self._local.session = Session(conn=conn, lent=True)
        return session

    def _lend(self) -> tuple[psycopg.Connection[Any], Callable[[Session | None], None]]:
        """A connection of the engine's, set up for vectorport, and how to give it back."""
        with _engine_errors(self.engine):
            fairy = self.engine.raw_connection()
        before: _AsLent | None = None
        try:
            conn = fairy.driver_connection
            if not isinstance(conn, psycopg.Connection):
                raise TypeError(f"the engine's connection is a {type(conn).__name__}, not psycopg's")
            before = _AsLent.of(conn)
            conn.autocommit = True
            cursors = self._cursors.get(conn)
            if cursors is None or not before.mine(cursors):
                self._first(conn)
                cursors = self._cursors[conn] = vector_cursors(conn)
            before.lend(conn, cursors)
            for statement in self._setup:
                conn.execute(statement.encode())
        except BaseException:
            self._return(fairy, before, None)
            raise
        return conn, partial(self._return, fairy, before)

    def hold(self) -> tuple[psycopg.Connection[Any], Callable[[], None]]:
        """One of the engine's connections, lent until the returned callable gives it back."""
        conn, back = self._lend()
        return conn, partial(back, None)

    def spare(self) -> tuple[psycopg.Connection[Any], Callable[[], None]] | None:
        """:meth:`hold`, only when the pool lends one at once (one idle, or fewer out than its
        size): a helper that can go without never waits for one the application needs."""
        pool = getattr(self.engine, "sync_engine", self.engine).pool
        sized = all(callable(getattr(pool, name, None)) for name in ("checkedin", "checkedout", "size"))
        if sized and not pool.checkedin() and pool.checkedout() >= pool.size():
            return None
        return self.hold()

    def lost(self) -> bool:
        session: Session | None = getattr(self._local, "session", None)
        return session is not None and not usable(session.conn)

    def _give_back(self) -> None:
        back: Callable[[Session | None], None] | None = getattr(self._local, "back", None)
        session: Session | None = getattr(self._local, "session", None)
        self._local.back = self._local.session = None
        if back is not None:
            back(session)

    def _return(self, fairy: Any, lent: _AsLent | None, session: Session | None) -> None:
        conn = fairy.driver_connection
        try:
            if usable(conn):
                for statement in _take_back(session or SessionState(), self._setup):
                    conn.execute(statement)
            if lent is not None:
                lent.restore(conn)
                if usable(conn):
                    conn.autocommit = lent.autocommit
        except psycopg.Error as exc:
            log.info("pgvector: a borrowed connection could not be reset (%s); the pool drops it", exc)
        if usable(conn) and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
            fairy.close()
        else:
            fairy.invalidate()

    def close(self) -> None:
        """Nothing of the engine's is closed: its connections go back at each operation's end."""


class AsyncEngineConnections:
    """Connections borrowed from an ``AsyncEngine``'s pool for one operation each (the async
    store's :meth:`borrowed`); what they carry for vectorport is given back as for
    :class:`EngineConnections`."""

    def __init__(self, engine: Any, setup: list[str]) -> None:
        self.engine = engine
        self._setup = setup
        self._cursors: weakref.WeakKeyDictionary[
            psycopg.AsyncConnection[Any], type[psycopg.AsyncCursor[Any]]
        ] = weakref.WeakKeyDictionary()

    @asynccontextmanager
    async def borrowed(self) -> AsyncIterator[tuple[psycopg.AsyncConnection[Any], SessionState]]:
        with _engine_errors(self.engine):
            handle = await self.engine.connect()
        try:
            fairy = await handle.get_raw_connection()
            conn = fairy.driver_connection
            if not isinstance(conn, psycopg.AsyncConnection):
                raise TypeError(f"the engine's connection is a {type(conn).__name__}, not psycopg's")
            before = _AsLent.of(conn)
            await conn.set_autocommit(True)
            session = SessionState(lent=True)
            try:
                cursors = self._cursors.get(conn)
                if cursors is None or not before.mine(cursors):
                    cursors = self._cursors[conn] = await avector_cursors(conn)
                before.lend(conn, cursors)
                for setup in self._setup:
                    await conn.execute(setup.encode())
                yield conn, session
            finally:
                await self._give_back(handle, conn, session, before)
        finally:
            await handle.close()

    async def _give_back(
        self, handle: Any, conn: psycopg.AsyncConnection[Any], session: SessionState, lent: _AsLent
    ) -> None:
        lent.restore(conn)
        if not conn.closed and not conn.broken:
            try:
                for statement in _take_back(session, self._setup):
                    await conn.execute(statement)
                await conn.set_autocommit(lent.autocommit)
            except psycopg.Error as exc:
                log.info("pgvector: a borrowed connection could not be reset (%s)", exc)
        if conn.closed or conn.broken or conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            await handle.invalidate()


class _Bridge(psycopg.Connection[Any]):
    """A sync psycopg connection over the libpq connection of an async one borrowed from an
    ``AsyncEngine``: the store's sync code (opening, creating, the first write's catalog
    preparation, dropping) runs on it in a worker thread while the event loop awaits that
    thread, so nothing else uses the connection meanwhile. It never closes the connection (the
    pool owns it), prepares nothing (``_pg3_N`` statement names are the async connection's),
    and leaves the async connection its notice and notification handlers."""

    def __init__(self, owner: psycopg.AsyncConnection[Any]) -> None:
        pgconn = owner.pgconn
        handlers = pgconn.notice_handler, pgconn.notify_handler
        super().__init__(pgconn)
        pgconn.notice_handler, pgconn.notify_handler = handlers
        self.prepare_threshold = None
        self.autocommit = True

    def __del__(self, *args: Any) -> None:
        """Dropped without closing: the connection is the async one's (psycopg warns of an
        unclosed connection otherwise)."""


class AsyncEngineBridge(EngineConnections):
    """The sync store of an ``AsyncEngine``: its code run by the async store off the event loop
    (:func:`~vectorport._async.off_loop`) borrows the engine's connections on that loop, one per
    operation as :class:`EngineConnections` does, so the application sees no connection outside
    its pool. The sync API called outside that (no event loop awaits it; the engine's pool
    belongs to one loop) runs on connections of its own from the engine's URL."""

    def __init__(
        self,
        engine: Any,
        first: Callable[[psycopg.Connection[Any]], None],
        setup: list[str],
        own: Callable[[], psycopg.Connection[Any]],
    ) -> None:
        super().__init__(engine, first, setup)
        self.lender = AsyncEngineConnections(engine, setup)
        """Lends the async store's connections too: one lender per store."""
        self._own = Connections(own)

    def get(self) -> Session:
        return super().get() if calling_loop() is not None else self._own.get()

    def hold(self) -> tuple[psycopg.Connection[Any], Callable[[], None]]:
        return super().hold() if calling_loop() is not None else self._own.hold()

    def spare(self) -> tuple[psycopg.Connection[Any], Callable[[], None]] | None:
        return super().spare() if calling_loop() is not None else self._own.spare()

    def lost(self) -> bool:
        return super().lost() if calling_loop() is not None else self._own.lost()

    def _lend(self) -> tuple[psycopg.Connection[Any], Callable[[Session | None], None]]:
        loop = calling_loop()
        assert loop is not None  # get() lends only then

        def on_loop(step: Coroutine[Any, Any, R]) -> R:
            return asyncio.run_coroutine_threadsafe(step, loop).result()

        lending = self.lender.borrowed()
        owner, state = on_loop(lending.__aenter__())
        try:
            conn = _Bridge(owner)
            self._first(conn)
            register_vector_types(conn)
        except BaseException as exc:
            on_loop(lending.__aexit__(type(exc), exc, exc.__traceback__))
            raise

        def back(session: Session | None) -> None:
            if session is not None:  # what the sync code left in the session is taken back too
                state.staged |= session.staged
            on_loop(lending.__aexit__(None, None, None))

        return conn, back

    def close(self) -> None:
        self._own.close()
