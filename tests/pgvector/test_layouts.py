"""Tables made by others, built from their owners' published DDL and read back with plain
psycopg: each opens from a URL with no SQL copy, reads, searches and scans exactly what psycopg
sees, migrates and verifies equal, and — where its owner keys rows by a string or uuid — takes
writes in its owner's shape. The frameworks' own clients are in tests/interop/."""

from __future__ import annotations

import itertools
import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote

import numpy as np
import pytest

import vectorport
from vectorport.conventions.llamaindex import to_node_metadata
from vectorport.filters import parse_filter
from vectorport.testing import ExactIndex, judge

pytestmark = pytest.mark.pgvector

DIM = 4
_ids = itertools.count()


def _vec(v: np.ndarray) -> str:
    return "[" + ",".join(repr(float(x)) for x in v) + "]"


@pytest.fixture
def name(admin: Any) -> Iterator[str]:
    """A fresh name; every table and schema made under it is dropped afterwards."""
    n = f"lay_{next(_ids)}"
    yield n
    for stmt in (
        f"DROP VIEW IF EXISTS {n}_view",
        f"DROP TABLE IF EXISTS {n}, data_{n}, {n}_mail CASCADE",
        f"DROP SCHEMA IF EXISTS {n}_vecs CASCADE",
        f"DROP SCHEMA IF EXISTS {n}_lc CASCADE",
    ):
        admin.execute(stmt)


def vectors(n: int, seed: int = 3) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)


def exact_top(store: vectorport.BaseStore, metric: vectorport.Metric) -> ExactIndex:
    return ExactIndex.from_records(metric, list(store.records()))


def assert_searches_exact(store: vectorport.BaseStore, vecs: np.ndarray, flt: Any = None) -> None:
    index = exact_top(store, store.spec.metric)
    for q in vecs[:4] + 0.01:
        j = judge(index, q, store.query(q, k=7, filter=flt), parse_filter(flt))
        assert j.recall == 1.0 and not j.violations


def migrated_equal(url: str) -> None:
    """migrate to a memory store and verify equal, then the copy holds every record."""
    target = f"memory://copy-{next(_ids)}"
    report = vectorport.migrate.run(url, target)
    assert report.ok, report
    again = vectorport.verify(url, target)
    assert again.ok, again


# ---------------------------------------------------------------- LangChain PGVector
def _langchain(admin: Any, schema: str) -> dict[str, list[tuple[str, np.ndarray, str, dict[str, Any]]]]:
    # langchain_postgres.vectorstores: CollectionStore / EmbeddingStore (embedding_length=None)
    admin.execute(f"CREATE SCHEMA {schema}")
    admin.execute(
        f"CREATE TABLE {schema}.langchain_pg_collection (uuid uuid PRIMARY KEY, "
        "name varchar NOT NULL UNIQUE, cmetadata json)"
    )
    admin.execute(
        f"CREATE TABLE {schema}.langchain_pg_embedding (id varchar PRIMARY KEY, collection_id uuid "
        f"REFERENCES {schema}.langchain_pg_collection (uuid) ON DELETE CASCADE, embedding vector, "
        "document varchar, cmetadata jsonb)"
    )
    admin.execute(
        f"CREATE INDEX ix_cmetadata_gin ON {schema}.langchain_pg_embedding "
        "USING gin (cmetadata jsonb_path_ops)"
    )
    out = {}
    for c, (coll, n) in enumerate((("docs", 30), ("other", 12))):
        cid = uuid.uuid4()
        admin.execute(f"INSERT INTO {schema}.langchain_pg_collection VALUES (%s, %s, NULL)", (cid, coll))
        rows = [
            (str(uuid.uuid4()), v, f"{coll} chunk {i}", {"i": i, "tags": ["a", coll], "src": {"p": i % 3}})
            for i, v in enumerate(vectors(n, seed=c))
        ]
        with admin.cursor() as cur:
            cur.executemany(
                f"INSERT INTO {schema}.langchain_pg_embedding VALUES (%s, %s, %s::vector, %s, %s::jsonb)",
                [(k, cid, _vec(v), t, json.dumps(m)) for k, v, t, m in rows],
            )
        out[coll] = rows
    return out


def test_langchain_pgvector_one_collection_of_the_shared_table(
    pg_url: Callable[..., str], admin: Any, name: str
) -> None:
    schema = f"{name}_lc"
    data = _langchain(admin, schema)
    url = pg_url("docs", layout="langchain", schema=schema)
    with vectorport.connect(url) as store:
        info = store.info()["pgvector"]
        assert info["layout"] == "langchain" and info["writable"]
        assert store.spec.dimension == DIM and store.spec.metric.value == "cosine"  # LangChain's default
        assert store.count() == 30  # never the other collection's rows
        got = {r.key: r for r in store.records()}
        assert set(got) == {k for k, *_ in data["docs"]}
        for k, v, t, m in data["docs"]:
            assert got[k].text == t and got[k].metadata == m
            np.testing.assert_array_equal(got[k].vector, v)
        assert_searches_exact(store, vectors(30, seed=0))
        assert_searches_exact(store, vectors(30, seed=0), {"src.p": 1})
        # written as LangChain writes: the collection's id, document, cmetadata
        store.upsert([vectorport.Record("docs/new.md#0", [1, 2, 3, 4], {"lang": "en"}, "new text")])
        row = admin.execute(
            f"SELECT c.name, e.document, e.cmetadata FROM {schema}.langchain_pg_embedding e "
            f"JOIN {schema}.langchain_pg_collection c ON c.uuid = e.collection_id "
            "WHERE e.id = 'docs/new.md#0'"
        ).fetchone()
        assert row == ("docs", "new text", {"lang": "en"})
        # a key of another collection is not taken over, and nothing of the batch is written
        other_key = data["other"][0][0]
        with pytest.raises(vectorport.ConfigurationError, match="another collection"):
            store.upsert(
                [vectorport.Record("fresh", [1, 0, 0, 0]), vectorport.Record(other_key, [1, 0, 0, 0])]
            )
        assert store.get(["fresh"]) == [] and store.count() == 31
        store.delete([other_key])  # not this collection's: left alone
        assert admin.execute(
            f"SELECT count(*) FROM {schema}.langchain_pg_embedding WHERE id = %s", (other_key,)
        ).fetchone() == (1,)
        assert store.delete(["docs/new.md#0"]) == 1
        with pytest.raises(vectorport.UnsupportedFeatureError, match="does not drop"):
            store.drop()
    total = admin.execute(f"SELECT count(*) FROM {schema}.langchain_pg_embedding").fetchone()[0]
    assert total == 42
    migrated_equal(url)
    with pytest.raises(vectorport.ConfigurationError, match="collection="):
        vectorport.connect(pg_url("langchain_pg_embedding", schema=schema))


def test_langchain_collection_created_by_a_write(pg_url: Callable[..., str], admin: Any, name: str) -> None:
    schema = f"{name}_lc"
    _langchain(admin, schema)
    url = pg_url("fresh", layout="langchain", schema=schema)
    with pytest.raises(vectorport.NotFoundError):
        vectorport.connect(url)
    with vectorport.connect(url, dimension=DIM) as store:
        store.upsert([vectorport.Record("a", [1, 0, 0, 0], {"x": 1}, "t")])
        assert store.count() == 1
    assert admin.execute(
        f"SELECT count(*) FROM {schema}.langchain_pg_collection WHERE name = 'fresh'"
    ).fetchone() == (1,)


def test_langchain_hints_work_when_followed(pg_url: Callable[..., str], admin: Any, name: str) -> None:
    """The shared table opened without a collection names one with a URL that opens it; the URL
    ``info`` prints for it opens it again (an embedded server's ``pgvector:///path`` keeps its
    three slashes); a collection that does not exist is named as one, with the collections."""
    import re

    schema = f"{name}_lc"
    _langchain(admin, schema)
    with pytest.raises(vectorport.ConfigurationError, match="name one") as shared:
        vectorport.connect(pg_url("langchain_pg_embedding", schema=schema))
    hinted = re.search(r"name one: (\S+)", str(shared.value))
    assert hinted is not None, shared.value
    with vectorport.connect(hinted.group(1)) as store:
        assert store.count() == 30  # docs, the first of its collections
        again = store.info()["layout"]["url"]
    assert again.startswith("pgvector:///")
    with vectorport.connect(again) as store:
        assert store.count() == 30
    with pytest.raises(vectorport.NotFoundError, match=r"LangChain collection 'dox' does not exist.*'docs'"):
        vectorport.connect(pg_url("dox", schema=schema, layout="langchain"))


# ---------------------------------------------------------------- LangChain PGVectorStore (v2)
def test_langchain_v2_uuid_ids_json_metadata_and_metadata_columns(
    pg_url: Callable[..., str], admin: Any, name: str
) -> None:
    admin.execute(
        f"CREATE TABLE {name} (langchain_id uuid PRIMARY KEY, content text NOT NULL, "
        f"embedding vector({DIM}) NOT NULL, source text, page integer, langchain_metadata json)"
    )
    vecs = vectors(25)
    ids = [uuid.uuid4() for _ in vecs]
    with admin.cursor() as cur:
        cur.executemany(
            f"INSERT INTO {name} VALUES (%s, %s, %s::vector, %s, %s, %s::json)",
            [
                (
                    ids[i],
                    f"chunk {i}",
                    _vec(v),
                    f"doc{i % 4}.md",
                    i if i % 5 else None,
                    json.dumps({"lang": "en"}),
                )
                for i, v in enumerate(vecs)
            ],
        )
    url = pg_url(name)  # detected
    with vectorport.connect(url) as store:
        info = store.info()["pgvector"]
        assert info["layout"] == "langchain-v2" and "layout=langchain-v2" in info["url"]
        assert info["mapping"]["metadata"]["columns"] == ["source", "page"]
        got = {r.key: r for r in store.records()}
        assert set(got) == {str(i) for i in ids}
        assert got[str(ids[3])].metadata == {"lang": "en", "source": "doc3.md", "page": 3}
        assert got[str(ids[5])].metadata == {"lang": "en", "source": "doc1.md"}  # NULL page: no key
        assert_searches_exact(store, vecs, {"page": {"$gte": 10}})
        assert [r.key for r in store.get([str(ids[7])])] == [str(ids[7])]
        # a chunk key that is not a uuid: the row id is its uuid5, the key kept for the way back
        store.upsert(
            [vectorport.Record("docs/a.md#0", [1, 2, 3, 4], {"source": "a.md", "page": 2, "lang": "fr"}, "A")]
        )
        (back,) = store.get(["docs/a.md#0"])
        assert back.metadata == {"source": "a.md", "page": 2, "lang": "fr"} and back.text == "A"
        row = admin.execute(
            f"SELECT langchain_id, source, page, langchain_metadata FROM {name} WHERE content = 'A'"
        ).fetchone()
        assert row[0] == uuid.uuid5(vectorport.backends.pgvector._mapping.KEY_NAMESPACE, "docs/a.md#0")
        assert row[1:3] == ("a.md", 2) and row[3]["lang"] == "fr"
        assert "docs/a.md#0" in {r.key for r in store.records()}
        assert store.delete(["docs/a.md#0"]) == 1
    migrated_equal(url)


# ---------------------------------------------------------------- LlamaIndex PGVectorStore
@pytest.mark.parametrize("meta_type", ["json", "jsonb"])
def test_llamaindex_node_id_key_without_unique_index(
    pg_url: Callable[..., str], admin: Any, name: str, meta_type: str
) -> None:
    admin.execute(
        f"CREATE TABLE data_{name} (id bigserial PRIMARY KEY, text varchar NOT NULL, "
        f"metadata_ {meta_type}, node_id varchar, embedding vector({DIM}))"
    )
    vecs = vectors(20)
    with admin.cursor() as cur:
        cur.executemany(
            f"INSERT INTO data_{name} (text, metadata_, node_id, embedding) VALUES (%s, %s, %s, %s::vector)",
            [
                (
                    f"node {i}",
                    json.dumps(to_node_metadata(f"n{i:02d}", f"node {i}", {"i": i}, text_in_node=False)),
                    f"n{i:02d}",
                    _vec(v),
                )
                for i, v in enumerate(vecs)
            ],
        )
    url = pg_url(name, layout="llamaindex")
    with vectorport.connect(url) as store:
        assert store.info()["pgvector"]["table"] == f"data_{name}"
        got = {r.key: r for r in store.records()}
        assert sorted(got) == [f"n{i:02d}" for i in range(20)]
        assert got["n04"].metadata == {"i": 4} and got["n04"].text == "node 4"  # bookkeeping out
        assert_searches_exact(store, vecs, {"i": {"$lt": 10}})
        store.upsert([vectorport.Record("n04", [1, 1, 1, 1], {"i": 40}, "replaced")])  # replaces the row
        rows = admin.execute(f"SELECT text, metadata_ FROM data_{name} WHERE node_id = 'n04'").fetchall()
        assert len(rows) == 1 and rows[0][0] == "replaced"
        assert rows[0][1]["_node_type"] == "TextNode" and rows[0][1]["i"] == 40
        assert store.count() == 20
    migrated_equal(url)
    admin.execute(
        f"INSERT INTO data_{name} (text, metadata_, node_id, embedding) "
        f"SELECT text, metadata_, node_id, embedding FROM data_{name} WHERE node_id = 'n07'"
    )
    with (
        vectorport.connect(url) as store,
        pytest.raises(vectorport.ConfigurationError, match="'n07' \\(2 rows\\)"),
    ):
        list(store.records())


# ---------------------------------------------------------------- Supabase vecs
def test_vecs_collection_without_text(pg_url: Callable[..., str], admin: Any, name: str) -> None:
    schema = f"{name}_vecs"
    admin.execute(f"CREATE SCHEMA {schema}")
    admin.execute(
        f'CREATE TABLE {schema}."docs" (id character varying NOT NULL PRIMARY KEY, '
        f"vec vector({DIM}) NOT NULL, "
        "metadata jsonb NOT NULL DEFAULT '{}'::jsonb)"
    )
    vecs = vectors(15)
    with admin.cursor() as cur:
        cur.executemany(
            f"INSERT INTO {schema}.docs VALUES (%s, %s::vector, %s::jsonb)",
            [(f"v{i}", _vec(v), json.dumps({"year": 2000 + i})) for i, v in enumerate(vecs)],
        )
    url = pg_url("docs", layout="vecs", schema=schema)
    with vectorport.connect(url) as store:
        assert store.count() == 15 and store.get(["v3"])[0].metadata == {"year": 2003}
        assert_searches_exact(store, vecs, {"year": {"$in": [2001, 2004, 2010]}})
        with pytest.raises(vectorport.ValidationError, match="text_key=NAME"):
            store.upsert(
                [vectorport.Record("w", [1, 0, 0, 0], {}, "some text"), vectorport.Record("x", [0, 1, 0, 0])]
            )
        assert store.get(["x"]) == []  # nothing of the batch was written
    with vectorport.connect(url + "&text_key=text") as store:
        store.upsert([vectorport.Record("w", [1, 0, 0, 0], {"year": 1}, "some text")])
        (w,) = store.get(["w"])
        assert w.text == "some text" and w.metadata == {"year": 1}
    migrated_equal(url)


# ---------------------------------------------------------------- Supabase documents
def test_supabase_documents_bigserial_is_read_and_written_as_the_app_does(
    pg_url: Callable[..., str], admin: Any, name: str
) -> None:
    # supabase.com/docs/guides/ai/langchain: documents + match_documents
    admin.execute(
        f"CREATE TABLE {name} (id bigserial PRIMARY KEY, content text, metadata jsonb, "
        f"embedding vector({DIM}))"
    )
    vecs = vectors(12)
    with admin.cursor() as cur:
        cur.executemany(
            f"INSERT INTO {name} (content, metadata, embedding) VALUES (%s, %s::jsonb, %s::vector)",
            [(f"doc {i}", json.dumps({"n": i}), _vec(v)) for i, v in enumerate(vecs)],
        )
    url = pg_url(name)
    with vectorport.connect(url) as store:
        info = store.info()["pgvector"]
        assert info["layout"] == "supabase" and info["writable"]
        assert sorted(r.key for r in store.records()) == sorted(str(i) for i in range(1, 13))
        assert store.get(["3"])[0].text == "doc 2" and store.get(["x", "03"]) == []
        assert_searches_exact(store, vecs)
        migrated_equal(url)
        # the app's rows are keyed by their ids; a key that is no integer gets its id from the
        # sequence and is kept in the metadata
        store.upsert([vectorport.Record("docs/x.md", [1, 0, 0, 0], {"n": 99}, "x")])
        store.delete(["1"])
        assert store.get(["docs/x.md"])[0].metadata == {"n": 99}
    rows = admin.execute(f"SELECT id, metadata FROM {name} WHERE id = 1 OR id > 12").fetchall()
    assert rows == [(13, {"n": 99, "vectorport_key": "docs/x.md"})]


# ---------------------------------------------------------------- Haystack
def test_haystack_pgvector_document_store_table(pg_url: Callable[..., str], admin: Any, name: str) -> None:
    # pgvector-haystack's CREATE_TABLE_STATEMENT, as PgvectorDocumentStore runs it
    admin.execute(
        f"CREATE TABLE {name} (id VARCHAR(128) PRIMARY KEY, embedding VECTOR({DIM}), content TEXT, "
        "blob_data BYTEA, blob_meta JSONB, blob_mime_type VARCHAR(255), meta JSONB)"
    )
    vecs = vectors(10)
    with admin.cursor() as cur:
        cur.executemany(
            f"INSERT INTO {name} (id, embedding, content, meta) VALUES (%s, %s::vector, %s, %s::jsonb)",
            [(f"h{i}", _vec(v), f"chunk {i}", json.dumps({"page": i})) for i, v in enumerate(vecs)],
        )
    url = pg_url(name)
    with vectorport.connect(url) as store:
        assert store.info()["pgvector"]["layout"] == "haystack"  # detected from its columns
        (h3,) = store.get(["h3"])
        assert h3.text == "chunk 3" and h3.metadata == {"page": 3}  # the blob columns are not metadata
        assert_searches_exact(store, vecs, {"page": {"$gte": 4}})
        store.upsert([vectorport.Record("h99", [1, 0, 0, 0], {"page": 99}, "new")])
    row = admin.execute(f"SELECT content, meta, blob_data FROM {name} WHERE id = 'h99'").fetchone()
    assert row == ("new", {"page": 99}, None)
    migrated_equal(url)


def test_haystack_keyword_index_and_blobs(pg_url: Callable[..., str], admin: Any, name: str) -> None:
    """pgvector-haystack's keyword index (``CREATE INDEX … USING GIN (to_tsvector(language,
    content))``, KEYWORD_INDEX) serves text and hybrid search on its table (they were not
    offered: no tsvector column), and its ByteStream blobs, which no record field holds, are
    named by ``info``, the plan and the migration's output (they were left out without a word)."""
    from typer.testing import CliRunner

    from vectorport.cli import app

    admin.execute(
        f"CREATE TABLE {name} (id VARCHAR(128) PRIMARY KEY, embedding VECTOR({DIM}), content TEXT, "
        "blob_data BYTEA, blob_meta JSONB, blob_mime_type VARCHAR(255), meta JSONB)"
    )
    admin.execute(f"CREATE INDEX {name}_keyword_index ON {name} USING GIN (to_tsvector('english', content))")
    vecs = vectors(10)
    words = ["apples", "pears", "plums", "figs", "dates"]
    with admin.cursor() as cur:
        cur.executemany(
            f"INSERT INTO {name} (id, embedding, content, blob_data, blob_mime_type, meta) "
            "VALUES (%s, %s::vector, %s, %s, 'image/png', %s::jsonb)",
            [
                (f"h{i}", _vec(v), f"a basket of {words[i % 5]}", bytes([i, 1, 2]), json.dumps({"page": i}))
                for i, v in enumerate(vecs)
            ],
        )
    url = pg_url(name)
    with vectorport.connect(url) as store:
        info = store.info()
        assert info["layout"]["roles"]["metadata"]["left_out"] == [
            "blob_data (bytea)",
            "blob_meta (jsonb)",
            "blob_mime_type (character varying(255))",
        ]
        assert info["pgvector"]["text_search"]["language"] == "english"
        assert sorted(m.key for m in store.text_query("plum", k=5)) == ["h2", "h7"]
        hybrid = store.hybrid_query(vecs[7], "plum", k=2)
        assert sorted(m.key for m in hybrid) == ["h2", "h7"]
        assert {m.key: m.extra["vector_rank"] for m in hybrid}["h7"] == 1
    left_out = "blob_data (bytea), blob_meta (jsonb), blob_mime_type (character varying(255))"
    out = CliRunner().invoke(app, ["migrate", url, "memory://haystack-copy", "--plan"])
    assert out.exit_code == 0, out.output
    assert left_out in out.output and "not copied" in out.output
    # the migration itself says it too (the mime type was left out without a word)
    out = CliRunner().invoke(app, ["migrate", url, "memory://haystack-copy", "--no-progress"])
    assert out.exit_code == 0, out.output
    assert left_out in out.output and "not copied" in out.output
    with vectorport.connect("memory://haystack-copy") as copy:
        assert copy.get(["h7"])[0].metadata == {"page": 7}


def test_supabase_documents_with_uuid_ids_takes_writes(
    pg_url: Callable[..., str], admin: Any, name: str
) -> None:
    admin.execute(
        f"CREATE TABLE {name} (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), content text, "
        f"metadata jsonb, embedding vector({DIM}))"
    )
    admin.execute(f"CREATE INDEX ON {name} USING hnsw (embedding vector_ip_ops)")
    with vectorport.connect(pg_url(name)) as store:
        assert store.spec.metric.value == "dot"  # the index tells it
        key = str(uuid.uuid4())
        store.upsert(
            [vectorport.Record(key, [1, 0, 0, 0], {}, "a uuid key"), vectorport.Record("k#1", [0, 1, 0, 0])]
        )
        assert sorted(r.key for r in store.records()) == sorted([key, "k#1"])
    assert admin.execute(f"SELECT count(*) FROM {name} WHERE id = %s", (key,)).fetchone() == (1,)


# ---------------------------------------------------------------- hand-made
def test_composite_natural_key_from_an_expression(pg_url: Callable[..., str], admin: Any, name: str) -> None:
    admin.execute(
        f"CREATE TABLE {name} (file_path text NOT NULL, chunk_index int NOT NULL, content text, "
        f"content_hash text, embedding vector({DIM}) NOT NULL, UNIQUE (file_path, chunk_index))"
    )
    vecs = vectors(18)
    with admin.cursor() as cur:
        cur.executemany(
            f"INSERT INTO {name} VALUES (%s, %s, %s, md5(%s), %s::vector)",
            [(f"docs/f{i // 6}.md", i % 6, f"c{i}", f"c{i}", _vec(v)) for i, v in enumerate(vecs)],
        )
    expression = quote("file_path || '#chunk' || chunk_index", safe="")
    url = pg_url(name, key_expression=expression, metric="euclidean")
    with vectorport.connect(url) as store:
        assert "docs/f1.md#chunk2" in {r.key for r in store.records()}
        (r,) = store.get(["docs/f1.md#chunk2"])
        assert r.text == "c8" and set(r.metadata) == {"file_path", "chunk_index", "content_hash"}
        assert r.metadata["chunk_index"] == 2
        assert_searches_exact(store, vecs)
        assert not store.info()["pgvector"]["writable"]
    migrated_equal(url)
    with (
        vectorport.connect(pg_url(name, key_expression="file_path", metric="cosine")) as store,
        pytest.raises(vectorport.ConfigurationError, match=r"not unique: 'docs/f0\.md' \(6 rows\)"),
    ):
        list(store.records())


def test_metadata_in_plain_columns_typed_and_filterable(
    pg_url: Callable[..., str], admin: Any, name: str
) -> None:
    t = f"{name}_mail"
    admin.execute(
        f"CREATE TABLE {t} (message_id text PRIMARY KEY, mailbox_id int, ts timestamptz, score numeric, "
        f"flagged boolean, body text, embedding vector({DIM}))"
    )
    vecs = vectors(16)
    with admin.cursor() as cur:
        cur.executemany(
            f"INSERT INTO {t} VALUES (%s, %s, %s::timestamptz, %s, %s, %s, %s::vector)",
            [
                (
                    f"<m{i}@x>",
                    i % 3,
                    f"2024-05-{i + 1:02d} 10:00:00+00",
                    0.5 * i,
                    i % 2 == 0,
                    f"mail {i}",
                    _vec(v),
                )
                for i, v in enumerate(vecs)
            ],
        )
    url = pg_url(t, metric="cosine")
    with vectorport.connect(url) as store:
        (m,) = store.get(["<m4@x>"])
        assert m.text == "mail 4"
        assert m.metadata == {
            "mailbox_id": 1,
            "ts": "2024-05-05T10:00:00+00:00",
            "score": 2.0,
            "flagged": True,
        }
        assert_searches_exact(store, vecs, {"mailbox_id": 2})
        assert_searches_exact(store, vecs, {"$and": [{"flagged": True}, {"score": {"$gt": 2}}]})
        # writes go to the columns
        store.upsert(
            [
                vectorport.Record(
                    "<new@x>", [1, 0, 0, 0], {"mailbox_id": 9, "ts": "2024-06-01T00:00:00+00:00"}, "n"
                )
            ]
        )
        assert admin.execute(
            f"SELECT mailbox_id, ts IS NOT NULL FROM {t} WHERE message_id = '<new@x>'"
        ).fetchone() == (9, True)
        with pytest.raises(vectorport.ValidationError, match="no metadata column"):
            store.upsert([vectorport.Record("<bad@x>", [1, 0, 0, 0], {"unknown": 1})])
    scoped = pg_url(t, metric="cosine", where="mailbox_id%20%3D%201")
    with vectorport.connect(scoped) as store:
        assert store.count() == sum(1 for i in range(16) if i % 3 == 1)
        assert all(r.metadata["mailbox_id"] == 1 for r in store.records())
        with pytest.raises(vectorport.UnsupportedFeatureError, match="where="):
            store.upsert([vectorport.Record("z", [1, 0, 0, 0])])
    migrated_equal(scoped)


def test_timestamp_columns_read_as_python_isoformat_in_utc(pg_uri: str, admin: Any, name: str) -> None:
    """A timestamp reads as the application that wrote it serialises it (``isoformat()``; a
    ``timestamptz`` in UTC), whatever the session's TimeZone: PostgreSQL's own JSON prints the
    session's offset and trims the fraction (``.1234``), so the same row read through another
    connection would not be the same record."""
    from datetime import UTC, datetime

    from tests.pgvector.conftest import uri_for

    t = f"{name}_mail"
    admin.execute(
        f"CREATE TABLE {t} (id text PRIMARY KEY, ts timestamptz, local timestamp, embedding vector(2))"
    )
    stamps = [
        datetime(2024, 5, 5, 10, 0, tzinfo=UTC),
        datetime(2024, 5, 5, 10, 0, 0, 123400, tzinfo=UTC),
        datetime(1999, 12, 31, 23, 59, 59, 1, tzinfo=UTC),
    ]
    with admin.cursor() as cur:
        cur.executemany(
            f"INSERT INTO {t} VALUES (%s, %s, %s, '[1,2]')",
            [(str(i), ts, ts.replace(tzinfo=None)) for i, ts in enumerate(stamps)],
        )
    want = {
        str(i): {"ts": ts.isoformat(), "local": ts.replace(tzinfo=None).isoformat()}
        for i, ts in enumerate(stamps)
    }
    berlin = uri_for(pg_uri, table=t, metric="cosine", options="-c timezone=Europe/Berlin")
    with vectorport.connect(berlin) as store:
        assert {r.key: r.metadata for r in store.records()} == want
        assert [m.key for m in store.query([1, 2], k=5, filter={"ts": stamps[1].isoformat()})] == ["1"]


def test_a_view_is_a_read_only_source(pg_url: Callable[..., str], admin: Any, name: str) -> None:
    admin.execute(
        f"CREATE TABLE {name} (id uuid PRIMARY KEY, chunk_text text, metadata jsonb, embedding vector({DIM}))"
    )
    vecs = vectors(10)
    with admin.cursor() as cur:
        cur.executemany(
            f"INSERT INTO {name} VALUES (%s, %s, %s::jsonb, %s::vector)",
            [(uuid.uuid4(), f"t{i}", json.dumps({"i": i}), _vec(v)) for i, v in enumerate(vecs)],
        )
    admin.execute(
        f"CREATE VIEW {name}_view AS SELECT id, chunk_text, metadata, embedding FROM {name} "
        "WHERE (metadata->>'i')::int < 6"
    )
    url = pg_url(f"{name}_view", key_column="id", metric="cosine")
    with vectorport.connect(url) as store:
        assert store.count() == 6 and {r.text for r in store.records()} == {f"t{i}" for i in range(6)}
        assert "view" in store.info()["pgvector"]["read_only_reason"]
        assert_searches_exact(store, vecs)
    migrated_equal(url)


def test_bad_tables_are_named_before_any_read(pg_url: Callable[..., str], admin: Any, name: str) -> None:
    admin.execute(f"CREATE TABLE {name} (id text PRIMARY KEY, a text, meta json, embedding vector({DIM}))")
    admin.execute(
        f"INSERT INTO {name} VALUES ('x', NULL, '[1, 2]', '[1,0,0,0]'), ('y', 'b', '{{}}', '[0,1,0,0]')"
    )
    with (
        vectorport.connect(pg_url(name, metric="cosine")) as store,
        pytest.raises(vectorport.ConfigurationError, match=r"JSON list, not an object.*'meta'"),
    ):
        store.get(["x"])
    admin.execute(f"UPDATE {name} SET meta = '{{}}'")
    with (
        vectorport.connect(pg_url(name, metric="cosine", key_expression="a")) as store,
        pytest.raises(vectorport.ConfigurationError, match="NULL in 1 rows"),
    ):
        list(store.records())
    with pytest.raises(vectorport.ConfigurationError, match="metadata_columns names 'nope'"):
        vectorport.connect(pg_url(name, metric="cosine", metadata_columns="nope"))
    with pytest.raises(vectorport.ConfigurationError, match="layout must be one of"):
        vectorport.connect(pg_url(name, layout="milvus"))


def test_cli_info_names_the_layout_and_migrate_copies_it(
    pg_url: Callable[..., str], admin: Any, name: str, tmp_path: Any
) -> None:
    from typer.testing import CliRunner

    from vectorport.cli import app

    schema = f"{name}_lc"
    data = _langchain(admin, schema)
    source = pg_url("docs", schema=schema, layout="langchain")
    out = CliRunner().invoke(app, ["info", source])
    assert out.exit_code == 0, out.output
    assert "langchain" in out.stdout and "writable" in out.stdout and "url to use" in out.stdout
    out = CliRunner().invoke(app, ["info", "--json", pg_url("documents_missing_" + name)])
    assert out.exit_code != 0
    target = pg_url(f"{name}_copy")
    try:
        out = CliRunner().invoke(app, ["migrate", source, target, "--checkpoint", str(tmp_path / "ckpt")])
        assert out.exit_code == 0, out.output
        copied = dict(admin.execute(f"SELECT key, text FROM {name}_copy").fetchall())
        assert copied == {k: t for k, _, t, _ in data["docs"]}
    finally:
        admin.execute(f"DROP TABLE IF EXISTS {name}_copy")


@pytest.mark.parametrize("layout", ["langchain", "langchain-v2", "llamaindex", "vecs", "supabase"])
def test_a_framework_table_is_created_as_its_framework_creates_it(
    pg_url: Callable[..., str], admin: Any, name: str, layout: str
) -> None:
    schema = f"{name}_lc"  # missing: created with the table
    url = pg_url(name, layout=layout, schema=schema)
    records = [
        vectorport.Record("docs/a.md#0", [1, 0, 0, 0], {"n": 1, "tags": ["x"]}, "alpha"),
        vectorport.Record("docs/a.md#1", [0, 1, 0, 0], {"n": 2}, None),  # no text
        vectorport.Record(str(uuid.uuid4()), [0, 0, 1, 0], {}, "gamma"),
    ]
    if layout == "vecs":
        url += "&text_key=text"
    with vectorport.connect(url, dimension=DIM, metric="cosine") as store:
        store.upsert(records)
        assert store.info()["pgvector"]["layout"] == layout
    with vectorport.connect(url) as store:  # opened again, detected from what was created
        got = {r.key: r for r in store.records()}
        assert set(got) == {r.key for r in records}
        for r in records:
            assert got[r.key].text == r.text and got[r.key].metadata == r.metadata
            np.testing.assert_array_equal(got[r.key].vector, r.vector)
        assert store.query([1, 0, 0, 0], k=1).keys == ["docs/a.md#0"]


def test_trigger_maintained_tsvector_in_another_language(
    pg_url: Callable[..., str], admin: Any, name: str
) -> None:
    admin.execute(
        f"CREATE TABLE {name} (id bigserial PRIMARY KEY, contenido text, metadata jsonb, "
        f"embedding vector({DIM}), busqueda tsvector)"
    )
    admin.execute(
        f"CREATE FUNCTION {name}_fts() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "NEW.busqueda := to_tsvector('spanish', coalesce(NEW.contenido, '')); RETURN NEW; END $$"
    )
    admin.execute(
        f"CREATE TRIGGER {name}_fts BEFORE INSERT OR UPDATE ON {name} "
        f"FOR EACH ROW EXECUTE FUNCTION {name}_fts()"
    )
    rows = ["Los gatos duermen en la casa", "El perro corre por el parque", "Las casas blancas del pueblo"]
    with admin.cursor() as cur:
        cur.executemany(
            f"INSERT INTO {name} (contenido, metadata, embedding) VALUES (%s, '{{}}', %s::vector)",
            [(t, _vec(v)) for t, v in zip(rows, vectors(3), strict=True)],
        )
    with vectorport.connect(pg_url(name, text_column="contenido", metric="cosine")) as store:
        assert store.info()["pgvector"]["language"] == "spanish"  # read from the trigger
        assert "busqueda" not in store.get(["1"])[0].metadata
        # 'casa' matches 'casa' and 'casas' only under the Spanish stemmer
        assert sorted(store.text_query("casa", k=5).keys) == ["1", "3"]  # type: ignore[attr-defined]


def test_tsvector_update_trigger_language_is_the_tables(
    pg_url: Callable[..., str], admin: Any, name: str
) -> None:
    """PostgreSQL's own trigger, ``tsvector_update_trigger(col, 'pg_catalog.spanish', …)``: the
    table is searched in Spanish, as its own SQL searches it, and ``info`` says so."""
    admin.execute(
        f"CREATE TABLE {name} (id text PRIMARY KEY, contenido text, embedding vector({DIM}), "
        "busqueda tsvector)"
    )
    admin.execute(
        f"CREATE TRIGGER {name}_fts BEFORE INSERT OR UPDATE ON {name} FOR EACH ROW "
        "EXECUTE FUNCTION tsvector_update_trigger(busqueda, 'pg_catalog.spanish', contenido)"
    )
    rows = ["Los gatos duermen en la casa", "El perro corre por el parque", "Las casas blancas del pueblo"]
    with admin.cursor() as cur:
        cur.executemany(
            f"INSERT INTO {name} VALUES (%s, %s, %s::vector)",
            [(f"r{i}", t, _vec(v)) for i, (t, v) in enumerate(zip(rows, vectors(3), strict=True))],
        )
    own = admin.execute(
        f"SELECT id FROM {name} WHERE busqueda @@ plainto_tsquery('spanish', 'casa') ORDER BY id"
    ).fetchall()
    with vectorport.connect(pg_url(name, text_column="contenido", metric="cosine")) as store:
        assert store.info()["pgvector"]["language"] == "spanish"
        assert sorted(store.text_query("casa", k=5).keys) == [r[0] for r in own] == ["r0", "r2"]  # type: ignore[attr-defined]


def test_halfvec_reads_as_float32_and_a_scope_must_match(
    pg_url: Callable[..., str], admin: Any, name: str
) -> None:
    admin.execute(f"CREATE TABLE {name} (id text PRIMARY KEY, body text, embedding halfvec({DIM}))")
    admin.execute(f"CREATE INDEX ON {name} USING hnsw (embedding halfvec_l2_ops)")
    vecs = vectors(10)
    with admin.cursor() as cur:
        cur.executemany(
            f"INSERT INTO {name} VALUES (%s, %s, %s::halfvec)",
            [(f"h{i}", f"b{i}", _vec(v)) for i, v in enumerate(vecs)],
        )
    with vectorport.connect(pg_url(name)) as store:
        assert store.spec.metric.value == "euclidean"
        (h,) = store.get(["h3"])
        assert h.vector.dtype == np.float32
        np.testing.assert_allclose(h.vector, vecs[3], rtol=1e-3, atol=1e-3)  # half precision
        assert store.query(vecs[3], k=1).keys == ["h3"]
        assert "halfvec" in store.info()["pgvector"]["read_only_reason"]
    with pytest.raises(vectorport.ConfigurationError, match="matches no row"):
        vectorport.connect(pg_url(name, where="id%20%3D%20%27nope%27"))


def test_table_and_collection_name_one_collection(pg_url: Callable[..., str], admin: Any, name: str) -> None:
    schema = f"{name}_lc"
    data = _langchain(admin, schema)
    url = pg_url("langchain_pg_embedding", schema=schema, layout="langchain", collection="docs")
    with vectorport.connect(url) as store:  # LangChain's table, one collection of it
        assert store.count() == len(data["docs"])
    with pytest.raises(vectorport.ConfigurationError, match="name two different tables"):
        vectorport.connect(pg_url("a_table", collection="b_table"))


def test_uuid_keys_in_32_hex_digits_keep_their_uuid(
    pg_url: Callable[..., str], admin: Any, name: str
) -> None:
    """Bucket keys LangChain's AmazonS3Vectors made (``uuid4().hex``) go into a uuid-keyed table
    (LangChain's PGVectorStore) as the same uuid, not a uuid5 of their text; read back as written."""
    import uuid

    keys = [uuid.uuid4().hex for _ in range(5)] + [str(uuid.uuid4()).upper()]
    url = pg_url(name, layout="langchain-v2")
    with vectorport.connect(url, dimension=DIM) as store:
        store.upsert(
            [
                vectorport.Record(k, v, {"i": i}, f"text {i}")
                for i, (k, v) in enumerate(zip(keys, vectors(6), strict=True))
            ]
        )
        assert sorted(r.key for r in store.get(keys)) == sorted(keys)
    ids = {str(r[0]) for r in admin.execute(f"SELECT langchain_id FROM {name}")}
    assert ids == {str(uuid.UUID(k)) for k in keys}


def test_a_copy_that_fails_before_writing_leaves_no_target(pg_url: Callable[..., str], admin: Any) -> None:
    """A framework table (or LangChain collection) the migration created is dropped again when the
    copy fails before writing anything; psql sees neither the table nor the collection row."""
    from vectorport.migrate import run as migrate

    src = vectorport.connect("memory://failed-copy-src", dimension=DIM)
    src.upsert([vectorport.Record(f"fc{i}", v, {"i": i}, f"text {i}") for i, v in enumerate(vectors(5))])
    try:
        # vecs has no text column: the single-pass plan refuses the first page, after the
        # table was made
        with pytest.raises(vectorport.UnsupportedError, match="no text column"):
            migrate("memory://failed-copy-src", pg_url("failed_vecs", layout="vecs"))
        assert admin.execute("SELECT to_regclass('vecs.failed_vecs')").fetchone() == (None,)
        # the keys belong to another LangChain collection: nothing written, no collection left
        migrate("memory://failed-copy-src", pg_url("failed_lc_a", layout="langchain"))
        with pytest.raises(vectorport.VectorportError, match="another collection"):
            migrate("memory://failed-copy-src", pg_url("failed_lc_b", layout="langchain"))
        names = {r[0] for r in admin.execute("SELECT name FROM langchain_pg_collection")}
        assert "failed_lc_a" in names and "failed_lc_b" not in names
    finally:
        src.drop()


def test_plan_refuses_keys_another_langchain_collection_holds(pg_url: Callable[..., str], admin: Any) -> None:
    """LangChain's shared table is keyed by row id across collections: ``--plan`` refuses a copy
    whose keys another collection holds, as the migration itself would, and writes nothing."""
    from typer.testing import CliRunner

    from vectorport.cli import app
    from vectorport.migrate import plan
    from vectorport.migrate import run as migrate

    src = vectorport.connect("memory://taken-keys-src", dimension=DIM)
    src.upsert([vectorport.Record(f"tk{i}", v, {"i": i}, f"text {i}") for i, v in enumerate(vectors(4))])
    try:
        migrate("memory://taken-keys-src", pg_url("taken_a", layout="langchain"))
        found = plan("memory://taken-keys-src", pg_url("taken_b", layout="langchain"))
        assert found.refused and found.key_problems is not None and found.key_problems.records == 4
        assert "another collection" in found.key_problems.message
        out = CliRunner().invoke(
            app, ["migrate", "memory://taken-keys-src", pg_url("taken_b", layout="langchain"), "--plan"]
        )
        assert out.exit_code == 4, out.output
        names = {r[0] for r in admin.execute("SELECT name FROM langchain_pg_collection")}
        assert "taken_a" in names and "taken_b" not in names
    finally:
        src.drop()


def test_hand_made_table_with_a_natural_key_and_body_text(
    pg_url: Callable[..., str], admin: Any, name: str
) -> None:
    """A bigserial id with UNIQUE(file_path, chunk_index): the text column ``body_text`` is found,
    unused columns become metadata, and the unique key is the key (preferred over the serial id,
    carried in the metadata; another key_template= may be given), with which the table is
    writable and keyed as its owner keys it (read back with psycopg)."""
    admin.execute(
        f"CREATE TABLE {name} (id bigserial PRIMARY KEY, file_path text NOT NULL, chunk_index int NOT NULL, "
        f"body_text text, lang text, embedding vector({DIM}), UNIQUE (file_path, chunk_index))"
    )
    vecs = vectors(2)
    admin.execute(
        f"INSERT INTO {name} (file_path, chunk_index, body_text, lang, embedding) VALUES "
        "('a.md', 0, 'hello', 'en', %s::vector), ('a.md', 1, 'world', 'fr', %s::vector)",
        (_vec(vecs[0]), _vec(vecs[1])),
    )
    with vectorport.connect(pg_url(name, metric="cosine")) as store:
        info = store.info()
        assert info["layout"]["name"] == "custom" and info["pgvector"]["columns"]["text"] == "body_text"
        assert info["layout"]["writable"] and info["layout"]["roles"]["key"]["columns"] == [
            "file_path",
            "chunk_index",
        ]
        (first,) = [r for page in store.scan() for r in page if r.text == "hello"]
        assert first.key == "a.md#chunk0" and first.metadata == {"lang": "en", "id": 1}
    with vectorport.connect(
        pg_url(name, metric="cosine", key_template="{file_path}%23{chunk_index}")
    ) as store:
        assert store.info()["layout"]["writable"]
        store.upsert([vectorport.Record("b.md#0", vecs[0], {"lang": "de"}, "hallo")])
        assert store.get(["a.md#1"])[0].text == "world"
    row = admin.execute(
        f"SELECT body_text, lang FROM {name} WHERE file_path = 'b.md' AND chunk_index = 0"
    ).fetchone()
    assert row == ("hallo", "de")


def test_columns_no_role_can_hold_are_named(pg_url: Callable[..., str], admin: Any, name: str) -> None:
    """A ``bytea`` blob is no metadata (JSON) and no text: it is left out of the records, and
    ``info`` and the migration plan say so; its mime type column is metadata as any other."""
    from vectorport.migrate import plan

    admin.execute(
        f"CREATE TABLE {name} (id text PRIMARY KEY, content text, blob bytea, mime text, "
        f"embedding vector({DIM}))"
    )
    admin.execute(
        f"INSERT INTO {name} VALUES ('a', 'hello', '\\x0001', 'image/png', %s::vector)",
        (_vec(vectors(1)[0]),),
    )
    url = pg_url(name, metric="cosine")
    with vectorport.connect(url) as store:
        assert store.info()["layout"]["roles"]["metadata"]["left_out"] == ["blob (bytea)"]
        (rec,) = store.get(["a"])
        assert rec.metadata == {"mime": "image/png"} and rec.text == "hello"
    found = plan(url, "memory://left-out-target")
    assert any("blob (bytea)" in note and "not copied" in note for note in found.notes), found.notes
