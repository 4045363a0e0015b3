"""The shared conformance kit, on a real embedded server: exact mode (no vector index) and
HNSW mode (iterative scans, recall tolerance 0.95)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import vectorport
from vectorport.testing import StoreConformance

pytestmark = pytest.mark.pgvector


class TestPgVectorExact(StoreConformance):
    @pytest.fixture(scope="class")
    @classmethod
    def store_factory(cls, pg_url: Callable[..., str]) -> Callable[[int, str], vectorport.VectorStore]:
        return lambda dim, metric: vectorport.connect(pg_url(index="exact"), dimension=dim, metric=metric)

    def test_exact_mode_declares_exact(
        self, store_factory: Callable[[int, str], vectorport.VectorStore]
    ) -> None:
        store = store_factory(3, "dot")
        try:
            assert store.capabilities.exact and store.capabilities.recall_tolerance == 1.0
        finally:
            store.drop()
            store.close()


class TestPgVectorHnsw(StoreConformance):
    @pytest.fixture(scope="class")
    @classmethod
    def store_factory(cls, pg_url: Callable[..., str]) -> Callable[[int, str], vectorport.VectorStore]:
        return lambda dim, metric: vectorport.connect(pg_url(), dimension=dim, metric=metric)
