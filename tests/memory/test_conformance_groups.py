"""The conformance kit's groups compose: :class:`StoreConformance` is exactly the union of its
mixins' tests, and a backend can run one group alone (here the scans, on memory)."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

import vectorport
from vectorport.testing.conformance import (
    ConformanceFixtures,
    DeclarationTests,
    InputTests,
    OracleTests,
    QueryTests,
    ScanTests,
    StoreConformance,
    WriteTests,
)

pytestmark = pytest.mark.memory

GROUPS = (DeclarationTests, WriteTests, InputTests, ScanTests, QueryTests, OracleTests)


def _tests(cls: type) -> set[str]:
    return {name for name in dir(cls) if name.startswith("test_")}


def test_the_suite_is_the_union_of_its_groups_and_no_test_is_in_two() -> None:
    assert _tests(ConformanceFixtures) == set()
    owned = [set(vars(group)) & _tests(group) for group in GROUPS]
    assert set().union(*owned) == _tests(StoreConformance)
    for a, b in itertools.combinations(owned, 2):
        assert not a & b


class TestScansAlone(ScanTests):
    @pytest.fixture(scope="class")
    @classmethod
    def store_factory(cls) -> Callable[[int, str], vectorport.VectorStore]:
        names = itertools.count()
        return lambda dim, metric: vectorport.connect(
            f"memory://conf-groups-{next(names)}", dimension=dim, metric=metric
        )


def test_a_group_alone_runs_only_its_own_tests() -> None:
    assert _tests(TestScansAlone) == _tests(ScanTests)
    assert not _tests(TestScansAlone) & _tests(WriteTests)
