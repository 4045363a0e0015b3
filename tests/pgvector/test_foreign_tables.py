"""Tables vectorport did not create, in vectorport's shape: a plain SQL table is opened with its
columns found (or named with column options) and ``metric=``; a mistyped column named with an
option gives an error that names the column and what to pass or change. The framework layouts
and mapped tables are in test_layouts.py."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import vectorport
from vectorport.filters import parse_filter
from vectorport.testing import ExactIndex, judge

pytestmark = pytest.mark.pgvector

DIM = 4
_names = itertools.count()


@pytest.fixture
def table(admin: Any) -> Iterator[str]:
    """A fresh table name in public, dropped (with whatever vectorport recorded) afterwards."""
    name = f"ext_{next(_names)}"
    yield name
    admin.execute(f"DROP TABLE IF EXISTS {name}")
    if admin.execute("SELECT to_regclass('vectorport_collections')").fetchone()[0]:
        admin.execute("DELETE FROM vectorport_collections WHERE table_name = %s", (name,))


def _plain(admin: Any, name: str, rows: int = 40, *, index: str | None = None) -> np.ndarray:
    admin.execute(
        f"CREATE TABLE {name} (key text PRIMARY KEY, embedding vector({DIM}) NOT NULL, "
        "metadata jsonb NOT NULL DEFAULT '{}', content text)"
    )
    if index:
        admin.execute(f"CREATE INDEX ON {name} USING hnsw (embedding {index})")
    vectors = np.random.default_rng(5).normal(size=(rows, DIM)).astype(np.float32)
    with admin.cursor() as cur:
        cur.executemany(
            f"INSERT INTO {name} VALUES (%s, %s::vector, %s::jsonb, %s)",
            [
                (f"row{i:03d}", "[" + ",".join(map(str, v.tolist())) + "]", f'{{"n": {i}}}', f"text {i}")
                for i, v in enumerate(vectors)
            ],
        )
    return vectors


def test_plain_sql_table_with_column_options_and_metric(
    pg_url: Callable[..., str], admin: Any, table: str
) -> None:
    vectors = _plain(admin, table)
    with pytest.raises(vectorport.ConfigurationError, match="metric="):
        vectorport.connect(pg_url(table, text_column="content"))  # no HNSW index tells the metric

    with vectorport.connect(pg_url(table, text_column="content"), metric="euclidean") as store:
        assert store.spec.dimension == DIM and store.spec.metric.value == "euclidean"
        assert store.capabilities.exact and "hybrid" not in store.capabilities.features
        assert store.info()["pgvector"]["columns"]["text"] == "content"
        assert store.count() == 40
        (row,) = store.get(["row007"])
        assert row.text == "text 7" and row.metadata == {"n": 7}
        np.testing.assert_array_equal(row.vector, vectors[7])

        index = ExactIndex.from_records(vectorport.Metric.EUCLIDEAN, list(store.records()))
        for q in vectors[:5] + 0.01:
            for flt in (None, {"n": {"$lt": 20}}):
                j = judge(index, q, store.query(q, k=7, filter=flt), parse_filter(flt))
                assert j.recall == 1.0 and not j.violations

        store.upsert([vectorport.Record("new", [1, 2, 3, 4], {"lang": "en"}, "written by vectorport")])
        assert admin.execute(f"SELECT content FROM {table} WHERE key = 'new'").fetchone() == (
            "written by vectorport",
        )
        assert store.delete(["row000"]) == 1 and store.count() == 40
        with pytest.raises(vectorport.UnsupportedFeatureError, match="fts"):
            store.text_query("text")  # type: ignore[attr-defined]
        assert table in store.list_collections()  # recorded at the first write

    # recorded with its metric: opens without metric= now, and still checks the columns
    with vectorport.connect(pg_url(table, text_column="content")) as store:
        assert store.spec.metric.value == "euclidean" and store.count() == 40
    with vectorport.connect(pg_url(table)) as store:  # the text column is found by its name
        assert store.info()["pgvector"]["columns"]["text"] == "content"
    with pytest.raises(vectorport.ConfigurationError, match=r"no column 'body'.*check text_column=body"):
        vectorport.connect(pg_url(table, text_column="body"))


def test_hnsw_index_tells_the_metric_and_a_conflicting_one_is_refused(
    pg_url: Callable[..., str], admin: Any, table: str
) -> None:
    vectors = _plain(admin, table, index="vector_ip_ops")
    url = pg_url(table, text_column="content")
    with vectorport.connect(url) as store:
        assert store.spec.metric.value == "dot" and not store.capabilities.exact
        index = ExactIndex.from_records(vectorport.Metric.DOT, list(store.records()))
        for q in vectors[:5]:
            assert judge(index, q, store.query(q, k=5), None).recall == 1.0
        with store.bulk_load(expected=10):  # its own index is never dropped
            store.upsert([vectorport.Record("x", [0, 0, 0, 1])])
        indexes = {
            r[0] for r in admin.execute("SELECT indexname FROM pg_indexes WHERE tablename = %s", (table,))
        }
        assert f"{table}_embedding_idx" in indexes
    with pytest.raises(vectorport.ConfigurationError, match="dot metric, not cosine"):
        vectorport.connect(url, metric="cosine")


_FOUR = f"key text PRIMARY KEY, embedding vector({DIM}), metadata jsonb, text text"


@pytest.mark.parametrize(
    ("ddl", "options", "fragment"),
    [
        (_FOUR, {"metadata_column": "text"}, "(metadata) is text, not json or jsonb"),
        (_FOUR, {"embedding_column": "metadata"}, "(embedding) is jsonb, not vector"),
        (_FOUR, {"text_column": "embedding"}, "(text) is vector(4), not text"),
        (_FOUR.replace("key text", "key bytea"), {}, "key_expression="),
        (
            f"key text PRIMARY KEY, a vector({DIM}), b vector({DIM}), metadata jsonb",
            {},
            "2 vector columns (a, b): pass embedding_column=NAME",
        ),
        ("key text, n int, metadata jsonb", {}, "no vector or halfvec column"),
    ],
)  # fmt: skip
def test_each_mismatch_is_named(
    pg_url: Callable[..., str], admin: Any, table: str, ddl: str, options: dict[str, str], fragment: str
) -> None:
    admin.execute(f"CREATE TABLE {table} ({ddl})")
    with pytest.raises(vectorport.ConfigurationError, match="cannot be used as a collection") as info:
        vectorport.connect(pg_url(table, **options), metric="cosine")
    assert fragment in str(info.value)
    assert "Its columns:" in str(info.value) and "key_column=" in str(info.value)


def test_an_option_naming_a_missing_column_says_so(
    pg_url: Callable[..., str], admin: Any, table: str
) -> None:
    _plain(admin, table, rows=1)
    with pytest.raises(vectorport.ConfigurationError, match="check text_column=body"):
        vectorport.connect(pg_url(table, text_column="body"), metric="cosine")
    with pytest.raises(vectorport.ConfigurationError, match="name the columns of an existing table"):
        vectorport.connect(pg_url("does_not_exist_yet", text_column="body"), dimension=DIM)


def test_ivfflat_index_tells_the_metric_and_search_stays_exact(
    pg_url: Callable[..., str], admin: Any, table: str
) -> None:
    vectors = _plain(admin, table, rows=30)
    admin.execute(
        f"CREATE INDEX {table}_ivf ON {table} USING ivfflat (embedding vector_l2_ops) WITH (lists = 3)"
    )
    with vectorport.connect(pg_url(table, text_column="content")) as store:
        assert store.spec.metric.value == "euclidean" and store.capabilities.exact
        index = ExactIndex.from_records(vectorport.Metric.EUCLIDEAN, list(store.records()))
        for q in vectors[:5] + 0.01:  # one probe of three lists would miss some
            assert judge(index, q, store.query(q, k=10), None).recall == 1.0


def test_nullable_metadata_and_embedding(pg_url: Callable[..., str], admin: Any, table: str) -> None:
    admin.execute(
        f"CREATE TABLE {table} (key text PRIMARY KEY, embedding vector({DIM}), metadata jsonb, text text)"
    )
    admin.execute(
        f"INSERT INTO {table} VALUES ('a', '[1,0,0,0]', NULL, 'no metadata'), "
        f"('b', '[0,1,0,0]', '{{\"lang\": \"en\"}}', NULL), ('c', NULL, '{{}}', 'no vector')"
    )
    with vectorport.connect(pg_url(table), metric="cosine") as store:
        result = store.query([1, 0, 0, 0], k=5)
        assert result.keys == ["a", "b"]  # a row without a vector is no search result
        assert result[0].metadata == {}  # NULL metadata reads as {}
        assert store.query([1, 0, 0, 0], k=5, filter={"lang": {"$ne": "en"}}).keys == ["a"]
        assert store.query([1, 0, 0, 0], k=5, filter={"lang": {"$exists": False}}).keys == ["a"]
        assert [r.key for r in store.get(["a", "b"], include=["metadata"])] == ["a", "b"]
        with pytest.raises(vectorport.ConfigurationError, match=r"1 rows have no vector.*e\.g\. 'c'"):
            list(store.records())
    with vectorport.connect(pg_url(table, null_vectors="skip"), metric="cosine") as store:
        assert [r.key for r in store.records()] == ["a", "b"] and store.count() == 2


def test_a_vectorport_table_altered_behind_its_back(pg_url: Callable[..., str], admin: Any) -> None:
    url = pg_url()
    with vectorport.connect(url, dimension=DIM) as store:
        table = store.collection
    try:
        admin.execute(f"ALTER TABLE {table} RENAME COLUMN text TO body")
        with vectorport.connect(url) as store:  # found by its name
            assert store.info()["pgvector"]["columns"]["text"] == "body"
        admin.execute(f"ALTER TABLE {table} RENAME COLUMN body TO words")
        with pytest.raises(vectorport.ConfigurationError, match=r"2 vector|no column|words"):
            vectorport.connect(url + "&text_column=wordz")
        with vectorport.connect(url + "&text_column=words") as store:
            store.upsert([vectorport.Record("k", [1, 2, 3, 4], {}, "kept")])
            assert store.get(["k"])[0].text == "kept"
            assert "hybrid" in store.capabilities.features  # fts is still there
    finally:
        with vectorport.connect(url + "&text_column=words") as store:
            store.drop()


@pytest.mark.parquet
def test_trusted_sql_runs_read_only(
    pg_url: Callable[..., str], admin: Any, table: str, tmp_path: Any
) -> None:
    """``key_expression=`` and ``where=`` are pasted into SQL as written: the store's reads run in
    READ ONLY transactions, so an expression that writes fails instead of running through an
    export (checked with psql's view: no large object, no row written)."""
    from urllib.parse import quote

    from vectorport.snapshot import export

    pytest.importorskip("pyarrow")
    _plain(admin, table, rows=5, index="vector_cosine_ops")
    admin.execute(f"CREATE TABLE {table}_log (n int)")
    admin.execute(
        f"CREATE FUNCTION {table}_note(k text) RETURNS text LANGUAGE sql AS "
        f"$$ INSERT INTO {table}_log VALUES (1) RETURNING k $$"
    )
    objects = admin.execute("SELECT count(*) FROM pg_largeobject_metadata").fetchone()[0]
    try:
        for option in (
            {"key_expression": quote("key || lo_import('/etc/hostname')::text", safe="")},
            {"key_expression": quote(f"{table}_note(key)", safe="")},
            {"key_column": "key", "where": quote(f"{table}_note(key) IS NOT NULL", safe="")},
        ):
            with pytest.raises(vectorport.VectorportError, match="read-only"):
                export(pg_url(table, **option), tmp_path / f"snap{next(_names)}")
        assert admin.execute(f"SELECT count(*) FROM {table}_log").fetchone()[0] == 0
        assert admin.execute("SELECT count(*) FROM pg_largeobject_metadata").fetchone()[0] == objects
        # a reading expression still reads
        url = pg_url(table, key_expression=quote("upper(key)", safe=""))
        report = export(url, tmp_path / "good")
        assert report.count == 5 and report.status == "verified"
    finally:
        admin.execute(f"DROP FUNCTION IF EXISTS {table}_note(text)")
        admin.execute(f"DROP TABLE IF EXISTS {table}_log")
