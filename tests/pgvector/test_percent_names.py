"""Names holding ``%`` (a table ``pct%s``, a column or metadata key ``k%(x)s``) are names like
any other: psycopg reads every ``%`` of a statement sent with parameters as a placeholder, so
they once failed with "query parameter missing" or named the wrong relation (``pct$1``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pytest

import vectorport
from vectorport import Record

pytestmark = pytest.mark.pgvector
psycopg = pytest.importorskip("psycopg")
sql = psycopg.sql

NAMES = ["pct%s", "pct%(x)s", "100%"]
KEY = "k%(x)s"


def _records() -> list[Record]:
    return [
        Record("a%s", [1.0, 0.0, 0.0], {KEY: 1, "p%s": "x%"}, "fifty %s percent"),
        Record("b", [0.0, 1.0, 0.0], {KEY: 2, "p%s": "y"}, "other words"),
    ]


@pytest.mark.parametrize("table", NAMES)
def test_a_collection_named_with_percent_is_written_searched_and_read_back(
    pg_url: Callable[..., str], admin: Any, table: str
) -> None:
    admin.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(table)))
    with vectorport.connect(pg_url(quote(table, safe="")), dimension=3, metric="cosine") as store:
        store.upsert(_records())
        assert store.count() == 2
        near = store.query([1.0, 0.0, 0.0], k=2, filter={KEY: {"$gte": 1}})
        assert [m.key for m in near] == ["a%s", "b"]
        assert [m.key for m in store.query([1.0, 0.0, 0.0], k=2, filter={"p%s": "x%"})] == ["a%s"]
        assert [r.metadata for r in store.get(["a%s"])] == [{KEY: 1, "p%s": "x%"}]
        store.delete(["b"])
    rows = admin.execute(sql.SQL("SELECT key, metadata FROM {}").format(sql.Identifier(table))).fetchall()
    assert rows == [("a%s", {KEY: 1, "p%s": "x%"})]


def test_an_async_store_on_a_percent_table(pg_url: Callable[..., str], admin: Any) -> None:
    admin.execute('DROP TABLE IF EXISTS "apct%(x)s"')

    async def run() -> list[str]:
        store = await vectorport.aconnect(pg_url(quote("apct%(x)s", safe="")), dimension=3, metric="cosine")
        try:
            await store.aupsert(_records())
            return [m.key for m in await store.aquery([0.0, 1.0, 0.0], k=1, filter={KEY: 2})]
        finally:
            await store.aclose()

    assert asyncio.run(run()) == ["b"]
    assert admin.execute('SELECT count(*) FROM "apct%(x)s"').fetchone() == (2,)


def test_an_application_table_with_a_percent_column(pg_url: Callable[..., str], admin: Any) -> None:
    admin.execute(
        'DROP TABLE IF EXISTS "colpct%"; CREATE TABLE "colpct%" '
        '(id text PRIMARY KEY, embedding vector(3), "k%(x)s" int, content text)'
    )
    with vectorport.connect(pg_url(quote("colpct%", safe="")), metric="cosine") as store:
        store.upsert(
            [Record("a%s", [1.0, 0.0, 0.0], {KEY: 1}, "a"), Record("b", [0.0, 1.0, 0.0], {KEY: 2}, "b")]
        )
        assert [m.key for m in store.query([1.0, 0.0, 0.0], k=2, filter={KEY: 2})] == ["b"]
    assert admin.execute('SELECT id, "k%(x)s" FROM "colpct%" ORDER BY id').fetchall() == [
        ("a%s", 1),
        ("b", 2),
    ]
