"""The tables the frameworks create, as they create them, so a migration into a framework layout
whose table does not exist yet leaves what that framework's own client would have made.

Read back from the server after each client created its table (langchain-postgres 0.0.19,
llama-index-vector-stores-postgres 0.9, vecs 0.4.5): see ``tests/interop/pg_tables.py``.
"""

from __future__ import annotations

from psycopg import sql

from ..._models import Metric
from ._layouts import LANGCHAIN_COLLECTIONS, LANGCHAIN_TABLE
from ._quote import Identifier, Literal
from ._schema import METRIC_OPCLASS

__all__ = ["CREATABLE", "framework_ddl"]

CREATABLE = ("langchain", "langchain-v2", "llamaindex", "vecs", "supabase")


def framework_ddl(
    layout: str, schema: str, table: str, dimension: int, metric: Metric, *, new_schema: bool = False
) -> list[sql.Composed]:
    """``CREATE … IF NOT EXISTS`` statements of ``layout``'s table (``[]``: not one vectorport
    makes); ``new_schema``: create the schema too (a role may create tables in an existing
    schema without being allowed to create schemas, so it is only asked for when missing)."""
    vtype = sql.SQL("vector({})").format(Literal(dimension))
    qualified = Identifier(schema, table)
    if layout not in CREATABLE:
        return []
    create = [sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(Identifier(schema))] if new_schema else []
    return [*create, *_tables(layout, schema, table, vtype, qualified, metric)]


def _langchain_tables(schema: str) -> list[sql.Composed]:
    collections = Identifier(schema, LANGCHAIN_COLLECTIONS)
    embeddings = Identifier(schema, LANGCHAIN_TABLE)
    return [
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {} (uuid uuid NOT NULL PRIMARY KEY, "
            "name character varying NOT NULL UNIQUE, cmetadata json)"
        ).format(collections),
        # LangChain's default: a vector column without a dimension, shared by every collection
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {} (id character varying NOT NULL PRIMARY KEY, "
            "collection_id uuid REFERENCES {} (uuid) ON DELETE CASCADE, embedding vector, "
            "document character varying, cmetadata jsonb)"
        ).format(embeddings, collections),
        sql.SQL(
            "CREATE INDEX IF NOT EXISTS ix_cmetadata_gin ON {} USING gin (cmetadata jsonb_path_ops)"
        ).format(embeddings),
    ]


def _tables(
    layout: str, schema: str, table: str, vtype: sql.Composable, qualified: sql.Identifier, metric: Metric
) -> list[sql.Composed]:
    if layout == "langchain":
        return _langchain_tables(schema)
    if layout == "langchain-v2":
        return [
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} (langchain_id uuid NOT NULL PRIMARY KEY, "
                "content text NOT NULL, embedding {} NOT NULL, langchain_metadata json)"
            ).format(qualified, vtype)
        ]
    if layout == "llamaindex":
        base = table.removeprefix("data_")
        return [
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} (id bigserial PRIMARY KEY, text character varying NOT NULL, "
                "metadata_ jsonb, node_id character varying, embedding {})"
            ).format(qualified, vtype),
            sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} USING btree ((metadata_ ->> 'ref_doc_id'))").format(
                Identifier(f"{base}_idx_1"), qualified
            ),
            sql.SQL(
                "CREATE INDEX IF NOT EXISTS {} ON {} USING hnsw (embedding {}) "
                "WITH (m = 16, ef_construction = 64)"
            ).format(
                Identifier(f"{table}_embedding_idx"),
                qualified,
                sql.SQL(f"vector_{METRIC_OPCLASS[metric]}"),
            ),
        ]
    if layout == "vecs":
        return [
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} (id character varying NOT NULL PRIMARY KEY, vec {} NOT NULL, "
                "metadata jsonb NOT NULL DEFAULT '{{}}'::jsonb)"
            ).format(qualified, vtype),
        ]
    if layout == "supabase":
        # the documents template with uuid ids (the bigserial one cannot take chunk keys)
        return [
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), content text, "
                "metadata jsonb, embedding {})"
            ).format(qualified, vtype)
        ]
    return []
