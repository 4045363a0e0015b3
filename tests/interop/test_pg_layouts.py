"""Issue 13, done when: the tables the frameworks (and hand-made schemas) created open in
vectorport as they are, migrate to a bucket and to Chroma with ``verify`` equal, checked against
the original table read with plain psycopg; vectorport writes each writable preset so that the
framework's own client reads and searches it; the CLI names each layout and migrates between
them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

import vectorport
from vectorport.migrate import Transformer

from .pg_tables import SPECS, Row, Tables, TableSpec, read_truth

pytestmark = [pytest.mark.interop, pytest.mark.pgvector]

# Columns no role uses, which vectorport reads into the metadata (nothing of the row left behind)
_EXTRA_METADATA = {
    "kb-uuid": ("created_at",),
    "code-chunks": ("file_path", "chunk_index", "content_hash"),
}


def _truth(plain: Any, spec: TableSpec) -> dict[str, Row]:
    """The original table's records as vectorport maps them, read with psycopg: columns no role
    uses are metadata, a NULL column is a missing key, LlamaIndex's source document is kept
    (as ``ref_doc_id``) and the rest of its bookkeeping is not."""
    columns = (*spec.plain_metadata, *_EXTRA_METADATA.get(spec.name, ()))
    hidden = tuple(h for h in spec.hidden_metadata if h != "ref_doc_id")
    rows = read_truth(plain, replace(spec, plain_metadata=columns, hidden_metadata=hidden))
    return {
        key: replace(
            row, metadata={k: v for k, v in row.metadata.items() if not (k in columns and v is None)}
        )
        for key, row in rows.items()
    }


def _same(got: dict[str, Any], want: dict[str, Row], ulps: int = 0) -> None:
    from vectorport.testing.conformance import assert_vectors_equal

    assert sorted(got) == sorted(want)
    for key, row in want.items():
        rec = got[key]
        assert_vectors_equal(rec.vector, row.vector, ulps)
        assert (rec.text, rec.metadata) == (row.text, row.metadata), key


@pytest.mark.parametrize("name", list(SPECS))
def test_each_table_opens_where_it_is(name: str, pg_tables: Tables, plain: Any) -> None:
    spec = pg_tables.get(name).spec
    with vectorport.connect(spec.url(pg_tables.url)) as store:
        got = {r.key: r for r in store.records()}
        assert store.count() == len(got)
    _same(got, _truth(plain, spec))


_TARGETS = [
    pytest.param("s3vectors", marks=pytest.mark.s3vectors),
    pytest.param("chroma", marks=pytest.mark.chroma),
]


@pytest.mark.parametrize("target", _TARGETS)
@pytest.mark.parametrize("name", list(SPECS))
def test_each_table_migrates_and_verifies(
    name: str, target: str, pg_tables: Tables, plain: Any, url_for: Any
) -> None:
    spec = pg_tables.get(name).spec
    source, copy = spec.url(pg_tables.url), url_for(target)
    truth = _truth(plain, spec)
    # the fixtures' metadata nests an object ("author"), which neither target holds: flattened
    report = vectorport.migrate(source, copy, metadata_policy="flatten")
    assert report.ok, report.to_json()
    assert report.copy is not None and report.copy.records == len(truth)
    again = vectorport.verify(source, copy, metadata_policy="flatten")
    assert again.ok and again.differences == 0 and again.source_count == len(truth), again.to_dict()
    with vectorport.connect(copy) as store:
        flatten = Transformer(store.capabilities.metadata, "flatten")
        want = {k: replace(r, metadata=flatten.apply(r.metadata, r.text).metadata) for k, r in truth.items()}
        _same({r.key: r for r in store.records()}, want, store.capabilities.vector_ulps)


def test_other_langchain_collections_are_never_read_or_counted(pg_tables: Tables, plain: Any) -> None:
    """Beside docs' 8-dim rows, the shared table holds notes' 6-dim ones and, for this test, a
    notes row no record can come from (a NULL vector, metadata that is not an object): reading
    docs never meets them."""
    docs = pg_tables.get("langchain-docs").spec
    pg_tables.get("langchain-notes")
    plain.execute(
        "INSERT INTO langchain_pg_embedding (id, collection_id, embedding, document, cmetadata) "
        "SELECT 'poison', uuid, NULL, NULL, '[1, 2]'::jsonb FROM langchain_pg_collection WHERE name = 'notes'"
    )
    try:
        source = docs.url(pg_tables.url)
        report = vectorport.migrate(source, "memory://lc-docs-alone")
        assert report.ok, report.to_json()
        assert report.verification is not None and report.verification.source_count == docs.n
        with vectorport.connect(source) as store:
            assert store.count() == docs.n
            assert store.get(["poison", "lc-note-000"]) == []
            assert all(r.key.startswith("lc-doc-") for r in store.records())
    finally:
        plain.execute("DELETE FROM langchain_pg_embedding WHERE id = 'poison'")
        vectorport.connect("memory://lc-docs-alone").drop()
