"""Real backends for the migration tests: one embedded PostgreSQL, one local bucket server and
one Chroma directory per session, each started only when a test asks for it and skipped when
its backend package is absent.

The servers themselves are the shared session fixtures of ``tests/conftest.py``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

_names = itertools.count()


_sources: dict[str, tuple[str, list[Any]]] = {}


@pytest.fixture
def loaded_source(url_for: Callable[..., str]) -> Callable[[str], tuple[str, list[Any]]]:
    """``loaded_source(backend)``: a URL holding the 5k tricky records as that backend can hold
    them (what it cannot hold stringified), loaded once per session, and those records. Tests
    must not write to it."""
    import vectorport

    from ._migrate_data import DIM, N, fit_to, tricky_records

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
