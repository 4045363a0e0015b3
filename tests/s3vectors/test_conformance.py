"""The shared conformance kit over the adapter and the local server."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

import vectorport
from vectorport.testing import StoreConformance

pytestmark = pytest.mark.s3vectors


class TestS3VectorsConformance(StoreConformance):
    @pytest.fixture(scope="class")
    @classmethod
    def store_factory(cls, endpoint: str) -> Callable[[int, str], vectorport.VectorStore]:
        names = itertools.count()
        return lambda dim, metric: vectorport.connect(
            f"s3vectors://conformance/c-{next(names)}?endpoint_url={endpoint}&write_rate=0",
            dimension=dim,
            metric=metric,
        )
