"""pgvector's store is composed of small parts (docs/backends.md): the server part works
alone, and no class of the package is a tower of concerns."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import vectorport
from vectorport._base import BaseStore
from vectorport.backends import pgvector
from vectorport.backends.pgvector import PgVectorStore
from vectorport.backends.pgvector._server import Server

pytestmark = pytest.mark.pgvector

_PACKAGE = Path(pgvector.__file__).parent


def test_the_server_part_alone_connects_maps_errors_and_keeps_one_connection_per_thread(
    pg_uri: str,
) -> None:
    from psycopg.conninfo import make_conninfo

    server = Server("the parts test", conninfo=make_conninfo(pg_uri, password="s3cret"))
    try:
        conn, staged = server.conn()
        assert conn.execute("SELECT 1").fetchone() == (1,) and staged == set()
        assert server.conn()[0] is conn
        versions = server.versions()
        assert versions["postgresql"] and versions["vector_extension"]
        with pytest.raises(vectorport.NotFoundError, match="the parts test") as info, server.errors("probe"):
            server.conn()[0].execute("SELECT * FROM vp_parts_no_such_table")
        assert "s3cret" not in str(info.value) and server.password == "s3cret"
    finally:
        server.close()
    assert conn.closed


def test_a_read_only_server_part_refuses_writes_in_every_session(pg_uri: str) -> None:
    server = Server("read-only parts test", conninfo=pg_uri, read_only=True)
    try:
        with pytest.raises(vectorport.ConfigurationError, match="read-only"), server.errors("write"):
            server.conn()[0].execute("CREATE TABLE vp_parts_never (a int)")
        own = server.connect()  # a session outside the per-thread ones starts read-only too
        try:
            row = own.execute("SHOW default_transaction_read_only").fetchone()
            assert row == ("on",)
        finally:
            own.close()
    finally:
        server.close()


def test_the_store_derives_from_the_base_class_alone_and_no_class_holds_more_than_25_methods() -> None:
    assert PgVectorStore.__bases__ == (BaseStore,)
    classes = {
        node.name: node
        for path in sorted(_PACKAGE.glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef)
    }
    counts = {
        name: sum(isinstance(b, ast.FunctionDef | ast.AsyncFunctionDef) for b in node.body)
        for name, node in classes.items()
    }
    assert max(counts.values()) <= 25, sorted(counts.items(), key=lambda kv: -kv[1])[:3]
    # the store's parts: each one class of its own, none derived from another class of the package
    parts = ("Server", "Catalog", "Reader", "Writer", "Searcher", "Indexing", "ForeignTables", "Capture")
    for name in (*parts, "PgVectorStore"):
        bases = [ast.unparse(b) for b in classes[name].bases]
        assert not [b for b in bases if b.split("[")[0] in classes], (name, bases)
