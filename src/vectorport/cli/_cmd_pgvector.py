"""``vectorport pgvector schema``: the SQL of a collection, for Supabase and psql users.

Exit codes: 0 printed; 2 bad arguments (unknown metric, dimension out of range, bad name).
"""

from __future__ import annotations

import typer

from .._models import Metric
from ._common import JsonOption, emit_json, reported_errors

pgvector_app = typer.Typer(
    name="pgvector",
    help="PostgreSQL + pgvector helpers.",
    no_args_is_help=True,
)


@pgvector_app.command("schema")
def schema(
    table: str = typer.Option(..., "--table", help="Collection table name."),
    dim: int = typer.Option(..., "--dim", help="Vector dimension."),
    metric: str = typer.Option("cosine", "--metric", help="cosine, euclidean or dot."),
    schema_name: str = typer.Option("public", "--schema", help="PostgreSQL schema."),
    index: str = typer.Option("hnsw", "--index", help="hnsw or exact (no vector index)."),
    m: int = typer.Option(16, "--m", help="HNSW m."),
    ef_construction: int = typer.Option(64, "--ef-construction", help="HNSW ef_construction."),
    language: str = typer.Option("english", "--language", help="Text search configuration."),
    functions: bool = typer.Option(True, "--functions/--no-functions", help="Include the RPC functions."),
    as_json: bool = JsonOption,
) -> None:
    """Print the DDL of a collection (table, HNSW and GIN indexes) and its search functions
    ``match_<table>(query_embedding, match_count, filter jsonb)`` and
    ``hybrid_match_<table>(query_text, query_embedding, match_count, filter, …)``, callable
    over Supabase RPC. The table is exactly what vectorport creates, so vectorport can open it.
    """
    with reported_errors():
        from ..backends.pgvector._schema import Layout
        from ..backends.pgvector.store import render_schema

        layout = Layout(schema_name, table, dim, Metric.parse(metric), index, m, ef_construction, language)
        text = render_schema(layout, functions=functions)
    if as_json:
        emit_json({"table": table, "schema": schema_name, "dimension": dim, "metric": metric, "sql": text})
        return
    typer.echo(text, nl=False)


def register(app: typer.Typer) -> None:
    app.add_typer(pgvector_app, name="pgvector")
