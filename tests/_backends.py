"""The real backends every cross-backend test runs on (memory, the reference, is not one).

A new backend is added here, given a branch in ``url_for`` (``tests/conftest.py``) and a pytest
marker of the same name (``pyproject.toml``): the parametrized ingest and migration tests then
run on it, and ``pytest -m NAME`` selects exactly the tests that touch it.
"""

from __future__ import annotations

from typing import Any

import pytest

__all__ = ["BACKENDS", "backend_pairs", "each_backend"]

BACKENDS = ("chroma", "pgvector", "s3vectors")


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
