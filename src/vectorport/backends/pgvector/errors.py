"""psycopg / PostgreSQL errors → vectorport exceptions, through one table keyed by SQLSTATE.

Exact SQLSTATE codes are looked up first, then the two-character class. Messages name the
backend, the table and the operation, and never contain the password (libpq does not echo it,
and :func:`pg_errors` scrubs it anyway in case a DSN ends up in a driver message).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

from ...exceptions import (
    BackendError,
    BackendUnavailableError,
    ConfigurationError,
    ConflictError,
    NotFoundError,
    Problem,
    TransientError,
    UnsupportedFeatureError,
    ValidationError,
    VectorportError,
)

__all__ = ["CONNECT_FAILURES", "SQLSTATE_CLASSES", "SQLSTATE_CODES", "pg_errors"]

# Sorted by code. What to do is in the hint appended to each message.
SQLSTATE_CODES: dict[str, tuple[type[VectorportError], str]] = {
    "0A000": (UnsupportedFeatureError, "the server does not support this (is pgvector >= 0.8 installed?)"),
    "22P05": (ValidationError, "PostgreSQL text and jsonb cannot hold NUL (U+0000) characters"),
    "23505": (ConflictError, "a row with this key already exists"),
    "25006": (
        ConfigurationError,
        "the connection is read-only (a hot standby, or default_transaction_read_only): "
        "write through the primary server",
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
    "42P01": (NotFoundError, "the table does not exist; create the collection with dimension="),
    "42P07": (ConflictError, "the table already exists"),
    "53300": (TransientError, "too many connections; the call is retried"),
    "55P03": (TransientError, "a lock is held by another session; the call is retried"),
    "57014": (TransientError, "the statement was cancelled (statement_timeout?)"),
    "57P01": (BackendUnavailableError, "the server is shutting down"),
    "57P03": (TransientError, "the server is starting up; the call is retried"),
}
SQLSTATE_CLASSES: dict[str, tuple[type[VectorportError], str]] = {
    "08": (TransientError, "the connection was lost; the call is retried on a new connection"),
    "22": (ValidationError, "PostgreSQL rejected a value"),
    "23": (ConflictError, "an integrity constraint was violated"),
    "40": (TransientError, "the transaction was rolled back; the call is retried"),
    "53": (TransientError, "the server is out of resources; the call is retried"),
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


def _scrub(text: str, secret: str | None) -> str:
    return text.replace(secret, "***") if secret else text


def _classify(exc: psycopg.Error) -> tuple[type[VectorportError], str]:
    state = exc.sqlstate or ""
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
def pg_errors(what: str, where: str, password: str | None = None) -> Iterator[None]:
    """Map any psycopg error raised inside the block; re-raise ``from`` the original.

    ``what`` is the operation (``upsert``), ``where`` the masked URL and table, ``password``
    the secret to scrub from messages.
    """
    try:
        yield
    except psycopg.Error as exc:
        cls, hint = _classify(exc)
        detail = _scrub(
            str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__, password
        )
        state = f" [SQLSTATE {exc.sqlstate}]" if exc.sqlstate else ""
        message = f"pgvector {what} on {where} failed: {detail}{state}; {hint}"
        err: VectorportError
        if cls is ValidationError:
            outcome = "nothing was written" if what in _WRITES else f"the {what} returned nothing"
            err = ValidationError([Problem(None, "", message)], backend="pgvector", outcome=outcome)
        elif cls is NotFoundError:
            err = NotFoundError(message)
        else:
            err = cls(message)
        raise err from exc
