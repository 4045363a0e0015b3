"""pgvector specifics: catalog and migrations, halfvec index, exactness of JSON, hybrid search,
scan cursors, filter parameters."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import vectorport
from vectorport.backends.pgvector.filters import PgFilterCompiler
from vectorport.filters import parse_filter

pytestmark = pytest.mark.pgvector


def test_catalog_and_migrations_recorded(pg_url: Callable[..., str]) -> None:
    store = vectorport.connect(pg_url(index="exact"), dimension=5, metric="euclidean", embedding_model="m1")
    try:
        conn, _ = store.server.conn()  # type: ignore[attr-defined]
        assert conn.execute("SELECT version, name FROM vectorport_migrations").fetchall() == [(1, "catalog")]
        row = conn.execute(
            "SELECT dimension, metric, embedding_model, index_kind FROM vectorport_collections"
            " WHERE table_name = %s",
            (store.collection,),
        ).fetchone()
        assert row == (5, "euclidean", "m1", "exact")
        assert store.collection in store.list_collections()
        indexes = {
            r[0]
            for r in conn.execute(
                "SELECT indexname FROM pg_indexes WHERE tablename = %s", (store.collection,)
            )
        }
        assert not any("hnsw" in i for i in indexes) and f"{store.collection}_metadata_gin" in indexes
        store.drop()
        assert store.collection not in store.list_collections()
    finally:
        store.close()


def test_halfvec_index_above_2000_dims_keeps_full_precision(pg_url: Callable[..., str]) -> None:
    dim = 2048
    store = vectorport.connect(pg_url(), dimension=dim, metric="cosine")
    try:
        rng = np.random.default_rng(0)
        vecs = rng.normal(size=(50, dim)).astype(np.float32)
        store.upsert(vectorport.Record(f"k{i}", v) for i, v in enumerate(vecs))
        conn, _ = store.server.conn()  # type: ignore[attr-defined]
        (indexdef,) = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = %s", (f"{store.collection}_embedding_hnsw",)
        ).fetchone()
        assert "halfvec(2048)" in indexdef and "halfvec_cosine_ops" in indexdef
        (got,) = store.get(["k3"])
        np.testing.assert_array_equal(got.vector, vecs[3])  # the column is float32 vector
        result = store.query(vecs[3], k=3)
        assert result.keys[0] == "k3" and abs(result[0].distance) < 1e-6
    finally:
        store.drop()
        store.close()


def test_json_numbers_and_nul_rules(pg_url: Callable[..., str]) -> None:
    store = vectorport.connect(pg_url(), dimension=2)
    try:
        meta = {"big": 1e300, "e16": 1e16, "int": 2**70, "neg": -2.5e20, "small": 1.5e-7, "one": 1.0}
        store.upsert([vectorport.Record("a", [1, 0], meta, "t")])
        (got,) = store.get(["a"])
        assert got.metadata == meta
        assert all(type(got.metadata[k]) is type(v) for k, v in meta.items())
        with pytest.raises(vectorport.ValidationError, match="NUL"):
            store.upsert([vectorport.Record("b", [1, 0], {"s": "a\x00b"})])
        with pytest.raises(vectorport.ValidationError, match="NUL"):
            store.upsert([vectorport.Record("b", [1, 0], {}, "x\x00")])
        assert store.count() == 1
    finally:
        store.drop()
        store.close()


def test_filter_keys_and_values_are_parameters(pg_url: Callable[..., str]) -> None:
    nasty = "a'); DROP TABLE x; --"
    pred = PgFilterCompiler().compile(parse_filter({nasty: {"$gt": 1}, "k": "'; --"}))
    text = pred.sql.as_string(None)
    assert "DROP" not in text and "--" not in text
    store = vectorport.connect(pg_url(), dimension=2)
    try:
        store.upsert(
            [vectorport.Record("a", [1, 0], {nasty: 2, "k": "'; --"}), vectorport.Record("b", [0, 1], {})]
        )
        assert store.query([1, 0], k=2, filter={nasty: {"$gt": 1}, "k": "'; --"}).keys == ["a"]
        assert store.delete(filter={"k": {"$exists": True}}) == 1
        assert [r.key for r in store.records()] == ["b"]
    finally:
        store.drop()
        store.close()


def test_hybrid_and_text_search(pg_url: Callable[..., str]) -> None:
    store = vectorport.connect(pg_url(), dimension=2, metric="cosine")
    try:
        store.upsert(
            [
                vectorport.Record("cats", [1, 0], {"lang": "en"}, "Cats are small furry animals"),
                vectorport.Record("dogs", [0.9, 0.1], {"lang": "en"}, "Dogs are loyal animals"),
                vectorport.Record("cars", [0, 1], {"lang": "en"}, "Cars have four wheels"),
                vectorport.Record("chats", [1, 0.05], {"lang": "fr"}, "Les chats sont des animaux"),
            ]
        )
        assert [m.key for m in store.text_query("furry cats")] == ["cats"]
        assert {m.key for m in store.text_query("animals", filter={"lang": "en"})} == {"cats", "dogs"}
        hits = store.hybrid_query([0, 1], "animals", k=3, filter={"lang": "en"})
        assert {m.key for m in hits} == {"cats", "dogs", "cars"}
        by_key = {m.key: m.extra for m in hits}
        assert by_key["cars"]["vector_rank"] == 1 and by_key["cars"]["text_rank"] is None
        assert by_key["dogs"]["text_rank"] is not None
        assert all(m.key != "chats" for m in hits)
        assert "hybrid" in store.capabilities.features
    finally:
        store.drop()
        store.close()


def test_scan_cursor_is_segment_bound(pg_url: Callable[..., str]) -> None:
    store = vectorport.connect(pg_url(), dimension=2)
    try:
        store.upsert(vectorport.Record(f"k{i:03d}", [1, i]) for i in range(30))
        page = next(store.scan(batch_size=4, segment=(1, 3)))
        assert page.cursor is not None
        with pytest.raises(vectorport.ConfigurationError, match="segment"):
            next(store.scan(batch_size=4, segment=(0, 3), cursor=page.cursor))
    finally:
        store.drop()
        store.close()


def test_info_and_repr_hide_password(pg_dir: object) -> None:
    url = vectorport.StoreURL.parse("postgresql://bob:hunter2@db.example/x?table=docs&sslmode=require")
    from vectorport.backends.pgvector import PgVectorStore

    store = PgVectorStore.from_url(url)
    assert "hunter2" not in repr(store) and "hunter2" not in store.url.masked
    conninfo = store.server.conninfo or ""
    assert "table=" not in conninfo and "sslmode=require" in conninfo


def test_query_settings_per_query_in_one_round_trip(pg_url: Callable[..., str], tmp_path: Path) -> None:
    """hnsw.* settings live in the session and are sent only when a query needs other values;
    a query with unchanged settings is one Bind/Execute/Sync: no BEGIN/COMMIT, no set_config."""
    store = vectorport.connect(pg_url(), dimension=2)
    try:
        store.upsert([vectorport.Record(f"k{i}", [1, i / 10], {"x": i % 3}) for i in range(30)])
        conn, _ = store.server.conn()  # type: ignore[attr-defined]

        def show(name: str) -> str:
            return str(conn.execute(f"SHOW hnsw.{name}").fetchone()[0])

        assert store.query([1, 0], k=3, params={"ef_search": 7}).keys == ["k0", "k1", "k2"]
        assert show("ef_search") == "7" and show("iterative_scan") == "strict_order"
        store.query([1, 0], k=3)
        assert show("ef_search") == "100"
        store.query([1, 0], k=3, filter={"x": 1}, params={"iterative_scan": "relaxed_order"})
        assert show("ef_search") == "1000" and show("iterative_scan") == "relaxed_order"
        assert store.query([1, 0], k=3, filter={"x": 2}).keys == ["k2", "k5", "k8"]
        assert show("iterative_scan") == "strict_order"
        trace = tmp_path / "libpq.trace"
        with open(trace, "wb") as fh:
            conn.pgconn.trace(fh.fileno())
            try:
                for value in (0, 1, 2, 0):  # same shape and settings, other values
                    result = store.query([1, 0], k=2, filter={"x": value})
                    assert all(m.metadata["x"] == value for m in result) and len(result) == 2
            finally:
                conn.pgconn.untrace()
        messages = [
            line.split("\t")[3].split()[0] for line in trace.read_text().splitlines() if "\tF\t" in line
        ]
        assert messages.count("Sync") == 4, messages
        assert "Query" not in messages and "Parse" not in messages, messages  # no BEGIN, already prepared
    finally:
        store.drop()
        store.close()
