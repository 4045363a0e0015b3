"""Deliberately broken stores: test doubles of a *store under comparison* (never of the harness),
each a memory store with one realistic defect the gates must catch."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vectorport import Include, Match
from vectorport._models import Vector
from vectorport._url import StoreURL
from vectorport.backends.memory import MemoryStore
from vectorport.filters import FilterNode, evaluate


class PostFilteringStore(MemoryStore):
    """Ranks without the filter, then drops what fails it: the classic under-fill bug."""

    def _search(
        self,
        vector: Vector,
        k: int,
        where: FilterNode | None,
        include: frozenset[Include],
        params: Mapping[str, Any],
    ) -> list[Match]:
        hits = super()._search(vector, k, None, include | {Include.METADATA}, params)
        return [m for m in hits if evaluate(where, m.metadata)]


class LeakyFilterStore(MemoryStore):
    """Ignores the filter entirely: full answers, some of them outside the filter's scope."""

    def _search(
        self,
        vector: Vector,
        k: int,
        where: FilterNode | None,
        include: frozenset[Include],
        params: Mapping[str, Any],
    ) -> list[Match]:
        return super()._search(vector, k, None, include, params)


class DroppingStore(MemoryStore):
    """Never returns one record (as if a migration lost it): the next one fills the gap."""

    dropped: str = ""

    def _search(
        self,
        vector: Vector,
        k: int,
        where: FilterNode | None,
        include: frozenset[Include],
        params: Mapping[str, Any],
    ) -> list[Match]:
        hits = super()._search(vector, k + 1, where, include, params)
        return [m for m in hits if m.key != self.dropped][:k]


def open_double(cls: type[MemoryStore], collection: str, **attrs: Any) -> MemoryStore:
    """A broken double over an existing memory collection (shares its data)."""
    store = cls.from_url(StoreURL.parse(f"memory://{collection}"))
    for name, value in attrs.items():
        setattr(store, name, value)
    store.bind()
    return store


class FailingStore(MemoryStore):
    """Every query fails (a backend down): a comparison of it must never pass."""

    def _search(
        self,
        vector: Vector,
        k: int,
        where: FilterNode | None,
        include: frozenset[Include],
        params: Mapping[str, Any],
    ) -> list[Match]:
        from vectorport.exceptions import BackendError

        raise BackendError("memory: the server went away")
