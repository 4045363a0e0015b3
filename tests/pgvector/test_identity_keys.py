"""Tables keyed only by an id the database assigns (``id bigserial``, no natural key): the record
key lives in a declared column (``key_column=``) or a metadata field (``key_field=``), and such a
table is written, replaced by key, read and migrated into like any other."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

import vectorport
from vectorport import Record

pytestmark = pytest.mark.pgvector
_names = itertools.count()

RECORDS = [
    Record("docs/a.md#chunk0", [1, 0, 0], {"lang": "en"}, "a0"),
    Record("docs/a.md#chunk1", [0, 1, 0], {"lang": "fr"}, "a1"),
    Record("docs/b.md#chunk0", [0, 0, 1], {}, None),
]


def _table(admin: Any, extra: str = "") -> str:
    name = f"identity_{next(_names)}"
    admin.execute(
        f"CREATE TABLE {name} (id bigserial PRIMARY KEY, {extra} content text, metadata jsonb, "
        "embedding vector(3))"
    )
    return name


def _roundtrip(store: Any) -> None:
    assert store.upsert(RECORDS) == 3
    assert store.upsert([Record("docs/a.md#chunk1", [0, 1, 1], {"lang": "de"}, "a1b")]) == 1
    assert store.count() == 3
    got = store.get(["docs/a.md#chunk1", "docs/b.md#chunk0"], include=["metadata", "text", "vector"])
    assert [(r.key, r.metadata, r.text) for r in got] == [
        ("docs/a.md#chunk1", {"lang": "de"}, "a1b"),
        ("docs/b.md#chunk0", {}, None),
    ]
    assert store.query([0, 1, 1], k=1).keys == ["docs/a.md#chunk1"]
    assert sorted(r.key for page in store.scan() for r in page) == sorted(r.key for r in RECORDS)
    assert store.delete(["docs/a.md#chunk0"]) == 1 and store.count() == 2


def test_key_in_a_metadata_field(pg_uri: str, admin: Any) -> None:
    table = _table(admin)
    with vectorport.connect(f"{pg_uri}&table={table}&key_field=chunk_key&metric=cosine") as store:
        info = store.info()["layout"]
        assert info["writable"] and info["roles"]["key"]["kind"] == "field"
        _roundtrip(store)
        with pytest.raises(vectorport.ValidationError, match="holds the key"):
            store.upsert([Record("x", [1, 1, 1], {"chunk_key": "y"})])
    rows = admin.execute(f"SELECT id, metadata, content FROM {table} ORDER BY id").fetchall()
    # the database numbered the rows (a replaced key got a new id); the key is in the metadata
    assert [(m, c) for _, m, c in rows] == [
        ({"chunk_key": "docs/b.md#chunk0"}, None),
        ({"lang": "de", "chunk_key": "docs/a.md#chunk1"}, "a1b"),
    ]
    assert all(isinstance(i, int) for i, _, _ in rows)


def test_key_in_a_declared_column(pg_uri: str, admin: Any) -> None:
    table = _table(admin, "source_key text NOT NULL,")
    with vectorport.connect(f"{pg_uri}&table={table}&key_column=source_key&metric=cosine") as store:
        assert store.info()["layout"]["writable"]
        _roundtrip(store)
    keys = admin.execute(f"SELECT source_key FROM {table} ORDER BY source_key").fetchall()
    assert keys == [("docs/a.md#chunk1",), ("docs/b.md#chunk0",)]


def test_a_restore_into_a_new_table_of_that_shape(
    pg_uri: str, admin: Any, url_for: Callable[..., str], tmp_path: Any
) -> None:
    source = url_for("memory")
    with vectorport.connect(source, dimension=3) as src:
        src.upsert([Record(f"k{i}", [1, i, 0], {"i": i}, f"t{i}") for i in range(1, 30)])
    table = _table(admin)
    target = f"{pg_uri}&table={table}&key_field=chunk_key&metric=cosine"
    report = vectorport.migrate.run(source, target, batch_size=7, checkpoint=tmp_path / "ck.json")
    assert report.status == "verified", report.to_dict()
    assert vectorport.verify(target, source).ok


def test_key_field_needs_a_json_metadata_column(pg_uri: str, admin: Any) -> None:
    name = f"identity_{next(_names)}"
    admin.execute(f"CREATE TABLE {name} (id bigserial PRIMARY KEY, content text, embedding vector(3))")
    with pytest.raises(
        vectorport.ConfigurationError, match="key_field=k needs a json or jsonb metadata column"
    ):
        vectorport.connect(f"{pg_uri}&table={name}&key_field=k&metric=cosine")
