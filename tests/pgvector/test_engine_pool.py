"""``vectorport.connect(engine, …)``: the store borrows the application's SQLAlchemy engine's
connections for each operation and gives them back as they were lent; it opens none of its own
and never disposes the engine."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import vectorport
from vectorport import Record

pytestmark = pytest.mark.pgvector
sqlalchemy = pytest.importorskip("sqlalchemy")

APP = "vp_engine_app"
DIM = 8
EVENTS = {"connect": 0, "checkout": 0, "checkin": 0}
"""The pool events of the ``engine`` fixture's engine."""


def _url(pg_uri: str, driver: str = "psycopg") -> Any:
    from psycopg.conninfo import conninfo_to_dict

    socket_dir = conninfo_to_dict(pg_uri)["host"]
    return sqlalchemy.engine.URL.create(
        f"postgresql+{driver}",
        username="postgres",
        database="postgres",
        query={"host": socket_dir, "application_name": APP},
    )


@pytest.fixture
def engine(pg_uri: str) -> Iterator[Any]:
    engine = sqlalchemy.create_engine(_url(pg_uri), pool_size=2, max_overflow=0)
    EVENTS.update(dict.fromkeys(EVENTS, 0))
    for name in EVENTS:
        sqlalchemy.event.listen(engine, name, lambda *a, _n=name: EVENTS.__setitem__(_n, EVENTS[_n] + 1))
    yield engine
    engine.dispose()


def _records(n: int) -> list[Record]:
    rng = np.random.default_rng(11)
    return [
        Record(f"k{i}", rng.normal(size=DIM).astype("float32"), {"n": i, "even": i % 2 == 0}, f"text {i}")
        for i in range(n)
    ]


def _backends(admin: Any) -> dict[int, str]:
    rows = admin.execute(
        "SELECT pid, application_name FROM pg_stat_activity WHERE backend_type = 'client backend' "
        "AND pid <> pg_backend_pid()"
    ).fetchall()
    return {int(pid): str(name) for pid, name in rows}


def test_every_operation_runs_on_the_engines_pool_and_opens_no_connection(engine: Any, admin: Any) -> None:
    before = _backends(admin)
    events = EVENTS
    records = _records(40)
    with vectorport.connect(engine, table="engine_pool_docs", dimension=DIM) as store:
        assert store.upsert(records, batch_size=15) == 40
        assert engine.pool.checkedout() == 0  # every borrowed connection is back
        found = store.query(records[3].vector, k=4, filter={"even": False})
        assert found.keys[0] == "k3" and all(m.metadata and not m.metadata["even"] for m in found)
        assert [r.key for r in store.get(["k1", "nope", "k2"])] == ["k1", "k2"]
        assert store.count() == 40
        assert sum(len(page.records) for page in store.scan(batch_size=7)) == 40
        assert store.text_query("text", k=3).k_returned == 3
        assert store.delete(["k0", "k1"]) == 2 and store.count() == 38
        assert store.info()["pgvector"]["connections"] == "the SQLAlchemy engine's pool"
        new = {pid: name for pid, name in _backends(admin).items() if pid not in before}
        assert engine.pool.checkedout() == 0
        store.drop()
    # no connection but the engine's was opened, and no more than its pool holds
    assert set(new.values()) <= {APP} and 1 <= len(new) <= 2, new
    assert events["connect"] == len(new)
    assert events["checkout"] >= 10 and events["checkout"] == events["checkin"]
    # the engine is the application's: still open, its connections still pooled
    assert engine.pool.checkedin() == len(new)
    with engine.connect() as conn:
        assert conn.execute(sqlalchemy.text("SELECT 1")).scalar() == 1


@pytest.mark.parametrize("method", ["slot", "outbox"])
def test_change_capture_and_its_feed_borrow_the_engines_connections(
    engine: Any, admin: Any, method: str
) -> None:
    """Setup, teardown and a feed's reads run on the engine's pool: the feed keeps one of its
    connections until closed (a replication slot is read through SQL, on any connection)."""
    before = _backends(admin)
    records = _records(8)
    with vectorport.connect(engine, table=f"engine_pool_capture_{method}", dimension=DIM) as store:
        try:
            store.upsert(records[:5])
            assert store.setup_capture(method).method == method
            feed = store.change_feed()
            assert feed is not None
            try:
                assert engine.pool.checkedout() == 1  # the feed's, kept between reads
                store.upsert(records[5:])  # on the pool's other connection
                assert set(feed.read(100).keys) == {"k5", "k6", "k7"}
            finally:
                feed.close()
            assert engine.pool.checkedout() == 0
            assert store.teardown_capture()
            new = {pid: name for pid, name in _backends(admin).items() if pid not in before}
        finally:
            store.drop()
    assert set(new.values()) <= {APP} and 1 <= len(new) <= 2, new
    assert EVENTS["connect"] == len(new) and EVENTS["checkout"] == EVENTS["checkin"]


def test_a_bulk_load_and_its_index_build_borrow_the_engines_connections(engine: Any, admin: Any) -> None:
    """The load's lock holder is one of the engine's connections for the load's span, and the
    index build's progress reads on another only when the pool has one to spare."""
    before = _backends(admin)
    with vectorport.connect(engine, table="engine_pool_bulk", dimension=DIM) as store:
        try:
            with store.bulk_load(expected=60):
                assert engine.pool.checkedout() == 1  # the load's, holding its shared lock
                store.upsert(_records(60), batch_size=25)
            assert engine.pool.checkedout() == 0
            built = admin.execute(
                "SELECT count(*) FROM pg_indexes WHERE tablename = 'engine_pool_bulk' "
                "AND indexdef LIKE '%%USING hnsw%%'"
            ).fetchone()
            assert built == (1,)  # built after the load
            new = {pid: name for pid, name in _backends(admin).items() if pid not in before}
        finally:
            store.drop()
    assert set(new.values()) <= {APP} and 1 <= len(new) <= 2, new
    assert EVENTS["connect"] == len(new) and EVENTS["checkout"] == EVENTS["checkin"]


def test_a_borrowed_connection_goes_back_as_it_was_lent(engine: Any) -> None:
    with vectorport.connect(engine, table="engine_pool_lent", dimension=DIM) as store:
        store.upsert(_records(20))  # a staging table in the session, during the write
        store.query(_records(1)[0].vector, k=5, params={"ef_search": 77})  # search settings
        try:
            for _ in range(2):  # each of the pool's connections
                raw = engine.raw_connection()
                try:
                    psy = raw.driver_connection
                    assert psy.autocommit is False
                    with psy.cursor() as cur:
                        # unset (the extension not loaded in that session yet) or pgvector's default
                        cur.execute("SELECT current_setting('hnsw.ef_search', true)")
                        assert cur.fetchone() in {(None,), ("40",)}
                        cur.execute("SELECT count(*) FROM pg_class WHERE relnamespace = pg_my_temp_schema()")
                        assert cur.fetchone() == (0,)
                    psy.rollback()
                finally:
                    raw.close()
        finally:
            store.drop()


def _what_the_app_sees(session: Any, table: str) -> tuple[type, int]:
    """The type of ``embedding`` an application's own ``SELECT`` returns on a connection of its
    pool, and the statements prepared in that session."""
    value = session.execute(sqlalchemy.text(f"SELECT embedding FROM {table} LIMIT 1")).scalar_one()
    prepared = session.execute(sqlalchemy.text("SELECT count(*) FROM pg_prepared_statements")).scalar_one()
    return type(value), int(prepared)


def test_a_borrowed_connection_keeps_none_of_vectorports_loaders_or_prepared_statements(
    engine: Any,
) -> None:
    with vectorport.connect(engine, table="engine_pool_adapters", dimension=DIM) as store:
        try:
            store.upsert(_records(20))
            for record in _records(12):  # past psycopg's prepare threshold (5 runs of a statement)
                store.query(record.vector, k=3, filter={"even": True})
                store.get([record.key])
            with engine.connect() as first, engine.connect() as second:  # each of the pool's two
                seen = {_what_the_app_sees(first, "engine_pool_adapters")}
                seen.add(_what_the_app_sees(second, "engine_pool_adapters"))
                thresholds = {c.connection.driver_connection.prepare_threshold for c in (first, second)}
            assert seen == {(str, 0)}  # as on a connection vectorport never borrowed
            assert thresholds == {5}
            assert store.get(["k1"])[0].vector.dtype == np.float32  # vectorport's own loaders still
        finally:
            store.drop()


def test_an_async_engines_connections_keep_none_of_vectorports_loaders(pg_uri: str) -> None:
    from sqlalchemy.ext.asyncio import create_async_engine

    async def main() -> tuple[type, int]:
        engine = create_async_engine(_url(pg_uri), pool_size=1, max_overflow=0)
        try:
            store = await vectorport.aconnect(engine, table="engine_pool_async_adapters", dimension=DIM)
            await store.aupsert(_records(12))
            for record in _records(8):
                await store.aquery(record.vector, k=3, filter={"even": True})
            async with engine.connect() as conn:
                seen = await conn.run_sync(
                    lambda sync: _what_the_app_sees(sync, "engine_pool_async_adapters")
                )
            await store.adrop()
            await store.aclose()
            return seen
        finally:
            await engine.dispose()

    assert asyncio.run(main()) == (str, 0)


def test_a_search_on_a_borrowed_connection_runs_with_its_settings(pg_uri: str) -> None:
    """The ``hnsw.*`` settings, local to the search's one round trip, hold for the search:
    past pgvector's default ``ef_search`` of 40 an HNSW scan (forced here: the table is small)
    returns k rows only with them, filtered (an iterative scan) or not."""
    forced = sqlalchemy.create_engine(
        _url(pg_uri), pool_size=1, max_overflow=0, connect_args={"options": "-c enable_seqscan=off"}
    )
    try:
        with vectorport.connect(forced, table="engine_pool_gucs", dimension=DIM) as store:
            records = _records(150)
            store.upsert(records)
            assert store.query(records[0].vector, k=70).k_returned == 70
            assert store.query(records[0].vector, k=60, filter={"even": True}).k_returned == 60
            narrow = {"ef_search": 20, "iterative_scan": "off"}
            assert store.query(records[0].vector, k=60, params=narrow).k_returned <= 20
            with forced.connect() as conn:  # and they are gone from the session afterwards
                setting = conn.exec_driver_sql("SELECT current_setting('hnsw.ef_search')").scalar()
                assert setting == "40"
            store.drop()
    finally:
        forced.dispose()


def test_a_killed_engine_connection_is_replaced_in_the_pool_and_the_call_retried(
    engine: Any, admin: Any
) -> None:
    with vectorport.connect(engine, table="engine_pool_killed", dimension=DIM) as store:
        records = _records(10)
        store.upsert(records)
        first = store.query(records[0].vector, k=3).keys
        killed = admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = %s",
            (APP,),
        ).fetchone()
        assert killed is not None and killed[0] >= 1
        assert store.query(records[0].vector, k=3).keys == first
        assert store.count() == 10
        store.drop()


def test_an_engine_on_another_driver_opens_its_own_connections(pg_uri: str) -> None:
    pytest.importorskip("psycopg2")
    other = sqlalchemy.create_engine(_url(pg_uri, "psycopg2"))
    try:
        with vectorport.connect(other, table="engine_pool_psycopg2", dimension=DIM) as store:
            store.upsert(_records(3))
            assert store.count() == 3
            assert store.info()["pgvector"]["connections"].startswith("its own")
            store.drop()
    finally:
        other.dispose()


def test_aconnect_on_an_async_engine_runs_everything_on_its_pool(pg_uri: str, admin: Any) -> None:
    """Opening, creating, the first write's catalog preparation and dropping included: the
    application sees no connection but its engine's."""
    from sqlalchemy.ext.asyncio import create_async_engine

    records = _records(30)
    events = dict.fromkeys(EVENTS, 0)

    async def main() -> tuple[list[list[str]], int, int, dict[str, Any], dict[int, str]]:
        engine = create_async_engine(_url(pg_uri), pool_size=3, max_overflow=0)
        for name in events:
            sqlalchemy.event.listen(
                engine.sync_engine, name, lambda *a, _n=name: events.__setitem__(_n, events[_n] + 1)
            )
        try:
            store = await vectorport.aconnect(engine, table="engine_pool_async", dimension=DIM)
            assert events["checkout"] >= 1 and events["checkout"] == events["checkin"]  # the open's
            await store.aupsert(records)
            found = await asyncio.gather(*(store.aquery(r.vector, k=3) for r in records[:12]))
            count = await store.acount()
            info = await store.ainfo()
            out = engine.sync_engine.pool.checkedout()
            await store.adrop()
            # the store still open: every session it ever had would still be there
            new = {pid: name for pid, name in _backends(admin).items() if pid not in before}
            await store.aclose()
            async with engine.connect() as conn:  # the engine is still the application's
                assert (await conn.execute(sqlalchemy.text("SELECT 2"))).scalar() == 2
            return [r.keys for r in found], count, out, info, new
        finally:
            await engine.dispose()

    before = _backends(admin)
    keys, count, out, info, new = asyncio.run(main())
    assert [k[0] for k in keys] == [r.key for r in records[:12]]
    assert count == 30 and out == 0
    assert info["pgvector"]["connections"].startswith("the SQLAlchemy engine's pool")
    # every session opened was one of the engine's pool (the store's own would come from the
    # engine's URL too, with its application_name: hence the pool's events to count them)
    assert set(new.values()) <= {APP} and 1 <= len(new) <= 3, new
    assert events["connect"] == len(new) and events["checkout"] == events["checkin"] >= 20, events


_LEFT_BEHIND = (
    "SELECT current_setting('hnsw.ef_search', true), "
    "(SELECT count(*) FROM pg_class WHERE relnamespace = pg_my_temp_schema())"
)


def test_an_async_engines_connections_go_back_as_they_were_lent(pg_uri: str) -> None:
    from sqlalchemy.ext.asyncio import create_async_engine

    async def main() -> list[tuple[Any, ...]]:
        engine = create_async_engine(_url(pg_uri), pool_size=1, max_overflow=0)
        try:
            store = await vectorport.aconnect(engine, table="engine_pool_async_lent", dimension=DIM)
            await store.aupsert(_records(12))  # a staging table in the session
            await store.aquery(_records(1)[0].vector, k=5, params={"ef_search": 77})
            async with engine.connect() as conn:
                raw = (await conn.get_raw_connection()).driver_connection
                found = await conn.exec_driver_sql(_LEFT_BEHIND)
                seen = [(raw.autocommit, raw.prepare_threshold), tuple(found.one())]
            await store.adrop()
            await store.aclose()
            return seen
        finally:
            await engine.dispose()

    (autocommit, threshold), (ef_search, temp) = asyncio.run(main())
    assert autocommit is False and threshold == 5  # the application's settings
    assert ef_search in {None, "40"} and temp == 0


def test_an_engine_whose_pool_the_application_holds_fails_once_after_its_pool_timeout(pg_uri: str) -> None:
    engine = sqlalchemy.create_engine(_url(pg_uri), pool_size=1, max_overflow=0, pool_timeout=1)
    try:
        with vectorport.connect(engine, table="engine_pool_held", dimension=DIM) as store:
            # the application holds the engine's only connection; the pool already waited the
            # application's pool_timeout, so the store's retries do not wait it again
            started = time.monotonic()
            with engine.connect(), pytest.raises(vectorport.BackendUnavailableError) as err:
                store.count()
            assert time.monotonic() - started < 2.5
            assert not isinstance(err.value, vectorport.TransientError)
            assert "\n" not in str(err.value) and "larger pool_size or max_overflow" in str(err.value)
            assert store.count() == 0  # given back: the store borrows it again
            store.drop()
    finally:
        engine.dispose()


def test_an_engine_whose_server_does_not_answer_is_a_one_line_error(tmp_path: Any) -> None:
    url = sqlalchemy.engine.URL.create(
        "postgresql+psycopg", username="postgres", database="postgres", query={"host": str(tmp_path)}
    )
    engine = sqlalchemy.create_engine(url)
    try:
        with pytest.raises(vectorport.BackendUnavailableError) as err:
            vectorport.connect(engine, table="nowhere", dimension=DIM)
        assert "\n" not in str(err.value) and "pgvector open" in str(err.value)
    finally:
        engine.dispose()
