"""SQLSTATE → vectorport errors, produced by a real server (no mocks)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import vectorport
from vectorport.backends.pgvector.errors import pg_errors

from .conftest import uri_for

pytestmark = pytest.mark.pgvector


def test_dropped_table_is_not_found(pg_url: Callable[..., str]) -> None:
    store = vectorport.connect(pg_url(), dimension=2)
    try:
        store.upsert([vectorport.Record("a", [1, 0])])
        conn, _ = store.server.conn()  # type: ignore[attr-defined]
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
        conn, _ = store.server.conn()  # type: ignore[attr-defined]
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
        conn, _ = store.server.conn()  # type: ignore[attr-defined]
        other = psycopg.connect(store.server.conninfo, autocommit=True)  # type: ignore[attr-defined]
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


@pytest.fixture
def password_role(pg_dir: Path, admin: Any) -> Iterator[str]:
    """A role that must log in with a password (scram), through a pg_hba.conf line for it only."""
    name = "vp_pw_user"
    hba = pg_dir / "pg_hba.conf"
    original = hba.read_text()
    admin.execute(f"DROP ROLE IF EXISTS {name}")
    admin.execute(f"CREATE ROLE {name} LOGIN PASSWORD 'right-pw'")
    admin.execute(f"GRANT USAGE ON SCHEMA public TO {name}")
    hba.write_text(f"local all {name} scram-sha-256\n" + original)
    admin.execute("SELECT pg_reload_conf()")
    try:
        yield name
    finally:
        hba.write_text(original)
        admin.execute("SELECT pg_reload_conf()")
        admin.execute(f"DROP OWNED BY {name}")
        admin.execute(f"DROP ROLE {name}")


def test_wrong_or_missing_password_is_a_configuration_error(pg_uri: str, password_role: str) -> None:
    started = time.monotonic()
    with pytest.raises(vectorport.ConfigurationError) as info:
        vectorport.connect(uri_for(pg_uri, password_role, "wrong-pw", table="docs"))
    message = str(info.value)
    assert "password authentication failed" in message and "check the user name and password" in message
    assert "wrong-pw" not in message and "***" in message
    assert not isinstance(info.value, vectorport.TransientError)
    assert time.monotonic() - started < 5  # not retried with backoff
    with pytest.raises(vectorport.ConfigurationError, match="wants a password"):
        vectorport.connect(uri_for(pg_uri, password_role, table="docs"))
    with pytest.raises(vectorport.NotFoundError, match="pass dimension="):  # the right one gets in
        vectorport.connect(uri_for(pg_uri, password_role, "right-pw", table="no_such_table"))


def test_unknown_role_and_database(pg_uri: str) -> None:
    with pytest.raises(vectorport.ConfigurationError, match='role "vp_nobody" does not exist'):
        vectorport.connect(uri_for(pg_uri, "vp_nobody", table="docs"))
    missing_db = uri_for(pg_uri, table="docs").replace("/postgres?", "/vp_no_such_db?")
    with pytest.raises(vectorport.NotFoundError, match="database does not exist"):
        vectorport.connect(missing_db)


def test_unresolvable_host_is_unavailable() -> None:
    with pytest.raises(vectorport.BackendUnavailableError, match="is the server running"):
        vectorport.connect(
            "postgresql://u:pw@vectorport-no-such-host.invalid/db?table=docs&connect_timeout=3"
        )


def test_dimension_mismatch_against_a_table_made_in_sql(pg_url: Callable[..., str], admin: Any) -> None:
    admin.execute(
        "CREATE TABLE vp_sql_dim (key text PRIMARY KEY, embedding vector(3) NOT NULL, "
        "metadata jsonb NOT NULL DEFAULT '{}', text text)"
    )
    try:
        with pytest.raises(vectorport.ConfigurationError, match="has dimension 3, not 4"):
            vectorport.connect(pg_url("vp_sql_dim"), dimension=4, metric="cosine")
        with vectorport.connect(pg_url("vp_sql_dim"), dimension=3, metric="cosine") as store:
            with pytest.raises(vectorport.ValidationError, match="has 4 dimensions; the collection has 3"):
                store.upsert([vectorport.Record("a", [1, 2, 3, 4])])
            with pytest.raises(
                vectorport.ValidationError, match=r"^pgvector: query vector: .*query was not run"
            ):
                store.query([1, 2], k=1)
    finally:
        admin.execute("DROP TABLE vp_sql_dim")


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_values_are_refused_before_any_io(pg_url: Callable[..., str], bad: float) -> None:
    with vectorport.connect(pg_url(), dimension=3) as store:
        try:
            store.upsert([vectorport.Record("ok", [1, 0, 0])])
            with pytest.raises(vectorport.ValidationError, match=rf"record 'x' at vector: .*holds {bad}"):
                store.upsert([vectorport.Record("ok2", [1, 0, 0]), vectorport.Record("x", [1, bad, 0])])
            with pytest.raises(vectorport.ValidationError, match=r"record 'y' at metadata\.score"):
                store.upsert([vectorport.Record("y", [1, 0, 0], {"score": bad})])
            with pytest.raises(vectorport.ValidationError, match=rf"query vector: .*holds {bad}"):
                store.query([bad, 0, 0], k=1)
            assert [r.key for r in store.records()] == ["ok"]  # never half a batch
        finally:
            store.drop()


@pytest.mark.parametrize(
    "reason",
    [
        "the database system is starting up",
        "the database system is not yet accepting connections\nDETAIL:  Consistent recovery "
        "state has not been yet reached.",
        "the database system is in recovery mode",
    ],
)
def test_a_server_coming_up_is_transient(reason: str) -> None:
    """libpq's words (no SQLSTATE) while a server recovers after a crash, as a CI run saw them:
    the call is retried, not reported as a server that is not running."""
    import psycopg

    text = f'connection failed: connection to server on socket "/x/.s.PGSQL.5432" failed: FATAL:  {reason}'
    with pytest.raises(vectorport.TransientError, match="starting up"), pg_errors("query", "pgvector://x"):
        raise psycopg.OperationalError(text)
