"""The registry's database connection: SQLite (one host) or PostgreSQL (many hosts), one SQL text.

The registry's statements are written once with ``?`` placeholders; a :class:`Dialect` says what
differs (the placeholder, an auto-increment column, how to connect and which driver errors mean
"cannot reach the registry"). :class:`Connection` runs statements under one lock per process
(the shadow and repair threads share it with the app's calls), and maps a lost or refused
connection to :class:`~vectorport.exceptions.BackendUnavailableError` naming the registry,
reconnecting on the next call.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._paths import state_dir, writable_file
from .._url import mask_url
from ..backends.pgvector import start_embedded  # imports no driver
from ..exceptions import BackendError, BackendUnavailableError, ConfigurationError

__all__ = ["Connection", "Dialect", "default_registry", "open_connection"]

Row = tuple[Any, ...]


def default_registry() -> str:
    """The registry of an alias URL without ``registry=``: a SQLite file in the user's state
    directory (:func:`vectorport._paths.state_dir`), so ``alias://docs`` alone works on one host."""
    return str(state_dir() / "aliases.sqlite")


@dataclass(frozen=True)
class Dialect:
    """What differs between the registry's two databases."""

    name: str
    serial: str
    """The column type of an auto-increment primary key."""
    placeholder: str
    connect: Callable[[str], Any]
    unavailable: tuple[type[BaseException], ...]
    """Driver errors that mean the registry cannot be reached (or is locked beyond the wait)."""
    failed: tuple[type[BaseException], ...]
    """Every other error of the driver (a refused statement, a file that is no database)."""
    schema_lock: str | None
    """A statement that serializes concurrent creations of the tables (``None``: the write
    transaction already does)."""

    def sql(self, text: str) -> str:
        return text.replace("?", self.placeholder)


def _sqlite_connect(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=10.0, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")  # readers of other processes never wait for a writer
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn


def _postgres_connect(dsn: str) -> Any:
    import psycopg  # the registry of a multi-host app: imported only when one is named

    return psycopg.connect(dsn, autocommit=True, connect_timeout=5)


def _postgres_errors() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    try:
        import psycopg
    except ImportError:
        return (), ()
    return (psycopg.OperationalError, psycopg.InterfaceError), (psycopg.Error,)


SQLITE = Dialect(
    "sqlite",
    "INTEGER PRIMARY KEY AUTOINCREMENT",
    "?",
    _sqlite_connect,
    (sqlite3.OperationalError,),
    (sqlite3.Error,),
    None,  # BEGIN IMMEDIATE takes the database's write lock
)


def _postgres() -> Dialect:
    unavailable, failed = _postgres_errors()
    # two processes creating the tables at once would collide in the catalog: one at a time
    lock = "SELECT pg_advisory_xact_lock(7366291)"
    return Dialect("postgresql", "BIGSERIAL PRIMARY KEY", "%s", _postgres_connect, unavailable, failed, lock)


def _target(registry: str) -> tuple[Dialect, str]:
    """The dialect and the driver's connection string of a registry as an alias URL names it:
    a ``postgresql://`` URI, ``pgvector://DATA_DIR`` (the embedded server of that directory),
    ``sqlite:///PATH`` or a plain file path."""
    scheme = registry.split("://", 1)[0].lower() if "://" in registry else ""
    if scheme in ("postgresql", "postgres"):
        return _postgres(), registry
    if scheme == "pgvector":
        return _postgres(), start_embedded(registry.split("://", 1)[1].split("?", 1)[0])
    if scheme in ("sqlite", "file", ""):
        path = Path(registry.split("://", 1)[1] if scheme else registry).expanduser()
        return SQLITE, str(writable_file(path, "alias registry"))
    raise ConfigurationError(
        f"unknown alias registry {mask_url(registry)!r}: give a postgresql:// URI, pgvector://DATA_DIR, "
        "or the path of a SQLite file"
    )


class Connection:
    """One registry connection of this process: statements run one at a time under a lock."""

    def __init__(self, registry: str) -> None:
        self.registry = registry
        self.label = mask_url(registry)
        self.dialect, self._target = _target(registry)
        self._lock = threading.RLock()
        self._conn: Any = None

    def _open(self) -> Any:
        if self._conn is None:
            self._conn = self.dialect.connect(self._target)
        return self._conn

    @contextlib.contextmanager
    def _guard(self, what: str) -> Iterator[Any]:
        with self._lock:
            try:
                yield self._open()
            except self.dialect.unavailable as exc:
                self._drop()
                raise BackendUnavailableError(
                    f"the alias registry {self.label} cannot be reached ({what}): {exc}; the alias "
                    "serves no call it cannot check against its registry"
                ) from exc
            except self.dialect.failed as exc:
                raise BackendError(f"the alias registry {self.label} failed ({what}): {exc}") from exc

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    def rows(self, text: str, params: Sequence[Any] = ()) -> list[Row]:
        """The rows of one statement (none for a statement that returns none)."""
        with self._guard("read") as conn:
            cur = conn.execute(self.dialect.sql(text), tuple(params))
            return [tuple(r) for r in cur.fetchall()] if cur.description else []

    def run(self, statements: Sequence[tuple[str, Sequence[Any]]], many: bool = False) -> None:
        """Several statements in one transaction (``many``: each statement's params are a list
        of rows, run with ``executemany``)."""
        with self._guard("write") as conn:
            self._begin(conn)
            try:
                for text, params in statements:
                    if many:
                        cur = conn.cursor()
                        cur.executemany(self.dialect.sql(text), [tuple(p) for p in params])
                    else:
                        conn.execute(self.dialect.sql(text), tuple(params))
            except BaseException:
                with contextlib.suppress(Exception):
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def _begin(self, conn: Any) -> None:
        # SQLite: take the write lock at once, so two processes' transactions queue on the busy
        # timeout instead of failing on upgrade
        conn.execute("BEGIN IMMEDIATE" if self.dialect is SQLITE else "BEGIN")

    def close(self) -> None:
        with self._lock:
            self._drop()


def open_connection(registry: str | None) -> Connection:
    """The connection of a registry (``None``: :func:`default_registry`)."""
    return Connection(registry or default_registry())
