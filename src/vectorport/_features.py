"""Optional features as typed protocols: what a store can do beyond :class:`VectorStore`.

Engines test for a feature with ``isinstance(store, SupportsBulkLoad)`` (and so on) instead of
asking for a concrete class, so a third-party store gets the same treatment as a built-in one by
implementing the method. A store's ``capabilities.features`` names the features it implements
(derived from these protocols by :class:`~vectorport.BaseStore`, never written by hand), narrowed
per collection where a collection lacks what its backend could do (a pgvector table made
elsewhere without a ``tsvector`` column has no text search): the method then raises
:class:`~vectorport.exceptions.UnsupportedFeatureError` before any I/O.

>>> import vectorport
>>> store = vectorport.connect("memory://doctest-features", dimension=2)
>>> isinstance(store, SupportsBulkLoad), sorted(store.capabilities.features)
(False, ['native_count', 'native_segments'])
>>> store.drop()
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Protocol, runtime_checkable

from ._models import QueryResult
from .filters import FilterNode

__all__ = [
    "FEATURE_PROTOCOLS",
    "SupportsBulkLoad",
    "SupportsHybridSearch",
    "SupportsLayoutCheck",
    "SupportsTextSearch",
    "bulk_load_of",
    "protocol_features",
]

FilterLike = Mapping[str, Any] | FilterNode | None


@runtime_checkable
class SupportsBulkLoad(Protocol):
    """A store that loads a large stream of upserts faster with index maintenance deferred."""

    def bulk_load(self, expected: int | None = None) -> AbstractContextManager[None]:
        """Wrap a large stream of upserts (a migration's copy, a first ingest).

        Inside the block every operation keeps its contract (queries stay correct, perhaps
        slower); on leaving it normally the collection is back to its usual state (a deferred
        index built). When the block raises, or the process dies inside it, the collection stays
        correct and the store restores its index later (pgvector: at the next write or load,
        never on a mere open). ``expected`` is the number of records about to be written, when
        known (lets the store judge whether deferring pays off against the rows already there).
        """
        ...


@runtime_checkable
class SupportsTextSearch(Protocol):
    """Full-text search over the chunk text, the filter applied inside the ranking."""

    def text_query(
        self,
        text: str,
        k: int = 10,
        *,
        filter: FilterLike = None,
        include: Iterable[str] | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> QueryResult:
        """The ``k`` best records for ``text`` by the store's text ranking (best first)."""
        ...


@runtime_checkable
class SupportsHybridSearch(Protocol):
    """Vector and full-text rankings fused by reciprocal rank fusion, filter inside both."""

    def hybrid_query(
        self,
        vector: Sequence[float] | Any,
        text: str,
        k: int = 10,
        *,
        filter: FilterLike = None,
        weight: float = 0.5,
        rrf_k: int = 60,
        include: Iterable[str] | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> QueryResult:
        """The ``k`` best records by ``weight / (rrf_k + vector_rank) + (1 - weight) /
        (rrf_k + text_rank)``."""
        ...


@runtime_checkable
class SupportsLayoutCheck(Protocol):
    """A store whose layout limits records beyond its declared capabilities (a bucket index whose
    text key is filterable, LlamaIndex's node JSON counted against a size limit): it says what
    keeps one record from being written, so a migration's plan can name it before any write."""

    def layout_problems(self, key: str, metadata: dict[str, Any], text: str | None) -> list[tuple[str, str]]:
        """What keeps this record (as it would be written: metadata after any transform) from
        being written in the collection's layout, as ``(path, message)``; empty when it fits.
        Reads nothing from the backend."""
        ...


FEATURE_PROTOCOLS: dict[str, type] = {
    "bulk_load": SupportsBulkLoad,
    "hybrid": SupportsHybridSearch,
    "layout_check": SupportsLayoutCheck,
    "text_search": SupportsTextSearch,
}
"""Feature name (as in ``capabilities.features``) → the protocol that implements it."""


def protocol_features(cls: type) -> frozenset[str]:
    """Names of the feature protocols ``cls`` implements."""
    return frozenset(name for name, proto in FEATURE_PROTOCOLS.items() if issubclass(cls, proto))


def bulk_load_of(store: object, expected: int | None = None) -> AbstractContextManager[None]:
    """``store.bulk_load(expected)`` when the store implements it, else a no-op context.

    >>> import vectorport
    >>> s = vectorport.connect("memory://doctest-bulk", dimension=2)
    >>> with bulk_load_of(s, expected=1):
    ...     s.upsert([vectorport.Record("a", [1, 0])])
    1
    >>> s.drop()
    """
    if isinstance(store, SupportsBulkLoad):
        return store.bulk_load(expected)
    return nullcontext()
