"""A table keyed by a ``bigserial id`` that declares a natural key, ``UNIQUE(file_path,
chunk_index)``: the natural key is the records' key (the id says nothing of the chunk, and a
copy elsewhere could not keep it), ``info`` says which key was chosen and why, and the id is
carried as a metadata field the sequence fills and no upsert changes. It was once detected as
Supabase's ``documents`` template, keyed by the surrogate id and read-only by default."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import vectorport
from vectorport import Record

pytestmark = pytest.mark.pgvector

TABLE = (
    "CREATE TABLE {} (id bigserial PRIMARY KEY, file_path text NOT NULL, chunk_index int NOT NULL, "
    "content text, metadata jsonb, embedding vector(3), UNIQUE (file_path, chunk_index))"
)


def test_the_natural_key_is_preferred_over_the_serial_id(pg_url: Callable[..., str], admin: Any) -> None:
    admin.execute("DROP TABLE IF EXISTS natural_chunks")
    admin.execute(TABLE.format("natural_chunks"))
    admin.execute(
        "INSERT INTO natural_chunks (file_path, chunk_index, content, metadata, embedding) VALUES "
        "('docs/a.md', 0, 'a0', '{\"lang\": \"en\"}', '[1,0,0]'), ('docs/a.md', 1, 'a1', '{}', '[0,1,0]')"
    )
    with vectorport.connect(pg_url("natural_chunks"), metric="cosine") as store:
        layout = store.info()["layout"]
        assert layout["name"] == "custom" and layout["writable"]
        key = layout["roles"]["key"]
        assert key["template"] == "{file_path}#chunk{chunk_index}"
        assert "preferred over the serial 'id'" in key["chosen"]
        assert layout["roles"]["metadata"]["columns"] == ["id"]
        got = {r.key: r.metadata for r in store.get(["docs/a.md#chunk0", "docs/a.md#chunk1"])}
        assert got == {"docs/a.md#chunk0": {"lang": "en", "id": 1}, "docs/a.md#chunk1": {"id": 2}}
        store.upsert(
            [
                Record("docs/a.md#chunk1", [0.0, 1.0, 1.0], {"lang": "fr"}, "a1 again"),  # no id: kept
                Record("docs/b.md#chunk0", [0.0, 0.0, 1.0], {}, "b0"),  # new: the sequence's
            ]
        )
    rows = admin.execute(
        "SELECT id, file_path, chunk_index, content, metadata FROM natural_chunks "
        "ORDER BY file_path, chunk_index"
    ).fetchall()
    assert rows == [
        (1, "docs/a.md", 0, "a0", {"lang": "en"}),
        (2, "docs/a.md", 1, "a1 again", {"lang": "fr"}),
        (rows[2][0], "docs/b.md", 0, "b0", {}),
    ]
    assert rows[2][0] > 2


def test_a_copy_of_such_a_table_keeps_its_ids(pg_url: Callable[..., str], admin: Any) -> None:
    admin.execute("DROP TABLE IF EXISTS natural_from; DROP TABLE IF EXISTS natural_to")
    admin.execute(TABLE.format("natural_from"))
    admin.execute(TABLE.format("natural_to"))
    admin.execute("SELECT setval('natural_from_id_seq', 40)")
    admin.execute(
        "INSERT INTO natural_from (file_path, chunk_index, content, metadata, embedding) "
        "SELECT 'docs/' || i || '.md', i, 'text ' || i, '{}', ARRAY[1, i, 0]::vector "
        "FROM generate_series(1, 5) AS i"
    )
    report = vectorport.migrate.run(
        pg_url("natural_from", metric="cosine"), pg_url("natural_to", metric="cosine")
    )
    assert report.status == "verified", report.to_dict()
    assert admin.execute("SELECT id, file_path, chunk_index FROM natural_to ORDER BY id").fetchall() == (
        admin.execute("SELECT id, file_path, chunk_index FROM natural_from ORDER BY id").fetchall()
    )
