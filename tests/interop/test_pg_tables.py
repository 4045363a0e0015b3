"""The interop fixtures build what they claim: each owner's table holds the rows it was handed,
with the columns and objects its owner creates, and the plain-psycopg ground truth agrees with the
owner's own read API. Proven here, before any vectorport layout reads them."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import pytest

from .pg_tables import SPECS, Built, Row, Tables, columns_of, read_truth

pytestmark = [pytest.mark.interop, pytest.mark.pgvector]


def _same_rows(got: dict[str, Row], want: list[Row]) -> None:
    assert sorted(got) == sorted(r.key for r in want)
    for r in want:
        g = got[r.key]
        assert g.vector.dtype == np.float32 and g.vector.tobytes() == r.vector.tobytes(), r.key
        assert (g.text, g.metadata) == (r.text, r.metadata), r.key


@pytest.mark.parametrize("name", list(SPECS))
def test_the_fixture_holds_what_it_was_given(name: str, pg_tables: Tables, plain: Any) -> None:
    built = pg_tables.get(name)
    spec = built.spec
    assert columns_of(plain, spec.schema, spec.table) == dict(spec.columns)
    where = f" WHERE {spec.scope}" if spec.scope else ""
    (count,) = plain.execute(f'SELECT count(*) FROM "{spec.schema}"."{spec.table}"{where}').fetchone()
    assert count == len(built.rows) > 0
    _same_rows(read_truth(plain, spec), built.rows)


@pytest.mark.parametrize("name", [n for n, s in SPECS.items() if s.layout != "custom"])
def test_the_ground_truth_is_what_the_owner_reads(name: str, pg_tables: Tables, plain: Any) -> None:
    """The owner's own read API (get_by_ids, get_nodes, fetch, match_documents) sees the same text
    and metadata as read_truth, and the same float32 vectors where it returns them."""
    built: Built = pg_tables.get(name)
    truth = read_truth(plain, built.spec)
    assert sorted(built.client_view) == sorted(truth)
    for key, seen in built.client_view.items():
        assert (seen["text"], seen["metadata"]) == (truth[key].text, truth[key].metadata), key
        if seen["vector"] is not None:
            assert np.array(seen["vector"], dtype=np.float32).tobytes() == truth[key].vector.tobytes()


def test_langchain_collections_share_one_dimensionless_table(pg_tables: Tables, plain: Any) -> None:
    pg_tables.get("langchain-docs")
    pg_tables.get("langchain-notes")
    rows = plain.execute(
        "SELECT c.name, c.cmetadata::jsonb, count(e.id), min(vector_dims(e.embedding)), "
        "max(vector_dims(e.embedding)) "
        "FROM langchain_pg_collection c JOIN langchain_pg_embedding e ON e.collection_id = c.uuid "
        "GROUP BY c.name, c.cmetadata::jsonb ORDER BY c.name"
    ).fetchall()
    assert rows == [
        ("docs", {"owner": "interop-tests", "dim": 8}, 120, 8, 8),
        ("notes", {"owner": "interop-tests", "dim": 6}, 60, 6, 6),
    ]
    assert columns_of(plain, "public", "langchain_pg_collection") == {
        "uuid": "uuid",
        "name": "character varying",
        "cmetadata": "json",
    }


def test_llamaindex_keeps_its_bookkeeping_in_the_metadata_column(pg_tables: Tables, plain: Any) -> None:
    for name in ("llamaindex-json", "llamaindex-jsonb"):
        spec = pg_tables.get(name).spec
        (raw,) = plain.execute(
            f"SELECT metadata_ FROM {spec.table} WHERE node_id = %s", (f"li-{name[11:]}-node-003",)
        ).fetchone()
        assert {"_node_content", "_node_type", "document_id", "doc_id", "ref_doc_id"} <= set(raw)
        assert raw["ref_doc_id"] == f"{name}-doc-0"
        (dupes,) = plain.execute(
            f"SELECT count(*) FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
            f"AND a.attnum = ANY(i.indkey) WHERE i.indrelid = '{spec.table}'::regclass AND i.indisunique "
            "AND a.attname = 'node_id'"
        ).fetchone()
        assert dupes == 0  # node_id, the chunk key, has no unique constraint
    (hnsw,) = plain.execute(
        "SELECT count(*) FROM pg_indexes WHERE tablename = 'data_li_jsonb' AND indexdef LIKE '%hnsw%'"
    ).fetchone()
    assert hnsw == 1


def test_vecs_made_its_schema_and_index(pg_tables: Tables, plain: Any) -> None:
    pg_tables.get("vecs")
    defs = [r[0] for r in plain.execute("SELECT indexdef FROM pg_indexes WHERE schemaname = 'vecs'")]
    assert any("USING hnsw (vec vector_cosine_ops)" in d for d in defs), defs


@pytest.mark.parametrize("name", ["supabase-bigserial", "supabase-uuid"])
def test_supabase_match_documents_finds_each_row_first(name: str, pg_tables: Tables, plain: Any) -> None:
    built = pg_tables.get(name)
    plain.execute(f"SET search_path TO {built.spec.schema}, public")
    extra = ", 3" if name == "supabase-bigserial" else ""
    for row in built.rows[:10]:
        literal = "[" + ",".join(repr(float(x)) for x in row.vector) + "]"
        top = plain.execute(
            f"SELECT id::text, similarity FROM match_documents(%s::vector{extra})", (literal,)
        ).fetchone()
        assert top[0] == row.key and top[1] == pytest.approx(1.0, abs=1e-6)


def test_the_hand_made_tables(pg_tables: Tables, plain: Any) -> None:
    pg_tables.get("kb-uuid")
    # Spanish stemming by the trigger: "migración" and "migraciones" share a lexeme
    (matches,) = plain.execute(
        "SELECT count(*) FROM articulos WHERE tsv @@ to_tsquery('spanish', 'migraciones')"
    ).fetchone()
    (titled,) = plain.execute(
        "SELECT count(*) FROM articulos WHERE titulo = 'La migración de datos'"
    ).fetchone()
    assert matches == titled > 0
    assert plain.execute("SELECT count(*) FROM articulos WHERE tsv IS NULL").fetchone() == (0,)
    for content, digest in plain.execute("SELECT content, content_hash FROM code_chunks"):
        assert hashlib.sha256(content.encode()).hexdigest() == digest
    (unique,) = plain.execute(
        "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'code_chunks'::regclass "
        "AND contype = 'u'"
    ).fetchone()
    assert unique == "UNIQUE (file_path, chunk_index)"
    assert plain.execute("SELECT relkind FROM pg_class WHERE relname = 'kb_public'").fetchone() == ("v",)
    (identity,) = plain.execute(
        "SELECT attidentity FROM pg_attribute WHERE attrelid = 'mail_chunks'::regclass AND attname = 'id'"
    ).fetchone()
    assert identity == "a"


def test_vectorport_reaches_the_interop_database(pg_tables: Tables, plain: Any) -> None:
    """``pg_tables.url`` opens the database the owners' tables are in."""
    import vectorport

    store = vectorport.connect(f"{pg_tables.url}&table=vp_probe", dimension=2)
    try:
        store.upsert([vectorport.Record("k", np.array([1.0, 2.0], dtype=np.float32))])
        assert plain.execute("SELECT count(*) FROM vp_probe").fetchone() == (1,)
    finally:
        store.drop()
        store.close()
