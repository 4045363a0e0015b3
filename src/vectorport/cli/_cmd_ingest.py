"""``vectorport ingest PATH URL``: chunk, embed and upsert a folder, incrementally.

Exit codes (:class:`vectorport._exit.ExitCode`): 0 done; 1 some files could not be read (the
rest was ingested); 2 bad arguments, embedder/collection mismatch; 3 the backend or the embedder
failed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from .._exit import ExitCode
from ._common import JsonOption, emit_json, err_console, out_console, reported_errors


def ingest(
    path: Annotated[Path, typer.Argument(help="File or folder to ingest (Markdown, text, HTML, mbox/eml).")],
    url: Annotated[str, typer.Argument(help="Store URL, e.g. chroma:///data/chroma?collection=docs")],
    embedder: str = typer.Option(
        "sentence-transformers:all-MiniLM-L6-v2",
        "--embedder",
        "-e",
        show_default=False,
        help="Embedding model: st:NAME or st:FOLDER (sentence-transformers; default "
        "st:all-MiniLM-L6-v2), voyage:MODEL, voyage:MODEL@DIM or hash:DIM.",
    ),
    root: Annotated[
        Path | None, typer.Option("--root", help="Folder the keys are relative to (default: PATH).")
    ] = None,
    target_tokens: int = typer.Option(
        500, help="Largest chunk in the embedder's tokens (model limit applies)."
    ),
    overlap_tokens: int = typer.Option(50, help="Tokens repeated from one chunk into the next."),
    min_tokens: int = typer.Option(50, help="A trailing chunk smaller than this joins the previous one."),
    include: Annotated[
        list[str] | None, typer.Option("--include", help="Only sources matching this glob.")
    ] = None,
    exclude: Annotated[
        list[str] | None, typer.Option("--exclude", help="Skip sources matching this glob.")
    ] = None,
    prune: bool = typer.Option(True, "--prune/--no-prune", help="Remove documents whose file is gone."),
    metric: str | None = typer.Option(
        None,
        "--metric",
        help="Metric of a new collection: cosine (default), euclidean or dot; an existing one keeps its own.",
    ),
    batch_size: int | None = typer.Option(None, "--batch-size", help="Texts per embedding call."),
    as_json: bool = JsonOption,
) -> None:
    """Ingest documents into a collection: new ones added, changed ones re-chunked and replaced,
    unchanged ones skipped without any embedding call, deleted ones removed."""
    from ..ingest import ChunkingConfig, resolve_embedder
    from ..ingest import ingest as run_ingest

    code = ExitCode.OK
    with reported_errors():
        options = {"batch_size": batch_size} if batch_size else {}
        emb = resolve_embedder(embedder, **options)
        try:
            chunking = ChunkingConfig(target_tokens, overlap_tokens, min_tokens)
        except ValueError as exc:
            err_console.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(ExitCode.USAGE) from None
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err_console,
            transient=True,
            disable=not err_console.is_terminal,
        ) as bar:
            tasks: dict[str, TaskID] = {}

            def progress(phase: str, done: int, total: int | None) -> None:
                if phase not in tasks:
                    tasks[phase] = bar.add_task(phase, total=total)
                bar.update(tasks[phase], completed=done, total=total)

            report = run_ingest(
                path,
                url,
                embedder=emb,
                root=root,
                chunking=chunking,
                include=include or (),
                exclude=exclude or (),
                prune=prune,
                metric=metric,
                progress=progress,
            )
        code = report.exit_code
    if as_json:
        emit_json(report.to_dict())
    else:
        table = Table(title=f"ingest → {report.store}", show_header=False)
        for label, value in (
            ("added", report.added),
            ("updated", report.updated),
            ("removed", report.removed),
            ("skipped (unchanged)", report.skipped),
            ("failed", report.failed),
            ("chunks written", report.chunks_written),
            ("chunks deleted", report.chunks_deleted),
            ("chunks embedded", report.chunks_embedded),
            ("chunks reused", report.chunks_reused),
            ("embedding calls", report.embedding_calls),
            ("embedding model", report.embedding_model),
            ("chunking", report.chunking),
            ("seconds", report.seconds),
        ):
            table.add_row(label, str(value))
        out_console.print(table)
        for doc in report.documents:
            if doc.action == "failed":
                err_console.print(f"[red]failed:[/red] {doc.source}: {doc.error}", highlight=False)
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    app.command("ingest")(ingest)
