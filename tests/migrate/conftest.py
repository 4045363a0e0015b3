"""Real backends for the migration tests: one embedded PostgreSQL, one local bucket server and
one Chroma directory per session, each started only when a test asks for it and skipped when
its backend package is absent.

These mirror the fixtures of ``tests/pgvector/conftest.py`` and ``tests/s3vectors/conftest.py``;
see the note in docs/migrate.md about moving them to a shared module.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

BACKENDS = ("chroma", "pgvector", "s3vectors")
_names = itertools.count()


@pytest.fixture(scope="session")
def pg_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    pytest.importorskip("psycopg")
    pytest.importorskip("vectorport.backends.pgvector")
    from vectorport.backends.pgvector._embedded import stop_embedded

    import vectorport

    data = tmp_path_factory.mktemp("mig-pg") / "data"
    warm = vectorport.connect(f"pgvector://{data}?table=warmup", dimension=2)
    warm.drop()
    warm.close()
    yield data
    stop_embedded(data)


@pytest.fixture(scope="session")
def bucket_server() -> Iterator[Any]:
    pytest.importorskip("boto3")
    server_mod = pytest.importorskip("vectorport.backends.s3vectors.server")
    srv = server_mod.LocalServer()
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def chroma_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("chromadb")
    pytest.importorskip("vectorport.backends.chroma")
    return tmp_path_factory.mktemp("mig-chroma")


@pytest.fixture(scope="session")
def url_for(request: pytest.FixtureRequest) -> Callable[..., str]:
    """``url_for(backend, name=None, **params)``: a URL of a fresh collection on that backend's
    session server (the server starts on first use)."""

    def make(backend: str, name: str | None = None, **params: Any) -> str:
        coll = name or f"mig{next(_names)}"
        extra = "".join(f"&{k}={v}" for k, v in params.items())
        if backend == "pgvector":
            return f"pgvector://{request.getfixturevalue('pg_dir')}?table={coll}{extra}"
        if backend == "chroma":
            return f"chroma://{request.getfixturevalue('chroma_dir')}?collection={coll}{extra}"
        if backend == "s3vectors":
            srv = request.getfixturevalue("bucket_server")
            return f"s3vectors://migrate/{coll}?endpoint_url={srv.url}{extra}"
        raise ValueError(backend)

    return make


_sources: dict[str, tuple[str, list[Any]]] = {}


@pytest.fixture
def loaded_source(url_for: Callable[..., str]) -> Callable[[str], tuple[str, list[Any]]]:
    """``loaded_source(backend)``: a URL holding the 5k tricky records as that backend can hold
    them (what it cannot hold stringified), loaded once per session, and those records. Tests
    must not write to it."""
    from ._migrate_data import DIM, N, fit_to, tricky_records

    import vectorport

    def get(backend: str) -> tuple[str, list[Any]]:
        if backend not in _sources:
            url = url_for(backend, f"src-{backend}")
            store = vectorport.connect(url, dimension=DIM)
            records = fit_to(tricky_records(N, DIM), store.capabilities.metadata)
            store.upsert(records)
            assert store.count() == N
            store.close()
            _sources[backend] = (url, records)
        return _sources[backend]

    return get
