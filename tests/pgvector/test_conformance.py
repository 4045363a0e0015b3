"""pgvector's two conformance targets (HNSW, and ``index=exact``) run the shared kit from
``tests/test_conformance.py``; here, what the exact one declares."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import vectorport

pytestmark = pytest.mark.pgvector


def test_exact_mode_declares_exact(pg_url: Callable[..., str]) -> None:
    store = vectorport.connect(pg_url(index="exact"), dimension=3, metric="dot")
    try:
        assert store.capabilities.exact and store.capabilities.recall_tolerance == 1.0
    finally:
        store.drop()
        store.close()
