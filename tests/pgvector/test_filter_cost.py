"""Long membership filters on pgvector: same results as the oracle (as one jsonpath and as
hashed membership), one or two reads of each row's metadata whatever the list's length (a
10,000-value ``$in`` over 1 MB rows once took a backend to 21.5 GB), and filters beyond
PostgreSQL's 65,535 bind parameters refused before any I/O."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vectorport
from vectorport.backends.pgvector import filters
from vectorport.backends.pgvector.filters import LONG_LIST, MAX_FILTER_PARAMS, PgFilterCompiler
from vectorport.exceptions import UnsupportedFilterError
from vectorport.filters import evaluate, parse_filter

from .filter_cost_probe import load, measure

pytestmark = pytest.mark.pgvector

WEIRD = 'we"ird.key\\ $é'
# Stored values of every kind the oracle tells apart: type-strict scalars, numbers equal across
# int/float, arrays (of each type, mixed, empty, nested), objects, null.
STORED: list[Any] = [
    "x", "y", "1", "true", "", "é", 'q"uote\\', 0, 1, -2, 1.0, 0.5, -1.5, 2**62, 1e16, 1.5e-7,
    True, False, None, ["x", "y"], [1, 2], [1.0], [True], [False, True], [], [["x"]], [[1]],
    [{"p": 1}], [None], [1, "1", True], {"p": 1}, {"x": "x"},
]  # fmt: skip
# Filter values: the scalars above plus fillers that match nothing (to make lists long).
VALUES: list[Any] = [
    "x", "y", "1", "true", "", "é", 'q"uote\\', "p", 0, 1, -2, 1.0, 2.0, 0.5, -1.5, 2**62, 1e16,
    1.5e-7, True, False,
]  # fmt: skip
FIELDS = ["a", "b", WEIRD]


def _metadata() -> list[dict[str, Any]]:
    out = []
    n = len(STORED)
    for i in range(3 * n):
        meta = {"a": STORED[i % n], "b": STORED[(i * 7 + 3) % n], WEIRD: STORED[(i * 5 + 1) % n]}
        for j, field in enumerate(FIELDS):
            if (i + j) % (4 + j) == 0:
                del meta[field]  # missing fields, in every combination over the rows
        out.append(meta)
    return out


METADATA = _metadata()


@pytest.fixture(scope="module")
def typed(pg_url: Callable[..., str]) -> Iterator[vectorport.VectorStore]:
    store = vectorport.connect(pg_url(index="exact"), dimension=2)
    rng = np.random.default_rng(0)
    store.upsert(vectorport.Record(f"r{i}", rng.standard_normal(2), meta) for i, meta in enumerate(METADATA))
    yield store
    store.drop()
    store.close()


def _values(max_size: int) -> st.SearchStrategy[list[Any]]:
    fillers = st.integers(0, 10**6).map(lambda i: f"v{i}")
    return st.lists(st.sampled_from(VALUES) | fillers, min_size=1, max_size=max_size)


def _membership() -> st.SearchStrategy[dict[str, Any]]:
    field = st.sampled_from(FIELDS)
    leaf = st.one_of(
        st.tuples(field, st.sampled_from(["$in", "$nin"]), _values(300)).map(lambda t: {t[0]: {t[1]: t[2]}}),
        st.tuples(field, st.sampled_from(["$eq", "$ne"]), st.sampled_from(VALUES)).map(
            lambda t: {t[0]: {t[1]: t[2]}}
        ),
    )
    other = st.one_of(  # children that are not merged: the rest of the connective stays exact
        field.map(lambda f: {f: {"$exists": False}}),
        st.tuples(field, st.sampled_from([-1, 0.5, 1])).map(lambda t: {t[0]: {"$gt": t[1]}}),
    )
    children = st.lists(leaf, min_size=1, max_size=6)
    branch = st.tuples(children, st.lists(other, max_size=1)).map(lambda t: t[0] + t[1])
    return st.one_of(
        leaf,
        branch.map(lambda xs: {"$or": xs}),
        branch.map(lambda xs: {"$and": xs}),
        branch.map(lambda xs: {"$not": {"$or": xs}}),
        st.tuples(branch, branch).map(lambda t: {"$and": [{"$or": t[0]}, {"$or": t[1]}]}),
    )


def _sql_keys(conn: Any, table: str, where: dict[str, Any], *, index: bool) -> set[str]:
    pred = PgFilterCompiler().compile(parse_filter(where))
    with conn.transaction(force_rollback=True):
        # the GIN index answers (and its recheck filters) or every row is tested: both exact
        scans = ("enable_seqscan",) if index else ("enable_indexscan", "enable_bitmapscan")
        for name in scans:
            conn.execute(f"SET LOCAL {name} = off")
        rows = conn.execute(f'SELECT key FROM "{table}" WHERE {pred.text}', pred.params).fetchall()
    return {r[0] for r in rows}


@pytest.mark.parametrize("long_list", [LONG_LIST, 2], ids=["as-compiled", "hashed-from-3"])
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=_membership())
def test_long_membership_filters_match_the_oracle(
    typed: vectorport.VectorStore,
    admin: Any,
    monkeypatch: pytest.MonkeyPatch,
    long_list: int,
    where: dict[str, Any],
) -> None:
    monkeypatch.setattr(filters, "LONG_LIST", long_list)
    node = parse_filter(where)
    want = {f"r{i}" for i, meta in enumerate(METADATA) if evaluate(node, meta)}
    table = typed.collection  # type: ignore[attr-defined]
    assert _sql_keys(admin, table, where, index=False) == want, where
    assert _sql_keys(admin, table, where, index=True) == want, where
    got = typed.query([1, 0], k=len(METADATA), filter=where)
    assert set(got.keys) == want, where


def test_membership_needs_one_or_two_parameters() -> None:
    def compiled(where: dict[str, Any]) -> filters.Predicate:
        return PgFilterCompiler().compile(parse_filter(where))

    # up to LONG_LIST values: one jsonpath (GIN-indexed), over any fields under one $or
    short = compiled({"a": {"$in": list(range(LONG_LIST))}})
    assert len(short.params) == 1 and "@?" in short.text
    assert len(compiled({"$or": [{"a": 1}, {"b": {"$in": ["x", "y"]}}, {"c": True}]}).params) == 1
    # longer: hashed membership, whatever the length
    for where in (
        {"a": {"$in": list(range(10_000))}},
        {"$or": [{"a": v} for v in range(1_000)]},
        {"a": {"$nin": [1, 2]}},
    ):
        pred = compiled(where)
        assert len(pred.params) == 2 and "jsonb_array_elements" in pred.text and "@" not in pred.text
    many_ne = compiled({"$and": [{"a": {"$ne": v}} for v in range(1_000)]})
    assert len(many_ne.params) == 2 and many_ne.text.startswith("(NOT")
    # a single equality keeps its containment form (and its GIN plan)
    assert "@>" in compiled({"a": {"$in": ["x"]}}).text
    assert "@?" not in compiled({"a": 1, "b": 2}).text


def _proc_readable(admin: Any) -> bool:
    pid = admin.info.backend_pid
    return Path(f"/proc/{pid}/status").exists()


def test_ten_thousand_values_over_megabyte_rows_read_each_row_once(
    pg_url: Callable[..., str], pg_uri: str, admin: Any
) -> None:
    if not _proc_readable(admin):
        pytest.skip("the server's processes are not visible in /proc")
    url = pg_url()
    table = url.rsplit("table=", 1)[1]
    load(url, rows=20, meta_kb=1024)
    where = {"lang": {"$in": [f"x{i}" for i in range(9_999)] + ["fr"]}}
    # Checked first: the multiplying form would need 2 x 10,000 x 1 MB for one row.
    assert len(PgFilterCompiler().compile(parse_filter(where)).params) == 2
    out = measure(pg_uri, table, where, cap_mb=1024)
    assert out["error"] is None
    assert sorted(out["keys"]) == sorted(f"k{i}" for i in range(20) if i % 5 == 1)
    # Two detoasted copies of a row (2 MB) and the hashed values: ~5 MB measured. 100 MB is what
    # 50 more copies of a row would take, and 0.5 % of what two tests per value needed.
    assert out["peak_anon_mb"] < 100, out
    with vectorport.connect(url) as store:
        assert sorted(store.query(np.ones(8), k=20, filter=where).keys) == sorted(out["keys"])
        store.drop()


def _exists_or(n: int) -> dict[str, Any]:
    return {"$or": [{f"f{i}": {"$exists": True}} for i in range(n)]}  # one parameter each


def test_filters_beyond_the_bind_parameter_limit_are_refused_before_io(
    pg_url: Callable[..., str],
) -> None:
    assert len(PgFilterCompiler().compile(parse_filter(_exists_or(MAX_FILTER_PARAMS))).params) == (
        MAX_FILTER_PARAMS
    )
    too_many = _exists_or(MAX_FILTER_PARAMS + 1)
    with pytest.raises(UnsupportedFilterError, match=r"65,535 .*Split the filter") as info:
        PgFilterCompiler().compile(parse_filter(too_many))
    assert info.traceback[-1].path.name == "filters.py"
    assert len(str(info.value)) < 600  # names the count, not the 65,520 leaves
    ranges = {"$or": [{"n": {"$gt": i}} for i in range(MAX_FILTER_PARAMS // 2 + 1)]}  # two each
    with pytest.raises(UnsupportedFilterError):
        PgFilterCompiler().where(parse_filter(ranges))

    store = vectorport.connect(pg_url(), dimension=2)
    try:
        store.upsert([vectorport.Record("a", [1, 0], {"n": 1}), vectorport.Record("b", [0, 1], {"f7": 0})])
        with pytest.raises(UnsupportedFilterError):
            store.query([1, 0], k=2, filter=too_many)
        with pytest.raises(UnsupportedFilterError):
            store.delete(filter=too_many)
        assert store.count() == 2 and store.query([1, 0], k=2).keys == ["a", "b"]  # nothing broke
        # at the limit: sent and answered, with the statement's own parameters on top
        assert store.query([1, 0], k=2, filter=_exists_or(MAX_FILTER_PARAMS)).keys == ["b"]
        # a list far longer than the limit needs two parameters
        long_in = {"n": {"$in": [*range(2, 100_000), 1]}}
        assert store.query([1, 0], k=2, filter=long_in).keys == ["a"]
    finally:
        store.drop()
        store.close()
