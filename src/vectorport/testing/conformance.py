"""The conformance suite every backend runs, shipped in the package (as fsspec does).

Subclass :class:`StoreConformance` in a test module and provide a fixture named
``store_factory`` with scope ``"class"`` (or wider; pytest wants class-scoped fixtures
on a class to be ``@classmethod``). It returns a callable
``factory(dimension: int, metric: str) -> VectorStore`` that gives a bound store on a *new,
empty* collection each call; the suite drops the collections it makes::

    import pytest
    import vectorport
    from vectorport.testing import StoreConformance

    pytestmark = pytest.mark.memory

    class TestMemory(StoreConformance):
        @pytest.fixture(scope="class")
        @classmethod
        def store_factory(cls):
            names = iter(range(10**6))
            return lambda dim, metric: vectorport.connect(
                f"memory://conf-{next(names)}", dimension=dim, metric=metric)

:class:`StoreConformance` composes one mixin per concern (:class:`DeclarationTests`,
:class:`WriteTests`, :class:`InputTests`, :class:`ScanTests`, :class:`QueryTests`,
:class:`OracleTests`, all on :class:`ConformanceFixtures`); a backend that supports only part of
the contract subclasses the groups it needs instead.

A read-only backend (no :attr:`~vectorport.Feature.WRITE`) also provides ``store_loader``,
``load(store, records) -> store`` (see :meth:`vectorport.testing.backends.ServerPool.loader`):
the read tests fill its collections through it, and every test of writes checks that a write
raises :class:`~vectorport.exceptions.UnsupportedFeatureError` and is then an expected failure.

Every answer is compared with the exact reference: the same keys (ties allowed) for exact
stores, recall at least ``capabilities.recall_tolerance`` for approximate ones, and never a
result that fails the filter. The number of hypothesis examples per property comes from the
``VECTORPORT_EXAMPLES`` environment variable (default 200).
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .._features import FEATURE_PROTOCOLS, Feature
from .._json import json_equal
from .._models import Metric, Record
from .._protocol import VectorStore
from ..exceptions import (
    ConfigurationError,
    FilterError,
    UnsupportedFeatureError,
    UnsupportedFilterError,
    ValidationError,
    VectorportError,
)
from ..filters import ALL_OPERATORS, parse_filter
from .data import clustered_records, query_vectors
from .oracle import ExactIndex, Judgement, judge
from .strategies import (
    dataset_filters,
    hostile_filters,
    hostile_records,
    metadata_for,
    record_keys,
    texts_for,
    typed_filters,
)

__all__ = [
    "ConformanceFixtures",
    "DeclarationTests",
    "InputTests",
    "OracleTests",
    "QueryTests",
    "ScanTests",
    "StoreConformance",
    "StoreFactory",
    "WriteTests",
    "assert_vectors_equal",
]

StoreFactory = Callable[[int, str], VectorStore]
StoreLoader = Callable[[VectorStore, Sequence[Record]], VectorStore]

EXAMPLES = int(os.environ.get("VECTORPORT_EXAMPLES", "200"))
PROPERTY = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
    database=None,
    derandomize=os.environ.get("VECTORPORT_DERANDOMIZE", "") == "1",
)
METRICS = ("cosine", "euclidean", "dot")


def _all(store: VectorStore, include: Any = None) -> list[Record]:
    return [r for page in store.scan(include=include) for r in page]


def _index(metric: str, records: list[Record]) -> ExactIndex:
    return ExactIndex.from_records(metric, records)


def assert_vectors_equal(got: Any, want: Any, ulps: int = 0) -> None:
    """Bit-exact float32 equality, or within ``ulps`` float32 units in the last place (the
    store's declared ``capabilities.vector_ulps``)."""
    g = np.asarray(got, dtype=np.float32)
    w = np.asarray(want, dtype=np.float32)
    if ulps == 0:
        np.testing.assert_array_equal(g, w)
        return
    assert g.shape == w.shape, f"shape {g.shape} != {w.shape}"
    off = np.abs(g.astype(np.float64) - w) / np.spacing(np.maximum(np.abs(w), np.finfo(np.float32).tiny))
    assert float(off.max(initial=0.0)) <= ulps, f"vectors differ by {off.max()} ulps (> {ulps})"


def _writable(store: VectorStore) -> bool:
    return Feature.WRITE in store.capabilities.features


def _needs_writes(store: VectorStore) -> None:
    """A read-only store: the write is refused with UnsupportedFeatureError, and the test is an
    expected failure (strict: any other outcome fails it)."""
    if _writable(store):
        return
    with pytest.raises(UnsupportedFeatureError):
        store.upsert([Record("read-only-probe", [1.0] * store.spec.dimension)])
    pytest.xfail(f"{store.name} is read-only (no Feature.WRITE): writes raise UnsupportedFeatureError")


def _assert_same_record(got: Record, want: Record, ulps: int = 0, float_ulps: int = 0) -> None:
    assert got.key == want.key
    assert got.text == want.text, f"{want.key!r}: text {got.text!r} != {want.text!r}"
    assert json_equal(got.metadata, want.metadata, float_ulps), (
        f"{want.key!r}: metadata {got.metadata!r} != {want.metadata!r}"
    )
    assert got.vector is not None
    assert_vectors_equal(got.vector, want.vector, ulps)


class ConformanceFixtures:
    """The fixtures every group of conformance tests uses: ``make`` (a new empty store), ``fill``
    (records into it, through ``store_loader`` for a read-only store) and ``loaded`` (a clustered
    dataset per metric with its exact index). A test class provides ``store_factory``."""

    dimension: ClassVar[int] = 16
    dataset_size: ClassVar[int] = 400

    @pytest.fixture(scope="class")
    @classmethod
    def store_loader(cls) -> StoreLoader | None:
        """``load(store, records) -> store`` for a read-only backend; ``None``: records are
        written with ``upsert``."""
        return None

    @pytest.fixture
    def fill(self, store_loader: StoreLoader | None) -> Iterator[Callable[..., VectorStore]]:
        """``fill(store, records)``: the store holding ``records`` (upserted, or loaded into a
        read-only store, which is then opened again: use the store returned)."""
        opened: list[VectorStore] = []

        def fill(store: VectorStore, records: Sequence[Record]) -> VectorStore:
            if _writable(store) or store_loader is None:
                store.upsert(records)
                return store
            again = store_loader(store, records)
            opened.append(again)
            return again

        yield fill
        for store in opened:
            store.close()

    @pytest.fixture
    def make(self, store_factory: StoreFactory) -> Iterator[Callable[..., VectorStore]]:
        made: list[VectorStore] = []

        def make(dimension: int = 4, metric: str = "cosine") -> VectorStore:
            try:
                store = store_factory(dimension, metric)
            except UnsupportedFeatureError as exc:
                pytest.skip(f"metric {metric} unsupported: {exc}")
            made.append(store)
            return store

        yield make
        for store in made:
            try:
                if _writable(store):
                    store.drop()
            finally:
                store.close()

    @pytest.fixture(scope="class", params=METRICS)
    @classmethod
    def loaded(
        cls, request: pytest.FixtureRequest, store_factory: StoreFactory, store_loader: StoreLoader | None
    ) -> Iterator[tuple[VectorStore, list[Record], ExactIndex]]:
        metric = request.param
        try:
            store = store_factory(cls.dimension, metric)
        except UnsupportedFeatureError as exc:
            pytest.skip(f"metric {metric} unsupported: {exc}")
        records = clustered_records(
            cls.dataset_size, cls.dimension, clusters=8, seed=11, rules=store.capabilities.metadata
        )
        if _writable(store) or store_loader is None:
            store.upsert(records)
        else:
            store = store_loader(store, records)
        try:
            yield store, records, _index(metric, records)
        finally:
            if _writable(store):
                store.drop()
            store.close()

    @staticmethod
    def _metrics(make: Callable[..., VectorStore]) -> frozenset[Metric]:
        probe = make(2, "cosine")
        return probe.capabilities.metrics


class DeclarationTests(ConformanceFixtures):
    """The store declares what it can do, and its declarations are true: capabilities, and the
    protocols its features promise."""

    def test_capabilities_are_declared(self, make: Callable[..., VectorStore]) -> None:
        store = make()
        caps = store.capabilities
        assert caps.metrics, "a backend supports at least one metric"
        assert caps.filter_operators <= set(ALL_OPERATORS)
        assert 0 < caps.recall_tolerance <= 1
        assert caps.exact == (caps.recall_tolerance == 1.0) or not caps.exact
        assert min(caps.max_write_batch, caps.max_read_batch, caps.max_delete_batch, caps.max_scan_page) >= 1
        info = store.info()
        assert info["count"] == 0 and info["dimension"] == 4 and info["metric"] == "cosine"

    def test_features_are_the_protocols_the_store_implements(self, make: Callable[..., VectorStore]) -> None:
        store = make()
        features = store.capabilities.features
        assert all(isinstance(f, Feature) for f in features), f"features are Feature members: {features}"
        for feature, proto in FEATURE_PROTOCOLS.items():
            if feature in features:
                assert isinstance(store, proto), f"{feature} declared but {proto.__name__} not implemented"
        assert features <= type(store).capabilities.features, "a collection never does more than its backend"


class WriteTests(ConformanceFixtures):
    """Writes: upsert round-trips and replaces whole records, duplicate keys in a batch keep the
    last, deletes by key and by filter."""

    def test_upsert_get_roundtrip(self, make: Callable[..., VectorStore]) -> None:
        store = make(3)
        _needs_writes(store)
        recs = [
            Record(
                "docs/intro.md#chunk0", [0.1, 0.2, 0.3], {"lang": "en", "n": 1, "tags": ["a", "b"]}, "héllo"
            ),
            Record('we"ird key/#1 ü', [1, 0, 0], {"ok": True, "x": 2.5}, None),
            Record("plain", np.array([0, 0, 1], dtype=np.float32), {}, "t"),
        ]
        assert store.upsert(recs) == 3
        assert store.count() == 3
        got = store.get([r.key for r in reversed(recs)])
        assert [g.key for g in got] == [r.key for r in reversed(recs)]
        for g, r in zip(got, reversed(recs), strict=True):
            want = Record(r.key, np.asarray(r.vector, dtype=np.float32), r.metadata, r.text)
            _assert_same_record(g, want, store.capabilities.vector_ulps)

    def test_upsert_is_full_replace(self, make: Callable[..., VectorStore]) -> None:
        store = make(2)
        _needs_writes(store)
        store.upsert([Record("k", [1, 0], {"a": 1, "b": "old", "tags": ["x"]}, "old text")])
        store.upsert([Record("k", [0, 1], {"a": 2}, None)])
        (got,) = store.get(["k"])
        _assert_same_record(
            got,
            Record("k", np.array([0, 1], dtype=np.float32), {"a": 2}, None),
            store.capabilities.vector_ulps,
        )
        assert store.count() == 1

    def test_upsert_is_idempotent(self, make: Callable[..., VectorStore]) -> None:
        store = make(8)
        _needs_writes(store)
        recs = clustered_records(30, 8, seed=3, rules=store.capabilities.metadata)
        store.upsert(recs)
        first = {r.key: r for r in _all(store)}
        store.upsert(recs)
        second = {r.key: r for r in _all(store)}
        assert store.count() == 30 and first.keys() == second.keys()
        for key in first:
            _assert_same_record(second[key], first[key], store.capabilities.vector_ulps)

    def test_duplicate_keys_in_a_batch_last_wins(self, make: Callable[..., VectorStore]) -> None:
        store = make(2)
        _needs_writes(store)
        n = store.upsert(
            [Record("d", [1, 0], {"v": 1}), Record("e", [1, 1], {}), Record("d", [0, 1], {"v": 2})]
        )
        assert n == 2 and store.count() == 2
        (got,) = store.get(["d"])
        assert got.metadata == {"v": 2}
        np.testing.assert_array_equal(np.asarray(got.vector), np.array([0, 1], dtype=np.float32))

    def test_missing_keys_are_no_error(self, make: Callable[..., VectorStore]) -> None:
        store = make(2)
        _needs_writes(store)
        store.upsert([Record("a", [1, 0])])
        assert store.get(["nope", "a", "nope2"])[0].key == "a"
        assert len(store.get(["nope"])) == 0
        store.delete(["nope", "a"])
        assert store.count() == 0
        assert store.get(["a"]) == []

    def test_delete_by_filter(self, make: Callable[..., VectorStore]) -> None:
        store = make(2)
        _needs_writes(store)
        store.upsert([Record(f"k{i}", [1, i], {"even": i % 2 == 0}) for i in range(10)])
        assert store.delete(filter={"even": True}) == 5
        assert sorted(r.key for r in _all(store)) == ["k1", "k3", "k5", "k7", "k9"]


class InputTests(ConformanceFixtures):
    """Bad and hostile input is refused with vectorport's errors before any I/O, and never writes
    part of a batch."""

    @pytest.mark.parametrize(
        ("record", "path"),
        [
            (Record("k", [1.0, 2.0, 3.0]), "vector"),
            (Record("k", [1.0, math.nan]), "vector"),
            (Record("k", [math.inf, 1.0]), "vector"),
            (Record("k", [0.0, 0.0]), "vector"),
            (Record("", [1.0, 0.0]), "key"),
            (Record("x" * 1025, [1.0, 0.0]), "key"),
            (Record("é" * 513, [1.0, 0.0]), "key"),
            (Record("k", [1.0, 0.0], {"b": b"bytes"}), "metadata.b"),
            (Record("k", [1.0, 0.0], {"s": {1, 2}}), "metadata.s"),
            (Record("k", [1.0, 0.0], {"f": math.nan}), "metadata.f"),
            (Record("k", ["1", "0"]), "vector"),  # type: ignore[list-item]  # numeric strings
            (Record("k", [True, 1.0]), "vector"),
            (Record("k", [1e-30, 1e-30]), "vector"),  # float32 length underflows: no direction
            (Record("k", [3e38, 3e38]), "vector"),  # float32 length overflows
            (Record("k", [1.0, 0.0], {"t": (1, 2)}), "metadata.t"),
            (Record("k", [1.0, 0.0], {"\ud800": 1}), "metadata"),
            (Record("k", [1.0, 0.0], {}, "\udc00 lone surrogate"), "text"),
            (Record("k\ud800", [1.0, 0.0]), "key"),
        ],
    )
    def test_bad_records_write_nothing(
        self, make: Callable[..., VectorStore], record: Record, path: str
    ) -> None:
        store = make(2, "cosine")
        good = Record("good", [1.0, 1.0], {"a": 1})
        _needs_writes(store)
        with pytest.raises(ValidationError) as info:
            store.upsert([good, record])
        assert info.value.path == path
        assert str(path) in str(info.value)
        assert store.count() == 0, "a rejected batch must write nothing"

    def test_bad_queries_fail_before_io(
        self, make: Callable[..., VectorStore], fill: Callable[..., VectorStore]
    ) -> None:
        store = fill(make(2), [Record("a", [1, 0], {"n": 1})])
        with pytest.raises(ValidationError):
            store.query([1, 0, 0])
        with pytest.raises(ValidationError):
            store.query([math.nan, 0])
        with pytest.raises(FilterError):
            store.query([1, 0], filter={"n": {"$gt": "x"}})
        with pytest.raises(FilterError):
            store.query([1, 0], filter={"n": {"$in": []}})
        with pytest.raises(FilterError):
            store.query([1, 0], filter={"n": {"$regex": "x"}})
        with pytest.raises((ValueError, UnsupportedFeatureError)):
            store.query([1, 0], k=0)

    def test_hostile_input_is_refused_with_vectorport_errors(
        self, make: Callable[..., VectorStore], fill: Callable[..., VectorStore]
    ) -> None:
        """Bad arguments raise a vectorport error, never a raw one, and change nothing."""
        store = fill(make(2), [Record("seed1", [1, 0], {"n": 1}), Record("s", [0, 1], {"n": 2})])
        deep: dict[str, Any] = {"n": 1}
        for _ in range(600):
            deep = {"$not": deep}
        nested: Any = 1
        for _ in range(2_500):
            nested = {"a": nested}
        calls: list[Callable[[], Any]] = [
            lambda: store.delete("seed1"),  # a bare string: not the keys s, e, d …
            lambda: store.get("seed1"),
            lambda: store.delete(filter={}),  # everything, by accident: delete_all() is by name
            lambda: store.upsert(5),  # type: ignore[arg-type]
            lambda: store.upsert(Record("x", [1, 0])),  # type: ignore[arg-type]
            lambda: store.upsert([Record("x", [1, 0], {"deep": nested})]),
            lambda: store.query([1, 0], filter=deep),
            lambda: store.query([1, 0], filter={"$and": [{"n": 1}] * 400_000}),
            lambda: store.query([1, 0], filter={"\ud800": False}),  # chroma's client raised TypeError
            lambda: store.query([1, 0], filter={"n": {"$in": ["a\udc00"]}}),
            lambda: store.query([1, 0], include=5),  # type: ignore[arg-type]
            lambda: store.query(["1", "0"]),
            lambda: list(store.scan(batch_size="10")),  # type: ignore[arg-type]
            lambda: list(store.scan(segment=(0, 1, 2))),  # type: ignore[arg-type]
            lambda: list(store.scan(cursor="garbage")),
        ]
        for i, call in enumerate(calls):
            with pytest.raises(VectorportError):
                call()
            assert store.count() == 2, f"call {i} changed the collection"
        assert sorted(r.key for r in _all(store)) == ["s", "seed1"]

    def test_fuzzed_hostile_input_never_raises_raw_and_never_writes_part_of_a_batch(
        self, make: Callable[..., VectorStore]
    ) -> None:
        """Generated hostile records and filters: a vectorport error or success, never a raw
        exception; a refused batch changes nothing; the canary records stay intact."""
        dim = 4
        store = make(dim)
        _needs_writes(store)
        canary = [Record(f"canary/{i}", [1.0, float(i), 0.5, -1.0], {"n": i}, f"c{i}") for i in range(3)]
        store.upsert(canary)

        @settings(PROPERTY, max_examples=max(10, EXAMPLES // 4))
        @given(
            recs=st.lists(hostile_records(dim), min_size=1, max_size=4),
            f=hostile_filters(),
        )
        def check(recs: list[Record], f: Any) -> None:
            before = store.count()
            written: list[str] = []
            try:
                store.upsert(recs)
                written = sorted({r.key for r in recs})
            except VectorportError:
                assert store.count() == before, "a refused batch wrote part of itself"
            with contextlib.suppress(VectorportError):
                store.query([1.0, 0.0, 0.0, 0.0], k=3, filter=f)
            if written:
                store.delete([k for k in written if not k.startswith("canary/")])
            got = {r.key: r for r in store.get([r.key for r in canary])}
            for rec in canary:
                if rec.key not in written:
                    assert rec.key in got, f"canary {rec.key} lost"
                    assert got[rec.key].metadata == rec.metadata and got[rec.key].text == rec.text
            store.upsert(canary)

        check()


class ScanTests(ConformanceFixtures):
    """Scans: every record once, segments that partition the collection, cursors that resume and
    that are refused when the store did not make them."""

    def test_scan_yields_every_record_once(
        self, make: Callable[..., VectorStore], fill: Callable[..., VectorStore]
    ) -> None:
        store = make(8)
        recs = clustered_records(257, 8, seed=5, rules=store.capabilities.metadata)
        store = fill(store, recs)
        pages = list(store.scan(batch_size=37))
        got = [r for p in pages for r in p]
        assert len(got) == 257 and len({r.key for r in got}) == 257
        assert all(len(p) <= 37 for p in pages)
        want = {r.key: r for r in recs}
        for r in got:
            _assert_same_record(
                r,
                Record(
                    r.key,
                    np.asarray(want[r.key].vector, dtype=np.float32),
                    want[r.key].metadata,
                    want[r.key].text,
                ),
                store.capabilities.vector_ulps,
            )

    def test_scan_segments_partition_the_collection(
        self, make: Callable[..., VectorStore], fill: Callable[..., VectorStore]
    ) -> None:
        store = make(4)
        recs = clustered_records(120, 4, seed=6, rules=store.capabilities.metadata)
        store = fill(store, recs)
        parts = [
            [r.key for p in store.scan(segment=(i, 3), batch_size=20, include=[]) for r in p]
            for i in range(3)
        ]
        flat = [k for part in parts for k in part]
        assert len(flat) == len(set(flat)) == 120
        assert set(flat) == {r.key for r in recs}

    def test_scan_resumes_from_a_cursor(
        self, make: Callable[..., VectorStore], fill: Callable[..., VectorStore]
    ) -> None:
        store = make(4)
        store = fill(store, clustered_records(95, 4, seed=7, rules=store.capabilities.metadata))
        scan = store.scan(batch_size=10, include=["metadata"])
        first = [next(scan), next(scan)]
        cursor = first[-1].cursor
        assert cursor is not None
        rest = [r.key for p in store.scan(batch_size=10, cursor=cursor, include=[]) for r in p]
        seen = [r.key for p in first for r in p] + rest
        assert len(seen) == len(set(seen)) == 95

    def test_scan_refuses_a_cursor_it_did_not_make(
        self, make: Callable[..., VectorStore], fill: Callable[..., VectorStore]
    ) -> None:
        store = make(4)
        store = fill(store, clustered_records(60, 4, seed=8, rules=store.capabilities.metadata))
        page = next(store.scan(batch_size=5, include=[], segment=(1, 2)))
        assert page.cursor is not None
        # another segment's cursor would skip or repeat records: refused before any I/O
        with pytest.raises(ConfigurationError, match="segment"):
            next(store.scan(batch_size=5, include=[], segment=(0, 2), cursor=page.cursor))
        for bad in ("not-a-cursor", page.cursor[:-4], "", 5):
            with pytest.raises(ConfigurationError, match="cursor"):
                next(store.scan(batch_size=5, include=[], cursor=bad))  # type: ignore[arg-type]


class QueryTests(ConformanceFixtures):
    """Queries: canonical distances per metric, and a visible under-fill when ``k`` exceeds the
    records."""

    @pytest.mark.parametrize(
        ("metric", "query", "vectors", "expected"),
        [
            (
                "cosine",
                [1, 0],
                {"same": [2, 0], "orth": [0, 3], "opp": [-1, 0]},
                {"same": 0.0, "orth": 1.0, "opp": 2.0},
            ),
            (
                "euclidean",
                [0, 0],
                {"same": [0, 0], "345": [3, 4], "opp": [-1, 0]},
                {"same": 0.0, "345": 5.0, "opp": 1.0},
            ),
            (
                "dot",
                [1, 2],
                {"a": [3, 4], "orth": [2, -1], "opp": [-1, -2]},
                {"a": -11.0, "orth": 0.0, "opp": 5.0},
            ),
        ],
    )
    def test_distances_are_canonical(
        self,
        make: Callable[..., VectorStore],
        fill: Callable[..., VectorStore],
        metric: str,
        query: list[float],
        vectors: dict[str, list[float]],
        expected: dict[str, float],
    ) -> None:
        store = fill(make(2, metric), [Record(k, v) for k, v in vectors.items()])
        result = store.query(query, k=3)
        assert result.k_requested == 3 and result.k_returned == 3
        got = {m.key: m.distance for m in result}
        for key, want in expected.items():
            assert got[key] == pytest.approx(want, abs=1e-5), f"{metric} distance of {key}"
        assert [m.key for m in result] == sorted(expected, key=lambda k: expected[k])
        for m in result:
            want_score = 1 - m.distance if metric == "cosine" else -m.distance
            assert m.score == pytest.approx(want_score, abs=1e-6)

    def test_k_above_count_underfills_visibly(
        self, make: Callable[..., VectorStore], fill: Callable[..., VectorStore]
    ) -> None:
        store = fill(make(2), [Record("a", [1, 0]), Record("b", [0, 1])])
        k = min(50, store.capabilities.max_top_k or 50)
        result = store.query([1, 0], k=k)
        assert (result.k_requested, result.k_returned) == (k, 2)
        assert store.query([1, 0], k=5, filter={"missing": "x"}).k_returned == 0


class OracleTests(ConformanceFixtures):
    """Property tests against the exact reference: filtered queries, recall on clustered data,
    random records that round-trip and query like the oracle."""

    def test_filtered_queries_match_the_oracle(
        self, loaded: tuple[VectorStore, list[Record], ExactIndex]
    ) -> None:
        store, _records, index = loaded
        caps = store.capabilities
        judgements: list[Judgement] = []
        queries = query_vectors(64, self.dimension, clusters=8, seed=11)
        top = caps.max_top_k or 100

        @PROPERTY
        @given(f=dataset_filters(), qi=st.integers(0, len(queries) - 1), k=st.integers(1, min(top, 40)))
        def check(f: dict[str, Any], qi: int, k: int) -> None:
            try:
                result = store.query(queries[qi], k=k, filter=f)
            except UnsupportedFilterError:
                return  # refused before I/O: allowed, never silently wrong
            j = judge(index, queries[qi], result, parse_filter(f))
            assert not j.violations, f"filter {f}: results outside the filter scope {j.violations}"
            assert j.k_returned <= j.k_expected
            if caps.exact:
                assert j.k_returned == j.k_expected, f"filter {f}: {j.k_returned} of {j.k_expected}"
                assert not j.missing_required, f"filter {f}: missing {j.missing_required}"
                assert j.max_distance_error < 1e-3
            judgements.append(j)

        check()
        assert judgements, "every filter was refused"
        recall = float(np.mean([j.recall for j in judgements]))
        assert recall >= caps.recall_tolerance, f"mean recall {recall:.3f} < {caps.recall_tolerance}"

    def test_unfiltered_recall_on_clustered_data(
        self, loaded: tuple[VectorStore, list[Record], ExactIndex]
    ) -> None:
        store, _records, index = loaded
        k = min(10, store.capabilities.max_top_k or 10)
        recalls = []
        for q in query_vectors(50, self.dimension, clusters=8, seed=12):
            j = judge(index, q, store.query(q, k=k), None)
            assert not j.violations and j.k_returned == k
            recalls.append(j.recall)
        assert float(np.mean(recalls)) >= store.capabilities.recall_tolerance

    def test_random_records_roundtrip_and_query_like_the_oracle(
        self, make: Callable[..., VectorStore]
    ) -> None:
        store = make(4, "euclidean") if Metric.EUCLIDEAN in self._metrics(make) else make(4, "cosine")
        _needs_writes(store)  # a write and a delete per example
        caps = store.capabilities
        coords = st.integers(-100, 100).map(lambda x: x / 10)
        vector = st.lists(coords, min_size=4, max_size=4).filter(lambda v: any(v))
        records = st.lists(
            st.builds(
                Record,
                record_keys(),
                vector,
                metadata_for(caps.metadata),
                texts_for(caps.metadata),
            ),
            min_size=1,
            max_size=12,
            unique_by=lambda r: r.key,
        )

        @PROPERTY
        @given(recs=records, f=typed_filters(), q=vector, k=st.integers(1, 12))
        def check(recs: list[Record], f: dict[str, Any], q: list[float], k: int) -> None:
            try:
                store.upsert(recs)
                got = {r.key: r for r in _all(store)}
                assert got.keys() == {r.key for r in recs}
                for r in recs:
                    _assert_same_record(
                        got[r.key],
                        Record(r.key, np.asarray(r.vector, dtype=np.float32), r.metadata, r.text),
                        caps.vector_ulps,
                        caps.metadata.float_ulps,
                    )
                try:
                    result = store.query(q, k=k, filter=f)
                except UnsupportedFilterError:
                    return
                index = _index(store.spec.metric.value, recs)
                j = judge(index, np.asarray(q, dtype=np.float32), result, parse_filter(f))
                assert not j.violations, f"filter {f}: results outside the filter scope {j.violations}"
                assert j.k_returned == j.k_expected, f"filter {f}: {j.k_returned} of {j.k_expected}"
                assert not j.missing_required, f"filter {f}: missing {j.missing_required}"
            finally:
                store.delete([r.key for r in recs])
            assert store.count() == 0

        check()


class StoreConformance(DeclarationTests, WriteTests, InputTests, ScanTests, QueryTests, OracleTests):
    """The shared contract tests: every group, composed. See the module docstring for how to use
    it; a backend that supports only some of the contract composes the groups it needs instead
    (``class TestMine(WriteTests, ScanTests)``), as Haystack's document-store test mixins do."""
