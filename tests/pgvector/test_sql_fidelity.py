"""What vectorport writes, as SQL users see it through clients vectorport did not write (psql,
a plain psycopg connection): the table layout docs/backends/pgvector.md promises, the same
nearest keys from ``ORDER BY embedding <op> q`` as from ``store.query``, distances and scores
derivable from pgvector's operators as documented, and metadata/text read back unchanged."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import vectorport

from .conftest import run_psql

pytestmark = pytest.mark.pgvector

OPERATOR = {"cosine": "<=>", "euclidean": "<->", "dot": "<#>"}
OPCLASS = {"cosine": "vector_cosine_ops", "euclidean": "vector_l2_ops", "dot": "vector_ip_ops"}
SCORE = {  # docs/backends/pgvector.md: score from pgvector's raw operator value d
    "cosine": lambda d: 1.0 - d,
    "euclidean": lambda d: -d,
    "dot": lambda d: -d,
}

METADATA: list[dict[str, Any]] = [
    {
        "int": 7,
        "neg": -3,
        "big": 2**62,
        "float": 0.1,
        "tiny": 1.5e-7,
        "huge": 1e300,
        "e16": 1e16,
        "true": True,
        "false": False,
        "null": None,
        "str": "naïve café ✓ 日本語 🚀",
        "quote": 'a "quoted" \\ back\\slash',
        "list": [1, "two", None, False, 2.5, {"x": []}],
        "empty_list": [],
        "empty_obj": {},
        "nested": {"a": {"b": {"c": [1, 2, {"d": "deep"}]}}},
        "ключ": "значение",
    },
    {},
    {"only": None},
]
TEXTS: list[str | None] = ["line 1\nline 2\ttab \u00e9 ✓ 'single' \"double\" \\", None, ""]


def _literal(v: np.ndarray) -> str:
    # float32 repr round-trips through pgvector's text input (strtof)
    return "[" + ",".join(repr(float(x)) for x in v.astype(np.float32)) + "]"


@pytest.mark.parametrize("metric", ["cosine", "euclidean", "dot"])
def test_layout_is_the_documented_one(
    pg_url: Callable[..., str], pg_uri: str, admin: Any, metric: str
) -> None:
    with vectorport.connect(pg_url(), dimension=12, metric=metric) as store:
        table = store.collection
        try:
            cols = admin.execute(
                "SELECT attname, format_type(atttypid, atttypmod), attnotnull FROM pg_attribute "
                "WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
                (table,),
            ).fetchall()
            assert cols == [
                ("key", "text", True),
                ("embedding", "vector(12)", True),
                ("metadata", "jsonb", True),
                ("text", "text", False),
                ("fts", "tsvector", False),
                ("updated_at", "timestamp with time zone", True),
            ]
            indexes = dict(
                admin.execute(
                    "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s", (table,)
                ).fetchall()
            )
            assert f"USING hnsw (embedding {OPCLASS[metric]})" in indexes[f"{table}_embedding_hnsw"]
            assert "USING gin (metadata jsonb_path_ops)" in indexes[f"{table}_metadata_gin"]
            assert "USING gin (fts)" in indexes[f"{table}_fts_gin"]
            assert "(key)" in indexes[f"{table}_pkey"]
            (comment,) = run_psql(pg_uri, f"SELECT obj_description('{table}'::regclass, 'pg_class')")
            assert "12 dims" in comment and f"ORDER BY embedding {OPERATOR[metric]} query" in comment
            assert run_psql(
                pg_uri,
                "SELECT dimension, metric, index_kind FROM vectorport_collections "
                f"WHERE table_name = '{table}'",
            ) == [f"12|{metric}|hnsw"]
            info = store.info()["pgvector"]
            assert [info["postgresql"], info["vector_extension"]] == run_psql(
                pg_uri,
                "SELECT current_setting('server_version') UNION ALL "
                "SELECT extversion FROM pg_extension WHERE extname = 'vector'",
            )
        finally:
            store.drop()


@pytest.mark.parametrize("metric", ["cosine", "euclidean", "dot"])
def test_psql_order_by_operator_gives_the_same_keys_distances_and_scores(
    pg_url: Callable[..., str], pg_uri: str, metric: str
) -> None:
    rng = np.random.default_rng(7)
    dim, n, k = 8, 120, 10
    vectors = rng.normal(size=(n, dim)).astype(np.float32)
    with vectorport.connect(pg_url(), dimension=dim, metric=metric) as store:
        try:
            store.upsert(vectorport.Record(f"k{i:03d}", v, {"i": i}) for i, v in enumerate(vectors))
            op = OPERATOR[metric]
            for q in rng.normal(size=(5, dim)).astype(np.float32):
                want = store.query(q, k=k)
                lit = _literal(q)
                # what a SQL user types: the operator, the index, pgvector's defaults
                rows = run_psql(
                    pg_uri,
                    f"SELECT key, embedding {op} '{lit}' FROM {store.collection} "
                    f"ORDER BY embedding {op} '{lit}' LIMIT {k}",
                )
                keys = [r.split("|")[0] for r in rows]
                raw = [float(r.split("|")[1]) for r in rows]
                assert keys == want.keys
                assert raw == [m.distance for m in want]  # canonical distance = the operator's value
                assert [SCORE[metric](d) for d in raw] == [m.score for m in want]
                # ... and the same from first principles, in float64
                exact = {
                    "cosine": lambda v, q=q: 1 - float(v @ q) / (np.linalg.norm(v) * np.linalg.norm(q)),
                    "euclidean": lambda v, q=q: float(np.linalg.norm(v - q)),
                    "dot": lambda v, q=q: -float(v @ q),
                }[metric]
                truth = [exact(vectors[int(key[1:])].astype(np.float64)) for key in keys]
                np.testing.assert_allclose(raw, truth, rtol=1e-5, atol=1e-6)
        finally:
            store.drop()


def test_metadata_and_text_read_back_in_sql_as_written(pg_url: Callable[..., str], pg_uri: str) -> None:
    with vectorport.connect(pg_url(), dimension=3) as store:
        try:
            store.upsert(
                vectorport.Record(f"r{i}", [1.0, float(i), 0.5], m, t)
                for i, (m, t) in enumerate(zip(METADATA, TEXTS, strict=True))
            )
            # one JSON document per row: psql cannot mangle newlines or separators inside it
            rows = run_psql(
                pg_uri,
                "SELECT json_build_object('key', key, 'metadata', metadata, 'text', text, "
                f"'embedding', embedding::text) FROM {store.collection} ORDER BY key",
            )
            got = [json.loads(r) for r in rows]
            assert [g["key"] for g in got] == ["r0", "r1", "r2"]
            for g, meta, text in zip(got, METADATA, TEXTS, strict=True):
                assert g["metadata"] == meta
                assert g["text"] == text
                assert g["embedding"] == f"[1,{int(g['key'][1:])},0.5]"
            # types as SQL sees them, per field
            types = dict(
                r.split("|")
                for r in run_psql(
                    pg_uri,
                    "SELECT k, jsonb_typeof(v) FROM "
                    f"{store.collection}, jsonb_each(metadata) AS e(k, v) WHERE key = 'r0'",
                )
            )
            assert types["int"] == types["float"] == types["huge"] == types["e16"] == "number"
            assert types["true"] == "boolean" and types["null"] == "null" and types["list"] == "array"
            assert types["nested"] == "object" and types["str"] == "string"
            # numbers keep their value in SQL arithmetic
            assert run_psql(
                pg_uri,
                "SELECT (metadata->>'huge')::float8 = 1e300, (metadata->>'e16')::numeric = 1e16, "
                f"(metadata->>'big')::numeric = {2**62}, metadata #>> '{{nested,a,b,c,2,d}}' "
                f"FROM {store.collection} WHERE key = 'r0'",
            ) == ["t|t|t|deep"]
            # the portable filter and SQL containment agree on what they select
            assert store.query([1, 0, 0], k=5, filter={"list": "two"}).keys == ["r0"]
            assert run_psql(
                pg_uri, f"""SELECT key FROM {store.collection} WHERE metadata @> '{{"list": ["two"]}}'"""
            ) == ["r0"]
        finally:
            store.drop()


def test_rows_written_in_sql_read_back_through_vectorport(pg_url: Callable[..., str], pg_uri: str) -> None:
    with vectorport.connect(pg_url(), dimension=3, metric="euclidean") as store:
        try:
            doc = json.dumps(METADATA[0], ensure_ascii=False).replace("'", "''")
            text = "from psql: ✓\nsecond line"
            run_psql(
                pg_uri,
                f"INSERT INTO {store.collection} (key, embedding, metadata, text) VALUES "
                f"('sql/1', '[0.25,-1.5,3]', '{doc}', E'from psql: ✓\\nsecond line'), "
                f"('sql/2', '[0,0,0]', DEFAULT, NULL)",
            )
            a, b = store.get(["sql/1", "sql/2"])
            # jsonb keeps numbers as numeric, not as int or float: what SQL wrote as 1e+300 is
            # the integer 10**300 (vectorport's own writes spell floats so they read back as floats)
            assert a.metadata == {**METADATA[0], "huge": 10**300} and a.text == text
            np.testing.assert_array_equal(a.vector, np.array([0.25, -1.5, 3], dtype=np.float32))
            assert b.metadata == {} and b.text is None
            hit = store.query([0.25, -1.5, 3], k=1)[0]
            assert hit.key == "sql/1" and hit.distance == 0.0 and hit.score == 0.0
            assert [m.key for m in store.text_query("second line")] == ["sql/1"]  # fts: generated
        finally:
            store.drop()
