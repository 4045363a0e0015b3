"""The interop tests' fixtures: a database of its own (``interop``) on the session's embedded
PostgreSQL (``tests/pgvector/conftest.py``), so the owners' tables never meet the other tests'
ones, and the tables of ``pg_tables.py`` in it, each built once by its owner on first use."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.pgvector.conftest import pg_uri

from .pg_tables import DATABASE, Tables

__all__ = ["interop_uri", "pg_tables", "pg_uri", "plain"]


@pytest.fixture(scope="session")
def interop_uri(pg_uri: str) -> str:
    """libpq URI of the ``interop`` database, created empty (with the vector extension) once."""
    import psycopg

    with psycopg.connect(pg_uri, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {DATABASE}")
    uri = urlunsplit(urlsplit(pg_uri)._replace(path=f"/{DATABASE}"))
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION vector")
    return uri


@pytest.fixture(scope="session")
def pg_tables(interop_uri: str, pg_dir: Path) -> Tables:
    """``pg_tables.get(name)``: a table of ``pg_tables.SPECS``, built in the ``interop``
    database (the test skips when that table's client is not installed: the interop extra);
    ``pg_tables.url`` is the vectorport URL of that database."""
    return Tables(interop_uri, f"pgvector://{pg_dir}?database={DATABASE}", pytest.importorskip)


@pytest.fixture
def plain(interop_uri: str) -> Iterator[Any]:
    """A plain psycopg connection to the ``interop`` database (autocommit): vectors travel as
    text, nothing of vectorport's."""
    import psycopg

    with psycopg.connect(interop_uri, autocommit=True) as conn:
        yield conn
