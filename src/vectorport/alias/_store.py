"""``alias://NAME?registry=REG``: a store that routes each call to the alias's members.

Reads go to the serving member; a sample of the queries is shadowed by the others
(:mod:`._shadow`); writes go to the serving member, then to every dual-write member
(:mod:`._writes`). Which member serves is read from the registry at most every
:data:`~._routing.CHECK_INTERVAL` seconds (:mod:`._routing`). The store is a router: it is a
:class:`~vectorport.BaseStore` so that ``connect``, ``aconnect`` and the framework adapters open
it like any store (validation, batching and filter parsing run once, here), and each primitive
calls a member's public methods.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar, Self

from .._base import BaseStore
from .._capabilities import Capabilities
from .._cursor import Position
from .._features import Feature
from .._models import CollectionSpec, Include, Match, Metric, Record, Vector
from .._retry import RetryPolicy
from .._url import StoreURL
from .._validate import Batch
from ..exceptions import ConfigurationError, ConflictError, UnsupportedFeatureError, VectorportError
from ..filters import ALL_OPERATORS, FilterNode
from ._model import Phase
from ._registry import Registry
from ._routing import CHECK_INTERVAL, Router, Routing
from ._shadow import Shadow, ShadowQuery
from ._writes import Op, repair, write

__all__ = ["AliasStore"]


class AliasStore(BaseStore[FilterNode]):
    """The store an app connects to once; the registry decides which member answers."""

    name: ClassVar[str] = "alias"
    capabilities: ClassVar[Capabilities] = Capabilities(
        # the declaration bounds nothing: a bound alias can do what its serving member can
        # (_collection_capabilities)
        metrics=frozenset(Metric),
        max_dimension=65_536,
        max_write_batch=10_000,
        max_read_batch=10_000,
        max_delete_batch=10_000,
        max_scan_page=10_000,
        exact=False,  # as exact as the member serving it, which the class does not know
        filter_operators=frozenset(ALL_OPERATORS),
        features=frozenset({Feature.WRITE}),
    )
    url_params: ClassVar[frozenset[str]] = frozenset({"registry"})

    def __init__(
        self, url: StoreURL, alias: str, registry: Registry, interval: float = CHECK_INTERVAL
    ) -> None:
        # a member retries its own calls; retrying here would repeat a dual-write
        super().__init__(url, alias, retry=RetryPolicy(attempts=1))
        self.registry = registry
        self.router = Router(registry, alias, interval)
        self.shadow = Shadow(registry, alias, self._repair)
        self.served_by: str | None = None
        """The URL of the member that served this process's latest call (for tests and logs)."""

    @classmethod
    def from_url(cls, url: StoreURL, **options: Any) -> Self:
        alias = (url.host or "") + url.path.strip("/")
        if not alias:
            raise ConfigurationError(f"no alias name in {url.masked}; write alias://NAME?registry=REG")
        if options:
            raise ConfigurationError(f"alias stores take no options (got {', '.join(sorted(options))})")
        return cls(url, alias, Registry(url.param("registry")))

    def _route(self) -> Routing:
        routing = self.router.current()
        self.served_by = routing.state.serving.url
        self.shadow.start()  # the repair queue runs in its thread
        return routing

    def _collection_capabilities(self, declared: Capabilities) -> Capabilities:
        if self._spec is None:
            return declared
        serving = self._route().serving.capabilities
        return replace(serving, features=serving.features & declared.features)

    # ----------------------------------------------------------------- collection
    def _describe_collection(self) -> CollectionSpec | None:
        self.registry.require(self.collection)
        spec = self._route().serving.spec
        return replace(spec, name=self.collection)

    def _create_collection(self, spec: CollectionSpec) -> None:  # pragma: no cover - require() raised
        raise ConfigurationError(f"create alias {self.collection!r} with `vectorport alias create`")

    def _drop_collection(self) -> None:
        raise UnsupportedFeatureError(
            f"alias {self.collection!r}: drop a member by its own URL, after `vectorport alias retire`"
        )

    def list_collections(self) -> list[str]:
        return self.registry.names()

    # ----------------------------------------------------------------- writes
    def _write(self, batch: Batch) -> None:
        write(self.registry, self._route(), Op("upsert", records=list(batch.records())))

    def _remove(self, keys: Sequence[str]) -> None:
        write(self.registry, self._route(), Op("delete", keys=keys))

    def _repair(self) -> None:
        if self._spec is not None and self.registry.repair_count(self.collection):
            repair(self.registry, self.router.current())

    # ----------------------------------------------------------------- reads
    def _read(self, keys: Sequence[str], include: frozenset[Include]) -> list[Record]:
        return self._route().serving.get(keys, include=sorted(include))

    def _compile_filter(self, where: FilterNode) -> FilterNode:
        if self._spec is not None:
            self._route().serving.check_filter(where)
        return where

    def _search(
        self,
        vector: Vector,
        k: int,
        where: FilterNode | None,
        include: frozenset[Include],
        params: Mapping[str, Any],
    ) -> list[Match]:
        routing = self._route()
        started = time.perf_counter()
        served = routing.serving.query(vector, k, filter=where, include=sorted(include), params=params)
        ms = (time.perf_counter() - started) * 1000
        if routing.state.phase is not Phase.SERVING and routing.shadowed():
            sample = routing.state.sample
            if sample >= 1.0 or random.random() < sample:
                self.shadow.offer(ShadowQuery(routing, vector, k, where, params, served, ms, time.time()))
        return list(served.matches)

    def _scan_page(
        self, limit: int, include: frozenset[Include], segment: tuple[int, int], after: Position | None
    ) -> tuple[Sequence[Record], Position | None]:
        routing = self._route()
        url = routing.state.serving.url
        if after is not None and after.get("member") != url:
            raise ConflictError(
                f"alias {self.collection!r} switched its serving store during this scan; scan again"
            )
        cursor = None if after is None else str(after["cursor"])
        pages = routing.serving.scan(
            batch_size=limit, include=sorted(include), segment=segment, cursor=cursor
        )
        page = next(iter(pages))
        return page.records, None if page.cursor is None else {"member": url, "cursor": page.cursor}

    def _count(self) -> int:
        return self._route().serving.count()

    # ----------------------------------------------------------------- the rest
    def info(self) -> dict[str, Any]:
        state = self._route().state
        members = [{"url": m.label, "role": m.role.value, "feed": m.feed.value} for m in state.members]
        return super().info() | {
            "alias": {"phase": state.phase.value, "version": state.version, "members": members}
        }

    def close(self) -> None:
        with contextlib.suppress(VectorportError):  # the registry went away: the log is lost
            self.shadow.close()
        self.router.close()
        self.registry.close()
