"""The base class backends subclass: validation, batching, retries and filter parsing live
here once, and a backend implements a handful of primitives.

:class:`BaseStore` is the records' half of the implementer template; the collection's half
(the class's declaration, opening, creating and dropping the collection) is the
:class:`~vectorport._lifecycle.StoreLifecycle` it extends. The checks and loops the public
methods share live beside it, one idea a module: :mod:`vectorport._querying` (a search
request checked and its filter compiled), :mod:`vectorport._paging` (scan arguments, the page
loop, cursors), :mod:`vectorport._deleting` (delete arguments, by filter, in batches).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Generic, TypeVar

from ._async import AsyncStore
from ._cursor import Position
from ._deleting import delete_args, matching_keys, remove_keys
from ._lifecycle import StoreLifecycle
from ._models import ALL_INCLUDES, Include, Match, QueryResult, Record, ScanPage, Vector
from ._paging import pages, scan_args
from ._protocol import FilterLike
from ._querying import prepare_query
from ._validate import Batch, check_batch_size, validate_keys, validate_records
from .filters import FilterNode, parse_filter

__all__ = ["BaseStore", "FilterLike"]

N = TypeVar("N")
"""A backend's native filter: what its compiler makes of a portable filter tree."""


class BaseStore(StoreLifecycle, Generic[N]):
    """Implementer template. Subclasses set ``name`` and ``capabilities`` and implement:

    ``from_url``, ``_describe_collection``, ``_create_collection``, ``_drop_collection``,
    ``list_collections`` (the collection's: :class:`~vectorport._lifecycle.StoreLifecycle`),
    ``_write``, ``_read``, ``_remove``, ``_compile_filter``, ``_search``, ``_scan_page``,
    ``_count`` (its records': here), and optionally ``close``. ``N`` is the backend's native
    filter form: ``_compile_filter`` makes it once per query, before any I/O
    (:func:`vectorport._querying.prepare_query`), and ``_search`` receives it.

    Everything public (``upsert``, ``get``, ``delete``, ``query``, ``scan`` …) is built here
    once: inputs are validated before any I/O, writes are split to the backend's limits and
    each call is retried on :class:`~vectorport.exceptions.TransientError`. A backend overrides
    a public method only for speed, or ``_delete_matching`` when it can delete by predicate.
    """

    # ----------------------------------------------------------------- primitives
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

    def asynchronous(self) -> AsyncStore[Any]:
        """This store with awaitable methods (what :func:`vectorport.aconnect` returns): each
        call runs off the event loop; a backend with an async driver overrides this."""
        return AsyncStore(self)

    # ----------------------------------------------------------------- public API
    def upsert(self, records: Iterable[Record], *, batch_size: int | None = None) -> int:
        """Write records by key, full replace. Returns how many distinct keys were written.

        Every record is validated before the first write; duplicate keys: the last one wins.
        """
        batch = validate_records(records, self.spec, self.capabilities, self.name)
        size = check_batch_size(batch_size, self.capabilities.max_write_batch)
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
        doomed, where = delete_args(self, keys, filter)
        if doomed is not None:
            return remove_keys(self, doomed)
        return self._delete_matching(where)

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
        return remove_keys(self, matching_keys(self, where))

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
        q = prepare_query(self, vector, k, filter, include, params)
        assert q.vector is not None
        vec = q.vector
        matches = self.retry.call(
            lambda: self._search(vec, q.k, q.where, q.include, q.params), f"{self.name}: query"
        )
        return QueryResult(tuple(matches[: q.k]), q.k)

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
        limit, inc, part, position = scan_args(self, batch_size, include, segment, cursor)
        yield from pages(self, lambda p: self._scan_page(limit, inc, part, p), part, position)

    def records(self, *, include: Iterable[str] | None = None) -> Iterator[Record]:
        """Every record, one at a time (a flattened :meth:`scan`)."""
        for page in self.scan(include=include):
            yield from page

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
