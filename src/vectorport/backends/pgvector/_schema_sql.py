"""The SQL of a collection as ``vectorport pgvector schema`` prints it: the table and indexes
(:mod:`._schema`, the statements the store executes) and the Supabase RPC functions
(:mod:`._rpc`), with no connection."""

from __future__ import annotations

from ..._models import Metric
from ._rpc import rpc_functions
from ._schema import IndexKind, Layout, display_name

__all__ = ["render_schema", "schema_sql"]


def render_schema(layout: Layout, *, functions: bool = True) -> str:
    """SQL text (no connection needed) for a collection: table, indexes, RPC functions."""
    statements = list(layout.table_ddl())
    if functions:
        statements += rpc_functions(layout)
    header = (
        f"-- vectorport pgvector collection {display_name(layout.schema, layout.table)}: "
        f"{layout.dimension} dims, {layout.metric.value}, index={layout.index}\n"
        "CREATE EXTENSION IF NOT EXISTS vector;\n\n"
    )
    return header + "\n\n".join(s.as_string(None) + ";" for s in statements) + "\n"


def schema_sql(
    table: str,
    dimension: int,
    metric: str | Metric = "cosine",
    *,
    schema: str = "public",
    index: IndexKind = "hnsw",
    m: int = 16,
    ef_construction: int = 64,
    language: str = "english",
    functions: bool = True,
) -> str:
    """The SQL of a collection exactly as vectorport creates it, so vectorport can open a table
    made from it: the table, its HNSW and GIN indexes and (unless ``functions=False``) the
    search functions ``match_<table>`` (vector), ``text_match_<table>`` (full text) and
    ``hybrid_match_<table>``, callable over Supabase RPC (:mod:`._rpc`).

    Parameters
    ----------
    table, dimension, metric
        The collection's table name, vector dimension and metric (cosine, euclidean or dot).
    schema, index, m, ef_construction, language
        As the pgvector URL options of the same names.
    functions
        Include the RPC functions.

    Raises
    ------
    ConfigurationError
        A bad name, metric, dimension or option; nothing is connected to.

    Examples
    --------
    >>> print(schema_sql("docs", 384).splitlines()[0])
    -- vectorport pgvector collection public.docs: 384 dims, cosine, index=hnsw
    """
    layout = Layout(schema, table, dimension, Metric.parse(metric), index, m, ef_construction, language)
    return render_schema(layout, functions=functions)
