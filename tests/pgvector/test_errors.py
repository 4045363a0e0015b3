"""SQLSTATE → vectorport errors, produced by a real server (no mocks)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import vectorport
from vectorport.backends.pgvector.errors import pg_errors

pytestmark = pytest.mark.pgvector


def test_dropped_table_is_not_found(pg_url: Callable[..., str]) -> None:
    store = vectorport.connect(pg_url(), dimension=2)
    try:
        store.upsert([vectorport.Record("a", [1, 0])])
        conn, _ = store._conn()  # type: ignore[attr-defined]
        conn.execute(f'DROP TABLE "{store.collection}"')  # behind the store's back
        with pytest.raises(vectorport.NotFoundError, match="does not exist"):
            store.query([1, 0], k=1)
    finally:
        store.close()


def test_connection_refused_is_unavailable_without_password() -> None:
    url = "postgresql://alice:s3cr3t-pw@127.0.0.1:1/db?table=docs&connect_timeout=3"
    with pytest.raises(vectorport.BackendUnavailableError) as info:
        vectorport.connect(url)
    assert "s3cr3t-pw" not in str(info.value)
    assert "s3cr3t-pw" not in repr(vectorport.StoreURL.parse(url))
    assert "***" in str(info.value)


@pytest.mark.parametrize(
    ("sqlstate", "error"),
    [
        ("40001", vectorport.TransientError),
        ("40P01", vectorport.TransientError),
        ("42P01", vectorport.NotFoundError),
        ("23505", vectorport.ConflictError),
    ],
)
def test_server_sqlstates_map(pg_url: Callable[..., str], sqlstate: str, error: type[Exception]) -> None:
    store = vectorport.connect(pg_url(), dimension=2)
    try:
        conn, _ = store._conn()  # type: ignore[attr-defined]
        with pytest.raises(error) as info, pg_errors("probe", "test"):
            conn.execute(f"DO $$ BEGIN RAISE EXCEPTION 'boom' USING ERRCODE = '{sqlstate}'; END $$")
        assert isinstance(info.value.__cause__, Exception) and sqlstate in str(info.value)
    finally:
        store.drop()
        store.close()


def test_real_deadlock_is_transient_and_retried(pg_url: Callable[..., str]) -> None:
    import threading

    import psycopg

    store = vectorport.connect(pg_url(), dimension=2)
    try:
        store.upsert([vectorport.Record("a", [1, 0]), vectorport.Record("b", [0, 1])])
        table = store.collection
        conn, _ = store._conn()  # type: ignore[attr-defined]
        other = psycopg.connect(store._conninfo, autocommit=True)  # type: ignore[attr-defined]
        barrier = threading.Barrier(2)
        errors: list[BaseException] = []

        def lock(c: psycopg.Connection[object], first: str, second: str) -> None:
            try:
                with pg_errors("probe", "test"), c.transaction():
                    c.execute(f"UPDATE \"{table}\" SET text = 'x' WHERE key = %s", (first,))
                    barrier.wait()
                    c.execute(f"UPDATE \"{table}\" SET text = 'y' WHERE key = %s", (second,))
            except BaseException as exc:
                errors.append(exc)

        t = threading.Thread(target=lock, args=(other, "b", "a"))
        t.start()
        lock(conn, "a", "b")
        t.join()
        other.close()
        assert len(errors) == 1 and isinstance(errors[0], vectorport.TransientError), errors
    finally:
        store.drop()
        store.close()


def test_spec_mismatch_is_a_clear_error(pg_url: Callable[..., str]) -> None:
    url = pg_url()
    store = vectorport.connect(url, dimension=3, metric="dot")
    try:
        with pytest.raises(vectorport.ConfigurationError, match="dimension 3, not 4"):
            vectorport.connect(url, dimension=4)
        with pytest.raises(vectorport.ConfigurationError, match="dot metric, not cosine"):
            vectorport.connect(url, dimension=3, metric="cosine")
    finally:
        store.drop()
        store.close()
