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
(False, ['hybrid', 'native_count', 'native_segments', 'text_search'])
>>> store.drop()
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Protocol, runtime_checkable

from ._changes import CaptureSetup, ChangeFeed
from ._models import QueryResult
from .exceptions import UnsupportedFeatureError
from .filters import FilterNode

__all__ = [
    "FEATURE_PROTOCOLS",
    "SupportsBulkLoad",
    "SupportsChangeFeed",
    "SupportsHybridSearch",
    "SupportsIntegrityCheck",
    "SupportsLayoutCheck",
    "SupportsTextSearch",
    "bulk_load_of",
    "hybrid_search_of",
    "protocol_features",
    "text_search_of",
    "write_cap_of",
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
        """The ``k`` best records for ``text`` by the store's text ranking (best first, ties
        by key) among those matching ``filter``. Matches carry ``score`` = the text score,
        ``distance`` = its negation and ``extra = {"text_rank", "text_score"}``.

        What a store guarantees against the reference (:mod:`vectorport._textsearch`, BM25 on
        the memory store) is declared by the store: pgvector ranks by ``ts_rank_cd`` over its
        text search configuration (stemming, stop words), not by BM25.
        """
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
        (rrf_k + text_rank)``, each ranking holding its ``2k`` best candidates among the
        records matching ``filter``, ties by key (:func:`vectorport._textsearch.fuse`).

        ``weight`` = 1 is vector order among the candidates, 0 text order. Matches carry the
        canonical vector ``distance`` and ``score`` and ``extra = {"rrf_score",
        "vector_rank", "text_rank"}`` (1-based, ``None`` where the record is not a candidate).
        """
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


@runtime_checkable
class SupportsIntegrityCheck(Protocol):
    """A store whose records carry their own proof (a snapshot's manifest: per-part SHA-256 and
    content digests): a migration from it checks the proof over every record before it writes
    anything, so a damaged or edited source is refused with the target untouched."""

    def check_integrity(self) -> None:
        """Read every record and check it against the store's own digests; raise
        :class:`~vectorport.exceptions.ConfigurationError` naming what differs (or a
        :class:`~vectorport.exceptions.ValidationError` for a record no store can take, e.g. a
        non-finite vector). Checked once per store object."""
        ...


@runtime_checkable
class SupportsChangeFeed(Protocol):
    """A store that can record its own changes for ``sync`` to read instead of scanning
    (:mod:`vectorport._changes`)."""

    def setup_capture(self, method: str = "auto") -> CaptureSetup:
        """Install change capture on the collection (``auto`` picks what the server and the
        role allow); a no-op when installed."""
        ...

    def teardown_capture(self) -> list[str]:
        """Remove every object change capture installed; returns what was removed."""
        ...

    def change_feed(self) -> ChangeFeed | None:
        """The installed capture's feed, ``None`` when capture is not installed."""
        ...


FEATURE_PROTOCOLS: dict[str, type] = {
    "bulk_load": SupportsBulkLoad,
    "change_feed": SupportsChangeFeed,
    "hybrid": SupportsHybridSearch,
    "integrity_check": SupportsIntegrityCheck,
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


def _feature_of(store: object, name: str, what: str) -> None:
    caps = getattr(store, "capabilities", None)
    features: frozenset[str] = getattr(caps, "features", frozenset())
    if isinstance(store, FEATURE_PROTOCOLS[name]) and name in features:
        return
    backend = getattr(store, "name", type(store).__name__)
    has = sorted(f for f, proto in FEATURE_PROTOCOLS.items() if f in features and isinstance(store, proto))
    raise UnsupportedFeatureError(
        f"{backend} collection {getattr(store, 'collection', '?')!r} has no {what} "
        f"(its search features: {', '.join(has) or 'vector search only'}); use a store that "
        "declares it, e.g. memory:// or pgvector"
    )


def text_search_of(store: object) -> SupportsTextSearch:
    """``store`` as a :class:`SupportsTextSearch`, or ``UnsupportedFeatureError`` (no I/O)
    when its backend or collection has no text search.

    >>> import vectorport
    >>> s = vectorport.connect("memory://doctest-text", dimension=2)
    >>> _ = s.upsert([vectorport.Record("a", [1, 0], text="red fox"), vectorport.Record("b", [0, 1])])
    >>> [m.key for m in text_search_of(s).text_query("fox")]
    ['a']
    >>> s.drop()
    """
    _feature_of(store, "text_search", "text search")
    assert isinstance(store, SupportsTextSearch)
    return store


def hybrid_search_of(store: object) -> SupportsHybridSearch:
    """``store`` as a :class:`SupportsHybridSearch`, or ``UnsupportedFeatureError`` (no I/O)."""
    _feature_of(store, "hybrid", "hybrid search")
    assert isinstance(store, SupportsHybridSearch)
    return store


def write_cap_of(store: object) -> float | None:
    """The records per second ``store`` paces its own writes to (a bucket index's
    ``write_rate``), or ``None`` when its writes are not paced."""
    rate = getattr(getattr(store, "limiter", None), "rate", None)
    return float(rate) if isinstance(rate, int | float) and rate > 0 else None
