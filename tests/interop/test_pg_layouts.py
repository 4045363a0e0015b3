"""Issue 13, done when: the tables the frameworks (and hand-made schemas) created open in
vectorport as they are, migrate to a bucket and to Chroma with ``verify`` equal, checked against
the original table read with plain psycopg; vectorport writes each writable preset so that the
framework's own client reads and searches it; the CLI names each layout and migrates between
them."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import numpy as np
import pytest

import vectorport
from vectorport.backends.pgvector._mapping import KEEP_KEY, KEY_NAMESPACE
from vectorport.migrate import Transformer

from ._corpus import node_order
from .pg_tables import _SUPABASE_UUID, DATABASE, SPECS, Row, Tables, TableSpec, read_truth, run_builder

pytestmark = [pytest.mark.interop, pytest.mark.pgvector]

# Columns no role uses, which vectorport reads into the metadata (nothing of the row left behind);
# a column the table fills itself (kb-uuid's created_at DEFAULT now()) is its bookkeeping, named
# by info (filled_by_table) and left to its default on writes, as vectorport's own updated_at
_EXTRA_METADATA = {
    "code-chunks": ("file_path", "chunk_index", "content_hash"),
}


def _truth(plain: Any, spec: TableSpec) -> dict[str, Row]:
    """The original table's records as vectorport maps them, read with psycopg: columns no role
    uses are metadata, a NULL column is a missing key, LlamaIndex's source document is kept
    (as ``ref_doc_id``) and the rest of its bookkeeping is not."""
    columns = (*spec.plain_metadata, *_EXTRA_METADATA.get(spec.name, ()))
    hidden = tuple(h for h in spec.hidden_metadata if h not in ("ref_doc_id", "_node_content"))
    rows = read_truth(plain, replace(spec, plain_metadata=columns, hidden_metadata=hidden))
    return {
        key: replace(
            row,
            metadata={
                **{
                    k: v
                    for k, v in row.metadata.items()
                    if not (k in columns and v is None) and k != "_node_content"
                },
                **_node_order(row.metadata.get("_node_content")),
            },
        )
        for key, row in rows.items()
    }


def _node_order(node_content: Any) -> dict[str, str]:
    """A LlamaIndex node's metadata key order, as its record carries it (json(b) reorders keys;
    LlamaIndex renders them in the node's order)."""
    if not isinstance(node_content, str):
        return {}
    return node_order(json.loads(node_content).get("metadata") or {})


def _same(got: dict[str, Any], want: dict[str, Row], ulps: int = 0) -> None:
    from vectorport.testing.conformance import assert_vectors_equal

    assert sorted(got) == sorted(want)
    for key, row in want.items():
        rec = got[key]
        assert_vectors_equal(rec.vector, row.vector, ulps)
        assert (rec.text, rec.metadata) == (row.text, row.metadata), key


# ------------------------------------------------------------------ 1. each table, where it is
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
    report = vectorport.migrate.run(source, copy, metadata_policy="flatten")
    assert report.ok, report.to_json()
    assert report.copy is not None and report.copy.records == len(truth)
    again = vectorport.verify(source, copy, metadata_policy="flatten")
    assert again.ok and again.differences == 0 and again.source_count == len(truth), again.to_dict()
    with vectorport.connect(copy) as store:
        flatten = Transformer(store.capabilities.metadata, "flatten")
        want = {k: replace(r, metadata=flatten.apply(r.metadata, r.text).metadata) for k, r in truth.items()}
        _same({r.key: r for r in store.records()}, want, store.capabilities.vector_ulps)
    if target == "s3vectors":  # and as the bucket's own API lists it
        listed = _bucket_vectors(copy)
        assert sorted(listed) == sorted(truth)
        assert all(listed[k].tobytes() == r.vector.tobytes() for k, r in truth.items())


def _bucket_vectors(url: str) -> dict[str, np.ndarray]:
    """Key → vector of the bucket index at ``url``, listed with boto3 (nothing of vectorport's)."""
    import boto3

    parts = urlsplit(url)
    client = boto3.client(
        "s3vectors",
        endpoint_url=parse_qs(parts.query)["endpoint_url"][0],
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )
    out: dict[str, np.ndarray] = {}
    token: dict[str, str] = {}
    while True:
        page = client.list_vectors(
            vectorBucketName=parts.netloc, indexName=parts.path.strip("/"), returnData=True, **token
        )
        out.update({v["key"]: np.array(v["data"]["float32"], dtype=np.float32) for v in page["vectors"]})
        if not page.get("nextToken"):
            return out
        token = {"nextToken": page["nextToken"]}


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
        report = vectorport.migrate.run(source, "memory://lc-docs-alone")
        assert report.ok, report.to_json()
        assert report.verification is not None and report.verification.source_count == docs.n
        with vectorport.connect(source) as store:
            assert store.count() == docs.n
            assert store.get(["poison", "lc-note-000"]) == []
            assert all(r.key.startswith("lc-doc-") for r in store.records())
    finally:
        plain.execute("DELETE FROM langchain_pg_embedding WHERE id = 'poison'")
        vectorport.connect("memory://lc-docs-alone").drop()


# ------------------------------------------------------------------ 2. vectorport writes, the client reads
DIM = 8
_N = 40
_SUPABASE_MATCH = _SUPABASE_UUID[_SUPABASE_UUID.index("create function") :]


def _records() -> list[vectorport.Record]:
    """Chunk keys as vectorport's ingest makes them; metadata of every JSON scalar type and lists."""
    rng = np.random.default_rng(13)
    vecs = rng.standard_normal((_N, DIM)).astype(np.float32)
    return [
        vectorport.Record(
            f"docs/{'abc'[i % 3]}.md#{i}",
            vecs[i],
            {
                "source": f"docs/{'abc'[i % 3]}.md",
                "lang": ("en", "de")[i % 2],
                "page": i,
                "score": i / 4,
                "draft": i % 3 == 0,
                "tags": [f"t{i % 4}", "all"],
            },
            f"Chunk {i}: {'Straße naïve 日本語 🚀'[: i % 12]} text",
        )
        for i in range(_N)
    ]


_QUERIES = [
    [float(x) for x in v] for v in np.random.default_rng(7).standard_normal((5, DIM)).astype(np.float32)
]


@dataclass(frozen=True)
class Target:
    """One writable preset's table, made by its framework's client or by vectorport."""

    layout: str
    made_by: str
    """``client`` (the framework made the table, empty, in the ``interop`` database) or
    ``vectorport`` (it makes it, in a database of its own where nothing exists yet)."""
    options: dict[str, str]
    ours: dict[str, Any] | None
    """vectorport's filter for the searches."""
    theirs: Any
    """The same filter in the framework's syntax."""
    uuid_ids: bool = False
    text_key: str | None = None


_TARGETS_W = [
    Target(
        "langchain",
        "client",
        {"layout": "langchain", "collection": "w_lc"},
        {"lang": "en"},
        {"lang": {"$eq": "en"}},
    ),
    Target(
        "langchain",
        "vectorport",
        {"layout": "langchain", "collection": "docs"},
        {"lang": "en"},
        {"lang": {"$eq": "en"}},
    ),
    # PGVectorStore filters on its metadata columns only: the table it made has lang and page
    Target(
        "langchain-v2",
        "client",
        {"layout": "langchain-v2", "table": "w_lc_v2"},
        {"lang": "en"},
        {"lang": {"$eq": "en"}},
        uuid_ids=True,
    ),
    Target(
        "langchain-v2", "vectorport", {"layout": "langchain-v2", "table": "lc_v2"}, None, None, uuid_ids=True
    ),
    Target("llamaindex", "client", {"layout": "llamaindex", "table": "w_li"}, {"lang": "en"}, {"lang": "en"}),
    Target(
        "llamaindex", "vectorport", {"layout": "llamaindex", "table": "li"}, {"lang": "en"}, {"lang": "en"}
    ),
    Target(
        "vecs",
        "client",
        {"layout": "vecs", "table": "w_vecs", "text_key": "text"},
        {"lang": "en"},
        {"lang": {"$eq": "en"}},
        text_key="text",
    ),
    Target(
        "vecs",
        "vectorport",
        {"layout": "vecs", "table": "docs", "text_key": "text"},
        {"lang": "en"},
        {"lang": {"$eq": "en"}},
        text_key="text",
    ),
    Target(
        "supabase",
        "client",
        {"layout": "supabase", "schema": "w_supa", "table": "documents"},
        {"lang": "en"},
        {"lang": "en"},
        uuid_ids=True,
    ),
    Target(
        "supabase",
        "vectorport",
        {"layout": "supabase", "table": "documents"},
        {"lang": "en"},
        {"lang": "en"},
        uuid_ids=True,
    ),
]
_V2_COLUMNS = [["lang", "TEXT"], ["page", "INTEGER"]]

_CLIENT_MODULE = {
    "langchain": "langchain_postgres",
    "langchain-v2": "langchain_postgres",
    "llamaindex": "llama_index.vector_stores.postgres",
    "vecs": "vecs",
}
_DROP = {
    "langchain": "DELETE FROM langchain_pg_collection WHERE name = 'w_lc'",  # its rows cascade
    "langchain-v2": "DROP TABLE IF EXISTS w_lc_v2",
    "llamaindex": "DROP TABLE IF EXISTS data_w_li",
    "vecs": "DROP TABLE IF EXISTS vecs.w_vecs",
    "supabase": "DROP SCHEMA IF EXISTS w_supa CASCADE",
}
VP_DATABASE = "interop_vp"


@pytest.fixture(scope="session")
def vp_db(interop_uri: str, pg_tables: Tables) -> tuple[str, str]:
    """``(libpq URI, vectorport URL)`` of a database where nothing exists yet, not even the
    vector extension: vectorport makes each framework's tables there itself."""
    import psycopg

    with psycopg.connect(interop_uri, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {VP_DATABASE} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {VP_DATABASE}")
    return (
        interop_uri.replace(f"/{DATABASE}?", f"/{VP_DATABASE}?", 1),
        pg_tables.url.replace(f"database={DATABASE}", f"database={VP_DATABASE}"),
    )


def _client(function: str, uri: str, *args: Any) -> Any:
    return run_builder(function, uri, *args, module="pg_clients")


def _create(t: Target, uri: str) -> None:
    """The empty table, made by the framework's own client (Supabase: its published SQL)."""
    if t.layout == "langchain":
        _client("langchain_create", uri, t.options["collection"], DIM)
    elif t.layout == "langchain-v2":
        _client("langchain_v2_create", uri, t.options["table"], DIM, _V2_COLUMNS)
    elif t.layout == "llamaindex":
        _client("llamaindex_create", uri, t.options["table"], DIM, False)  # LlamaIndex's default: json
    elif t.layout == "vecs":
        _client("vecs_create", uri, t.options["table"], DIM)
    else:
        import psycopg

        with psycopg.connect(uri, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {t.options['schema']}")
            conn.execute(f"SET search_path TO {t.options['schema']}, public")
            conn.execute(_SUPABASE_UUID.format(dim=DIM))


def _read(t: Target, uri: str, ids: list[str]) -> dict[str, Any]:
    """The framework's own view of the table: each id read back, and the searches."""
    o, flt = t.options, t.theirs
    if t.layout == "langchain":
        return _client("langchain_read", uri, o["collection"], ids, _QUERIES, flt)  # type: ignore[no-any-return]
    if t.layout == "langchain-v2":
        columns = [c for c, _ in _V2_COLUMNS] if t.made_by == "client" else []
        return _client("langchain_v2_read", uri, o["table"], columns, ids, _QUERIES, flt)  # type: ignore[no-any-return]
    if t.layout == "llamaindex":
        jsonb = t.made_by == "vectorport"
        return _client("llamaindex_read", uri, o["table"], DIM, jsonb, ids, _QUERIES, flt)  # type: ignore[no-any-return]
    if t.layout == "vecs":
        return _client("vecs_read", uri, o["table"], DIM, ids, _QUERIES, flt)  # type: ignore[no-any-return]
    return _supabase_read(uri, o.get("schema", "public"), ids, flt)


def _supabase_read(uri: str, schema: str, ids: list[str], flt: dict[str, Any]) -> dict[str, Any]:
    """What supabase-js / LangChain's SupabaseVectorStore see: the table, and match_documents."""
    import psycopg

    def view(row: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
        return {"id": row[0], "text": row[1], "metadata": row[2]}

    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute(f"SET search_path TO {schema}, public")
        got = conn.execute(
            "SELECT id::text, content, metadata FROM documents WHERE id = ANY(%s::uuid[])", (ids,)
        ).fetchall()
        search = [
            [
                view(r)
                for r in conn.execute(
                    "SELECT id::text, content, metadata FROM match_documents(%s::vector, %s::jsonb) LIMIT 10",
                    ("[" + ",".join(map(repr, q)) + "]", json.dumps(flt)),
                )
            ]
            for q in _QUERIES
        ]
    return {"get": {r[0]: view(r) for r in got}, "search": search}


def _their_id(t: Target, key: str) -> str:
    return str(uuid.uuid5(KEY_NAMESPACE, key)) if t.uuid_ids else key


def _their_text(t: Target, text: str | None) -> str | None:
    return None if t.text_key else text


def _their_metadata(t: Target, key: str, text: str | None, metadata: dict[str, Any]) -> dict[str, Any]:
    """The metadata the framework hands its user: the record's, plus the chunk key where the row
    id is its uuid5 and the text where the table has no text column."""
    out = dict(metadata)
    if t.uuid_ids:
        out[KEEP_KEY] = key
    if t.text_key:
        out[t.text_key] = text
    return out


@pytest.mark.parametrize("t", _TARGETS_W, ids=lambda t: f"{t.layout}-{t.made_by}")
def test_the_framework_reads_and_searches_what_vectorport_wrote(
    t: Target, pg_tables: Tables, interop_uri: str, vp_db: tuple[str, str]
) -> None:
    if t.layout in _CLIENT_MODULE:
        pytest.importorskip(_CLIENT_MODULE[t.layout])
    if t.made_by == "client":
        uri, base = interop_uri, pg_tables.url
        if t.layout == "langchain":
            pg_tables.get("langchain-docs")  # the shared tables hold other collections already
        _create(t, uri)
    else:
        uri, base = vp_db
    records = _records()
    source = f"memory://w-{t.layout}-{t.made_by}"
    vectorport.connect(source, dimension=DIM, metric="cosine").upsert(records)
    target = base + "".join(f"&{k}={quote(v, safe='')}" for k, v in t.options.items())
    try:
        report = vectorport.migrate.run(source, target)
        assert report.ok, report.to_json()
        if t.layout == "supabase" and t.made_by == "vectorport":
            import psycopg

            with psycopg.connect(uri, autocommit=True) as conn:  # the template's function, beside it
                conn.execute(_SUPABASE_MATCH.format(dim=DIM))
        by_key = {r.key: r for r in records}
        ids = {_their_id(t, r.key): r.key for r in records}
        theirs = _read(t, uri, list(ids))

        assert sorted(theirs["get"]) == sorted(ids)
        for their_id, view in theirs["get"].items():
            r = by_key[ids[their_id]]
            assert (view["text"], view["metadata"]) == (
                _their_text(t, r.text),
                _their_metadata(t, r.key, r.text, r.metadata),
            ), their_id

        with vectorport.connect(target) as store:
            for q, found in zip(_QUERIES, theirs["search"], strict=True):
                ours = list(store.query(q, k=10, filter=t.ours))
                assert len(ours) == 10
                assert all((m.text, m.metadata) == (by_key[m.key].text, by_key[m.key].metadata) for m in ours)
                assert [v["id"] for v in found] == [_their_id(t, m.key) for m in ours]
                assert [v["text"] for v in found] == [_their_text(t, m.text) for m in ours]
                assert [v["metadata"] for v in found] == [
                    _their_metadata(t, m.key, m.text, m.metadata or {}) for m in ours
                ]
    finally:
        vectorport.connect(source).drop()
        if t.made_by == "client":
            import psycopg

            with psycopg.connect(uri, autocommit=True) as conn:
                conn.execute(_DROP[t.layout])


# ------------------------------------------------------------------ 3. the CLI
# a serial id with a metadata column (supabase-bigserial, articulos) is written as the app
# writes it: the sequence numbers rows whose key is no integer, the key kept in the metadata
_WRITABLE = {
    "kb-view": False,
    "code-chunks": False,
    "mail-plain": False,
}


def _cli(*args: str) -> Any:
    from typer.testing import CliRunner

    from vectorport.cli import app

    return CliRunner().invoke(app, list(args))


@pytest.mark.parametrize("name", list(SPECS))
def test_cli_info_names_the_layout_and_the_url_to_use(name: str, pg_tables: Tables, plain: Any) -> None:
    spec = pg_tables.get(name).spec
    url = spec.url(pg_tables.url)
    out = _cli("info", url)
    assert out.exit_code == 0, out.output
    assert "layout" in out.stdout and spec.layout in out.stdout and "url to use" in out.stdout
    out = _cli("info", "--json", url)
    assert out.exit_code == 0, out.output
    layout = json.loads(out.stdout)["layout"]
    assert layout["name"] == spec.layout
    assert layout["writable"] is _WRITABLE.get(name, True), layout["read_only_reason"]
    if spec.layout != "custom":
        assert f"layout={spec.layout}" in layout["url"]
    # the URL it prints opens the same rows
    with vectorport.connect(layout["url"]) as store:
        _same({r.key: r for r in store.records()}, _truth(plain, spec))


@pytest.mark.parametrize("name", [n for n, s in SPECS.items() if s.layout not in ("custom", "langchain")])
def test_cli_info_detects_a_preset_without_layout(name: str, pg_tables: Tables) -> None:
    spec = pg_tables.get(name).spec
    bare = replace(spec, options={k: v for k, v in spec.options.items() if k != "layout"})
    out = _cli("info", "--json", bare.url(pg_tables.url))
    assert out.exit_code == 0, out.output
    layout = json.loads(out.stdout)["layout"]
    assert layout["name"] == spec.layout and f"layout={spec.layout}" in layout["url"]


def test_cli_info_on_langchains_shared_table_gives_a_url_that_works(pg_tables: Tables, plain: Any) -> None:
    docs = pg_tables.get("langchain-docs").spec
    out = _cli("info", f"{pg_tables.url}&table=langchain_pg_embedding")
    assert out.exit_code != 0 and "'docs', 'notes'" in out.output, out.output
    hinted = out.output.split("name one: ", 1)[1].split()[0]
    out = _cli("info", "--json", hinted)
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["count"] == docs.n
    with vectorport.connect(hinted) as store:
        _same({r.key: r for r in store.records()}, _truth(plain, docs))


def test_cli_info_on_a_table_it_cannot_map_names_its_columns_and_the_options(pg_tables: Tables) -> None:
    pg_tables.get("code-chunks")
    out = _cli("info", f"{pg_tables.url}&table=code_chunks&metric=cosine")
    assert out.exit_code != 0
    text = " ".join(out.output.split())
    for word in ("key_expression=", "key_column=", "file_path", "chunk_index", "content_hash"):
        assert word in text, text


_CLI_MIGRATIONS = [
    ("langchain-docs", {"layout": "llamaindex", "table": "from_lc"}),
    ("llamaindex-jsonb", {"layout": "langchain", "collection": "from_li"}),
    ("vecs", {"layout": "langchain-v2", "table": "from_vecs"}),
    ("langchain-v2", {"layout": "vecs", "table": "from_lc_v2", "text_key": "text"}),
    ("supabase-bigserial", {"layout": "supabase", "table": "from_bigserial"}),
    ("code-chunks", {"layout": "langchain", "collection": "code"}),
    ("mail-plain", {"layout": "langchain-v2", "table": "from_mail"}),
]


@pytest.mark.parametrize(
    ("name", "into"), _CLI_MIGRATIONS, ids=[f"{n}-to-{o['layout']}" for n, o in _CLI_MIGRATIONS]
)
def test_cli_migrates_one_framework_table_into_another_frameworks_layout(
    name: str, into: dict[str, str], pg_tables: Tables, plain: Any, vp_db: tuple[str, str], tmp_path: Any
) -> None:
    spec = pg_tables.get(name).spec
    source = spec.url(pg_tables.url)
    target = vp_db[1] + "".join(f"&{k}={quote(v, safe='')}" for k, v in into.items())
    out = _cli("migrate", source, target, "--checkpoint", str(tmp_path / "ckpt"))
    assert out.exit_code == 0, out.output
    assert vectorport.verify(source, target).ok
    with vectorport.connect(target) as store:
        assert store.info()["layout"]["name"] == into["layout"]
        _same({r.key: r for r in store.records()}, _truth(plain, spec))
