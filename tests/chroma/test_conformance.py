"""The shared conformance kit against embedded Chroma and a real ``chroma run`` server."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import vectorport
from vectorport.testing import StoreConformance

pytestmark = pytest.mark.chroma

StoreMaker = Callable[[int, str], vectorport.VectorStore]


class TestEmbeddedConformance(StoreConformance):
    @pytest.fixture(scope="class")
    @classmethod
    def store_factory(cls, embedded_url: Callable[[], str]) -> StoreMaker:
        return lambda dim, metric: vectorport.connect(embedded_url(), dimension=dim, metric=metric)


class TestServerConformance(StoreConformance):
    @pytest.fixture(scope="class")
    @classmethod
    def store_factory(cls, server_url: Callable[[], str]) -> StoreMaker:
        return lambda dim, metric: vectorport.connect(server_url(), dimension=dim, metric=metric)
