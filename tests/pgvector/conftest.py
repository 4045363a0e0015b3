"""One embedded PostgreSQL + pgvector server for the whole pgvector test session."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import vectorport

_names = itertools.count()


@pytest.fixture(scope="session")
def pg_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The data directory of a real server started once (and stopped at the end)."""
    from vectorport.backends.pgvector._embedded import stop_embedded

    data = tmp_path_factory.mktemp("pgvector") / "data"
    store = vectorport.connect(f"pgvector://{data}?table=warmup", dimension=2)
    store.drop()
    store.close()
    yield data
    stop_embedded(data)


@pytest.fixture(scope="session")
def pg_url(pg_dir: Path) -> Callable[..., str]:
    """``pg_url(table=None, **params)``: a URL of the session server; a fresh table by default."""

    def make(table: str | None = None, **params: object) -> str:
        name = table or f"t{next(_names)}"
        extra = "".join(f"&{k}={v}" for k, v in params.items())
        return f"pgvector://{pg_dir}?table={name}{extra}"

    return make
