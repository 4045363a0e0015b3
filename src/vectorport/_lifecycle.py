"""The half of the implementer template that is about the collection, not its records:
:class:`StoreLifecycle`, which :class:`vectorport.BaseStore` extends.

A store class declares what it is (``name``, ``capabilities``, the URL parameters it reads,
which processes may open it) and a store object holds at most one collection, which
:meth:`StoreLifecycle.bind` opens (or creates), checks, and :meth:`StoreLifecycle.drop`
deletes. A backend implements four primitives here (``from_url``, ``_describe_collection``,
``_create_collection``, ``_drop_collection``) and ``list_collections``; the record primitives
are :class:`~vectorport.BaseStore`'s.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from dataclasses import replace
from typing import Any, ClassVar, Self

from ._capabilities import Capabilities
from ._features import protocol_features
from ._models import CollectionSpec, Metric
from ._retry import RetryPolicy
from ._suggest import what_exists
from ._url import StoreURL
from .exceptions import (
    Action,
    Advised,
    ConfigurationError,
    NotFoundError,
    Step,
    UnsupportedFeatureError,
    VectorportError,
)

__all__ = ["StoreLifecycle", "made_concurrently"]

log = logging.getLogger("vectorport")


class _CapabilitiesSlot:
    """``Store.capabilities`` is the backend's declaration; ``store.capabilities`` is what the
    bound collection can do (:meth:`StoreLifecycle._collection_capabilities`, by default the
    same)."""

    def __init__(self, declared: Capabilities) -> None:
        self.declared = declared

    def __get__(self, obj: StoreLifecycle | None, owner: type) -> Capabilities:
        if obj is None:
            return self.declared
        return obj._collection_capabilities(self.declared)


class StoreLifecycle(ABC):
    """A store class's declaration and its one collection's lifecycle (see the module
    docstring). Subclass :class:`vectorport.BaseStore`, not this.

    ``capabilities`` is declared once on the class. Its ``features`` (a set of
    :class:`~vectorport.Feature`) are the feature protocols the class implements, derived here
    (:mod:`vectorport._features`), plus the others (``NATIVE_COUNT``, ``WRITE`` …) as declared. A
    backend whose collections can do less than the backend (an exact pgvector table, a table
    without a text column) overrides :meth:`_collection_capabilities`; the class attribute stays
    the declaration.
    """

    name: ClassVar[str]
    capabilities: ClassVar[Capabilities]
    url_params: ClassVar[frozenset[str]] = frozenset()
    """The query parameters this backend's URLs may carry. Every store is made through
    :func:`vectorport._registry.open_url`, which refuses any other (a typo would otherwise be
    ignored) before the store is made; see :meth:`url_parameters`."""
    collection_noun: ClassVar[str] = "collections"
    """What the backend's collections are called where a missing one's error lists those that
    exist ("tables with a vector column" for pgvector)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        declared = cls.__dict__.get("capabilities")
        if not isinstance(declared, Capabilities):
            # a subclass that adds a feature method (a bulk_load) without restating the
            # declaration still gets the feature
            inherited = getattr(cls, "capabilities", None)
            declared = inherited if isinstance(inherited, Capabilities) else None
        if declared is not None:
            derived = declared.features | protocol_features(cls)
            # a plain class attribute becomes a descriptor: class access gives the declaration,
            # instance access the bound collection's capabilities
            setattr(cls, "capabilities", _CapabilitiesSlot(replace(declared, features=derived)))  # noqa: B010

    def __init__(self, url: StoreURL, collection: str, *, retry: RetryPolicy | None = None) -> None:
        self.url = url
        self.collection = collection
        self.retry = retry or RetryPolicy()
        self._spec: CollectionSpec | None = None

    def _collection_capabilities(self, declared: Capabilities) -> Capabilities:
        """What the bound collection can do; by default all the backend ``declared``."""
        return declared

    # ----------------------------------------------------------------- construction
    @classmethod
    def processes(cls, url: StoreURL, *, writes: bool = False) -> str:
        """Which processes may open the collection a URL names, decided without opening it:
        ``any`` (a server, a shared directory read-only), ``one`` (one process at a time: an
        embedded database directory) or ``this`` (it lives in this process only); ``writes``:
        to write it (a migration's target). A runner that spreads work over processes reads
        this before any I/O."""
        return "any"

    @classmethod
    def url_parameters(cls, url: StoreURL) -> tuple[frozenset[str], str]:
        """``(known, listed)``: the query parameters ``url`` may carry, and how an error lists
        them (empty: by name). By default :attr:`url_params` for every scheme; a backend whose
        schemes differ, or whose driver reads parameters of its own (libpq), overrides this."""
        return cls.url_params, ""

    @classmethod
    @abstractmethod
    def from_url(cls, url: StoreURL, **options: Any) -> Self:
        """Build an unbound store from a parsed URL and keyword options."""

    # ----------------------------------------------------------------- the collection
    def bind(
        self,
        dimension: int | None = None,
        metric: str | Metric | None = None,
        embedding_model: str | None = None,
    ) -> CollectionSpec:
        """Open the collection; with ``dimension`` create it when missing. Checks the spec."""
        existing = self.retry.call(self._describe_collection, f"{self.name}: describe")
        if existing is None:
            if dimension is None:
                raise self._not_found()
            spec = CollectionSpec(
                self.collection, dimension, Metric.parse(metric or Metric.COSINE), embedding_model
            )
            self._check_spec_supported(spec)
            self.retry.call(lambda: self._create_collection(spec), f"{self.name}: create")
            log.info(
                "%s: created collection %r (%d dims, %s)",
                self.name,
                spec.name,
                spec.dimension,
                spec.metric.value,
            )
        else:
            spec = existing
            _check_matches(self.name, spec, dimension, metric, embedding_model)
        self._spec = spec
        return spec

    def ensure(self, spec: CollectionSpec) -> CollectionSpec:
        """Open the collection, creating it as ``spec`` says when missing; an existing one is
        checked against ``spec`` (:meth:`bind` with its dimension, metric and model)."""
        return self.bind(spec.dimension, spec.metric, spec.embedding_model)

    @property
    def spec(self) -> CollectionSpec:
        """The bound collection's spec."""
        if self._spec is None:
            raise NotFoundError(f"{self!r} is not bound to a collection; use vectorport.connect()")
        return self._spec

    def drop(self) -> None:
        """Delete the bound collection and all its records."""
        self.retry.call(self._drop_collection, f"{self.name}: drop")
        self._spec = None

    def close(self) -> None:  # noqa: B027 (optional: a store holding no connection has none to release)
        """Release connections and clients."""

    def _not_found(self) -> NotFoundError:
        """The error for opening a missing collection: what is there, and the nearest name."""
        try:
            names: list[str] | None = self.list_collections()
        except VectorportError:
            names = None
        return NotFoundError(
            Advised.of(
                "{} collection {!r} does not exist at {}{}; {}",
                self.name,
                self.collection,
                self.url,
                what_exists(self.collection_noun, self.collection, names),
                Step(Action.CREATE),
            )
        )

    def _check_spec_supported(self, spec: CollectionSpec) -> None:
        """Refuse, before the collection is created, a metric or dimension the backend lacks."""
        caps = self.capabilities
        if spec.metric not in caps.metrics:
            names = ", ".join(sorted(m.value for m in caps.metrics))
            raise UnsupportedFeatureError(
                f"{self.name} does not support the {spec.metric.value} metric (it supports {names})"
            )
        if spec.dimension > caps.max_dimension:
            raise UnsupportedFeatureError(
                f"{self.name} supports at most {caps.max_dimension} dimensions, not {spec.dimension}"
            )

    # ----------------------------------------------------------------- primitives
    @abstractmethod
    def _describe_collection(self) -> CollectionSpec | None:
        """The spec of ``self.collection``, or ``None`` when it does not exist."""

    @abstractmethod
    def _create_collection(self, spec: CollectionSpec) -> None:
        """Create the collection (idempotent against a concurrent creator is welcome)."""

    @abstractmethod
    def _drop_collection(self) -> None:
        """Delete the collection and everything in it; no error when it is missing."""

    @abstractmethod
    def list_collections(self) -> list[str]:
        """Names of the collections this server/directory holds."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.url.masked!r} collection={self.collection!r}>"


def _check_matches(
    backend: str,
    spec: CollectionSpec,
    dimension: int | None,
    metric: str | Metric | None,
    embedding_model: str | None,
) -> None:
    """Refuse an existing collection ``spec`` that differs from what the caller asked."""
    if dimension is not None and dimension != spec.dimension:
        raise ConfigurationError(
            f"{backend} collection {spec.name!r} has dimension {spec.dimension}, not "
            f"{dimension}; use another collection name or drop this one"
        )
    if metric is not None and Metric.parse(metric) is not spec.metric:
        raise ConfigurationError(
            f"{backend} collection {spec.name!r} uses the {spec.metric.value} metric, not "
            f"{Metric.parse(metric).value}; use another collection name or drop this one"
        )
    if embedding_model and spec.embedding_model and embedding_model != spec.embedding_model:
        raise ConfigurationError(
            f"{backend} collection {spec.name!r} was embedded with "
            f"{spec.embedding_model!r}, not {embedding_model!r}; re-embed into a new collection"
        )


def made_concurrently(store: StoreLifecycle, spec: CollectionSpec) -> bool:
    """After ``_create_collection`` lost a race (the backend said the collection exists):
    whether the concurrent creator made the same collection (dimension and metric), so the
    create may count as done. A backend whose create is not idempotent calls it from its
    ``except ConflictError``, and re-raises when it is ``False``."""
    existing = store._describe_collection()
    return existing is not None and (existing.dimension, existing.metric) == (spec.dimension, spec.metric)
