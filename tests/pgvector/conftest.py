"""One embedded PostgreSQL + pgvector server for the whole pgvector test session."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

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
