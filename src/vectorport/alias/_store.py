"""``alias://NAME?registry=REG``: a store that routes each call to the alias's members.

Reads go to the serving member; a sample of the queries is shadowed by the others
(:mod:`._shadow`); writes go to the serving member, then to every dual-write member
(:mod:`._writes`). Which member serves is read from the registry at most every
:data:`~._routing.CHECK_INTERVAL` seconds (:mod:`._routing`). The store is a router: it is a
:class:`~vectorport.BaseStore` so that ``connect``, ``aconnect`` and the framework adapters open
it like any store (validation, batching and filter parsing run once, here), and each primitive
calls a member's public methods.

**Texts and models.** :meth:`AliasStore.query_text` and :meth:`AliasStore.add_texts` (what
``LangChainStore`` and ``LlamaIndexStore`` call on an alias) embed the text with the serving
member's own model; a shadowed query is embedded again by each candidate's model, a written text
by each dual-write member's (:mod:`._embedding`). A vector given by the app is taken to be in the
model the alias served when this process first used it: once a switch makes another model serve,
a vector query or write is refused (never answered in the wrong space) — ask by text.
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
from .._models import CollectionSpec, Include, Match, Metric, QueryResult, Record, Vector
from .._protocol import VectorStore
from .._retry import RetryPolicy
from .._url import StoreURL
from .._validate import Batch
from ..exceptions import (
    Advice,
    Advised,
    Call,
    ConfigurationError,
    ConflictError,
    UnsupportedFeatureError,
    VectorportError,
)
from ..filters import ALL_OPERATORS, FilterNode, parse_filter
from ..ingest.embedders import same_model
from ._embedding import Embedders, reembedded
from ._idle import Activity
from ._registry import Registry
from ._routing import CHECK_INTERVAL, Router, Routing
from ._shadow import Shadow, ShadowQuery
from ._writes import Op, repair, write

__all__ = ["AliasStore"]

_TEXT_READ = (Include.METADATA, Include.TEXT)


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
        self.embedders = Embedders()
        self.activity = Activity()
        """The app's calls in flight: the shadow thread asks members between them."""
        self.shadow = Shadow(registry, alias, self._repair, self.embedders, activity=self.activity)
        self._vector_model: str | None = None
        """The model of the app's vectors: the serving one when this process first routed."""
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
        if self._vector_model is None:
            self._vector_model = routing.state.serving.embedding_model or ""
        self.shadow.start()  # the repair queue runs in its thread
        return routing

    def _vector_route(self) -> Routing:
        """The routing for a call that brings the app's own vectors: refused when another model
        than theirs serves now."""
        routing = self._route()
        serving = routing.state.serving.embedding_model
        if self._vector_model and serving and not same_model(self._vector_model, serving):
            raise ConfigurationError(
                f"alias {self.collection!r} now serves vectors of {serving}, and this process's vectors "
                f"come from {self._vector_model}: query and write by text (query_text, add_texts, "
                "LangChainStore, LlamaIndexStore), which the alias embeds with each member's model"
            )
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
        raise ConfigurationError(
            Advised.of(
                "create alias {!r} with `{}`",
                self.collection,
                Call("alias create", (self.collection,), (Advice("serve", "URL"),)),
            )
        )

    def _drop_collection(self) -> None:
        raise UnsupportedFeatureError(
            Advised.of(
                "alias {!r}: drop a member by its own URL, after `{}`",
                self.collection,
                Call("alias retire", (self.collection, "URL")),
            )
        )

    def list_collections(self) -> list[str]:
        return self.registry.names()

    # ----------------------------------------------------------------- writes
    def _write(self, batch: Batch) -> None:
        with self.activity.call():
            write(self.registry, self._vector_route(), Op("upsert", records=list(batch.records())))

    def add_texts(
        self, keys: Sequence[str], texts: Sequence[str], metadatas: Sequence[Mapping[str, Any]]
    ) -> None:
        """Upsert records by their text, embedded with the serving member's own model (each
        other member's model embeds it for that member)."""
        with self.activity.call():
            routing = self._route()
            bare = [Record(k, None, dict(m), t) for k, t, m in zip(keys, texts, metadatas, strict=True)]
            records = reembedded(bare, self.embedders.of(routing.state.serving))
            write(self.registry, routing, Op("upsert", records=records))

    def _remove(self, keys: Sequence[str]) -> None:
        with self.activity.call():
            write(self.registry, self._route(), Op("delete", keys=keys))

    def _repair(self, registry: Registry) -> None:
        """The repair queue's round, on the shadow thread's own registry connection."""
        if self._spec is not None and registry.repair_count(self.collection):
            repair(registry, self.router.current(), self.embedders)

    # ----------------------------------------------------------------- reads
    def _read(self, keys: Sequence[str], include: frozenset[Include]) -> list[Record]:
        with self.activity.call():
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
        with self.activity.call():
            return list(self._served(self._vector_route(), vector, k, where, include, params).matches)

    @property
    def text_model(self) -> str:
        """The model a text query is embedded with now: the serving member's; empty when it
        records none that vectorport runs (the app then embeds, with its own function)."""
        serving = self._route().state.serving
        try:
            self.embedders.of(serving)
        except ConfigurationError:
            return ""
        return serving.embedding_model or ""

    def query_text(
        self,
        text: str,
        k: int = 10,
        *,
        filter: Any = None,
        include: Sequence[Include] = _TEXT_READ,
    ) -> QueryResult:
        """The ``k`` records nearest to ``text``, embedded with the serving member's own model
        (a shadowing member of another model embeds it with its own)."""
        with self.activity.call():
            routing = self._route()
            where = None if filter is None else parse_filter(filter)
            vector = self.embedders.of(routing.state.serving).embed_query(text)
            return self._served(routing, vector, k, where, frozenset(include), {}, text)

    def _served(
        self,
        routing: Routing,
        vector: Any,
        k: int,
        where: FilterNode | None,
        include: frozenset[Include],
        params: Mapping[str, Any],
        text: str | None = None,
    ) -> QueryResult:
        """The serving member's answer; a sample offered to the shadow thread."""
        asked = sorted(include)
        started = time.perf_counter()
        served = routing.serving.query(vector, k, filter=where, include=asked, params=params)
        ms = (time.perf_counter() - started) * 1000
        # decided before anything is built: an unsampled query costs one random draw
        if routing.shadowing and (routing.state.sample >= 1.0 or random.random() < routing.state.sample):
            query = ShadowQuery(
                routing, vector, k, where, params, served, ms, time.time(), text, tuple(asked)
            )
            self.shadow.offer(query)
        return served

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
        with self.activity.call():
            return self._route().serving.count()

    # ----------------------------------------------------------------- the rest
    def member_stores(self) -> list[tuple[str, VectorStore, str | None]]:
        """Each opened member: its label, store and recorded embedding model (``doctor`` checks
        which model each one's vectors come from: :class:`~vectorport.ingest.canaries.HasMembers`)."""
        routing = self._route()
        return [
            (m.label, routing.stores[m.url], m.embedding_model)
            for m in routing.state.members
            if m.url in routing.stores
        ]

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
