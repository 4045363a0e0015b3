"""``vectorport ingest PATH URL``: chunk, embed and upsert a folder, incrementally.

Exit codes (:class:`vectorport._exit.ExitCode`): 0 done; 1 some files could not be read (the
rest was ingested); 2 bad arguments, embedder/collection mismatch; 3 the backend or the embedder
failed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from .._exit import ExitCode
from ..exceptions import ConfigurationError
from ._common import JsonOption, emit_json, err_console, out_console, reported_errors

if TYPE_CHECKING:
    from ..ingest.indexer import IngestReport, ProgressFn


Source = Annotated[Path, typer.Argument(help="File or folder to ingest (Markdown, text, HTML, mbox/eml).")]
Url = Annotated[str, typer.Argument(help="Store URL, e.g. chroma:///data/chroma?collection=docs")]
EmbedderSpec = Annotated[
    str,
    typer.Option(
        "--embedder",
        "-e",
        show_default=False,
        help="Embedding model: st:NAME or st:FOLDER (sentence-transformers; default "
        "st:all-MiniLM-L6-v2), voyage:MODEL, voyage:MODEL@DIM or hash:DIM.",
    ),
]
Root = Annotated[Path | None, typer.Option("--root", help="Folder the keys are relative to (default: PATH).")]
TargetTokens = Annotated[
    int, typer.Option(help="Largest chunk in the embedder's tokens (model limit applies).")
]
OverlapTokens = Annotated[int, typer.Option(help="Tokens repeated from one chunk into the next.")]
MinTokens = Annotated[int, typer.Option(help="A trailing chunk smaller than this joins the previous one.")]
Include = Annotated[list[str] | None, typer.Option("--include", help="Only sources matching this glob.")]
Exclude = Annotated[list[str] | None, typer.Option("--exclude", help="Skip sources matching this glob.")]
Prune = Annotated[bool, typer.Option("--prune/--no-prune", help="Remove documents whose file is gone.")]
Metric = Annotated[
    str | None,
    typer.Option(
        "--metric",
        help="Metric of a new collection: cosine (default), euclidean or dot; an existing one keeps its own.",
    ),
]
BatchSize = Annotated[int | None, typer.Option("--batch-size", help="Texts per embedding call.")]


def ingest(
    path: Source,
    url: Url,
    embedder: EmbedderSpec = "sentence-transformers:all-MiniLM-L6-v2",
    root: Root = None,
    target_tokens: TargetTokens = 500,
    overlap_tokens: OverlapTokens = 50,
    min_tokens: MinTokens = 50,
    include: Include = None,
    exclude: Exclude = None,
    prune: Prune = True,
    metric: Metric = None,
    batch_size: BatchSize = None,
    as_json: bool = JsonOption,
) -> None:
    """Ingest documents into a collection: new ones added, changed ones re-chunked and replaced,
    unchanged ones skipped without any embedding call, deleted ones removed."""
    from ..ingest import ChunkingConfig, resolve_embedder
    from ..ingest import ingest as run_ingest

    with reported_errors():
        if batch_size is not None and batch_size < 1:
            raise ConfigurationError(f"--batch-size takes a positive number of texts, got {batch_size}")
        emb = resolve_embedder(embedder, **({"batch_size": batch_size} if batch_size else {}))
        try:
            chunking = ChunkingConfig(target_tokens, overlap_tokens, min_tokens)
        except ValueError as exc:
            err_console.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(ExitCode.USAGE) from None
        with _progress_bars() as progress:
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
    if as_json:
        emit_json(report.to_dict())
    else:
        _print_report(report)
    raise typer.Exit(report.exit_code)


@contextmanager
def _progress_bars() -> Iterator[ProgressFn]:
    """One bar per phase on stderr (none when stderr is not a terminal), gone when done."""
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

        yield progress


def _print_report(report: IngestReport) -> None:
    """The counts, the model and chunking, then each document that failed (on stderr)."""
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


def register(app: typer.Typer) -> None:
    app.command("ingest")(ingest)
