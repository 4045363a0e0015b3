"""``vectorport search URL TEXT``: semantic search with the collection's own embedding model.

Exit codes (:class:`vectorport._exit.ExitCode`): 0 results printed (possibly none); 2 bad
arguments or an embedder whose model is not the collection's; 3 the backend or the embedder
failed.
"""

from __future__ import annotations

import typer
from rich.table import Table

from .._registry import connect
from ._common import JsonOption, emit_json, out_console, parse_json_arg, reported_errors


def search(
    url: str = typer.Argument(..., help="Store URL of an ingested collection."),
    text: str = typer.Argument(..., help="The query text."),
    k: int = typer.Option(10, "-k", "--k", help="How many results."),
    filter: str | None = typer.Option(
        None, "--filter", "-f", help='Metadata filter, e.g. {"format": "markdown"}'
    ),
    min_score: float | None = typer.Option(None, "--min-score", help="Drop results scoring below this."),
    collapse: bool = typer.Option(False, "--collapse", help="Show only the best chunk of each source."),
    embedder: str | None = typer.Option(
        None, "--embedder", "-e", help="Default: the model recorded on the collection."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Embed TEXT and print the nearest chunks."""
    from ..ingest import embedder_for
    from ..ingest import search as run_search

    where = parse_json_arg(filter, "--filter")
    with reported_errors(), connect(url) as store:
        emb = embedder_for(store, embedder)
        result = run_search(store, emb, text, k=k, filter=where, min_score=min_score, collapse=collapse)
    if as_json:
        emit_json(result.to_dict())
        return
    table = Table(title=f"{text!r}: {result.k_returned} of {result.k_requested} ({result.model_id})")
    for col in ("#", "score", "key", "section", "text"):
        table.add_column(col, overflow="fold")
    for rank, match in enumerate(result.matches, 1):
        meta = match.metadata or {}
        snippet = " ".join((match.text or "").split())
        hits = result.collapsed.get(match.key, 1)
        key = match.key + (f" (+{hits - 1} chunks)" if hits > 1 else "")
        table.add_row(
            str(rank),
            f"{match.score:.4f}",
            key,
            str(meta.get("section") or ""),
            snippet[:140] + ("…" if len(snippet) > 140 else ""),
        )
    out_console.print(table)


def register(app: typer.Typer) -> None:
    app.command("search")(search)
