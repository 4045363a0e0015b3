"""``vectorport pgvector schema|start|stop|build-index``: the SQL of a collection, the embedded
server for psql and other PostgreSQL clients, and the rebuild of an HNSW index a crashed bulk
load left missing.

Exit codes (:class:`vectorport._exit.ExitCode`): 0 done; 2 bad arguments (unknown metric,
dimension out of range, bad name, a collection that is missing or not pgvector); 3 the server
failed (build-index) or the embedded server could not start.
"""

from __future__ import annotations

import typer

from ..exceptions import ConfigurationError
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
    """Print a collection's DDL (table, HNSW and GIN indexes) and its search functions.

    The functions, callable over Supabase RPC, are match_<table>(query_embedding, match_count,
    filter jsonb), text_match_<table>(query_text, match_count, filter jsonb) and
    hybrid_match_<table>(query_text, query_embedding, match_count, filter, semantic_weight,
    full_text_weight, rrf_k).
    The table is exactly what vectorport creates, so vectorport can open it.
    """
    with reported_errors():
        from ..backends.pgvector import schema_sql

        text = schema_sql(
            table,
            dim,
            metric,
            schema=schema_name,
            index=index,
            m=m,
            ef_construction=ef_construction,
            language=language,
            functions=functions,
        )
    if as_json:
        doc = {"table": table, "db_schema": schema_name, "dimension": dim, "metric": metric, "sql": text}
        emit_json(doc, "vectorport.pgvector-schema/1")
        return
    typer.echo(text, nl=False)


@pgvector_app.command("start")
def start(
    data: str = typer.Argument(..., help="Data directory of a pgvector:// URL (created when empty)."),
    database: str = typer.Option("postgres", "--database", help="Database of the printed URI."),
    as_json: bool = JsonOption,
) -> None:
    """Start the embedded PostgreSQL + pgvector server in DATA (or find it running), mark it kept
    and print its URI.

    A kept server runs on after every process using it exits, until `vectorport pgvector stop
    DATA`; other clients use it, e.g. psql "$(vectorport pgvector start ./pgdata)".
    """
    with reported_errors():
        from ..backends.pgvector import embedded_data_dir, start_embedded

        data_dir = embedded_data_dir(data)
        uri = start_embedded(data_dir, database=database)
    if as_json:
        emit_json({"data_dir": str(data_dir), "uri": uri, "running": True}, "vectorport.pgvector-start/1")
        return
    typer.echo(uri)


@pgvector_app.command("stop")
def stop(
    data: str = typer.Argument(..., help="Data directory of the embedded server."),
    as_json: bool = JsonOption,
) -> None:
    """Stop the embedded server running in DATA, kept or not (a fast shutdown: open sessions
    are ended; a process still using it starts it again on its next call). A data directory
    whose server is not running is left as it is; a directory that is no server's data
    directory is an error (exit 2)."""
    with reported_errors():
        from ..backends.pgvector import embedded_data_dir, stop_embedded

        data_dir = embedded_data_dir(data)
        stopped = stop_embedded(data_dir, strict=True)
    if as_json:
        emit_json({"data_dir": str(data_dir), "stopped": stopped}, "vectorport.pgvector-stop/1")
        return
    message = f"stopped the server in {data_dir}" if stopped else f"no server was running in {data_dir}"
    typer.echo(message, err=True)


@pgvector_app.command("build-index")
def build_index(
    url: str = typer.Argument(..., help="Collection URL: postgresql://…?table=T or pgvector://DIR?table=T."),
    as_json: bool = JsonOption,
) -> None:
    """Build a collection's missing HNSW index (after an interrupted bulk load), then ANALYZE.

    Opening a collection (info, search, migrate --plan, a migration's source) never builds
    it; the next write through vectorport does, and so does this command. Prints built,
    present (nothing to do), loading (a bulk load is running; its end builds it) or exact (a
    collection without a vector index by design).
    """
    from .._registry import connect

    with reported_errors(), connect(url) as store:
        builder = getattr(store, "build_index", None)
        if builder is None:
            raise ConfigurationError(f"{store.url.masked} is not a pgvector collection")
        state = str(builder())
    if as_json:
        emit_json({"url": store.url.masked, "index": state}, "vectorport.pgvector-build-index/1")
        return
    typer.echo(state)


def register(app: typer.Typer) -> None:
    app.add_typer(pgvector_app, name="pgvector")
