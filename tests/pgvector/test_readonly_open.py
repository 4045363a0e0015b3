"""Opening a collection writes nothing: no HNSW build after a crashed bulk load (`vectorport
info`, `migrate --plan`), no catalog tables or rows, so a read-only role or a read-only
connection (a hot standby) can open, search and scan. The next write, the end of a bulk load
or `vectorport pgvector build-index` builds the missing index."""

from __future__ import annotations

import itertools
import json
import logging
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import vectorport

from .conftest import uri_for

pytestmark = pytest.mark.pgvector

DIM = 8
_roles = itertools.count()


def _records(n: int, start: int = 0) -> list[vectorport.Record]:
    rng = np.random.default_rng(start)
    return [
        vectorport.Record(
            f"doc{start + i:05d}", rng.normal(size=DIM), {"i": start + i, "odd": i % 2 == 1}, "t"
        )
        for i in range(n)
    ]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vectorport", *args], capture_output=True, text=True, timeout=180
    )


def _indexes(admin: Any, table: str, schema: str = "public") -> set[str]:
    rows = admin.execute(
        "SELECT indexname FROM pg_indexes WHERE schemaname = %s AND tablename = %s", (schema, table)
    ).fetchall()
    return {str(r[0]) for r in rows}


@pytest.fixture
def crashed(pg_url: Callable[..., str], admin: Any) -> Iterator[str]:
    """The URL of an HNSW collection whose bulk load died before building its index."""
    url = pg_url()
    store = vectorport.connect(url, dimension=DIM, metric="cosine")
    with pytest.raises(RuntimeError), store.bulk_load(expected=500):
        store.upsert(_records(300))
        raise RuntimeError("killed")
    assert f"{store.collection}_embedding_hnsw" not in _indexes(admin, store.collection)
    store.close()
    yield url
    with vectorport.connect(url) as s:
        s.drop()


def test_info_and_migrate_plan_build_no_index_and_warn(crashed: str, admin: Any) -> None:
    table = crashed.rsplit("table=", 1)[1]
    info = _cli("info", crashed, "--json")
    assert info.returncode == 0, info.stderr
    assert json.loads(info.stdout)["pgvector"]["hnsw_index"] == "missing"
    assert "has no valid HNSW index" in info.stderr and "build-index" in info.stderr
    # as a source (a memory:// source would not outlive one process: the target side is below)
    plan = _cli("migrate", "--plan", crashed, "memory://plan-target")
    assert plan.returncode == 0, plan.stderr
    assert "has no valid HNSW index" in plan.stderr
    assert f"{table}_embedding_hnsw" not in _indexes(admin, table)

    built = _cli("pgvector", "build-index", crashed, "--json")
    assert built.returncode == 0, built.stderr
    assert json.loads(built.stdout)["index"] == "built"
    assert f"{table}_embedding_hnsw" in _indexes(admin, table)
    again = _cli("pgvector", "build-index", crashed)
    assert again.returncode == 0 and again.stdout.strip() == "present"
    assert "has no valid HNSW index" not in again.stderr


def test_open_as_migration_target_builds_nothing_and_a_resumed_load_builds_once(
    crashed: str, admin: Any, caplog: pytest.LogCaptureFixture
) -> None:
    from vectorport.engine._endpoints import probe_target

    table = crashed.rsplit("table=", 1)[1]
    endpoint = probe_target(crashed)  # what `migrate --plan` does to its target
    try:
        assert endpoint.exists and f"{table}_embedding_hnsw" not in _indexes(admin, table)
    finally:
        endpoint.close()
    caplog.set_level(logging.INFO, logger="vectorport.pgvector")
    with vectorport.connect(crashed) as store:
        assert len(store.query(np.ones(DIM), k=5)) == 5  # a search builds nothing either
        assert store.info()["pgvector"]["hnsw_index"] == "missing"
        with store.bulk_load(expected=300):  # a resumed copy: no build on open or on entering
            store.upsert(_records(300, 300))
        assert f"{table}_embedding_hnsw" in _indexes(admin, table)
    builds = [r for r in caplog.records if "building the HNSW index" in r.getMessage()]
    assert len(builds) == 1, [r.getMessage() for r in builds]


def test_first_write_builds_the_missing_index_and_deletes_count(crashed: str, admin: Any) -> None:
    table = crashed.rsplit("table=", 1)[1]
    with vectorport.connect(crashed) as store:
        assert store.delete(filter={"odd": True}) == 150  # a write: builds first, then deletes
        assert f"{table}_embedding_hnsw" in _indexes(admin, table)
        assert store.count() == 150


@pytest.fixture
def reader(admin: Any) -> Iterator[str]:
    """A role that may only read (SELECT) the public schema's tables."""
    name = f"vp_reader_{next(_roles)}"
    admin.execute(f"CREATE ROLE {name} LOGIN")
    admin.execute(f"GRANT USAGE ON SCHEMA public TO {name}")
    yield name
    admin.execute(f"DROP OWNED BY {name}")
    admin.execute(f"DROP ROLE {name}")


@pytest.mark.parametrize("catalog_readable", [True, False])
def test_a_select_only_role_opens_searches_and_scans(
    pg_url: Callable[..., str], pg_uri: str, admin: Any, reader: str, catalog_readable: bool
) -> None:
    records = _records(60)
    with vectorport.connect(pg_url(), dimension=DIM, metric="dot") as owner:
        try:
            owner.upsert(records)
            table = owner.collection
            admin.execute(f'GRANT SELECT ON "{table}" TO {reader}')
            if catalog_readable:
                admin.execute(f"GRANT SELECT ON vectorport_collections TO {reader}")
            url = uri_for(pg_uri, reader, table=table)
            with vectorport.connect(url) as ro:
                assert ro.spec.dimension == DIM and ro.spec.metric.value == "dot"
                assert ro.count() == 60
                assert ro.query(records[3].vector, k=5).keys == owner.query(records[3].vector, k=5).keys
                assert [r.key for r in ro.records()] == sorted(r.key for r in records)
                assert ro.get(["doc00007"])[0].metadata == {"i": 7, "odd": True}
                assert ro.info()["pgvector"]["hnsw_index"] == "valid"
                with pytest.raises(vectorport.ConfigurationError, match="permission denied"):
                    ro.upsert(_records(1, 500))
            assert owner.count() == 60
        finally:
            owner.drop()


def test_a_read_only_connection_opens_and_refuses_writes_clearly(
    pg_url: Callable[..., str], pg_uri: str
) -> None:
    with vectorport.connect(pg_url(), dimension=DIM) as owner:
        try:
            owner.upsert(_records(20))
            # what a hot standby is like; the option value has spaces, which must reach libpq
            url = uri_for(pg_uri, table=owner.collection, options="-c default_transaction_read_only=on")
            with vectorport.connect(url) as ro:
                assert ro.count() == 20 and len(ro.query(np.ones(DIM), k=3)) == 3
                with pytest.raises(vectorport.ConfigurationError, match="read-only"):
                    ro.upsert(_records(1, 100))
        finally:
            owner.drop()


def test_opening_a_table_made_in_sql_creates_nothing_until_the_first_write(
    pg_url: Callable[..., str], admin: Any
) -> None:
    schema = f"fresh_{next(_roles)}"
    admin.execute(f"CREATE SCHEMA {schema}")
    try:
        admin.execute(
            f"CREATE TABLE {schema}.items (key text PRIMARY KEY, embedding vector({DIM}) NOT NULL, "
            "metadata jsonb NOT NULL DEFAULT '{}', text text)"
        )
        admin.execute(f"CREATE INDEX ON {schema}.items USING hnsw (embedding vector_l2_ops)")
        admin.execute(
            f"INSERT INTO {schema}.items VALUES ('a', '[{','.join(['1'] * DIM)}]', '{{\"x\": 1}}', 'hello')"
        )

        def catalog() -> set[str]:
            rows = admin.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,)
            ).fetchall()
            return {str(r[0]) for r in rows}

        url = pg_url("items", schema=schema)
        with vectorport.connect(url) as store:
            assert store.spec.metric.value == "euclidean" and store.count() == 1
            assert store.query(np.ones(DIM), k=1).keys == ["a"]
            assert catalog() == {"items"}
            assert store.list_collections() == []
            store.upsert(_records(2))
            assert catalog() == {"items", "vectorport_collections", "vectorport_migrations"}
            assert store.list_collections() == ["items"]
    finally:
        admin.execute(f"DROP SCHEMA {schema} CASCADE")


def test_a_stale_catalog_row_is_replaced_at_creation_not_deleted_on_open(
    pg_url: Callable[..., str], admin: Any
) -> None:
    url = pg_url()
    with vectorport.connect(url, dimension=3, metric="dot") as store:
        table = store.collection
    admin.execute(f"DROP TABLE {table}")  # behind vectorport's back: the catalog row stays
    with pytest.raises(vectorport.NotFoundError, match="pass dimension="):
        vectorport.connect(url)
    row = admin.execute("SELECT dimension FROM vectorport_collections WHERE table_name = %s", (table,))
    assert row.fetchone() == (3,)  # an open wrote nothing
    with vectorport.connect(url, dimension=5, metric="cosine") as store:
        assert store.spec.dimension == 5 and store.spec.metric.value == "cosine"
        row = admin.execute(
            "SELECT dimension, metric FROM vectorport_collections WHERE table_name = %s", (table,)
        )
        assert row.fetchone() == (5, "cosine")
        store.drop()


def test_a_role_that_may_write_the_table_but_not_the_schema(
    pg_url: Callable[..., str], pg_uri: str, admin: Any, reader: str, caplog: pytest.LogCaptureFixture
) -> None:
    schema = f"locked_{next(_roles)}"
    admin.execute(f"CREATE SCHEMA {schema}")
    try:
        admin.execute(
            f"CREATE TABLE {schema}.items (key text PRIMARY KEY, embedding vector({DIM}) NOT NULL, "
            "metadata jsonb NOT NULL DEFAULT '{}', text text)"
        )
        admin.execute(f"GRANT USAGE ON SCHEMA {schema} TO {reader}")  # no CREATE: no catalog
        admin.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {schema}.items TO {reader}")
        url = uri_for(pg_uri, reader, table="items", schema=schema)
        with vectorport.connect(url, metric="cosine") as store:
            assert store.upsert(_records(5)) == 5 and store.count() == 5
            assert "cannot write the catalog" in caplog.text
            assert store.delete(["doc00000"]) == 1 and store.count() == 4
        tables = admin.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,))
        assert {r[0] for r in tables} == {"items"}
    finally:
        admin.execute(f"DROP SCHEMA {schema} CASCADE")
