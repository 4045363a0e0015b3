"""A timeout the user set is not retried (``statement_timeout`` took 17.8 s to fail at 1 s:
eight attempts), and URL parameters nobody knows are refused instead of ignored."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import vectorport
from vectorport._retry import retry_scope

from .conftest import uri_for

pytestmark = pytest.mark.pgvector


@pytest.fixture
def table(pg_url: Callable[..., str]) -> Iterator[str]:
    with vectorport.connect(pg_url(index="exact"), dimension=3) as store:
        store.upsert([vectorport.Record(f"k{i}", [1, i, 0]) for i in range(100)])
        try:
            yield store.collection
        finally:
            store.drop()


@pytest.mark.parametrize(
    ("setting", "words"),
    [("statement_timeout", "statement_timeout"), ("lock_timeout", "lock_timeout")],
)
def test_a_timeout_fails_fast_on_the_first_attempt(
    pg_uri: str, table: str, admin: Any, setting: str, words: str
) -> None:
    url = uri_for(pg_uri, table=table, options=f"-c {setting}=300")
    with vectorport.connect(url) as store:
        # another session holds the table: the search waits until a timeout fires
        admin.execute("BEGIN")
        admin.execute(f'LOCK TABLE "{table}" IN ACCESS EXCLUSIVE MODE')
        retries: list[Exception] = []
        started = time.monotonic()
        try:
            with retry_scope(on_retry=retries.append), pytest.raises(vectorport.BackendError) as info:
                store.query([1, 0, 0], k=5)
        finally:
            elapsed = time.monotonic() - started
            admin.execute("ROLLBACK")
    assert retries == []  # one attempt
    assert not isinstance(info.value, vectorport.TransientError)
    assert elapsed < 3, elapsed  # eight attempts with backoff take ~10x the timeout
    message = str(info.value)
    assert words in message and "not retried" in message and "raise it" in message
    assert info.value.__cause__ is not None


def test_the_timeout_of_an_exact_search_over_many_rows_is_not_retried(
    pg_uri: str, pg_url: Callable[..., str], admin: Any
) -> None:
    """The same with a search slow by itself: an exact scan of 100k rows (~50 ms here) under a
    10 ms statement_timeout."""
    with vectorport.connect(pg_url(index="exact"), dimension=64) as store:
        admin.execute(
            f'INSERT INTO "{store.collection}" (key, embedding) SELECT i::text, '
            "array_fill(i::real, ARRAY[64])::vector FROM generate_series(1, 100000) AS i"
        )
        try:
            url = uri_for(pg_uri, table=store.collection, options="-c statement_timeout=10")
            for _ in range(3):  # opening reads the catalogs (well under 1 ms each) under the limit too
                try:
                    slow = vectorport.connect(url)
                    break
                except vectorport.BackendError:
                    continue
            with slow:
                retries: list[Exception] = []
                started = time.monotonic()
                with retry_scope(on_retry=retries.append), pytest.raises(vectorport.BackendError) as info:
                    slow.query([1.0] * 64, k=10)
                assert time.monotonic() - started < 3
            assert retries == [] and "57014" in str(info.value) and "statement_timeout" in str(info.value)
        finally:
            store.drop()


def test_libpq_parameters_pass_through_a_postgresql_url(pg_uri: str, pg_url: Callable[..., str]) -> None:
    with vectorport.connect(pg_url(), dimension=2) as made:
        table = made.collection
    url = uri_for(
        pg_uri,
        table=table,
        sslmode="disable",
        connect_timeout="7",
        application_name="vp-params-test",
        options="-c work_mem=8MB",
        ef_search="50",
    )
    with vectorport.connect(url) as store:
        conn, _ = store.server.conn()  # type: ignore[attr-defined]
        row = conn.execute(
            "SELECT current_setting('application_name'), current_setting('work_mem')"
        ).fetchone()
        assert row == ("vp-params-test", "8MB")
        store.drop()


@pytest.mark.parametrize(
    ("param", "closest"),
    [("ef_serach", "ef_search"), ("tabel_column", "text_column"), ("keep_sever", "keep_server")],
)
def test_an_unknown_pgvector_url_parameter_names_the_closest_and_the_known_ones(
    pg_url: Callable[..., str], tmp_path: Path, param: str, closest: str
) -> None:
    with pytest.raises(vectorport.ConfigurationError) as info:
        vectorport.connect(pg_url(**{param: "1"}), dimension=2)
    message = str(info.value)
    assert f"unknown pgvector URL parameter {param!r} (did you mean {closest!r}?)" in message
    assert "known: collection, database, deferred_index, ef_construction, ef_search" in message
    never = tmp_path / "never"
    with pytest.raises(vectorport.ConfigurationError, match="did you mean"):
        vectorport.connect(f"pgvector://{never}?table=t&{param}=1", dimension=2)
    assert not never.exists()  # refused before the server starts
    with pytest.raises(vectorport.ConfigurationError, match=rf"unknown pgvector option {param!r}"):
        vectorport.connect(f"pgvector://{never}?table=t", dimension=2, **{param: "1"})


def test_a_postgresql_url_refuses_what_neither_vectorport_nor_libpq_knows(pg_uri: str) -> None:
    for param, closest in (
        ("sslmod", "sslmode"),
        ("ef_serach", "ef_search"),
        ("conect_timeout", "connect_timeout"),
    ):
        with pytest.raises(vectorport.ConfigurationError) as info:
            vectorport.connect(uri_for(pg_uri, table="docs", **{param: "1"}))
        message = str(info.value)
        assert f"{param!r} (did you mean {closest!r}?)" in message
        assert "libpq's connection parameters" in message and "ef_search" in message


def test_an_unknown_query_param_names_the_closest(pg_url: Callable[..., str]) -> None:
    with vectorport.connect(pg_url(), dimension=2) as store:
        try:
            store.upsert([vectorport.Record("a", [1, 0])])
            with pytest.raises(
                vectorport.ConfigurationError, match=r"'ef_serach' \(did you mean 'ef_search'\?\)"
            ):
                store.query([1, 0], k=1, params={"ef_serach": 10})
        finally:
            store.drop()
