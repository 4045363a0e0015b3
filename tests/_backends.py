"""The backends every cross-backend test runs on, in one table: a new backend is one entry here
(its name, which is also its pytest marker, and how to make the URL of a fresh collection on its
session server). ``url_for`` (``tests/conftest.py``) reads the table, the markers are registered
from it, and the parametrized ingest and migration tests run on every real backend in it;
``pytest -m NAME`` selects exactly the tests that touch that backend.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

__all__ = ["BACKENDS", "URLS", "backend_pairs", "each_backend"]

UrlMaker = Callable[[Callable[[str], Any], str, str], str]
"""``make(fixture, collection, extra_params)``: ``fixture(name)`` gets a session fixture."""

URLS: dict[str, UrlMaker] = {
    "memory": lambda fx, coll, extra: f"memory://{coll}",
    "pgvector": lambda fx, coll, extra: f"pgvector://{fx('pg_dir')}?table={coll}{extra}",
    "chroma": lambda fx, coll, extra: f"chroma://{fx('chroma_dir')}?collection={coll}{extra}",
    "s3vectors": lambda fx, coll, extra: (
        f"s3vectors://tests/{coll}?endpoint_url={fx('bucket_server').url}{extra}"
    ),
}
"""Backend → URL of a fresh collection. ``memory`` is the reference, not one of ``BACKENDS``."""

VARIANTS: dict[str, UrlMaker] = {
    "chroma+http": lambda fx, coll, extra: f"chroma+http://{fx('chroma_server')}?collection={coll}{extra}",
}
"""Other URL forms of a backend in ``URLS`` (same marker as the backend)."""

BACKENDS = tuple(name for name in URLS if name != "memory")


def _param(*backends: str) -> Any:
    """A ``pytest.param`` of these backends, carrying each one's marker (id ``a`` or ``a-to-b``)."""
    marks = [getattr(pytest.mark, b) for b in backends]
    return pytest.param(*backends, marks=marks, id="-to-".join(backends))


def each_backend() -> list[Any]:
    """One param per backend."""
    return [_param(b) for b in BACKENDS]


def backend_pairs() -> list[Any]:
    """Every ordered pair of different backends."""
    return [_param(a, b) for a in BACKENDS for b in BACKENDS if a != b]
