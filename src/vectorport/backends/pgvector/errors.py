"""psycopg / PostgreSQL errors → vectorport exceptions, through one table keyed by SQLSTATE.

Exact SQLSTATE codes are looked up first, then the two-character class. Messages name the
backend, the table and the operation, and never contain the password (libpq does not echo it,
and :func:`pg_errors` scrubs it anyway in case a DSN ends up in a driver message).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import psycopg

from ...exceptions import (
    Action,
    Advised,
    BackendError,
    BackendUnavailableError,
    ConfigurationError,
    ConflictError,
    NotFoundError,
    Problem,
    Step,
    TransientError,
    UnsupportedFeatureError,
    ValidationError,
    VectorportError,
)

__all__ = ["CONNECT_FAILURES", "LOST_HINT", "SQLSTATE_CLASSES", "SQLSTATE_CODES", "pg_errors"]

# Sorted by code. What to do is in the hint appended to each message. Transient means it clears
# by itself (a serialization failure, a deadlock, too many connections, a server starting up);
# a timeout the user set (statement_timeout, lock_timeout) or an exhausted resource is not:
# retrying would multiply the wait by the retry policy's attempts and fail the same way.
SQLSTATE_CODES: dict[str, tuple[type[VectorportError], str]] = {
    "0A000": (UnsupportedFeatureError, "the server does not support this (is pgvector >= 0.8 installed?)"),
    "22P05": (ValidationError, "PostgreSQL text and jsonb cannot hold NUL (U+0000) characters"),
    "23505": (ConflictError, "a row with this key already exists"),
    "25006": (
        ConfigurationError,
        "the connection is read-only (a hot standby, default_transaction_read_only, or a "
        "key_expression=/where= store, whose trusted SQL must only read): write through the "
        "primary server, or make the expression read only",
    ),
    "28000": (ConfigurationError, "check the user name and pg_hba.conf"),
    "28P01": (ConfigurationError, "check the user name and password"),
    "3D000": (NotFoundError, "the database does not exist; create it or fix the URL"),
    "40001": (TransientError, "serialization failure; the call is retried"),
    "40P01": (TransientError, "deadlock detected; the call is retried"),
    "42501": (ConfigurationError, "the role lacks a privilege this operation needs"),
    "42704": (NotFoundError, "an object (type, text search configuration …) does not exist"),
    "42883": (
        UnsupportedFeatureError,
        "a function or operator is missing; is the vector extension installed?",
    ),
    "42P01": (NotFoundError, Advised.of("the table does not exist; {}", Step(Action.CREATE_TABLE))),
    "42P07": (ConflictError, "the table already exists"),
    "53100": (BackendError, "the server's disk is full; free space on it, then retry"),
    "53200": (
        BackendError,
        "the server ran out of memory; lower maintenance_work_mem (an index build) or work_mem",
    ),
    "53300": (TransientError, "too many connections; the call is retried"),
    "53400": (BackendError, "a server configuration limit was exceeded; raise it on the server"),
    "55P03": (
        BackendError,
        "a lock held by another session outlasted lock_timeout (not retried: the timeout is "
        "your limit); retry later, or raise it, e.g. options=-c%20lock_timeout%3D30s in a "
        "postgresql:// URL or ALTER ROLE … SET lock_timeout",
    ),
    "57014": (
        BackendError,
        "the statement ran past statement_timeout or was cancelled (not retried: the timeout is "
        "your limit); raise it, e.g. options=-c%20statement_timeout%3D60s in a postgresql:// URL "
        "or ALTER ROLE … SET statement_timeout, or narrow the call",
    ),
    "57P01": (BackendUnavailableError, "the server is shutting down"),
    "57P03": (TransientError, "the server is starting up; the call is retried"),
}
SQLSTATE_CLASSES: dict[str, tuple[type[VectorportError], str]] = {
    "08": (TransientError, "the connection was lost; the call is retried on a new connection"),
    "22": (ValidationError, "PostgreSQL rejected a value"),
    "23": (ConflictError, "an integrity constraint was violated"),
    "40": (TransientError, "the transaction was rolled back; the call is retried"),
    "53": (BackendError, "the server is out of resources"),
    "54": (UnsupportedFeatureError, "a PostgreSQL limit was exceeded"),
}


# libpq reports a failed connection attempt without a SQLSTATE (psycopg's sqlstate is None),
# even when the server refused it with a FATAL error: the server's message tells which. These
# are PostgreSQL's own (English) texts; a server with other lc_messages falls through to the
# generic "cannot reach" class.
CONNECT_FAILURES: tuple[tuple[re.Pattern[str], type[VectorportError], str], ...] = tuple(
    (re.compile(pattern), cls, hint)
    for pattern, cls, hint in (
        (
            r"the database system is (starting up|in recovery mode|not yet accepting connections)",
            TransientError,
            "the server is starting up (it recovers after a crash or restart); the call is retried",
        ),
        (
            r"password authentication failed",
            ConfigurationError,
            "check the user name and password in the URL",
        ),
        (
            r"no password supplied",
            ConfigurationError,
            "the server wants a password: put it in the URL, PGPASSWORD or ~/.pgpass",
        ),
        (
            r'database "[^"]*" does not exist',
            NotFoundError,
            "the database does not exist; create it or fix the URL",
        ),
        (r'role "[^"]*" does not exist', ConfigurationError, "no such user on this server; check the URL"),
        (
            r"no pg_hba\.conf entry",
            ConfigurationError,
            "the server's pg_hba.conf does not admit this user/host",
        ),
        (r"authentication failed", ConfigurationError, "check the credentials in the URL"),
        (r"server does not support ssl", ConfigurationError, "connect with sslmode=disable or prefer"),
    )
)


_WRITES = frozenset({"bulk load", "delete", "upsert"})
LOST_HINT = "the connection to the server was lost; the call is retried on a new connection"
# psycopg's prefix for a connection attempt that failed; the rest is libpq's reason
_BAD = re.compile(r"^connection is bad:\s*", re.IGNORECASE)


def _scrub(text: str, secret: str | None) -> str:
    return text.replace(secret, "***") if secret else text


def _classify(exc: psycopg.Error, lost: Callable[[], bool] | None) -> tuple[type[VectorportError], str]:
    state = exc.sqlstate or ""
    if isinstance(exc, psycopg.OperationalError) and lost is not None and lost():
        # the session is gone (server restarted or killed, idle_session_timeout, a backend
        # crash), whatever SQLSTATE its last words had: a new connection may well succeed
        return TransientError, LOST_HINT
    if state in SQLSTATE_CODES:
        return SQLSTATE_CODES[state]
    if state[:2] in SQLSTATE_CLASSES:
        return SQLSTATE_CLASSES[state[:2]]
    if isinstance(exc, psycopg.OperationalError) and not state:
        # No SQLSTATE: libpq failed before or outside a server response (refused, DNS,
        # socket gone, authentication timeout), or the server refused the connection.
        text = str(exc).lower()
        for pattern, cls, hint in CONNECT_FAILURES:
            if pattern.search(text):
                return cls, hint
        return BackendUnavailableError, "is the server running and the URL right?"
    return BackendError, "unexpected PostgreSQL error"


@contextmanager
def pg_errors(
    what: str, where: str, password: str | None = None, lost: Callable[[], bool] | None = None
) -> Iterator[None]:
    """Map any psycopg error raised inside the block; re-raise ``from`` the original.

    ``what`` is the operation (``upsert``), ``where`` the masked URL and table, ``password``
    the secret to scrub from messages; ``lost()`` tells whether the connection the block used
    is now broken (then an operational error is a :class:`TransientError`: the retry opens a
    new connection).
    """
    try:
        yield
    except psycopg.Error as exc:
        cls, hint = _classify(exc, lost)
        text = _BAD.sub("", str(exc).strip())
        detail = _scrub(text.splitlines()[0] if text else type(exc).__name__, password)
        state = f" [SQLSTATE {exc.sqlstate}]" if exc.sqlstate else ""
        message = Advised.of("pgvector {} on {} failed: {}{}; {}", what, where, detail, state, hint)
        err: VectorportError
        if cls is ValidationError:
            outcome = "nothing was written" if what in _WRITES else f"the {what} returned nothing"
            err = ValidationError([Problem(None, "", message)], backend="pgvector", outcome=outcome)
        elif cls is NotFoundError:
            err = NotFoundError(message)
        else:
            err = cls(message)
        raise err from exc
