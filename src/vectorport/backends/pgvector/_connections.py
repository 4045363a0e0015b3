"""Connections of a pgvector store: how one is opened, the once-per-store extension check, and
one connection per thread with what vectorport has set up in its session."""

from __future__ import annotations

import logging
import os
import re
import threading
import weakref
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.pq import TransactionStatus

__all__ = [
    "MIN_PGVECTOR",
    "Connections",
    "Session",
    "SessionState",
    "check_extension",
    "connection_defaults",
    "conninfo_password",
    "open_connection",
    "usable",
]

log = logging.getLogger("vectorport.pgvector")

MIN_PGVECTOR = (0, 8, 0)  # iterative index scans


def connection_defaults(conninfo: str) -> dict[str, Any]:
    """The parameters vectorport adds to a connection: named ``vectorport`` and given up after
    10 s, unless ``conninfo`` or libpq's environment (``PGAPPNAME``, ``PGCONNECT_TIMEOUT``) says
    otherwise."""
    given = conninfo_to_dict(conninfo)
    out: dict[str, Any] = {}
    if "application_name" not in given and "PGAPPNAME" not in os.environ:
        out["application_name"] = "vectorport"
    if "connect_timeout" not in given and "PGCONNECT_TIMEOUT" not in os.environ:
        out["connect_timeout"] = 10
    return out


def conninfo_password(conninfo: str) -> str | None:
    """The password written in ``conninfo`` (scrubbed from error messages)."""
    value = conninfo_to_dict(conninfo).get("password")
    return str(value) if value else None


def open_connection(conninfo: str) -> psycopg.Connection[Any]:
    """An autocommit connection with :func:`connection_defaults`."""
    return psycopg.connect(conninfo, autocommit=True, **connection_defaults(conninfo))


def check_extension(conn: psycopg.Connection[Any]) -> None:
    """Create the ``vector`` extension when it is missing; warn when it is older than 0.8.0."""
    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    if row is None:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    version = tuple(int(x) for x in re.findall(r"\d+", str(row[0] if row else "0"))[:3])
    if version < MIN_PGVECTOR:
        log.warning(
            "pgvector %s is older than 0.8.0: no iterative index scans, so filtered HNSW "
            "queries may return fewer than k rows; upgrade the extension or use index=exact",
            ".".join(map(str, version)),
        )


@dataclass
class SessionState:
    """What vectorport has set up in one connection's session (sync or async connection)."""

    staged: set[str] = field(default_factory=set)
    """Temp staging tables created in this session."""
    gucs: dict[str, str] = field(default_factory=dict)
    """``hnsw.*`` settings this session holds (set at session level, outside transactions)."""
    applied: tuple[tuple[str, str], ...] | None = None
    """The last settings tuple brought about, for an identity check before comparing."""
    lent: bool = False
    """The connection is an application's, lent for one operation: a search's settings are
    local to its own round trip (:func:`~._options.local_gucs_sql`), none is left to take back."""
    _before: dict[str, str] = field(default_factory=dict, repr=False)

    def changes(self, wanted: tuple[tuple[str, str], ...]) -> list[tuple[str, str]]:
        """The settings to send to bring the session to ``wanted`` (empty: none). Until
        :meth:`settled` the session's settings are unknown (a failed send leaves them so)."""
        if wanted is self.applied:
            return []
        changed = [(name, value) for name, value in wanted if self.gucs.get(name) != value]
        if not changed:
            self.applied = wanted
            return []
        self._before, self.gucs, self.applied = self.gucs, {}, None
        return changed

    def settled(
        self, wanted: tuple[tuple[str, str], ...], changed: list[tuple[str, str]], idle: bool
    ) -> None:
        """``changed`` were sent; ``idle``: outside a transaction, so no rollback can undo them."""
        if idle:
            self._before.update(changed)
            self.gucs, self.applied, self._before = self._before, wanted, {}

    def unsettle(self) -> dict[str, str]:
        """The settings this session holds, forgotten until :meth:`hold`: several statements
        are about to change them in one implicit transaction, which a failure undoes."""
        held, self.gucs, self.applied, self._before = self.gucs, {}, None, {}
        return dict(held)

    def hold(self, gucs: dict[str, str]) -> None:
        """``gucs`` are in effect: the statements that set them were committed."""
        self.gucs, self.applied = gucs, None


@dataclass
class Session(SessionState):
    """One connection and what vectorport has set up in its session."""

    conn: psycopg.Connection[Any] = field(kw_only=True)


def usable(conn: psycopg.Connection[Any]) -> bool:
    """Whether ``conn`` can still run statements (not closed, not lost)."""
    return not (conn.closed or conn.broken) and conn.info.transaction_status != TransactionStatus.UNKNOWN


def _ended(owner: weakref.ref[Connections], conn: psycopg.Connection[Any]) -> None:
    """A thread's session is gone (the thread ended, or the store let go of it): close its
    connection (the owner is held weakly: a store dropped unclosed is not kept alive by this)."""
    connections = owner()
    if connections is None:
        conn.close()
    else:
        connections.forget(conn)


class Connections:
    """One connection per thread (psycopg connections serialise their use), closed together.

    A connection that broke (the server restarted or was killed, the session was terminated)
    is discarded and the next :meth:`get` opens a new one: :meth:`lost` tells the error mapping
    that the failure was the connection's, so the call is retried (on that new connection).
    """

    def __init__(self, connect: Callable[[], psycopg.Connection[Any]]) -> None:
        self._connect = connect
        self._local = threading.local()
        self._lock = threading.Lock()
        self._all: list[psycopg.Connection[Any]] = []

    def get(self) -> Session:
        session: Session | None = getattr(self._local, "session", None)
        if session is not None and usable(session.conn):
            return session
        # forgotten before connecting: a failed attempt is not a lost connection
        self._local.session = None
        if session is not None:
            log.info("pgvector: the connection was lost; opening a new one")
            with self._lock:
                self._all = [c for c in self._all if c is not session.conn]
            session.conn.close()
        session = Session(conn=self._connect())
        self._local.session = session
        with self._lock:
            self._all.append(session.conn)
        # a thread's local storage goes when the thread ends, and its connection is closed then:
        # a pool's threads (a verification's scan lanes, each until_equal round) come and go, and
        # would otherwise leave one server session each until the store closes
        weakref.finalize(session, _ended, weakref.ref(self), session.conn)
        return session

    def forget(self, conn: psycopg.Connection[Any]) -> None:
        """Close ``conn`` and stop counting it among the open ones."""
        with self._lock:
            self._all = [c for c in self._all if c is not conn]
        conn.close()

    def using(self) -> AbstractContextManager[None]:
        """The span of one operation: a connection lent for it (a SQLAlchemy engine's,
        :mod:`._engine`) is given back at its end; this store's own stay open."""
        return nullcontext()

    def hold(self) -> tuple[psycopg.Connection[Any], Callable[[], None]]:
        """A connection for a part that keeps one beyond an operation (a change feed, a bulk
        load's lock): a new one of the store's, closed by the returned callable (an engine's
        store lends one of the engine's, given back by it)."""
        conn = self._connect()
        return conn, conn.close

    def spare(self) -> tuple[psycopg.Connection[Any], Callable[[], None]] | None:
        """A second connection for a helper that can go without (an index build's progress):
        :meth:`hold`, or ``None`` when none can be had without waiting."""
        return self.hold()

    def lost(self) -> bool:
        """Whether this thread's connection is broken (the last error was the connection's)."""
        session: Session | None = getattr(self._local, "session", None)
        return session is not None and not usable(session.conn)

    def close(self) -> None:
        with self._lock:
            conns, self._all = self._all, []
        for conn in conns:
            conn.close()
        self._local = threading.local()
