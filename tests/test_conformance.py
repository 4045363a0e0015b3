"""The shared conformance kit (:class:`vectorport.testing.StoreConformance`) on every test
target of every registered backend, read from the ``vectorport.backends`` entry points: a new
backend runs it with no line here. ``pytest -m NAME`` runs it on that backend alone."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import vectorport
from vectorport.exceptions import NotInstalledError
from vectorport.testing import StoreConformance
from vectorport.testing.backends import ServerPool, conformance_params
from vectorport.testing.conformance import StoreLoader


class TestConformance(StoreConformance):
    @pytest.fixture(scope="class", params=conformance_params())
    @classmethod
    def target(cls, request: pytest.FixtureRequest, vectorport_servers: ServerPool) -> str:
        try:
            vectorport_servers.handle(request.param)
        except NotInstalledError as exc:
            pytest.skip(str(exc))
        return str(request.param)

    @pytest.fixture(scope="class")
    @classmethod
    def store_factory(
        cls, target: str, vectorport_servers: ServerPool
    ) -> Callable[[int, str], vectorport.VectorStore]:
        return vectorport_servers.factory(target)

    @pytest.fixture(scope="class")
    @classmethod
    def store_loader(cls, target: str, vectorport_servers: ServerPool) -> StoreLoader | None:
        return vectorport_servers.loader(target)
