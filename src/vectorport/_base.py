"""The base class backends subclass: validation, batching, retries and filter parsing live
here once, and a backend implements a handful of primitives."""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Self, TypeVar

import numpy as np

from ._capabilities import Capabilities
from ._cursor import Position, decode_cursor, encode_cursor
from ._features import protocol_features
from ._models import (
    ALL_INCLUDES,
    QUERY_INCLUDES,
    CollectionSpec,
    Include,
    Match,
    Metric,
    QueryResult,
    Record,
    ScanPage,
    Vector,
)
from ._retry import RetryPolicy
from ._suggest import what_exists
from ._url import StoreURL
from ._validate import Batch, check_vector, validate_keys, validate_records
from .exceptions import (
    ConfigurationError,
    NotFoundError,
    Problem,
    UnsupportedFeatureError,
    ValidationError,
    VectorportError,
)
from .filters import FilterNode, evaluate, parse_filter

if TYPE_CHECKING:
    from ._async import AsyncStore

__all__ = ["BaseStore", "PreparedQuery"]

log = logging.getLogger("vectorport")

FilterLike = Mapping[str, Any] | FilterNode | None

N = TypeVar("N")
"""A backend's native filter: what its compiler makes of a portable filter tree."""


@dataclass(frozen=True)
class PreparedQuery(Generic[N]):
    """A search request checked before any I/O, its filter compiled once to the native form."""

    vector: Vector | None
    """The query vector (float32, checked against the collection); ``None`` for text search."""
    k: int
    where: N | None
    """The compiled filter, or ``None`` for no filter."""
    include: frozenset[Include]
    params: Mapping[str, Any]


class _CapabilitiesSlot:
    """``Store.capabilities`` is the backend's declaration; ``store.capabilities`` is what the
    bound collection can do (:meth:`BaseStore._collection_capabilities`, by default the same)."""

    def __init__(self, declared: Capabilities) -> None:
        self.declared = declared

    def __get__(self, obj: BaseStore[Any] | None, owner: type) -> Capabilities:
        if obj is None:
            return self.declared
        return obj._collection_capabilities(self.declared)


class BaseStore(ABC, Generic[N]):
    """Implementer template. Subclasses set ``name`` and ``capabilities`` and implement:

    ``from_url``, ``_describe_collection``, ``_create_collection``, ``_drop_collection``,
    ``list_collections``, ``_write``, ``_read``, ``_remove``, ``_compile_filter``, ``_search``,
    ``_scan_page``, ``_count``, and optionally ``close``. ``N`` is the backend's native filter
    form: ``_compile_filter`` makes it once per query, before any I/O, and ``_search`` receives
    it.

    Everything public (``upsert``, ``get``, ``delete``, ``query``, ``scan`` …) is built here
    once: inputs are validated before any I/O, writes are split to the backend's limits and
    each call is retried on :class:`~vectorport.exceptions.TransientError`.

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

    def _collection_capabilities(self, declared: Capabilities) -> Capabilities:
        """What the bound collection can do; by default all the backend ``declared``."""
        return declared

    def __init__(self, url: StoreURL, collection: str, *, retry: RetryPolicy | None = None) -> None:
        self.url = url
        self.collection = collection
        self.retry = retry or RetryPolicy()
        self._spec: CollectionSpec | None = None

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
            if dimension is not None and dimension != spec.dimension:
                raise ConfigurationError(
                    f"{self.name} collection {spec.name!r} has dimension {spec.dimension}, not "
                    f"{dimension}; use another collection name or drop this one"
                )
            if metric is not None and Metric.parse(metric) is not spec.metric:
                raise ConfigurationError(
                    f"{self.name} collection {spec.name!r} uses the {spec.metric.value} metric, not "
                    f"{Metric.parse(metric).value}; use another collection name or drop this one"
                )
            if embedding_model and spec.embedding_model and embedding_model != spec.embedding_model:
                raise ConfigurationError(
                    f"{self.name} collection {spec.name!r} was embedded with "
                    f"{spec.embedding_model!r}, not {embedding_model!r}; re-embed into a new collection"
                )
        self._spec = spec
        return spec

    def ensure(self, spec: CollectionSpec) -> CollectionSpec:
        """Open the collection, creating it as ``spec`` says when missing; an existing one is
        checked against ``spec`` (:meth:`bind` with its dimension, metric and model)."""
        return self.bind(spec.dimension, spec.metric, spec.embedding_model)

    def _not_found(self) -> NotFoundError:
        """The error for opening a missing collection: what is there, and the nearest name."""
        try:
            names: list[str] | None = self.list_collections()
        except VectorportError:
            names = None
        kind = "tables" if self.name == "pgvector" else "collections"
        return NotFoundError(
            f"{self.name} collection {self.collection!r} does not exist at {self.url}"
            f"{what_exists(kind, self.collection, names)}; pass dimension= (and metric=) to create it"
        )

    def _made_concurrently(self, spec: CollectionSpec) -> bool:
        """After ``_create_collection`` lost a race (the backend said the collection exists):
        whether the concurrent creator made the same collection (dimension and metric), so the
        create may count as done. A backend whose create is not idempotent calls it from its
        ``except ConflictError``, and re-raises when it is ``False``."""
        existing = self._describe_collection()
        return existing is not None and (existing.dimension, existing.metric) == (spec.dimension, spec.metric)

    def _check_spec_supported(self, spec: CollectionSpec) -> None:
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

    @property
    def spec(self) -> CollectionSpec:
        """The bound collection's spec."""
        if self._spec is None:
            raise NotFoundError(f"{self!r} is not bound to a collection; use vectorport.connect()")
        return self._spec

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

    @abstractmethod
    def _write(self, batch: Batch) -> None:
        """Full-replace upsert of at most ``max_write_batch`` valid, distinct records."""

    @abstractmethod
    def _read(self, keys: Sequence[str], include: frozenset[Include]) -> list[Record]:
        """Records for at most ``max_read_batch`` distinct keys; missing keys are left out."""

    @abstractmethod
    def _remove(self, keys: Sequence[str]) -> None:
        """Delete at most ``max_delete_batch`` distinct keys; missing keys are no error."""

    @abstractmethod
    def _compile_filter(self, where: FilterNode) -> N:
        """The native form of ``where``; raise ``UnsupportedFilterError`` when the backend
        cannot apply it exactly. No I/O: called once per query, before any."""

    @abstractmethod
    def _search(
        self,
        vector: Vector,
        k: int,
        where: N | None,
        include: frozenset[Include],
        params: Mapping[str, Any],
    ) -> list[Match]:
        """Top-``k`` by canonical distance among records matching ``where`` (the compiled
        filter, applied *before* ranking), best first, ties broken by key."""

    @abstractmethod
    def _scan_page(
        self, limit: int, include: frozenset[Include], segment: tuple[int, int], after: Position | None
    ) -> tuple[Sequence[Record], Position | None]:
        """Up to ``limit`` records of ``segment`` after ``after`` (``None``: from the start), in
        a stable order, and the position to continue from (``None`` when the segment is
        exhausted). Positions are the backend's own JSON objects; :meth:`scan` wraps them in
        checked cursors (:mod:`vectorport._cursor`)."""

    @abstractmethod
    def _count(self) -> int:
        """Number of records in the collection."""

    def check_filter(self, filter: FilterLike) -> None:
        """Raise ``FilterError``/``UnsupportedFilterError`` when ``filter`` is malformed or the
        backend cannot apply it exactly. No I/O."""
        where = parse_filter(filter)
        if where is not None:
            self._compile_filter(where)

    def close(self) -> None:
        """Release connections and clients."""

    def asynchronous(self) -> AsyncStore[Any]:
        """This store with awaitable methods (what :func:`vectorport.aconnect` returns): each
        call runs off the event loop; a backend with an async driver overrides this."""
        from ._async import AsyncStore

        return AsyncStore(self)

    # ----------------------------------------------------------------- public API
    def upsert(self, records: Iterable[Record], *, batch_size: int | None = None) -> int:
        """Write records by key, full replace. Returns how many distinct keys were written.

        Every record is validated before the first write; duplicate keys: the last one wins.
        """
        batch = validate_records(records, self.spec, self.capabilities, self.name)
        size = self._batch_size(batch_size, self.capabilities.max_write_batch)
        for chunk in batch.chunks(size):
            self.retry.call(lambda c=chunk: self._write(c), f"{self.name}: upsert")  # type: ignore[misc]
        return len(batch)

    def get(self, keys: Iterable[str], *, include: Iterable[str] | None = None) -> list[Record]:
        """Records for ``keys`` in the order asked (first occurrence); missing keys are skipped."""
        wanted = validate_keys(keys, self.capabilities.max_key_bytes)
        inc = Include.parse(include, ALL_INCLUDES)
        found: dict[str, Record] = {}
        step = self.capabilities.max_read_batch
        for start in range(0, len(wanted), step):
            chunk = wanted[start : start + step]
            for rec in self.retry.call(lambda c=chunk: self._read(c, inc), f"{self.name}: get"):  # type: ignore[misc]
                found[rec.key] = rec
        return [found[k] for k in wanted if k in found]

    def delete(self, keys: Iterable[str] | None = None, *, filter: FilterLike = None) -> int:
        """Delete by keys, or every record matching ``filter``. Returns the number of distinct
        keys sent for deletion (missing keys are no error).

        A bare string is not a list of keys, and an empty filter (``{}``) is refused: deleting
        everything is :meth:`delete_all`, by name.
        """
        doomed, where = self._delete_args(keys, filter)
        if doomed is not None:
            return self._remove_all(doomed)
        return self._delete_matching(where)

    def _delete_args(
        self, keys: Iterable[str] | None, filter: FilterLike
    ) -> tuple[list[str] | None, FilterNode | None]:
        """``delete()``'s arguments checked before any I/O: the keys, or the parsed filter."""
        if (keys is None) == (filter is None):
            raise ConfigurationError("delete() takes either keys or filter=, not both or neither")
        if keys is not None:
            return validate_keys(keys, self.capabilities.max_key_bytes), None
        where = parse_filter(filter)
        if where is None:
            raise ConfigurationError(
                "delete(filter={}) would delete every record; call delete_all() to empty the "
                "collection, or pass a filter that selects what to delete"
            )
        return None, where

    def delete_all(self) -> int:
        """Delete every record, keeping the (empty) collection. Returns how many were deleted.

        >>> import vectorport
        >>> s = vectorport.connect("memory://doctest-delete-all", dimension=2)
        >>> _ = s.upsert([vectorport.Record("a", [1, 0]), vectorport.Record("b", [0, 1])])
        >>> s.delete_all(), s.count()
        (2, 0)
        >>> s.drop()
        """
        return self._delete_matching(None)

    def _delete_matching(self, where: FilterNode | None) -> int:
        """Delete the records matching ``where`` (``None``: all). The default selects keys with a
        scan and the filter oracle; a backend that can delete by predicate overrides it."""
        doomed = [
            rec.key
            for page in self.scan(include=["metadata"] if where is not None else [])
            for rec in page
            if where is None or evaluate(where, rec.metadata)
        ]
        return self._remove_all(doomed)

    def _remove_all(self, doomed: Sequence[str]) -> int:
        step = self.capabilities.max_delete_batch
        for start in range(0, len(doomed), step):
            chunk = doomed[start : start + step]
            self.retry.call(lambda c=chunk: self._remove(c), f"{self.name}: delete")  # type: ignore[misc]
        return len(doomed)

    def query(
        self,
        vector: Sequence[float] | Any,
        k: int = 10,
        *,
        filter: FilterLike = None,
        include: Iterable[str] | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> QueryResult:
        """The ``k`` nearest records to ``vector`` among those matching ``filter``.

        The filter is applied inside the backend before ranking, or refused before any I/O
        with :class:`~vectorport.exceptions.UnsupportedFilterError`.

        >>> import vectorport
        >>> s = vectorport.connect("memory://doctest-query", dimension=2, metric="euclidean")
        >>> _ = s.upsert([vectorport.Record("a", [0, 0], {"lang": "en"}),
        ...               vectorport.Record("b", [3, 4], {"lang": "fr"})])
        >>> [(m.key, m.distance) for m in s.query([0, 0], k=2, filter={"lang": "fr"})]
        [('b', 5.0)]
        >>> s.drop()
        """
        q = self._prepare_query(vector, k, filter, include, params)
        assert q.vector is not None
        vec = q.vector
        matches = self.retry.call(
            lambda: self._search(vec, q.k, q.where, q.include, q.params), f"{self.name}: query"
        )
        return QueryResult(tuple(matches[: q.k]), q.k)

    def _prepare_query(
        self,
        vector: Sequence[float] | Any | None,
        k: Any,
        filter: FilterLike,
        include: Iterable[str] | None,
        params: Mapping[str, Any] | None,
        *,
        includes: frozenset[Include] = QUERY_INCLUDES,
        top_k_limit: bool = True,
    ) -> PreparedQuery[N]:
        """Check a search request before any I/O and compile its filter once.

        ``vector=None`` is a text search (no vector to check). Every search method of a backend
        (``query``, ``text_query``, ``hybrid_query``) starts here, so all refuse the same bad
        input with the same errors.
        """
        vec: Vector | None = None
        if vector is not None:
            spec = self.spec
            vec, why = check_vector(vector, spec.dimension, spec.metric)
            if vec is None:
                raise ValidationError(
                    [Problem(None, "query vector", why or "invalid")],
                    backend=self.name,
                    outcome="the query was not run",
                )
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
            raise ConfigurationError(f"k must be a positive integer, got {k!r}")
        k = int(k)
        top = self.capabilities.max_top_k
        if top_k_limit and top is not None and k > top:
            raise UnsupportedFeatureError(f"{self.name} returns at most {top} results per query; k={k}")
        node = parse_filter(filter)
        where = None if node is None else self._compile_filter(node)
        inc = Include.parse(include, includes)
        return PreparedQuery(vec, k, where, inc, params or {})

    def count(self) -> int:
        """Number of records in the collection."""
        return self.retry.call(self._count, f"{self.name}: count")

    def scan(
        self,
        *,
        batch_size: int | None = None,
        include: Iterable[str] | None = None,
        segment: tuple[int, int] = (0, 1),
        cursor: str | None = None,
    ) -> Iterator[ScanPage]:
        """Every record once, in pages. ``segment=(i, n)`` reads the i-th of n disjoint parts;
        a page's ``cursor`` passed back as ``cursor=`` resumes right after that page."""
        limit, inc, part, position = self._scan_args(batch_size, include, segment, cursor)
        yield from self._pages(lambda p: self._scan_page(limit, inc, part, p), part, position)

    def _pages(
        self,
        read: Callable[[Position | None], tuple[Sequence[Record], Position | None]],
        part: tuple[int, int],
        position: Position | None,
    ) -> Iterator[ScanPage]:
        """The pages ``read`` gives from ``position`` on (each read retried as the store's
        retry policy says), until it says there is no more: the loop of :meth:`scan`, and of a
        store's other scans (``scan_bins``)."""
        while True:
            records, position = self.retry.call(lambda p=position: read(p), f"{self.name}: scan")  # type: ignore[misc]
            page = self._scan_result(records, position, part)
            if page.records or page.cursor is None:
                yield page
            if page.cursor is None:
                return

    def _scan_args(
        self, batch_size: int | None, include: Iterable[str] | None, segment: Any, cursor: str | None
    ) -> tuple[int, frozenset[Include], tuple[int, int], Position | None]:
        """``scan()``'s arguments checked before any I/O: page size, includes, segment and the
        position a cursor resumes from."""
        if not (isinstance(segment, tuple | list) and len(segment) == 2):
            raise ConfigurationError(f"segment must be a pair (i, n) with 0 <= i < n, got {segment!r}")
        index, parts = segment
        if not (type(index) is int and type(parts) is int and parts >= 1 and 0 <= index < parts):
            raise ConfigurationError(f"segment must be (i, n) with 0 <= i < n, got {segment!r}")
        limit = self._batch_size(batch_size, self.capabilities.max_scan_page)
        inc = Include.parse(include, ALL_INCLUDES)
        position = None if cursor is None else decode_cursor(cursor, self.name, (index, parts))
        _ = self.spec
        return limit, inc, (index, parts), position

    def _scan_result(
        self, records: Sequence[Record], position: Position | None, part: tuple[int, int]
    ) -> ScanPage:
        """A page of ``scan()``, its cursor resuming after ``position`` (``None``: the last)."""
        cursor = None if position is None else encode_cursor(self.name, part, position)
        return ScanPage(tuple(records), cursor)

    def records(self, *, include: Iterable[str] | None = None) -> Iterator[Record]:
        """Every record, one at a time (a flattened :meth:`scan`)."""
        for page in self.scan(include=include):
            yield from page

    def drop(self) -> None:
        """Delete the bound collection and all its records."""
        self.retry.call(self._drop_collection, f"{self.name}: drop")
        self._spec = None

    def info(self) -> dict[str, Any]:
        """Backend, masked URL, spec, record count and capabilities, JSON-ready."""
        return {
            "backend": self.name,
            "url": self.url.masked,
            "collection": self.collection,
            **self.spec.to_dict(),
            "count": self.count(),
            "capabilities": self.capabilities.summary(),
        }

    def _batch_size(self, requested: int | None, limit: int) -> int:
        if requested is None:
            return limit
        if isinstance(requested, bool) or not isinstance(requested, int | np.integer) or requested < 1:
            raise ConfigurationError(f"batch_size must be a positive integer, got {requested!r}")
        return min(requested, limit)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.url.masked!r} collection={self.collection!r}>"
