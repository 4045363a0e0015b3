"""Search functions for Supabase RPC, printed by ``vectorport pgvector schema``: one per search
the library does, each returning what the store's method returns on the same rows and filter.

* ``match_<table>(query_embedding, match_count, filter)``: the rows whose metadata contains
  ``filter`` (``metadata @> filter``, the Supabase seed pattern) ranked by the collection's
  distance, the filter inside the ranking with an iterative HNSW scan, as
  :meth:`PgVectorStore.query`.
* ``text_match_<table>(query_text, match_count, filter)``: full-text search, the text parsed by
  ``websearch_to_tsquery`` in the collection's text search configuration and ranked by
  ``ts_rank_cd``, ties by key, as :meth:`PgVectorStore.text_query` with its default parser.
* ``hybrid_match_<table>(query_text, query_embedding, match_count, filter, semantic_weight,
  full_text_weight, rrf_k)``: both fused by reciprocal rank fusion, the same statement as
  :meth:`PgVectorStore.hybrid_query` (``weight`` = ``semantic_weight``, ``1 - weight`` =
  ``full_text_weight``).

Bodies are dollar-quoted with a tag no name in them contains, identifiers quoted by
:class:`psycopg.sql.Identifier`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from psycopg import sql

from ._schema import tsquery_sql

if TYPE_CHECKING:
    from ._schema import Layout

__all__ = ["RPC_PREFIXES", "dollar_tag", "rpc_functions"]

RPC_PREFIXES = ("match_", "text_match_", "hybrid_match_")
"""The functions' names are these prefixes and the table's name."""


def rpc_functions(layout: Layout) -> list[sql.Composed]:
    """``match_<table>``, ``text_match_<table>`` and ``hybrid_match_<table>`` (see the module
    docstring), in that order."""
    tag = dollar_tag(layout)
    return [_match_function(layout, tag), _text_function(layout, tag), _hybrid_function(layout, tag)]


_SETTINGS = sql.SQL(
    "  SET hnsw.ef_search = 40\n  SET hnsw.iterative_scan = strict_order\n"
    "  SET hnsw.max_scan_tuples = 20000\n"
)
"""The HNSW settings of the vector and hybrid functions (the body raises ef_search to k)."""


def _match_function(layout: Layout, tag: sql.Composable) -> sql.Composed:
    q = sql.SQL("query_embedding")
    emb = layout.embedding("t")
    cols = layout.columns
    set_ef = sql.SQL(
        "  PERFORM set_config('hnsw.ef_search', greatest(40, least(1000, match_count))::text, true);\n"
    )
    return sql.SQL(
        "CREATE OR REPLACE FUNCTION {fn}(\n"
        "  query_embedding {vtype},\n"
        "  match_count integer DEFAULT 10,\n"
        "  filter jsonb DEFAULT '{{}}'::jsonb\n"
        ") RETURNS TABLE (key text, metadata jsonb, text text, distance double precision, "
        "score double precision)\n"
        "  LANGUAGE plpgsql STABLE\n{settings}"
        "AS {tag}\n"
        "#variable_conflict use_column\n"
        "BEGIN\n{set_ef}"
        "  RETURN QUERY\n"
        "  SELECT hits.key, hits.metadata, hits.text, hits.distance, {score}\n"
        "  FROM (\n"
        "    SELECT {tkey} AS key, {tmeta} AS metadata, {ttext} AS text,\n"
        "           {dist}::double precision AS distance, {idist} AS ord\n"
        "    FROM {table} AS t\n"
        "    WHERE {tmeta} @> filter{notnull}\n"
        "    ORDER BY ord\n"
        "    LIMIT match_count\n"
        "  ) AS hits\n"
        "  ORDER BY hits.distance, hits.key;\n"
        "END;\n"
        "{tag}"
    ).format(
        fn=layout._qualified_name("", "match_"),
        tag=tag,
        vtype=layout.vector_type,
        settings=_SETTINGS,
        set_ef=set_ef,
        score=layout._score_sql(sql.SQL("hits.distance")),
        dist=layout.distance(emb, q),
        idist=layout.index_distance(emb, q),
        table=layout.qualified,
        tkey=layout.key("t"),
        tmeta=cols.metadata_expr("t"),
        ttext=cols.ident("text", "t"),
        notnull=layout._embedding_present("t", " AND "),
    )


def _hybrid_function(layout: Layout, tag: sql.Composable) -> sql.Composed:
    cols = layout.columns
    return sql.SQL(
        "CREATE OR REPLACE FUNCTION {fn}(\n"
        "  query_text text,\n"
        "  query_embedding {vtype},\n"
        "  match_count integer DEFAULT 10,\n"
        "  filter jsonb DEFAULT '{{}}'::jsonb,\n"
        "  semantic_weight double precision DEFAULT 0.5,\n"
        "  full_text_weight double precision DEFAULT 0.5,\n"
        "  rrf_k integer DEFAULT 60\n"
        ") RETURNS TABLE (key text, metadata jsonb, text text, distance double precision, "
        "rrf_score double precision, vector_rank bigint, text_rank bigint)\n"
        "  LANGUAGE plpgsql STABLE\n{settings}"
        "AS {tag}\n"
        "#variable_conflict use_column\n"
        "BEGIN\n"
        "  PERFORM set_config('hnsw.ef_search',\n"
        "                     greatest(40, least(1000, 2 * match_count))::text, true);\n"
        "  RETURN QUERY\n"
        "{body};\n"
        "END;\n"
        "{tag}"
    ).format(
        fn=layout._qualified_name("", "hybrid_match_"),
        tag=tag,
        vtype=layout.vector_type,
        settings=_SETTINGS,
        body=layout.hybrid_sql(
            query=sql.SQL("query_embedding"),
            text=sql.SQL("query_text"),
            where=sql.SQL("{} @> filter").format(cols.metadata_expr("t")),
            candidates=sql.SQL("2 * match_count"),
            limit=sql.SQL("match_count"),
            vector_weight=sql.SQL("semantic_weight"),
            text_weight=sql.SQL("full_text_weight"),
            rrf_k=sql.SQL("rrf_k"),
            outer_columns=sql.SQL("f.key, {} AS metadata, {} AS text").format(
                cols.metadata_expr("t"), cols.ident("text", "t")
            ),
        ),
    )


def dollar_tag(layout: Layout) -> sql.SQL:
    """The dollar-quote tag of the function bodies: one that no name in them contains (a
    table named ``x$vectorport$;DROP …`` would end the body early and run the rest)."""
    cols = layout.columns
    names = [
        layout.schema,
        layout.table,
        *(getattr(cols, r) or "" for r in ("key", "embedding", "metadata", "text", "fts")),
    ]
    tag, n = "$vectorport$", 0
    while any(tag in name for name in names):
        n += 1
        tag = f"$vectorport{n}$"
    return sql.SQL(tag)


def _text_function(layout: Layout, tag: sql.Composable) -> sql.Composed:
    cols = layout.columns
    return sql.SQL(
        "CREATE OR REPLACE FUNCTION {fn}(\n"
        "  query_text text,\n"
        "  match_count integer DEFAULT 10,\n"
        "  filter jsonb DEFAULT '{{}}'::jsonb\n"
        ") RETURNS TABLE (key text, metadata jsonb, text text, score double precision, "
        "text_rank bigint)\n"
        "  LANGUAGE plpgsql STABLE\n"
        "AS {tag}\n"
        "#variable_conflict use_column\n"
        "BEGIN\n"
        "  RETURN QUERY\n"
        "  SELECT hits.key, {tmeta}, {ttext}, hits.rank,\n"
        "         row_number() OVER (ORDER BY hits.rank DESC, hits.key)\n"
        "  FROM (\n"
        "    SELECT {tkey} AS key, ts_rank_cd({fts}, q.q)::double precision AS rank\n"
        "    FROM {table} AS t, (SELECT {tsquery} AS q) AS q\n"
        "    WHERE {fts} @@ q.q AND {tmeta} @> filter\n"
        "    ORDER BY rank DESC, {tkey}\n"
        "    LIMIT match_count\n"
        "  ) AS hits\n"
        "  JOIN {table} AS t ON {tkey} = hits.key\n"
        "  ORDER BY hits.rank DESC, hits.key;\n"
        "END;\n"
        "{tag}"
    ).format(
        fn=layout._qualified_name("", "text_match_"),
        tag=tag,
        tsquery=tsquery_sql("websearch", layout.language, sql.SQL("query_text")),
        table=layout.qualified,
        tkey=layout.key("t"),
        tmeta=cols.metadata_expr("t"),
        ttext=cols.ident("text", "t"),
        fts=cols.ident("fts", "t"),
    )
