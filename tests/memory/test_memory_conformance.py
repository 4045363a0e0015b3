import itertools
from collections.abc import Callable

import pytest

import vectorport
from vectorport.testing import StoreConformance

pytestmark = pytest.mark.memory


class TestMemoryConformance(StoreConformance):
    @pytest.fixture(scope="class")
    @classmethod
    def store_factory(cls) -> Callable[[int, str], vectorport.VectorStore]:
        names = itertools.count()
        return lambda dim, metric: vectorport.connect(
            f"memory://conformance-{next(names)}", dimension=dim, metric=metric
        )
