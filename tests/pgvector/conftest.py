"""One embedded PostgreSQL + pgvector server for the whole pgvector test session."""

from __future__ import annotations

import itertools
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

_names = itertools.count()


@pytest.fixture(scope="session")
def pg_url(pg_dir: Path) -> Callable[..., str]:
    """``pg_url(table=None, **params)``: a URL of the session server; a fresh table by default."""

    def make(table: str | None = None, **params: object) -> str:
        name = table or f"t{next(_names)}"
        extra = "".join(f"&{k}={v}" for k, v in params.items())
        return f"pgvector://{pg_dir}?table={name}{extra}"

    return make


@pytest.fixture(scope="session")
def pg_uri(pg_dir: Path) -> str:
    """The session server's libpq URI (superuser ``postgres``), as psql takes it."""
    from vectorport.backends.pgvector._embedded import embedded_conninfo

    return embedded_conninfo(pg_dir)


@pytest.fixture
def admin(pg_uri: str) -> Iterator[Any]:
    """A plain psycopg connection (autocommit) of the session server: not vectorport's."""
    import psycopg

    with psycopg.connect(pg_uri, autocommit=True) as conn:
        yield conn


def uri_for(pg_uri: str, user: str = "postgres", password: str = "", **params: str) -> str:
    """``pg_uri`` with another user (and password) and extra URI parameters."""
    from urllib.parse import quote, urlsplit, urlunsplit

    parts = urlsplit(pg_uri)
    netloc = quote(user, safe="") + (":" + quote(password, safe="") if password else "") + "@"
    query = "&".join([parts.query, *(f"{k}={quote(v, safe='')}" for k, v in params.items())])
    return urlunsplit(parts._replace(netloc=netloc, query=query.strip("&")))


def run_psql(uri: str, sql: str) -> list[str]:
    """Rows of ``psql -At`` (one string per row, fields joined by ``|``); skips without psql."""
    psql = shutil.which("psql")
    if psql is None:
        pytest.skip("psql is not installed")
    out = subprocess.run(
        [psql, "-X", "-v", "ON_ERROR_STOP=1", "-At", "-d", uri, "-c", sql],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()
