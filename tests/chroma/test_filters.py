"""Portable filters on Chroma against the oracle, on metadata written by plain chromadb: values
of every type, lists of every type, the same field a list on one record and a scalar on
another, missing fields. Embedded and ``chroma run``."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given

import vectorport
from vectorport.backends.chroma.filters import SQLITE_MAX_PARAMS, ChromaFilterCompiler, where_params
from vectorport.exceptions import UnsupportedFilterError
from vectorport.filters import evaluate, parse_filter
from vectorport.testing.conformance import PROPERTY
from vectorport.testing.strategies import typed_filters

from ._plain import collection_name, plain_client

pytestmark = pytest.mark.chroma

N = 90  # below Chroma's brute-force batch (100): every query is exact
STRINGS = ["x", "y", "1", "true", ""]
INTS = [-2, -1, 0, 1, 2]
FLOATS = [0.5, 1.0, -1.5, 2.0, 0.0, -0.5]


def _value(rng: random.Random) -> Any:
    kind = rng.choice(["str", "int", "float", "bool", "str[]", "int[]", "float[]", "bool[]"])
    pool: list[Any] = {"str": STRINGS, "int": INTS, "float": FLOATS, "bool": [True, False]}[kind.rstrip("[]")]
    if kind.endswith("[]"):
        return rng.sample(pool, rng.randint(1, min(3, len(pool))))
    return rng.choice(pool)


def _metadata(rng: random.Random) -> dict[str, Any] | None:
    meta = {f: _value(rng) for f in ("a", "b", "c") if rng.random() < 0.8}
    if rng.random() < 0.6:
        meta["tags"] = rng.sample(["x", "y", "z"], rng.randint(1, 3))
    return meta or None


@pytest.fixture(scope="module")
def foreign(request: pytest.FixtureRequest, new_url: Callable[[], str]) -> Iterator[tuple[Any, list[Any]]]:
    """A collection filled by plain chromadb, opened by vectorport, and its metadata."""
    url = new_url()
    rng = random.Random(1234)
    metas = [_metadata(rng) for _ in range(N)]
    with plain_client(url) as client:
        coll = client.create_collection(collection_name(url), configuration={"hnsw": {"space": "l2"}})
        coll.add(
            ids=[f"r{i}" for i in range(N)],
            embeddings=[[1.0, float(i)] for i in range(N)],
            metadatas=metas,
        )
    store = vectorport.connect(url)
    try:
        yield store, metas
    finally:
        store.drop()
        store.close()


def _expected(metas: list[Any], spec: Any) -> list[str]:
    node = parse_filter(spec)
    return sorted(f"r{i}" for i, m in enumerate(metas) if evaluate(node, m or {}))


def _inexpressible(spec: Any) -> bool:
    text = json.dumps(spec)
    return "$exists" in text or "$not" in text


def test_random_filters_equal_the_oracle(foreign: tuple[Any, list[Any]]) -> None:
    store, metas = foreign
    answered: list[int] = []

    @PROPERTY
    @given(spec=typed_filters())
    def check(spec: dict[str, Any]) -> None:
        try:
            got = store.query([1, 0], k=N, filter=spec)
        except UnsupportedFilterError:
            assert _inexpressible(spec), f"refused a filter Chroma can express: {spec}"
            return
        assert sorted(got.keys) == _expected(metas, spec), spec
        answered.append(1)

    check()
    assert answered


# Filters a Chroma user gets wrong with a naive translation, pinned here whatever hypothesis draws.
PINNED: list[Any] = [
    {"a": 1},
    {"a": 1.0},
    {"a": True},
    {"a": {"$ne": 1}},
    {"a": {"$ne": True}},
    {"a": {"$in": [1, "x", True, 0.5]}},
    {"a": {"$nin": [1, "x", True, 0.5]}},
    {"a": {"$in": [0, False]}},
    {"a": {"$nin": [0.0]}},
    {"b": {"$gt": 0.5}},
    {"b": {"$lte": -0.5}},
    {"c": ""},
    {"c": {"$ne": ""}},
    {"tags": {"$nin": ["x", "y"]}},
    {"nope": {"$ne": "x"}},
    {"nope": {"$nin": [1, "x"]}},
    {"$or": [{"a": {"$in": [2, "y"]}}, {"b": False}]},
    {"$not": {"$and": [{"a": 1}, {"b": {"$in": ["x", 2.0]}}]}},
]


@pytest.mark.parametrize("spec", PINNED, ids=[json.dumps(p) for p in PINNED])
def test_pinned_filters_equal_the_oracle(foreign: tuple[Any, list[Any]], spec: Any) -> None:
    store, metas = foreign
    assert sorted(store.query([1, 0], k=N, filter=spec).keys) == _expected(metas, spec)


def test_long_in_lists_work_and_equal_the_oracle(foreign: tuple[Any, list[Any]]) -> None:
    # A flat $or of 500+ items passes SQLite's expression depth limit (1,000): the compiler
    # nests long lists instead. Values that match nothing pad the lists.
    store, metas = foreign
    strings = ["y", *(f"pad{i}" for i in range(3000))]
    numbers = [2, 0.5, *range(100, 1600)]
    for spec in (
        {"a": {"$in": strings}},
        {"a": {"$nin": strings}},
        {"b": {"$in": numbers}},
        {"b": {"$nin": numbers}},
        {"$or": [{"c": {"$gt": v}} for v in range(-3, 1500)]},
    ):
        assert sorted(store.query([1, 0], k=N, filter=spec).keys) == _expected(metas, spec)


def test_the_parameter_budget_is_chromas_own(embedded_url: Callable[[], str]) -> None:
    """One value past the budget is refused before any I/O, and that same where sent by plain
    chromadb fails in Chroma: the cost model is not loose. At the budget a filter runs: it is
    not tight either. (Embedded only: ``chroma run`` runs the same SQLite statements.)"""
    store = vectorport.connect(embedded_url(), dimension=2)
    compiler = ChromaFilterCompiler()
    makers: list[Callable[[int], Any]] = [
        lambda n: {"a": {"$in": [f"v{i}" for i in range(n)]}},
        lambda n: {"b": {"$nin": list(range(1000, 1000 + n))}},
        lambda n: {"$or": [{"c": {"$lt": -i}} for i in range(n)]},
        lambda n: {"$and": [{"c": {"$ne": f"s{i}"}} for i in range(n)]},
    ]
    try:
        store.upsert([vectorport.Record("k", [1, 0], {"a": "v1", "b": [1.5], "c": ["s"]})])
        with plain_client(store.url.raw) as client:
            raw = client.get_collection(store.collection)
            for i, make in enumerate(makers):
                n = _largest_fitting(compiler, make)
                where = compiler.where(parse_filter(make(n)))
                assert where_params(where) <= SQLITE_MAX_PARAMS
                if i == 0:  # running one at the edge is slow (seconds): the common case is enough
                    assert store.query([1, 0], k=1, filter=make(n)).keys == ["k"]
                with pytest.raises(UnsupportedFilterError, match="SQLite parameters"):
                    store.query([1, 0], k=1, filter=make(n + 1))
                over = ChromaFilterCompiler.compile(compiler, parse_filter(make(n + 1)))  # no budget check
                assert where_params(over) > SQLITE_MAX_PARAMS
                with pytest.raises(Exception, match="too many SQL variables"):
                    raw.get(where=over, limit=1)
    finally:
        store.drop()
        store.close()


def _largest_fitting(compiler: ChromaFilterCompiler, make: Callable[[int], Any]) -> int:
    lo, hi = 1, SQLITE_MAX_PARAMS
    while lo < hi:
        mid = (lo + hi + 1) // 2
        try:
            compiler.where(parse_filter(make(mid)))
            lo = mid
        except UnsupportedFilterError:
            hi = mid - 1
    return lo
