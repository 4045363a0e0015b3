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
