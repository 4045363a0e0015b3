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


class TestS3VectorsLayoutConformance(StoreConformance):
    """The whole kit again with the text where each framework keeps it."""

    @pytest.fixture(scope="class", params=["langchain", "llamaindex", "s3vectors-embed-cli"])
    @classmethod
    def layout(cls, request: pytest.FixtureRequest) -> str:
        return str(request.param)

    @pytest.fixture(scope="class")
    @classmethod
    def store_factory(cls, endpoint: str, layout: str) -> Callable[[int, str], vectorport.VectorStore]:
        names = itertools.count()
        return lambda dim, metric: vectorport.connect(
            f"s3vectors://conformance/{layout[:5]}-{next(names)}?endpoint_url={endpoint}&write_rate=0"
            f"&layout={layout}",
            dimension=dim,
            metric=metric,
        )
