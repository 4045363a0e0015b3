"""PostgreSQL URLs as libpq and SQLAlchemy read them: ``postgresql:///db`` with the ``PG*``
variables, a socket directory in ``host=``, ``service=``, SQLAlchemy's ``postgresql+DRIVER://``,
and a password with ``@`` and ``/`` that works and is never printed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

import vectorport
from vectorport import ConfigurationError, StoreURL

pytestmark = pytest.mark.pgvector
psycopg = pytest.importorskip("psycopg")

PASSWORD = "p@ss/w:rd#1"
ROLE = "vp_url_role"


@pytest.fixture(scope="module")
def server(pg_uri: str) -> dict[str, str]:
    """The session server's socket directory and port (it listens on a socket only)."""
    from psycopg.conninfo import conninfo_to_dict

    socket_dir = str(conninfo_to_dict(pg_uri)["host"])
    port = next(Path(socket_dir).glob(".s.PGSQL.*")).suffix.lstrip(".")
    return {"host": socket_dir, "port": port}


@pytest.fixture(scope="module")
def docs(pg_uri: str) -> Iterator[str]:
    """A collection ``urls_docs`` with one record, in database ``postgres``."""
    with vectorport.connect(pg_uri + "&table=urls_docs", dimension=3) as store:
        store.upsert([vectorport.Record("a.md#chunk0", [1, 0, 0], {"lang": "en"}, "hello")])
        yield "urls_docs"
        store.drop()


@pytest.fixture(scope="module")
def secret_role(pg_uri: str, pg_dir: Path, docs: str) -> Iterator[str]:
    """A role whose password has ``@``, ``/``, ``:`` and ``#``, and that must give it (a
    ``pg_hba.conf`` line for that role only: the server trusts every other local user)."""
    hba = pg_dir / "pg_hba.conf"
    original = hba.read_text()
    with psycopg.connect(pg_uri, autocommit=True) as conn:
        conn.execute(f"DROP ROLE IF EXISTS {ROLE}")
        conn.execute(f"CREATE ROLE {ROLE} LOGIN PASSWORD %s".replace("%s", "'" + PASSWORD + "'"))
        conn.execute(f"GRANT ALL ON TABLE {docs} TO {ROLE}")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {ROLE}")
        hba.write_text(f"local all {ROLE} scram-sha-256\n" + original)
        conn.execute("SELECT pg_reload_conf()")
    try:
        yield ROLE
    finally:
        hba.write_text(original)
        with psycopg.connect(pg_uri, autocommit=True) as conn:
            conn.execute("SELECT pg_reload_conf()")
            conn.execute(f"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {ROLE}")
            conn.execute(f"DROP ROLE IF EXISTS {ROLE}")


def _info(url: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    return subprocess.run(
        [sys.executable, "-m", "vectorport", "info", url, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**clean, **(env or {})},
    )


def test_empty_host_takes_pghost_pgport_pguser(server: dict[str, str], docs: str) -> None:
    env = {"PGHOST": server["host"], "PGPORT": server["port"], "PGUSER": "postgres"}
    out = _info(f"postgresql:///postgres?table={docs}", env)
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["count"] == 1
    assert info["url"] == f"postgresql:///postgres?table={docs}"


def test_without_pghost_the_empty_host_is_libpq_default_not_an_error_of_ours(docs: str) -> None:
    # no PG* variables: libpq tries its compiled-in socket directory; the error is libpq's,
    # one line, naming the URL
    out = _info(f"postgresql:///postgres?table={docs}&connect_timeout=2", {"PGPORT": "1"})
    assert out.returncode != 0
    assert "Traceback" not in out.stderr
    assert "postgresql:///postgres" in out.stderr


def test_socket_directory_in_host(server: dict[str, str], docs: str, monkeypatch: Any) -> None:
    for name in ("PGHOST", "PGPORT", "PGUSER"):
        monkeypatch.delenv(name, raising=False)
    host, port = quote(server["host"], safe=""), server["port"]
    for url in (
        f"postgresql://postgres@/postgres?host={host}&port={port}&table={docs}",
        f"postgresql://postgres@{host}:{port}/postgres?table={docs}",  # percent-encoded as the host
        f"postgresql+psycopg://postgres@/postgres?host={host}&port={port}&table={docs}",
    ):
        with vectorport.connect(url) as store:
            assert store.count() == 1, url
            assert store.get(["a.md#chunk0"])[0].text == "hello"


def test_sqlalchemy_urls_of_every_driver_run_on_psycopg(server: dict[str, str], docs: str) -> None:
    host, port = quote(server["host"], safe=""), server["port"]
    for driver in ("psycopg", "psycopg2", "asyncpg", "psycopg_async"):
        url = f"postgresql+{driver}://postgres@/postgres?host={host}&port={port}&table={docs}"
        if driver == "asyncpg":
            url += "&ssl=disable"  # asyncpg's spelling of sslmode
        with vectorport.connect(url) as store:
            assert store.query([1, 0, 0], k=1).keys == ["a.md#chunk0"]
            assert store.url.scheme == f"postgresql+{driver}"


def test_service_file_entry(server: dict[str, str], docs: str, tmp_path: Path) -> None:
    services = tmp_path / "pg_service.conf"
    services.write_text(
        f"[vp_docs]\nhost={server['host']}\nport={server['port']}\nuser=postgres\ndbname=postgres\n"
    )
    out = _info(f"postgresql://?service=vp_docs&table={docs}", {"PGSERVICEFILE": str(services)})
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["count"] == 1


def test_password_with_at_and_slash_works_and_is_never_printed(
    server: dict[str, str], docs: str, secret_role: str
) -> None:
    host, port, encoded = quote(server["host"], safe=""), server["port"], quote(PASSWORD, safe="")
    urls = [
        f"postgresql://{secret_role}:{encoded}@/postgres?host={host}&port={port}&table={docs}",
        f"postgresql+psycopg://{secret_role}:{encoded}@/postgres?host={host}&port={port}&table={docs}",
        f"postgresql+asyncpg://{secret_role}:{encoded}@/postgres?host={host}&port={port}&table={docs}",
    ]
    for url in urls:
        with vectorport.connect(url) as store:
            assert store.count() == 1
            shown = " ".join([repr(store), str(store.url), json.dumps(store.info(), default=str)])
        for secret in (PASSWORD, encoded, "p@ss", "w:rd"):
            assert secret not in shown, url
        out = _info(url)
        assert out.returncode == 0, out.stderr
        assert encoded not in out.stdout + out.stderr and PASSWORD not in out.stdout + out.stderr
        assert f"{secret_role}:***@" in out.stdout
    wrong = urls[0].replace(encoded, quote("n0t/it@all", safe=""))
    out = _info(wrong)
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert "password" in out.stderr and "n0t" not in out.stderr and "n0t%2Fit" not in out.stderr


def test_an_sqlalchemy_engine_and_its_url_are_urls(
    server: dict[str, str], docs: str, secret_role: str
) -> None:
    sqlalchemy = pytest.importorskip("sqlalchemy")
    from sqlalchemy.engine import URL

    url = URL.create(
        "postgresql+psycopg",
        username=secret_role,
        password=PASSWORD,  # SQLAlchemy quotes it when rendering
        database="postgres",
        query={"host": server["host"], "port": server["port"]},
    )
    engine = sqlalchemy.create_engine(url)
    try:
        for given in (url, engine):
            with vectorport.connect(given, table=docs) as store:
                assert store.count() == 1
                assert PASSWORD not in repr(store) and f"{secret_role}:***@" in repr(store)
    finally:
        engine.dispose()


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("postgresql://u:p@ss@h/db?table=t", "percent-encoded"),
        ("postgresql://u:a/b@h/db?table=t", "percent-encoded (%2F, %40"),
        ("postgresql+psycopg://u:a@b@h/db?table=t", "percent-encoded"),
        ("postgresql:///db?table=t&sslmod=require", "did you mean 'sslmode'"),
        ("postgresql+psycopg:///db?table=t&ef_serach=4", "did you mean 'ef_search'"),
        (
            "postgresql+asyncpg:///db?table=t&prepared_statement_cache_size=0",
            "unknown pgvector URL parameter",
        ),
        ("postgresql:///db?table=t&sslmode=%zz", "libpq cannot read"),
        ("postgresql:///db?table=t&key_template={file_path}#chunk{chunk_index}", "write it as %23"),
    ],
)
def test_bad_urls_are_refused_in_one_line_without_the_password(url: str, words: str) -> None:
    with pytest.raises(ConfigurationError) as err:
        vectorport.connect(url)
    message = str(err.value)
    assert words in message and "\n" not in message
    assert "ss@h" not in message and "a/b" not in message and "a@b" not in message


def test_connection_params_are_libpqs_and_options_vectorports() -> None:
    from vectorport.backends.pgvector._dsn import connection_params

    params, options = connection_params(
        StoreURL.parse(
            "postgresql://bob:s3cr%40t%2F@/app?host=%2Fvar%2Frun%2Fpostgresql&table=docs&sslmode=require"
            "&options=-c%20statement_timeout%3D5s&where=n%20%3E%201&application_name=a+b"
        )
    )
    assert params == {
        "user": "bob",
        "password": "s3cr@t/",
        "dbname": "app",
        "host": "/var/run/postgresql",
        "sslmode": "require",
        "options": "-c statement_timeout=5s",
        "application_name": "a+b",  # libpq does not read "+" as a space
    }
    assert options == {"table": "docs", "where": "n > 1"}
    params, options = connection_params(
        StoreURL.parse("postgresql+asyncpg://bob:s3cr%40t@db:6543/app?ssl=require&table=docs")
    )
    assert params == {
        "host": "db",
        "port": "6543",
        "user": "bob",
        "password": "s3cr@t",
        "dbname": "app",
        "sslmode": "require",
    }
    assert options == {"table": "docs"}
    params, _ = connection_params(StoreURL.parse("postgresql:///app?table=docs"))
    assert params == {"dbname": "app"}  # no host: libpq's PGHOST or its default socket
