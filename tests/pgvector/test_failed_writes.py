"""A write that fails (or is cancelled) inside its transaction leaves the connection ready for
the next one: its session's staging table was created in that rolled-back transaction, so the
next upsert on the same connection once failed with ``relation "vectorport_stage_…" does not
exist`` (sync and async), and only the one after it succeeded."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

import vectorport
from vectorport import Record

pytestmark = pytest.mark.pgvector
psycopg = pytest.importorskip("psycopg")

SHORT = Record("ok", [1.0, 0.0, 0.0], {}, "fine")
LONG = Record("bad", [0.0, 1.0, 0.0], {}, "far too long for the check")


def _app_table(admin: Any, name: str, slow: bool = False) -> None:
    """An application's table whose CHECK refuses long texts (and, ``slow``, whose trigger takes
    half a second a row, so a write can be cancelled inside its transaction)."""
    admin.execute(
        f"DROP TABLE IF EXISTS {name}; CREATE TABLE {name} (id text PRIMARY KEY, "
        "embedding vector(3), content text CHECK (length(content) < 10))"
    )
    if slow:
        admin.execute(
            "CREATE OR REPLACE FUNCTION vp_slow() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN PERFORM pg_sleep(0.5); RETURN NEW; END $$"
        )
        admin.execute(f"CREATE TRIGGER slow BEFORE INSERT ON {name} FOR EACH ROW EXECUTE FUNCTION vp_slow()")


def test_the_upsert_after_a_failed_one_succeeds(pg_url: Callable[..., str], admin: Any) -> None:
    _app_table(admin, "failed_write_sync")
    with vectorport.connect(pg_url("failed_write_sync"), metric="cosine") as store:
        with pytest.raises(vectorport.VectorportError, match="failed_write_sync"):
            store.upsert([LONG])
        store.upsert([SHORT])
    assert admin.execute("SELECT id, content FROM failed_write_sync").fetchall() == [("ok", "fine")]


def test_the_aupsert_after_a_failed_one_succeeds(pg_url: Callable[..., str], admin: Any) -> None:
    _app_table(admin, "failed_write_async")

    async def run() -> None:
        url = pg_url("failed_write_async", pool_size=1)  # one connection: the same session each time
        async with await vectorport.aconnect(url, metric="cosine") as store:
            with pytest.raises(vectorport.VectorportError, match="failed_write_async"):
                await store.aupsert([LONG])
            await store.aupsert([SHORT])

    asyncio.run(run())
    assert admin.execute("SELECT id, content FROM failed_write_async").fetchall() == [("ok", "fine")]


def test_the_aupsert_after_a_cancelled_one_succeeds(pg_url: Callable[..., str], admin: Any) -> None:
    _app_table(admin, "cancelled_write", slow=True)

    async def run() -> None:
        url = pg_url("cancelled_write", pool_size=1)
        async with await vectorport.aconnect(url, metric="cosine") as store:
            await store.acount()  # opened: the cancellation lands in the write's transaction
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(store.aupsert([Record("first", [0.0, 0.0, 1.0], {}, "x")]), 0.2)
            await store.aupsert([SHORT])

    asyncio.run(run())
    assert admin.execute("SELECT id FROM cancelled_write").fetchall() == [("ok",)]
