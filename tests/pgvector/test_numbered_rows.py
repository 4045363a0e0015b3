"""Supabase's hybrid search template: ``id bigserial`` (or an identity), ``content``, a
``tsvector`` a trigger fills, ``embedding``, ``metadata``, no natural key. A restore into a new
table of that shape fills it as the application's own ingestion does: the sequence gives each
row its id, the trigger its ``tsvector``, and the record's key is kept in the metadata (as
uuid-keyed tables keep it), so the copy reads back, verifies and searches by text. Such a
table was once a read-only source (``migrate`` refused it, exit 4)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import vectorport
from vectorport import Record

pytestmark = pytest.mark.pgvector

RECORDS = [
    Record(f"docs/{i}.md#chunk0", [1.0, float(i), 0.0], {"lang": "en"}, f"the quick fox {i}")
    for i in range(4)
]


def _hybrid_table(admin: Any, name: str, id_column: str) -> None:
    admin.execute(f"DROP TABLE IF EXISTS {name}")
    admin.execute(
        f"CREATE TABLE {name} ({id_column}, content text, fts tsvector, embedding vector(3), metadata jsonb)"
    )
    admin.execute(
        f"CREATE OR REPLACE FUNCTION {name}_fts() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN NEW.fts := to_tsvector('english', coalesce(NEW.content, '')); RETURN NEW; END $$"
    )
    admin.execute(
        f"CREATE TRIGGER {name}_fts BEFORE INSERT OR UPDATE ON {name} "
        f"FOR EACH ROW EXECUTE FUNCTION {name}_fts()"
    )
    admin.execute(f"CREATE INDEX ON {name} USING gin (fts)")


@pytest.mark.parametrize(
    "id_column", ["id bigserial PRIMARY KEY", "id bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY"]
)
def test_a_restore_fills_a_numbered_table_as_the_app_does(
    pg_url: Callable[..., str], admin: Any, id_column: str
) -> None:
    _hybrid_table(admin, "hybrid_docs", id_column)
    source = "memory://numbered-rows-source"
    vectorport.connect(source, dimension=3, metric="cosine").upsert(RECORDS)
    target = pg_url("hybrid_docs", metric="cosine")
    report = vectorport.migrate.run(source, target)
    assert report.status == "verified", report.to_dict()
    again = vectorport.migrate.run(source, target)  # replaced by key, not added twice
    assert again.status == "verified" and again.exit_code == 0
    rows = admin.execute(
        "SELECT content, fts IS NOT NULL, metadata ->> 'vectorport_key' FROM hybrid_docs ORDER BY id"
    ).fetchall()
    assert rows == [(r.text, True, r.key) for r in RECORDS]
    with vectorport.connect(target) as store:
        assert store.info()["layout"]["writable"]
        assert [m.key for m in store.text_query("fox 2", k=1)] == ["docs/2.md#chunk0"]
        store.upsert([Record("100", [0.0, 0.0, 1.0], {}, "an integer key is the id")])
    assert admin.execute("SELECT metadata FROM hybrid_docs WHERE id = 100").fetchone() == ({},)
    vectorport.connect(source).drop()
