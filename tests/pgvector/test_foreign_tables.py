"""Tables vectorport did not create: a plain SQL table is opened with column options and
``metric=``; the common shapes it cannot use (Supabase's ``documents`` with a bigint id,
LangChain's ``langchain_pg_embedding``) and every missing or mistyped column give an error that
names the column and what to pass or change."""

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
    with pytest.raises(vectorport.ConfigurationError) as info:
        vectorport.connect(pg_url(table))
    message = str(info.value)
    assert "no column 'text'" in message and "text_column=NAME" in message
    assert "content text" in message  # the columns it has, to choose from

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
    with pytest.raises(vectorport.ConfigurationError, match="no column 'text'"):
        vectorport.connect(pg_url(table))


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


def test_supabase_documents_shape_names_the_id_and_text_columns(
    pg_url: Callable[..., str], admin: Any, table: str
) -> None:
    # supabase.com/docs/guides/ai/langchain: id bigserial, content, metadata, embedding
    admin.execute(
        f"CREATE TABLE {table} (id bigserial PRIMARY KEY, content text, metadata jsonb, "
        f"embedding vector({DIM}))"
    )
    admin.execute(f"CREATE INDEX ON {table} USING hnsw (embedding vector_cosine_ops)")
    with pytest.raises(vectorport.ConfigurationError) as info:
        vectorport.connect(pg_url(table))
    message = str(info.value)
    assert "no column 'key'" in message and "key_column=NAME" in message
    assert "no column 'text'" in message
    with pytest.raises(vectorport.ConfigurationError) as info:
        vectorport.connect(pg_url(table, key_column="id", text_column="content"))
    message = str(info.value)
    assert "key_column=id" in message  # a column name is no secret to mask
    assert "column 'id' (key) is bigint, not text or varchar" in message
    assert "Tables made elsewhere" in message  # where the copy recipe is


def test_langchain_pg_embedding_shape_names_the_untyped_vector(
    pg_url: Callable[..., str], admin: Any, table: str
) -> None:
    admin.execute(
        f"CREATE TABLE {table} (id varchar PRIMARY KEY, collection_id uuid, embedding vector, "
        "document varchar, cmetadata jsonb)"
    )
    with pytest.raises(vectorport.ConfigurationError) as info:
        vectorport.connect(
            pg_url(table, key_column="id", text_column="document", metadata_column="cmetadata"),
            metric="cosine",
        )
    message = str(info.value)
    assert "column 'embedding' (embedding) is a vector with no dimension" in message
    assert "TYPE vector(N)" in message
    assert "'id'" not in message.split("Its columns")[0]  # the varchar key is fine


@pytest.mark.parametrize(
    ("ddl", "fragment"),
    [
        (f"key text, embedding vector({DIM}), metadata jsonb, text text", "no PRIMARY KEY or UNIQUE"),
        (f"key text PRIMARY KEY, embedding vector({DIM}), metadata json, text text", "is json, not jsonb"),
        (f"key text PRIMARY KEY, embedding halfvec({DIM}), metadata jsonb, text text", "is halfvec(4)"),
        (f"key integer PRIMARY KEY, embedding vector({DIM}), metadata jsonb, text text", "is integer"),
        (f"key text PRIMARY KEY, vec vector({DIM}), metadata jsonb, text text", "embedding_column=NAME"),
        (f"key text PRIMARY KEY, embedding vector({DIM}), meta jsonb, text text", "metadata_column=NAME"),
    ],
)
def test_each_mismatch_is_named(
    pg_url: Callable[..., str], admin: Any, table: str, ddl: str, fragment: str
) -> None:
    admin.execute(f"CREATE TABLE {table} ({ddl})")
    with pytest.raises(
        vectorport.ConfigurationError, match="cannot be used as a vectorport collection"
    ) as info:
        vectorport.connect(pg_url(table), metric="cosine")
    assert fragment in str(info.value)


def test_an_option_naming_a_missing_column_says_so(
    pg_url: Callable[..., str], admin: Any, table: str
) -> None:
    _plain(admin, table, rows=1)
    with pytest.raises(vectorport.ConfigurationError, match="check text_column=body"):
        vectorport.connect(pg_url(table, text_column="body"), metric="cosine")
    with pytest.raises(vectorport.ConfigurationError, match="name the columns of an existing table"):
        vectorport.connect(pg_url("does_not_exist_yet", text_column="body"), dimension=DIM)


def test_ivfflat_index_is_refused_by_name(pg_url: Callable[..., str], admin: Any, table: str) -> None:
    _plain(admin, table, rows=10)
    admin.execute(
        f"CREATE INDEX {table}_ivf ON {table} USING ivfflat (embedding vector_cosine_ops) WITH (lists = 1)"
    )
    with pytest.raises(vectorport.UnsupportedFeatureError, match=f"IVFFlat index '{table}_ivf'"):
        vectorport.connect(pg_url(table, text_column="content"), metric="cosine")


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
        with pytest.raises(vectorport.ConfigurationError, match="'c' has no vector"):
            list(store.records())


def test_a_vectorport_table_altered_behind_its_back(pg_url: Callable[..., str], admin: Any) -> None:
    url = pg_url()
    with vectorport.connect(url, dimension=DIM) as store:
        table = store.collection
    try:
        admin.execute(f"ALTER TABLE {table} RENAME COLUMN text TO body")
        with pytest.raises(vectorport.ConfigurationError, match=r"no column 'text'.*text_column=NAME"):
            vectorport.connect(url)
        with vectorport.connect(url + "&text_column=body") as store:
            store.upsert([vectorport.Record("k", [1, 2, 3, 4], {}, "kept")])
            assert store.get(["k"])[0].text == "kept"
            assert "hybrid" in store.capabilities.features  # fts is still there
    finally:
        with vectorport.connect(url + "&text_column=body") as store:
            store.drop()
