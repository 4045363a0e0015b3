"""The one feature vocabulary, :class:`Feature`, and the typed protocols of the optional methods.

A store's ``capabilities.features`` is a set of :class:`Feature` and nothing else says what a
store can do: the protocol checks, the CLI, ``info``, the migration plan, compare and the
conformance suite read it. Features with a method (``BULK_LOAD``, ``TEXT_SEARCH``, ``HYBRID``,
``LAYOUT_CHECK``) are derived from these protocols by :class:`~vectorport.BaseStore`, never
written by hand; the others are declared on the store class. Both are narrowed per collection
where a collection lacks what its backend could do (a pgvector table made elsewhere without a
``tsvector`` column has no text search): the method then raises
:class:`~vectorport.exceptions.UnsupportedFeatureError` before any I/O.

>>> import vectorport
>>> store = vectorport.connect("memory://doctest-features", dimension=2)
>>> isinstance(store, SupportsBulkLoad), sorted(f.value for f in store.capabilities.features)
(False, ['hybrid', 'native_count', 'native_segments', 'text_search', 'write'])
>>> Feature.TEXT_SEARCH in store.capabilities.features
True
>>> store.drop()
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ._changes import CaptureSetup, ChangeFeed
from ._models import QueryResult
from .exceptions import UnsupportedFeatureError
from .filters import FilterNode

if TYPE_CHECKING:
    from ._digest import BinSums
    from ._models import ScanPage

__all__ = [
    "FEATURE_PROTOCOLS",
    "Feature",
    "SupportsBinDigests",
    "SupportsBulkLoad",
    "SupportsChangeFeed",
    "SupportsHybridSearch",
    "SupportsIntegrityCheck",
    "SupportsKeyCheck",
    "SupportsLayoutCheck",
    "SupportsSplitReplace",
    "SupportsTextSearch",
    "bin_digests_of",
    "bulk_load_of",
    "change_capture_of",
    "features_of",
    "hybrid_search_of",
    "integrity_check_of",
    "key_check_of",
    "layout_check_of",
    "protocol_features",
    "split_replace_of",
    "supports",
    "text_search_of",
    "write_cap_of",
]

FilterLike = Mapping[str, Any] | FilterNode | None


class Feature(StrEnum):
    """What a store can do beyond the :class:`~vectorport.VectorStore` protocol (its value is
    the name reports and ``vectorport backends`` print)."""

    BIN_DIGESTS = "bin_digests"
    """Gives the digest fold of each key bin without reading its records, and reads the records
    of chosen bins alone, so a ``sync`` scan reads only the bins that changed
    (:class:`SupportsBinDigests`)."""
    BULK_LOAD = "bulk_load"
    """Loads a large stream of upserts faster with index maintenance deferred
    (:class:`SupportsBulkLoad`)."""
    CHANGE_FEED = "change_feed"
    """Records its own changes for ``sync`` to read instead of scanning
    (:class:`SupportsChangeFeed`)."""
    HYBRID = "hybrid"
    """Vector and text rankings fused (:class:`SupportsHybridSearch`)."""
    INTEGRITY_CHECK = "integrity_check"
    """Its records carry their own proof (a snapshot's digests), checked before a migration from it
    writes anything (:class:`SupportsIntegrityCheck`)."""
    KEY_CHECK = "key_check"
    """Shares its table with other collections and says which keys they hold, so a plan refuses
    them before any write (:class:`SupportsKeyCheck`)."""
    LAYOUT_CHECK = "layout_check"
    """Says what keeps a record from fitting its layout (:class:`SupportsLayoutCheck`)."""
    NATIVE_COUNT = "native_count"
    """``count()`` is cheap (no scan)."""
    NATIVE_SEGMENTS = "native_segments"
    """``scan(segment=…)`` is served by the backend, not by filtering a full scan."""
    PARALLEL_SEGMENTS = "parallel_segments"
    """Segments read in parallel go faster: each reads only its own records."""
    SPLIT_REPLACE = "split_replace"
    """Replaces records faster in two steps when the caller writes them again after a crash
    (:class:`SupportsSplitReplace`)."""
    TEXT_SEARCH = "text_search"
    """Full-text search over the chunk text (:class:`SupportsTextSearch`)."""
    WRITE = "write"
    """Records can be written and deleted, collections created and dropped (a ``parquet://``
    snapshot pinned by ``expect_digest`` cannot)."""


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
class SupportsSplitReplace(Protocol):
    """A store whose atomic replace of a stored record is much slower than deleting it and
    writing it anew (Chroma: an upsert of a stored id repairs its HNSW neighbours, about 3-4x
    the cost of a delete and an insert)."""

    def split_replace(self) -> AbstractContextManager[None]:
        """Inside the block, an upsert of stored records may delete them and write them anew in
        two steps. A crash (or an error) between the steps leaves those records missing, never
        half merged, so only a caller that writes them again after a crash uses it: ``sync``,
        which marks a record in its state before writing it and rewrites what is marked."""
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
class SupportsKeyCheck(Protocol):
    """A collection that shares its table with others (LangChain's ``langchain_pg_embedding``,
    keyed by row id across every collection): a key another collection holds cannot be written
    here. The plan asks before any write, as the copy would find out at its first batch."""

    def taken_keys(self, keys: Sequence[str]) -> list[str]:
        """Those of ``keys`` another collection of the shared table holds (reads the backend;
        empty when the collection has its table to itself)."""
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


@runtime_checkable
class SupportsBinDigests(Protocol):
    """A store that keeps, beside its records, the fold of their content digests per key bin
    (:func:`vectorport._digest.bin_of`, :class:`~vectorport._digest.BinSums`): a ``sync`` scan
    compares them with the folds of what the target holds and reads only the bins that differ."""

    def bin_digests(self, parts: int) -> BinSums | None:
        """The fold (XOR of :func:`~vectorport._digest.record_digest` and count) of each key bin
        of the collection, in ``n`` bins where ``n`` divides ``parts`` (as fine as the store keeps
        them: ``n == parts`` when it can), read without reading records. ``None`` when the store
        cannot tell without reading them (a snapshot written before it kept them)."""
        ...

    def scan_bins(
        self,
        parts: int,
        bins: Sequence[int],
        *,
        batch_size: int | None = None,
        include: Iterable[str] | None = None,
        cursor: str | None = None,
    ) -> Iterator[ScanPage]:
        """The records whose key's ``bin_of(key, parts)`` is one of ``bins``, in pages, as
        :meth:`~vectorport.VectorStore.scan` (a page's ``cursor`` resumes after it)."""
        ...


FEATURE_PROTOCOLS: dict[Feature, type] = {
    Feature.BIN_DIGESTS: SupportsBinDigests,
    Feature.BULK_LOAD: SupportsBulkLoad,
    Feature.CHANGE_FEED: SupportsChangeFeed,
    Feature.HYBRID: SupportsHybridSearch,
    Feature.INTEGRITY_CHECK: SupportsIntegrityCheck,
    Feature.KEY_CHECK: SupportsKeyCheck,
    Feature.LAYOUT_CHECK: SupportsLayoutCheck,
    Feature.SPLIT_REPLACE: SupportsSplitReplace,
    Feature.TEXT_SEARCH: SupportsTextSearch,
}
"""The features that are a method → the protocol that implements it."""


def protocol_features(cls: type) -> frozenset[Feature]:
    """The feature protocols ``cls`` implements."""
    return frozenset(feature for feature, proto in FEATURE_PROTOCOLS.items() if issubclass(cls, proto))


def features_of(store: object) -> frozenset[Feature]:
    """``store.capabilities.features`` (empty for an object that declares none)."""
    found: frozenset[str] = getattr(getattr(store, "capabilities", None), "features", frozenset())
    return frozenset(Feature(f) for f in found)


def supports(store: object, feature: Feature) -> bool:
    """Does ``store`` (its bound collection) declare ``feature`` (and, for a feature that is a
    method, implement its protocol)? The one test every engine uses.

    >>> import vectorport
    >>> s = vectorport.connect("memory://doctest-supports", dimension=2)
    >>> supports(s, Feature.TEXT_SEARCH), supports(s, Feature.BULK_LOAD)
    (True, False)
    >>> s.drop()
    """
    proto = FEATURE_PROTOCOLS.get(feature)
    return feature in features_of(store) and (proto is None or isinstance(store, proto))


def change_capture_of(store: object) -> SupportsChangeFeed | None:
    """``store`` as a :class:`SupportsChangeFeed` when it has :attr:`Feature.CHANGE_FEED`."""
    return store if supports(store, Feature.CHANGE_FEED) and isinstance(store, SupportsChangeFeed) else None


def bin_digests_of(store: object) -> SupportsBinDigests | None:
    """``store`` as a :class:`SupportsBinDigests` when it has :attr:`Feature.BIN_DIGESTS`."""
    return store if supports(store, Feature.BIN_DIGESTS) and isinstance(store, SupportsBinDigests) else None


def integrity_check_of(store: object) -> SupportsIntegrityCheck | None:
    """``store`` as a :class:`SupportsIntegrityCheck` when it has :attr:`Feature.INTEGRITY_CHECK`."""
    if supports(store, Feature.INTEGRITY_CHECK) and isinstance(store, SupportsIntegrityCheck):
        return store
    return None


def key_check_of(store: object) -> SupportsKeyCheck | None:
    """``store`` as a :class:`SupportsKeyCheck` when it has :attr:`Feature.KEY_CHECK`."""
    return store if supports(store, Feature.KEY_CHECK) and isinstance(store, SupportsKeyCheck) else None


def layout_check_of(store: object) -> SupportsLayoutCheck | None:
    """``store`` as a :class:`SupportsLayoutCheck` when it has :attr:`Feature.LAYOUT_CHECK`."""
    return store if supports(store, Feature.LAYOUT_CHECK) and isinstance(store, SupportsLayoutCheck) else None


def bulk_load_of(store: object, expected: int | None = None) -> AbstractContextManager[None]:
    """``store.bulk_load(expected)`` when the store implements it, else a no-op context.

    >>> import vectorport
    >>> s = vectorport.connect("memory://doctest-bulk", dimension=2)
    >>> with bulk_load_of(s, expected=1):
    ...     s.upsert([vectorport.Record("a", [1, 0])])
    1
    >>> s.drop()
    """
    if supports(store, Feature.BULK_LOAD):
        assert isinstance(store, SupportsBulkLoad)
        return store.bulk_load(expected)
    return nullcontext()


def split_replace_of(store: object) -> AbstractContextManager[None]:
    """``store.split_replace()`` when the store implements it, else a no-op context (see
    :class:`SupportsSplitReplace`: for callers that write a record again after a crash)."""
    if supports(store, Feature.SPLIT_REPLACE):
        assert isinstance(store, SupportsSplitReplace)
        return store.split_replace()
    return nullcontext()


def _feature_of(store: object, feature: Feature, what: str) -> None:
    features = features_of(store)
    if supports(store, feature):
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
    _feature_of(store, Feature.TEXT_SEARCH, "text search")
    assert isinstance(store, SupportsTextSearch)
    return store


def hybrid_search_of(store: object) -> SupportsHybridSearch:
    """``store`` as a :class:`SupportsHybridSearch`, or ``UnsupportedFeatureError`` (no I/O)."""
    _feature_of(store, Feature.HYBRID, "hybrid search")
    assert isinstance(store, SupportsHybridSearch)
    return store


def write_cap_of(store: object) -> float | None:
    """The records per second ``store`` paces its own writes to (its declared
    ``capabilities.write_rate``: a bucket index's ``write_rate``), or ``None`` when its writes
    are not paced."""
    rate = getattr(getattr(store, "capabilities", None), "write_rate", None)
    return float(rate) if isinstance(rate, int | float) and rate > 0 else None
