"""``vectorport search URL TEXT``: semantic search with the collection's own embedding model,
full-text search (``--mode text``) or both fused (``--mode hybrid --weight W``).

Exit codes (:class:`vectorport._exit.ExitCode`): 0 results printed (possibly none); 2 bad
arguments, an embedder whose model is not the collection's, or a mode the store does not
support; 3 the backend or the embedder failed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer
from rich.table import Table

from .._registry import connect
from ._common import JsonOption, emit_json, out_console, parse_json_arg, reported_errors

if TYPE_CHECKING:
    from ..search import SearchResult


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
    mode: str = typer.Option(
        "vector",
        "--mode",
        "-m",
        help="vector (embed TEXT), text (full-text search) or hybrid (both, fused by RRF).",
    ),
    weight: float = typer.Option(
        0.5, "--weight", "-w", help="Hybrid: the vector ranking's share (1 vector only, 0 text only)."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Print the chunks that best match TEXT, by vector, full text or both."""
    from ..ingest import embedder_for
    from ..search import search as run_search

    where = parse_json_arg(filter, "--filter")
    with reported_errors(), connect(url) as store:
        emb = None if mode == "text" else embedder_for(store, embedder)
        result = run_search(
            store,
            emb,
            text,
            k=k,
            filter=where,
            min_score=min_score,
            collapse=collapse,
            mode=mode,
            weight=weight,
        )
    if as_json:
        emit_json(result.to_dict(), "vectorport.search/1")
        return
    out_console.print(_table(result, text, weight))


def _table(result: SearchResult, text: str, weight: float) -> Table:
    """The matches as a table: rank, score, key (with the other chunks of its source that hit),
    section and the start of the text."""
    how = {"vector": result.model_id, "text": "full text", "hybrid": f"hybrid, weight {weight:g}"}
    table = Table(title=f"{text!r}: {result.k_returned} of {result.k_requested} ({how[result.mode]})")
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
    return table


def register(app: typer.Typer) -> None:
    app.command("search")(search)
