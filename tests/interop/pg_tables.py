"""PostgreSQL tables built the way their owners build them, for the interop tests of issue 13.

Each :class:`TableSpec` names one table (or view) that vectorport must open as it is: who builds it
(a framework's own client, run in a fresh interpreter as the framework's user would run it, or the
published SQL), where each role lives (key, vector, text, metadata) and which rows it was given.
:func:`read_truth` reads it back with plain psycopg, as the owner sees it: key → vector (float32,
exactly as the server holds it), text, metadata. :class:`Tables` builds each table once per test
session, on first use.

The DDL each owner produced, read back from the server (``pg_dump --schema-only``) with the
versions in the ``interop`` extra (langchain-postgres 0.0.19, llama-index-vector-stores-postgres
0.9.0, vecs 0.4.5, pgvector 0.8 server). Owners' defaults are kept; DIM is 8 (6 for LangChain's
"notes").

langchain (``PGVector``, two collections ``docs`` and ``notes`` in the shared tables; ``docs`` was
created first, with no ``embedding_length``, so the column has no dimension and ``notes`` holds
6-dim vectors beside ``docs``' 8-dim ones)::

    CREATE TABLE public.langchain_pg_collection (
        uuid uuid NOT NULL, name character varying NOT NULL, cmetadata json);
    ALTER TABLE ONLY public.langchain_pg_collection ADD CONSTRAINT langchain_pg_collection_pkey
        PRIMARY KEY (uuid);
    ALTER TABLE ONLY public.langchain_pg_collection ADD CONSTRAINT langchain_pg_collection_name_key
        UNIQUE (name);
    CREATE TABLE public.langchain_pg_embedding (
        id character varying NOT NULL, collection_id uuid, embedding public.vector,
        document character varying, cmetadata jsonb);
    ALTER TABLE ONLY public.langchain_pg_embedding ADD CONSTRAINT langchain_pg_embedding_pkey
        PRIMARY KEY (id);
    CREATE INDEX ix_cmetadata_gin ON public.langchain_pg_embedding
        USING gin (cmetadata jsonb_path_ops);
    ALTER TABLE ONLY public.langchain_pg_embedding
        ADD CONSTRAINT langchain_pg_embedding_collection_id_fkey FOREIGN KEY (collection_id)
        REFERENCES public.langchain_pg_collection(uuid) ON DELETE CASCADE;

langchain-v2 (``PGEngine.init_vectorstore_table`` with metadata columns ``source`` and ``page``)::

    CREATE TABLE public.lc_v2_docs (
        langchain_id uuid NOT NULL, content text NOT NULL, embedding public.vector(8) NOT NULL,
        source text, page integer, langchain_metadata json);
    ALTER TABLE ONLY public.lc_v2_docs ADD CONSTRAINT lc_v2_docs_pkey PRIMARY KEY (langchain_id);

llamaindex (``PGVectorStore.from_params``; ``table_name="li_json"`` with ``use_jsonb=False``, and
``"li_jsonb"`` with ``use_jsonb=True`` and ``hnsw_kwargs``)::

    CREATE TABLE public.data_li_json (
        id bigint NOT NULL, text character varying NOT NULL, metadata_ json,
        node_id character varying, embedding public.vector(8));
    CREATE SEQUENCE public.data_li_json_id_seq ... OWNED BY public.data_li_json.id;
    ALTER TABLE ONLY public.data_li_json ALTER COLUMN id
        SET DEFAULT nextval('public.data_li_json_id_seq'::regclass);
    ALTER TABLE ONLY public.data_li_json ADD CONSTRAINT data_li_json_pkey PRIMARY KEY (id);
    CREATE INDEX li_json_idx_1 ON public.data_li_json
        USING btree (((metadata_ ->> 'ref_doc_id'::text)));
    -- data_li_jsonb: the same with metadata_ jsonb (index li_jsonb_idx_1), plus
    CREATE INDEX data_li_jsonb_embedding_idx ON public.data_li_jsonb
        USING hnsw (embedding public.vector_cosine_ops) WITH (m='16', ef_construction='64');

vecs (``create_client(url).get_or_create_collection("vecs_docs", dimension=8)``, ``upsert``,
``create_index()``)::

    CREATE TABLE vecs.vecs_docs (
        id character varying NOT NULL, vec public.vector(8) NOT NULL,
        metadata jsonb DEFAULT '{}'::jsonb NOT NULL);
    ALTER TABLE ONLY vecs.vecs_docs ADD CONSTRAINT vecs_docs_pkey PRIMARY KEY (id);
    CREATE INDEX ix_vector_cosine_ops_hnsw_m16_efc64_f1905d9 ON vecs.vecs_docs
        USING hnsw (vec public.vector_cosine_ops) WITH (m='16', ef_construction='64');

supabase (the published ``documents`` template and its ``match_documents``: ``bigserial`` in
``public``; the uuid variant, whose function takes no ``match_count``, in schema ``supa_uuid``)::

    CREATE TABLE public.documents (
        id bigint NOT NULL, content text, metadata jsonb, embedding public.vector(8));
    -- id: bigserial (DEFAULT nextval('public.documents_id_seq')), PRIMARY KEY (id)
    CREATE FUNCTION public.match_documents(query_embedding public.vector, match_count integer
        DEFAULT NULL::integer, filter jsonb DEFAULT '{}'::jsonb)
        RETURNS TABLE(id bigint, content text, metadata jsonb, similarity double precision) …
    CREATE TABLE supa_uuid.documents (
        id uuid NOT NULL, content text, metadata jsonb, embedding public.vector(8));
    -- PRIMARY KEY (id); match_documents(query_embedding vector, filter jsonb DEFAULT '{}')

custom (hand-made, as real projects publish them)::

    CREATE TABLE public.kb_chunks (                                  -- uuid key, chunk_text
        id uuid DEFAULT gen_random_uuid() NOT NULL, chunk_text text NOT NULL,
        metadata jsonb DEFAULT '{}'::jsonb NOT NULL, embedding public.vector(8) NOT NULL,
        created_at timestamp with time zone DEFAULT now() NOT NULL);  -- PRIMARY KEY (id)
    CREATE VIEW public.kb_public AS SELECT id, chunk_text, metadata, embedding
        FROM public.kb_chunks WHERE (metadata ->> 'visibility') = 'public';
    CREATE TABLE public.articulos (                                  -- bigserial + Spanish tsvector
        id bigserial PRIMARY KEY, titulo text NOT NULL, contenido text NOT NULL, metadatos jsonb,
        embedding public.vector(8), tsv tsvector);
    CREATE TRIGGER articulos_tsv BEFORE INSERT OR UPDATE ON public.articulos FOR EACH ROW
        EXECUTE FUNCTION tsvector_update_trigger('tsv', 'pg_catalog.spanish', 'titulo', 'contenido');
    CREATE INDEX articulos_tsv_idx ON public.articulos USING gin (tsv);
    CREATE TABLE public.code_chunks (                                -- composite natural key
        file_path text NOT NULL, chunk_index integer NOT NULL, content text NOT NULL,
        content_hash text NOT NULL, metadata jsonb, embedding public.vector(8),
        UNIQUE (file_path, chunk_index));                           -- and no primary key
    CREATE TABLE public.mail_chunks (                                -- metadata in plain columns
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, message_id text NOT NULL,
        mailbox_id integer NOT NULL, ts timestamp with time zone NOT NULL, part smallint NOT NULL,
        body text NOT NULL, embedding public.vector(8) NOT NULL);

Plain-column metadata reads as the owner's application would serialise it: timestamps as ISO 8601
in UTC (``datetime.isoformat()``), numerics as numbers.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import uuid
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np

__all__ = [
    "DATABASE",
    "DIM",
    "SPECS",
    "Built",
    "Row",
    "TableSpec",
    "Tables",
    "columns_of",
    "read_truth",
    "rows_for",
    "run_builder",
]

ROOT = Path(__file__).resolve().parents[2]
DATABASE = "interop"
"""The database of the session server the tables are built in (conftest.py)."""
DIM = 8
NOTES_DIM = 6
_UUIDS = uuid.UUID("6f1d7c2e-3b8a-4e59-9c1d-2a7b5e8f0c13")
"""Namespace of the deterministic uuid5 keys the fixtures hand their owners."""


@dataclass(frozen=True)
class Row:
    """One record as its owner sees it."""

    key: str
    vector: np.ndarray
    text: str | None
    metadata: dict[str, Any]


@dataclass(frozen=True)
class TableSpec:
    """One table (or view) in an owner's layout and where each role lives in it."""

    name: str
    """Fixture id."""
    layout: str
    """Issue 13's preset (``langchain``, ``langchain-v2``, ``llamaindex``, ``vecs``, ``supabase``)
    or ``custom``."""
    builder: str
    """Function of this module that builds it (several specs may share one)."""
    client: str | None
    """Module the builder imports (the framework's client); None for plain SQL."""
    schema: str
    table: str
    key_sql: str
    """SQL expression of the chunk key over the relation's columns (cast to text)."""
    embedding: str
    text: str | None
    json_metadata: str | None
    plain_metadata: tuple[str, ...] = ()
    hidden_metadata: tuple[str, ...] = ()
    """Keys of the json column the owner keeps for itself, not part of a record's metadata."""
    scope: str | None = None
    """SQL condition selecting this collection's rows in a shared table."""
    columns: Mapping[str, str] = field(default_factory=dict)
    """Every column of the relation with its type as ``format_type`` prints it."""
    options: Mapping[str, str] = field(default_factory=dict)
    """The URL options issue 13 has a user pass to open it (as typed: :meth:`url` quotes them)."""
    writable: bool = False
    """Whether issue 13 makes it a target: the presets whose framework keys rows by a string or
    uuid (LangChain both, LlamaIndex, vecs)."""
    n: int = 120
    dim: int = DIM

    def url(self, base: str) -> str:
        """``base`` (a vectorport URL that has a query already) with :attr:`options`, URL-quoted
        (a key expression holds ``#`` and spaces)."""
        return base + "".join(f"&{k}={quote(v, safe='')}" for k, v in self.options.items())


# ---------------------------------------------------------------------------------- the data

_SOURCES = ("intro", "guide", "api", "faq", "changelog")
_WORDS = ("vector", "índice", "Straße", "日本語", "chunk", "naïve", "emoji 🚀", 'quote "q"', "tab\tsep")


def _vectors(name: str, n: int, dim: int) -> np.ndarray:
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    vecs = rng.standard_normal((n, dim)).astype(np.float32)
    vecs[1, 0] = np.float32(1e-45)  # a subnormal and a signed zero survive every path
    vecs[2, 1] = np.float32(-0.0)
    return vecs


def _metadata(i: int) -> dict[str, Any]:
    if i % 25 == 7:
        return {}
    return {
        "source": f"docs/{_SOURCES[i % 5]}.md",
        "page": i % 17,
        "score": (i % 8) / 4,
        "draft": i % 3 == 0,
        "lang": ("en", "es", "de")[i % 3],
        "tags": [f"t{i % 5}", f"t{(i + 2) % 5}"],
        "author": {"name": f"user{i % 6}", "teams": [i % 2, i % 3], "active": i % 4 != 0},
    }


def _text(i: int, prefix: str) -> str:
    return f"{prefix} chunk {i}: {_WORDS[i % len(_WORDS)]} and {_WORDS[(i * 7) % len(_WORDS)]}."


def _uuid(name: str, i: int) -> str:
    return str(uuid.uuid5(_UUIDS, f"{name}/{i}"))


def rows_for(spec: TableSpec) -> list[Row]:
    """The records the spec's builder hands its owner, keys as the owner assigns them."""
    if spec.name == "kb-view":  # a view over kb-uuid
        return [r for r in rows_for(SPECS["kb-uuid"]) if r.metadata.get("visibility") == "public"]
    vecs = _vectors(spec.name, spec.n, spec.dim)
    out: list[Row] = []
    for i in range(spec.n):
        meta = _metadata(i)
        text: str | None = _text(i, spec.name)
        key = {
            "langchain-docs": f"lc-doc-{i:03d}",
            "langchain-notes": f"lc-note-{i:03d}",
            "llamaindex-json": f"li-json-node-{i:03d}",
            "llamaindex-jsonb": f"li-jsonb-node-{i:03d}",
            "vecs": f"vecs/{i:03d}",
            "supabase-bigserial": str(i + 1),
            "articulos": str(i + 1),
            "mail-plain": str(i + 1),
        }.get(spec.name) or _uuid(spec.name, i)
        if spec.name == "vecs":
            text = None
        if spec.name == "langchain-v2" and i % 10 == 3:
            meta = {k: v for k, v in meta.items() if k != "page"} | {"note": "no page"}
        if spec.name == "langchain-v2":  # its reads give every metadata column, NULL as None
            meta = {"source": None, "page": None} | meta
        if spec.name in ("kb-uuid", "kb-view"):
            meta = {**meta, "visibility": "public" if i % 3 else "internal"}
        if spec.name == "articulos":
            text = _text(i, "artículo")
            meta = {**meta, "titulo": _TITULOS[i % len(_TITULOS)]}
        if spec.name == "code-chunks":
            key = f"src/{_SOURCES[i % 5]}.py#chunk{i // 5}"
        if spec.name == "mail-plain":
            meta = _mail_metadata(i)
        out.append(Row(key, vecs[i], text, meta))
    return out


_TITULOS = ("La migración de datos", "Índices vectoriales", "Búsqueda semántica", "Copias de seguridad")


def _mail_metadata(i: int) -> dict[str, Any]:
    ts = datetime(2024, 3, 1, 8, 30, tzinfo=UTC) + timedelta(hours=7 * i, microseconds=i % 3)
    return {
        "message_id": f"<m{i // 3}@example.org>",
        "mailbox_id": 10 + i % 4,
        "ts": ts.isoformat(),
        "part": i % 3,
    }


# ---------------------------------------------------------------------------------- the specs

_LC_SCOPE = "collection_id = (SELECT uuid FROM public.langchain_pg_collection WHERE name = '{}')"
_LC_COLUMNS = {
    "id": "character varying",
    "collection_id": "uuid",
    "embedding": "vector",
    "document": "character varying",
    "cmetadata": "jsonb",
}
_LI_HIDDEN = ("_node_content", "_node_type", "document_id", "doc_id", "ref_doc_id")


def _li_columns(json_type: str) -> dict[str, str]:
    return {
        "id": "bigint",
        "text": "character varying",
        "metadata_": json_type,
        "node_id": "character varying",
        "embedding": "vector(8)",
    }


_SUPA_COLUMNS = {"content": "text", "metadata": "jsonb", "embedding": "vector(8)"}


# fmt: off
def _spec(name: str, layout: str, builder: str, client: str | None, **kw: Any) -> TableSpec:
    return TableSpec(name=name, layout=layout, builder=builder, client=client, **kw)


_LC = "langchain_postgres"
_LI = "llama_index.vector_stores.postgres"
_LC_ROLES = dict(schema="public", table="langchain_pg_embedding", key_sql="id", embedding="embedding",
                 text="document", json_metadata="cmetadata", columns=_LC_COLUMNS, writable=True)
_LI_ROLES = dict(schema="public", key_sql="node_id", embedding="embedding", text="text",
                 json_metadata="metadata_", hidden_metadata=_LI_HIDDEN, writable=True)
_SUPA_ROLES = dict(table="documents", key_sql="id", embedding="embedding", text="content",
                   json_metadata="metadata")
_KB_ROLES = dict(schema="public", key_sql="id", embedding="embedding", text="chunk_text",
                 json_metadata="metadata")

SPECS: dict[str, TableSpec] = {
    s.name: s
    for s in (
        _spec("langchain-docs", "langchain", "build_langchain", _LC, **_LC_ROLES,
              scope=_LC_SCOPE.format("docs"), options={"layout": "langchain", "collection": "docs"}),
        _spec("langchain-notes", "langchain", "build_langchain", _LC, **_LC_ROLES,
              scope=_LC_SCOPE.format("notes"), options={"layout": "langchain", "collection": "notes"},
              n=60, dim=NOTES_DIM),
        _spec("langchain-v2", "langchain-v2", "build_langchain_v2", _LC, schema="public",
              table="lc_v2_docs", key_sql="langchain_id", embedding="embedding", text="content",
              json_metadata="langchain_metadata", plain_metadata=("source", "page"),
              columns={"langchain_id": "uuid", "content": "text", "embedding": "vector(8)",
                       "source": "text", "page": "integer", "langchain_metadata": "json"},
              options={"layout": "langchain-v2", "table": "lc_v2_docs"}, writable=True),
        _spec("llamaindex-json", "llamaindex", "build_llamaindex", _LI, **_LI_ROLES,
              table="data_li_json", columns=_li_columns("json"),
              options={"layout": "llamaindex", "table": "data_li_json"}),
        _spec("llamaindex-jsonb", "llamaindex", "build_llamaindex", _LI, **_LI_ROLES,
              table="data_li_jsonb", columns=_li_columns("jsonb"),
              options={"layout": "llamaindex", "table": "data_li_jsonb"}, n=150),
        _spec("vecs", "vecs", "build_vecs", "vecs", schema="vecs", table="vecs_docs", key_sql="id",
              embedding="vec", text=None, json_metadata="metadata",
              columns={"id": "character varying", "vec": "vector(8)", "metadata": "jsonb"},
              options={"layout": "vecs", "schema": "vecs", "table": "vecs_docs"}, writable=True,
              n=200),
        _spec("supabase-bigserial", "supabase", "build_supabase", None, **_SUPA_ROLES,
              schema="public", columns={"id": "bigint", **_SUPA_COLUMNS},
              options={"layout": "supabase", "table": "documents"}, n=100),
        _spec("supabase-uuid", "supabase", "build_supabase", None, **_SUPA_ROLES,
              schema="supa_uuid", columns={"id": "uuid", **_SUPA_COLUMNS},
              options={"layout": "supabase", "schema": "supa_uuid", "table": "documents"}, n=80),
        _spec("kb-uuid", "custom", "build_custom", None, **_KB_ROLES, table="kb_chunks",
              columns={"id": "uuid", "chunk_text": "text", "metadata": "jsonb",
                       "embedding": "vector(8)", "created_at": "timestamp with time zone"},
              options={"table": "kb_chunks", "key_column": "id", "text_column": "chunk_text",
                       "metric": "cosine"}),
        _spec("kb-view", "custom", "build_custom", None, **_KB_ROLES, table="kb_public",
              columns={"id": "uuid", "chunk_text": "text", "metadata": "jsonb",
                       "embedding": "vector(8)"},
              options={"table": "kb_public", "key_column": "id", "text_column": "chunk_text",
                       "metric": "cosine"}),
        _spec("articulos", "custom", "build_custom", None, schema="public", table="articulos",
              key_sql="id", embedding="embedding", text="contenido", json_metadata="metadatos",
              plain_metadata=("titulo",),
              columns={"id": "bigint", "titulo": "text", "contenido": "text", "metadatos": "jsonb",
                       "embedding": "vector(8)", "tsv": "tsvector"},
              options={"table": "articulos", "key_column": "id", "text_column": "contenido",
                       "metadata_column": "metadatos", "metadata_columns": "titulo",
                       "metric": "cosine"},
              n=90),
        _spec("code-chunks", "custom", "build_custom", None, schema="public", table="code_chunks",
              key_sql="file_path || '#chunk' || chunk_index", embedding="embedding", text="content",
              json_metadata="metadata",
              columns={"file_path": "text", "chunk_index": "integer", "content": "text",
                       "content_hash": "text", "metadata": "jsonb", "embedding": "vector(8)"},
              options={"table": "code_chunks", "key_expression": "file_path || '#chunk' || chunk_index",
                       "metric": "cosine"},
              n=100),
        _spec("mail-plain", "custom", "build_custom", None, schema="public", table="mail_chunks",
              key_sql="id", embedding="embedding", text="body", json_metadata=None,
              plain_metadata=("message_id", "mailbox_id", "ts", "part"),
              columns={"id": "bigint", "message_id": "text", "mailbox_id": "integer",
                       "ts": "timestamp with time zone", "part": "smallint", "body": "text",
                       "embedding": "vector(8)"},
              options={"table": "mail_chunks", "key_column": "id", "text_column": "body",
                       "metadata_columns": "message_id,mailbox_id,ts,part", "metric": "cosine"},
              n=60),
    )
}
# fmt: on


# ------------------------------------------------------------------------- reading it back


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _plain(value: Any) -> Any:
    """A plain column's value as JSON metadata."""
    if isinstance(value, datetime):
        return (value.astimezone(UTC) if value.tzinfo else value).isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value


def _floats(text: str) -> np.ndarray:
    # the server prints the shortest decimal that reads back as the same float32
    return np.array([np.float32(x) for x in text[1:-1].split(",")], dtype=np.float32)


def read_truth(conn: Any, spec: TableSpec) -> dict[str, Row]:
    """Key → record of the spec's relation, read with a plain psycopg connection (no vector
    adapters needed: vectors travel as text). Raises when a key repeats or is NULL."""
    cols = [
        f"({spec.key_sql})::text",
        f"{_ident(spec.embedding)}::text",
        _ident(spec.text) if spec.text else "NULL",
        _ident(spec.json_metadata) if spec.json_metadata else "NULL",
        *(_ident(c) for c in spec.plain_metadata),
    ]
    query = f"SELECT {', '.join(cols)} FROM {_ident(spec.schema)}.{_ident(spec.table)}"
    if spec.scope:
        query += f" WHERE {spec.scope}"
    out: dict[str, Row] = {}
    for key, vec, text, meta, *plain in conn.execute(query).fetchall():
        if key is None or key in out:
            raise AssertionError(f"{spec.name}: key {key!r} is NULL or repeats")
        metadata = {k: v for k, v in (meta or {}).items() if k not in spec.hidden_metadata}
        metadata.update({c: _plain(v) for c, v in zip(spec.plain_metadata, plain, strict=True)})
        out[key] = Row(key, _floats(vec) if vec is not None else np.empty(0, np.float32), text, metadata)
    return out


def columns_of(conn: Any, schema: str, table: str) -> dict[str, str]:
    """Column → type (``format_type``) of a table or view, in column order."""
    rows = conn.execute(
        "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
        "WHERE a.attrelid = format('%%I.%%I', %s::text, %s::text)::regclass AND a.attnum > 0 "
        "AND NOT a.attisdropped ORDER BY a.attnum",
        (schema, table),
    ).fetchall()
    return {name: typ for name, typ in rows}


# ------------------------------------------------------------------------------- builders
# Each runs in a fresh interpreter (Tables.get): the clients keep process-wide state (LangChain
# fixes the vector column's dimension on first use, PGEngine runs an event-loop thread) and warn
# in ways the suite's warnings-as-errors would turn into failures that are not vectorport's.
# Each drops what it builds first and returns the owner's own view of what it wrote (JSON).


def _sa_url(uri: str, driver: str) -> str:
    """The libpq URI as an SQLAlchemy URL for ``driver`` (the socket directory stays ``?host=``)."""
    return uri.replace("postgresql://", f"postgresql+{driver}://", 1)


def _vec_literal(v: np.ndarray) -> str:
    return "[" + ",".join(repr(float(x)) for x in v) + "]"


def _embeddings(rows: Sequence[Row]) -> Any:
    """A LangChain ``Embeddings`` that maps each fixture text to its given vector."""
    from langchain_core.embeddings import Embeddings

    table = {r.text: r.vector.tolist() for r in rows}

    class Fixed(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [table[t] for t in texts]

        def embed_query(self, text: str) -> list[float]:
            return table[text]

    return Fixed()


def _view(key: str, text: str | None, metadata: dict[str, Any], vector: Any = None) -> tuple[str, Any]:
    vec = None if vector is None else [float(x) for x in vector]
    return key, {"text": text, "metadata": metadata, "vector": vec}


def build_langchain(uri: str) -> dict[str, Any]:
    import psycopg
    from langchain_postgres import PGVector

    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS langchain_pg_embedding, langchain_pg_collection CASCADE")
    views: dict[str, Any] = {}
    for name, collection, length in (
        ("langchain-docs", "docs", None),
        ("langchain-notes", "notes", NOTES_DIM),
    ):
        rows = rows_for(SPECS[name])
        # docs first and without embedding_length: LangChain creates the shared tables then, with a
        # dimensionless vector column; notes' embedding_length no longer changes them
        store = PGVector(
            embeddings=_embeddings(rows),
            collection_name=collection,
            collection_metadata={"owner": "interop-tests", "dim": SPECS[name].dim},
            connection=_sa_url(uri, "psycopg"),
            embedding_length=length,
            use_jsonb=True,
        )
        store.add_embeddings(
            texts=[r.text for r in rows],
            embeddings=[r.vector.tolist() for r in rows],
            metadatas=[r.metadata for r in rows],
            ids=[r.key for r in rows],
        )
        docs = store.get_by_ids([r.key for r in rows])
        views[name] = dict(_view(str(d.id), d.page_content, d.metadata) for d in docs)
    return views


def build_langchain_v2(uri: str) -> dict[str, Any]:
    from langchain_postgres import Column, PGEngine, PGVectorStore

    spec = SPECS["langchain-v2"]
    rows = rows_for(spec)
    engine = PGEngine.from_connection_string(url=_sa_url(uri, "psycopg"))
    engine.init_vectorstore_table(
        table_name=spec.table,
        vector_size=spec.dim,
        metadata_columns=[Column("source", "TEXT"), Column("page", "INTEGER")],
        overwrite_existing=True,
    )
    store = PGVectorStore.create_sync(
        engine=engine,
        embedding_service=_embeddings(rows),
        table_name=spec.table,
        metadata_columns=["source", "page"],
    )
    store.add_embeddings(
        texts=[r.text for r in rows],
        embeddings=[r.vector.tolist() for r in rows],
        metadatas=[r.metadata for r in rows],
        ids=[r.key for r in rows],
    )
    docs = store.get_by_ids([r.key for r in rows])
    return {spec.name: dict(_view(str(d.id), d.page_content, d.metadata) for d in docs)}


def build_llamaindex(uri: str) -> dict[str, Any]:
    import psycopg
    from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
    from llama_index.vector_stores.postgres import PGVectorStore

    views: dict[str, Any] = {}
    for name, jsonb in (("llamaindex-json", False), ("llamaindex-jsonb", True)):
        spec = SPECS[name]
        with psycopg.connect(uri, autocommit=True) as conn:
            conn.execute(f"DROP TABLE IF EXISTS {_ident(spec.table)}")
        store = PGVectorStore.from_params(
            connection_string=_sa_url(uri, "psycopg2"),
            async_connection_string=_sa_url(uri, "psycopg"),
            table_name=spec.table.removeprefix("data_"),
            embed_dim=spec.dim,
            use_jsonb=jsonb,
            hnsw_kwargs=(
                {
                    "hnsw_m": 16,
                    "hnsw_ef_construction": 64,
                    "hnsw_ef_search": 40,
                    "hnsw_dist_method": "vector_cosine_ops",
                }
                if jsonb
                else None
            ),
        )
        rows = rows_for(spec)
        nodes = [
            TextNode(
                id_=r.key,
                text=r.text or "",
                metadata=r.metadata,
                embedding=r.vector.tolist(),
                relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=f"{name}-doc-{i // 4}")},
            )
            for i, r in enumerate(rows)
        ]
        store.add(nodes)
        got = store.get_nodes(node_ids=[r.key for r in rows])
        views[name] = dict(_view(n.node_id, n.get_content(), n.metadata, n.embedding) for n in got)
    return views


def build_vecs(uri: str) -> dict[str, Any]:
    import vecs

    spec = SPECS["vecs"]
    rows = rows_for(spec)
    vx = vecs.create_client(uri)
    try:
        vx.delete_collection(spec.table)
        docs = vx.get_or_create_collection(name=spec.table, dimension=spec.dim)
        docs.upsert(records=[(r.key, r.vector.tolist(), r.metadata) for r in rows])
        docs.create_index()
        got = docs.fetch(ids=[r.key for r in rows])
        return {spec.name: dict(_view(k, None, dict(m), v) for k, v, m in got)}
    finally:
        vx.disconnect()


_SUPABASE_BIGSERIAL = """
create table documents (
  id bigserial primary key,
  content text, -- corresponds to Document.pageContent
  metadata jsonb, -- corresponds to Document.metadata
  embedding vector({dim}) -- 1536 works for OpenAI embeddings, change if needed
);

create function match_documents (
  query_embedding vector({dim}),
  match_count int DEFAULT null,
  filter jsonb DEFAULT '{{}}'
) returns table (
  id bigint,
  content text,
  metadata jsonb,
  similarity float
)
language plpgsql
as $$
#variable_conflict use_column
begin
  return query
  select
    id,
    content,
    metadata,
    1 - (documents.embedding <=> query_embedding) as similarity
  from documents
  where metadata @> filter
  order by documents.embedding <=> query_embedding
  limit match_count;
end;
$$;
"""

_SUPABASE_UUID = """
create table
  documents (
    id uuid primary key,
    content text, -- corresponds to Document.pageContent
    metadata jsonb, -- corresponds to Document.metadata
    embedding vector ({dim}) -- 1536 works for OpenAI embeddings, change if needed
  );

create function match_documents (
  query_embedding vector ({dim}),
  filter jsonb default '{{}}'
) returns table (
  id uuid,
  content text,
  metadata jsonb,
  similarity float
) language plpgsql as $$
#variable_conflict use_column
begin
  return query
  select
    id,
    content,
    metadata,
    1 - (documents.embedding <=> query_embedding) as similarity
  from documents
  where metadata @> filter
  order by documents.embedding <=> query_embedding;
end;
$$;
"""


def build_supabase(uri: str) -> dict[str, Any]:
    """The published template, run as the Supabase SQL editor runs it, and rows inserted as
    supabase-js / LangChain's SupabaseVectorStore insert them; the owner's view is
    ``match_documents`` (what those clients call over RPC)."""
    import psycopg

    views: dict[str, Any] = {}
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS public.documents CASCADE")
        conn.execute("DROP FUNCTION IF EXISTS public.match_documents")
        conn.execute("DROP SCHEMA IF EXISTS supa_uuid CASCADE")
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        for name, template in (
            ("supabase-bigserial", _SUPABASE_BIGSERIAL),
            ("supabase-uuid", _SUPABASE_UUID),
        ):
            spec = SPECS[name]
            if spec.schema != "public":
                conn.execute(f"CREATE SCHEMA {spec.schema}")
            conn.execute(f"SET search_path TO {spec.schema}, public")
            conn.execute(template.format(dim=spec.dim))
            rows = rows_for(spec)
            with conn.cursor() as cur:
                if spec.columns["id"] == "bigint":  # ids come from the sequence, 1..n in order
                    cur.executemany(
                        "INSERT INTO documents (content, metadata, embedding) "
                        "VALUES (%s, %s::jsonb, %s::vector)",
                        [(r.text, json.dumps(r.metadata), _vec_literal(r.vector)) for r in rows],
                    )
                    found = conn.execute(
                        "SELECT id::text, content, metadata FROM match_documents(%s::vector, %s, '{}')",
                        (_vec_literal(rows[0].vector), len(rows)),
                    ).fetchall()
                else:
                    cur.executemany(
                        "INSERT INTO documents (id, content, metadata, embedding) "
                        "VALUES (%s, %s, %s::jsonb, %s::vector)",
                        [(r.key, r.text, json.dumps(r.metadata), _vec_literal(r.vector)) for r in rows],
                    )
                    found = conn.execute(
                        "SELECT id::text, content, metadata FROM match_documents(%s::vector)",
                        (_vec_literal(rows[0].vector),),
                    ).fetchall()
            conn.execute("RESET search_path")
            views[name] = dict(_view(k, c, m) for k, c, m in found)
    return views


_CUSTOM_DDL = """
DROP VIEW IF EXISTS kb_public;
DROP TABLE IF EXISTS kb_chunks, articulos, code_chunks, mail_chunks;
CREATE TABLE kb_chunks (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    chunk_text text NOT NULL,
    metadata jsonb NOT NULL DEFAULT '{}',
    embedding vector(8) NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE VIEW kb_public AS
    SELECT id, chunk_text, metadata, embedding FROM kb_chunks WHERE metadata->>'visibility' = 'public';
CREATE TABLE articulos (
    id bigserial PRIMARY KEY,
    titulo text NOT NULL,
    contenido text NOT NULL,
    metadatos jsonb,
    embedding vector(8),
    tsv tsvector
);
CREATE TRIGGER articulos_tsv BEFORE INSERT OR UPDATE ON articulos FOR EACH ROW
    EXECUTE FUNCTION tsvector_update_trigger(tsv, 'pg_catalog.spanish', titulo, contenido);
CREATE INDEX articulos_tsv_idx ON articulos USING gin (tsv);
CREATE TABLE code_chunks (
    file_path text NOT NULL,
    chunk_index integer NOT NULL,
    content text NOT NULL,
    content_hash text NOT NULL,
    metadata jsonb,
    embedding vector(8),
    UNIQUE (file_path, chunk_index)
);
CREATE TABLE mail_chunks (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    message_id text NOT NULL,
    mailbox_id integer NOT NULL,
    ts timestamptz NOT NULL,
    part smallint NOT NULL,
    body text NOT NULL,
    embedding vector(8) NOT NULL
);
"""


def build_custom(uri: str) -> dict[str, Any]:
    """Hand-made schemas: DDL as a project's migration would hold it, rows by plain INSERTs."""
    import psycopg

    with psycopg.connect(uri, autocommit=True) as conn, conn.cursor() as cur:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(_CUSTOM_DDL)
        cur.executemany(
            "INSERT INTO kb_chunks (id, chunk_text, metadata, embedding) "
            "VALUES (%s, %s, %s::jsonb, %s::vector)",
            [
                (r.key, r.text, json.dumps(r.metadata), _vec_literal(r.vector))
                for r in rows_for(SPECS["kb-uuid"])
            ],
        )
        articulos = rows_for(SPECS["articulos"])
        cur.executemany(
            "INSERT INTO articulos (titulo, contenido, metadatos, embedding) "
            "VALUES (%s, %s, %s::jsonb, %s::vector)",
            [
                (
                    r.metadata["titulo"],
                    r.text,
                    json.dumps({k: v for k, v in r.metadata.items() if k != "titulo"}),
                    _vec_literal(r.vector),
                )
                for r in articulos
            ],
        )
        code = rows_for(SPECS["code-chunks"])
        cur.executemany(
            "INSERT INTO code_chunks (file_path, chunk_index, content, content_hash, metadata, embedding) "
            "VALUES (%s, %s, %s, %s, %s::jsonb, %s::vector)",
            [
                (
                    *_split_code_key(r.key),
                    r.text,
                    hashlib.sha256((r.text or "").encode()).hexdigest(),
                    json.dumps(r.metadata),
                    _vec_literal(r.vector),
                )
                for r in code
            ],
        )
        cur.executemany(
            "INSERT INTO mail_chunks (message_id, mailbox_id, ts, part, body, embedding) "
            "VALUES (%s, %s, %s, %s, %s, %s::vector)",
            [
                (
                    r.metadata["message_id"],
                    r.metadata["mailbox_id"],
                    datetime.fromisoformat(r.metadata["ts"]),
                    r.metadata["part"],
                    r.text,
                    _vec_literal(r.vector),
                )
                for r in rows_for(SPECS["mail-plain"])
            ],
        )
    return {}


def _split_code_key(key: str) -> tuple[str, int]:
    path, chunk = key.split("#chunk")
    return path, int(chunk)


# --------------------------------------------------------------------------------- runner


@dataclass(frozen=True)
class Built:
    """A built table: its spec, the records handed to its owner, and the owner's own view of
    them (key → {text, metadata, vector or None}) where the owner has a read API."""

    spec: TableSpec
    rows: list[Row]
    client_view: dict[str, Any]


class Tables:
    """Builds each spec's table once (its builder in a fresh interpreter) in the database at
    ``uri`` (libpq), which vectorport opens as ``url`` (``url + "&table=…"``). ``get(name)``
    calls ``skip(module)`` first, which skips the test when the builder's client is missing."""

    def __init__(self, uri: str, url: str, skip: Callable[[str], Any]) -> None:
        self.uri = uri
        self.url = url
        self._skip = skip
        self._views: dict[str, dict[str, Any]] = {}

    def get(self, name: str) -> Built:
        spec = SPECS[name]
        if spec.client is not None:
            self._skip(spec.client)
        if spec.builder not in self._views:
            self._views[spec.builder] = run_builder(spec.builder, self.uri)
        return Built(spec, rows_for(spec), self._views[spec.builder].get(name, {}))


def run_builder(builder: str, uri: str, *args: Any, module: str = "pg_tables") -> Any:
    """Run ``builder(uri, *args)`` of ``tests.interop.<module>`` in a fresh interpreter (the
    arguments and the result travel as JSON); its result."""
    code = (
        "import json, sys\n"
        f"from tests.interop import {module}\n"
        f"result = {module}.{builder}(*json.loads(sys.argv[1]))\n"
        "print('\\n@@' + json.dumps(result))\n"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps([uri, *args])],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=600,
    )
    if out.returncode != 0 or "\n@@" not in out.stdout:
        raise RuntimeError(f"{builder} failed (exit {out.returncode}):\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.rsplit("\n@@", 1)[1])
