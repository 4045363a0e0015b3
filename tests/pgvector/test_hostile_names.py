"""Hostile names: `vectorport pgvector schema` output run through the real ``psql -f`` never runs
anything but the collection's DDL (a newline in ``--table`` once ended the leading ``--``
comment and ran ``DROP TABLE canary``), and names with control characters are refused wherever
vectorport takes them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from typer.testing import CliRunner

import vectorport
from vectorport.backends.pgvector import schema_sql
from vectorport.cli import app

pytestmark = pytest.mark.pgvector
psycopg = pytest.importorskip("psycopg")
sql = psycopg.sql

PSQL = shutil.which("psql") or "/usr/bin/psql"

# (schema, table) pairs that must be created exactly as named
KEPT = [
    ("public", "star*/slash"),
    ("public", "a*/b/*c--d"),
    ("public", 'dq"uo""te'),
    ("public", "it's 'quoted'"),
    ("public", "back\\slash\\'"),
    ("public", "semi; DROP TABLE canary; --"),
    ("public", "E'x' $$ $q$"),
    ("public", "x$vectorport$;DROP TABLE canary;--"),  # the functions' dollar-quote tag
    ("we'ird \"sch\\ema*/", "t"),
    ("s$vectorport$;DROP TABLE canary;--", "t$vectorport1$"),
]
# names with a control or format character: refused
REFUSED = [
    "x\nDROP TABLE canary;",
    "x\rDROP TABLE canary;",
    "x\r\nDROP TABLE canary; --",
    "tab\there",
    "nul\x00",
    "nel\x85DROP TABLE canary;",
    "bidi\u202ename",
    "zero\u200bwidth",
]


@pytest.fixture(scope="module")
def psql_uri() -> Iterator[str]:
    """A server of its own, started (kept) with ``vectorport pgvector start``, with a canary
    (outside pytest's tmp_path, as ``pg_dir``: the server may run as another user)."""
    if not Path(PSQL).exists():
        pytest.skip("psql is not installed")
    root = Path(tempfile.mkdtemp(prefix="vectorport-hostile-"))
    root.chmod(0o755)
    data = root / "pgdata"
    cli = [sys.executable, "-m", "vectorport", "pgvector"]
    started = subprocess.run([*cli, "start", str(data)], capture_output=True, text=True, timeout=120)
    assert started.returncode == 0, started.stderr
    uri = started.stdout.strip()
    try:
        yield uri
    finally:
        subprocess.run([*cli, "stop", str(data)], capture_output=True, text=True, timeout=120)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def canary(psql_uri: str) -> Iterator[Any]:
    with psycopg.connect(psql_uri, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS canary")
        conn.execute("CREATE TABLE canary (id int)")
        conn.execute("INSERT INTO canary VALUES (1)")
        yield conn


def _psql_file(uri: str, text: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "schema.sql"
    script.write_text(text, encoding="utf-8")
    return subprocess.run(
        # psql's defaults, as a user runs it: without ON_ERROR_STOP, a statement smuggled past
        # a broken one would run too
        [PSQL, "-X", "-q", "-d", uri, "-f", str(script)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _canary_alive(conn: Any) -> bool:
    row = conn.execute("SELECT to_regclass('public.canary') IS NOT NULL").fetchone()
    return bool(row and row[0]) and conn.execute("SELECT count(*) FROM canary").fetchone()[0] == 1


@pytest.mark.parametrize(("schema", "table"), KEPT)
def test_printed_ddl_of_a_hostile_name_creates_exactly_that_table(
    psql_uri: str, canary: Any, tmp_path: Path, schema: str, table: str
) -> None:
    canary.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
    try:
        out = CliRunner().invoke(
            app, ["pgvector", "schema", "--table", table, "--schema", schema, "--dim", "3"]
        )
        assert out.exit_code == 0, out.output
        ddl = out.stdout
        assert ddl.splitlines()[0].startswith("-- vectorport pgvector collection ")
        ran = _psql_file(psql_uri, ddl, tmp_path)
        assert ran.returncode == 0 and "ERROR" not in ran.stderr, ran.stderr
        assert _canary_alive(canary)
        tables = canary.execute(
            "SELECT schemaname, tablename FROM pg_tables WHERE tablename <> 'canary' "
            "AND tablename NOT LIKE 'vectorport\\_%' "
            "AND schemaname NOT IN ('pg_catalog', 'information_schema')"
        ).fetchall()
        assert tables == [(schema, table)]  # exactly the one table, exactly as named
        functions = canary.execute(
            "SELECT n.nspname, p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
            "WHERE p.proname LIKE '%match%' AND n.nspname NOT IN ('pg_catalog', 'information_schema') "
            "ORDER BY 2"
        ).fetchall()
        assert functions == [
            (schema, f"hybrid_match_{table}"),
            (schema, f"match_{table}"),
            (schema, f"text_match_{table}"),
        ]
        comment = canary.execute(
            "SELECT obj_description(to_regclass(quote_ident(%s) || '.' || quote_ident(%s)), 'pg_class')",
            (schema, table),
        ).fetchone()[0]
        assert comment.startswith("vectorport collection: 3 dims") and "vectorport_collections" in comment
        # vectorport opens the table it printed, by the same name, and its functions answer
        params = urlencode({"table": table, "schema": schema}, quote_via=quote)
        with vectorport.connect(f"{psql_uri}&{params}") as store:
            assert store.spec.dimension == 3
            store.upsert([vectorport.Record("k", [1, 2, 3])])
            assert store.query([1, 2, 3], k=1).keys == ["k"]
            rows = canary.execute(
                sql.SQL("SELECT key FROM {}(%s::vector, 1)").format(sql.Identifier(schema, f"match_{table}")),
                ("[1,2,3]",),
            ).fetchall()
            assert rows == [("k",)]
            store.drop()
    finally:
        if schema == "public":
            canary.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(schema, table)))
            for fn in (f"match_{table}", f"text_match_{table}", f"hybrid_match_{table}"):
                canary.execute(sql.SQL("DROP FUNCTION IF EXISTS {}").format(sql.Identifier(schema, fn)))
        else:
            canary.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


@pytest.mark.parametrize("name", REFUSED)
def test_control_characters_are_refused_by_the_cli_and_nothing_reaches_psql(
    psql_uri: str, canary: Any, tmp_path: Path, name: str
) -> None:
    for option in ("--table", "--schema"):
        args = ["--table", "t", "--schema", name] if option == "--schema" else ["--table", name]
        out = CliRunner().invoke(app, ["pgvector", "schema", *args, "--dim", "3", "--json"])
        assert out.exit_code == 2, out.output
        assert "control or invisible format characters" in out.output
        assert "CREATE" not in out.stdout
        # whatever it printed, psql runs nothing harmful with it
        ran = _psql_file(psql_uri, out.stdout, tmp_path)
        assert ran.returncode == 0, ran.stderr
        assert _canary_alive(canary)


@pytest.mark.parametrize("name", REFUSED)
def test_control_characters_are_refused_everywhere_before_any_io(tmp_path: Path, name: str) -> None:
    with pytest.raises(vectorport.ConfigurationError, match=r"U\+[0-9A-F]{4}"):
        schema_sql(name, 3)
    with pytest.raises(vectorport.ConfigurationError, match=r"U\+[0-9A-F]{4}"):
        schema_sql("t", 3, schema=name)
    never = tmp_path / "never"
    for params in (
        {"table": name},
        {"collection": name},
        {"table": "t", "schema": name},
        {"table": "t", "database": name},
        {"table": "t", "key_column": name},
        {"table": "t", "embedding_column": name},
        {"table": "t", "metadata_column": name},
        {"table": "t", "text_column": name},
    ):
        url = f"pgvector://{never}?{urlencode(params, quote_via=quote)}"
        with pytest.raises(vectorport.ConfigurationError, match=r"control or invisible format"):
            vectorport.connect(url, dimension=3)
        name_of = next(k for k in params if params[k] == name)
        if name_of not in ("table", "collection"):
            with pytest.raises(vectorport.ConfigurationError, match=r"control or invisible format"):
                vectorport.connect(f"pgvector://{never}?table=t", dimension=3, **{name_of: name})
    assert not never.exists()  # refused before the embedded server was started


def test_the_json_output_and_the_header_quote_unusual_names() -> None:
    out = CliRunner().invoke(
        app, ["pgvector", "schema", "--table", "it's", "--schema", 'a"b', "--dim", "3", "--json"]
    )
    assert out.exit_code == 0, out.output
    text = json.loads(out.stdout)["sql"]
    assert (
        text.splitlines()[0] == '-- vectorport pgvector collection "a""b"."it\'s": 3 dims, cosine, index=hnsw'
    )
    assert schema_sql("docs", 3).splitlines()[0].startswith("-- vectorport pgvector collection public.docs:")
