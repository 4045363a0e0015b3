"""``vectorport doctor URL``: health checks of a collection, and canary queries.

Exit codes (:class:`vectorport._exit.ExitCode`): 0 no findings; 1 findings (listed); 2 bad
arguments; 3 the backend failed.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from .._exit import ExitCode
from .._protocol import VectorStore
from .._registry import connect
from .._suggest import nearest
from ..exceptions import ConfigurationError
from ._common import JsonOption, cli_text, emit_json, err_console, out_console, reported_errors

if TYPE_CHECKING:
    from .._embedder import Embedder
    from ..ingest.doctor import DoctorReport

CHECKS: tuple[str, ...]
try:
    from ..ingest.doctor import CHECKS
except ImportError:  # a build without vectorport.ingest: doctor then says so when run
    CHECKS = ()


Url = Annotated[str, typer.Argument(help="Store URL of an ingested collection.")]
EmbedderSpec = Annotated[
    str | None, typer.Option("--embedder", "-e", help="Default: the model recorded on the collection.")
]
NoEmbedder = Annotated[bool, typer.Option("--no-embedder", help="Skip the checks that re-embed text.")]
SourceRoot = Annotated[
    Path | None,
    typer.Option(
        "--source-root", help="Folder the chunks' source paths are relative to (enables the orphan check)."
    ),
]
Canaries = Annotated[Path | None, typer.Option("--canaries", help="Check canaries recorded in this file.")]
RecordCanaries = Annotated[
    Path | None,
    typer.Option("--record-canaries", help="Record canary queries (their current top keys) to this file."),
]
CanaryText = Annotated[
    list[str] | None,
    typer.Option("--canary-text", help="A canary query text (repeat); default: drawn from the collection."),
]
CanaryCount = Annotated[int, typer.Option("--canary-count", help="How many canaries to draw.")]
CanaryK = Annotated[int, typer.Option("--canary-k", help="Top-k a canary records.")]
Sample = Annotated[
    int, typer.Option("--sample", help="Stored chunks re-embedded by the drift check (0: all).")
]
Skip = Annotated[
    list[str] | None,
    typer.Option("--skip", metavar="CHECK", help=f"A check to skip (repeat): {', '.join(CHECKS)}."),
]


def doctor(
    url: Url,
    embedder: EmbedderSpec = None,
    no_embedder: NoEmbedder = False,
    source_root: SourceRoot = None,
    canaries: Canaries = None,
    record_canaries: RecordCanaries = None,
    canary_text: CanaryText = None,
    canary_count: CanaryCount = 8,
    canary_k: CanaryK = 10,
    sample: Sample = 32,
    skip: Skip = None,
    as_json: bool = JsonOption,
) -> None:
    """Check vectors (dimension, norm, NaN), models, duplicates, orphans, torn documents,
    embedding drift and canaries. Exits 1 when anything is found."""
    from ..ingest import CanarySet, diagnose
    from ..ingest import record_canaries as record
    from ..ingest.doctor import source_root_of

    _check_skips(skip or [])
    with reported_errors(), connect(url) as store:
        source_root_of(source_root)  # these before an embedder is loaded
        recorded = CanarySet.load(canaries) if canaries else None
        needed = embedder is not None or bool(record_canaries or canaries)
        emb = None if no_embedder else _embedder(store, embedder, needed)
        report = diagnose(
            store,
            embedder=emb,
            source_root=source_root,
            canaries=recorded,
            sample=sample,
            skip=tuple(skip or ()),
            models=None if no_embedder else (),
        )
        _name_flags(report)
        saved = None
        if record_canaries is not None:
            if emb is None:
                raise ConfigurationError("--record-canaries needs an embedder (drop --no-embedder)")
            texts = list(canary_text) if canary_text else None
            saved = record(store, emb, texts, k=canary_k, n=canary_count).save(record_canaries)
    if as_json:
        data = report.to_dict()
        data["canaries_recorded"] = str(saved) if saved else None
        emit_json(data)
    else:
        _print_report(report, saved)
    raise typer.Exit(report.exit_code)


def _name_flags(report: DoctorReport) -> None:
    """The skip reasons and findings name the flags and commands a user of the command line
    passes, not ``diagnose``'s keyword arguments or a store's methods."""
    from ..ingest.doctor import NO_CANARIES, NO_SOURCE_ROOT

    flags = {
        NO_SOURCE_ROOT: "no source root given (--source-root)",
        NO_CANARIES: "no canary file (--canaries)",
    }
    for check, why in report.checks_skipped.items():
        report.checks_skipped[check] = flags.get(why, why)
    report.findings = [dataclasses.replace(f, message=cli_text(f.message)) for f in report.findings]


def _check_skips(skip: list[str]) -> None:
    """Every ``--skip`` names a check, or exit 2 with the nearest name."""
    unknown = [name for name in skip if CHECKS and name not in CHECKS]
    if unknown:
        guess = nearest(unknown[0], CHECKS)
        hint = f"did you mean {guess!r}? " if guess else ""
        err_console.print(
            f"[red]error:[/red] no check named {unknown[0]!r}; {hint}the checks: {', '.join(CHECKS)}",
            highlight=False,
        )
        raise typer.Exit(ExitCode.USAGE)


def _embedder(store: VectorStore, spec: str | None, needed: bool) -> Embedder | None:
    """``spec``'s embedder, else the collection's; without one, the re-embedding checks are
    skipped with a note, unless something asked for it (then its error stands)."""
    from ..ingest import embedder_for

    try:
        emb = embedder_for(store, spec)
        if spec is None and emb.dimension != store.spec.dimension:
            raise ConfigurationError(  # the default model, not the collection's
                f"the default embedder {emb.model_id!r} makes {emb.dimension}-dimensional vectors, "
                f"the collection holds {store.spec.dimension}; pass its --embedder"
            )
        return emb
    except ConfigurationError as exc:
        if needed:
            raise
        err_console.print(f"[yellow]note:[/yellow] no embedder, re-embedding checks skipped: {exc}")
        return None


def _print_report(report: DoctorReport, saved: Path | None) -> None:
    """One row per check (ok, how many found and the first keys, or skipped and why), then the
    canaries."""
    title = f"doctor {report.store}: {report.records} records, model {report.collection_model}"
    table = Table(title=title)
    for col in ("check", "result", "details"):
        table.add_column(col, overflow="fold")
    found = {f.check: f for f in report.findings}
    for check in report.checks_run:
        hit = found.get(check)
        if hit is None:
            table.add_row(check, "[green]ok[/green]", "")
        else:
            keys = ", ".join(hit.keys[:5]) + (" …" if hit.count > 5 else "")
            table.add_row(check, f"[red]{hit.count} found[/red]", f"{hit.message}\n{keys}".strip())
    for check, why in report.checks_skipped.items():
        table.add_row(check, "[dim]skipped[/dim]", why)
    out_console.print(table)
    for c in report.canaries:
        state = "[red]drift[/red]" if c.drifted else "[green]steady[/green]"
        shift = "-" if c.score_shift is None else f"{c.score_shift:.4f}"
        out_console.print(
            f"canary {state} overlap={c.overlap:.2f} score_shift={shift} "
            f"vector_sim={c.vector_similarity:.4f} {c.text[:60]!r}",
            highlight=False,
        )
    for m in report.models:
        state = "[green]agrees[/green]" if m.agrees else "[red]other model[/red]"
        lowest = ", ".join(f"{k} {v:.4f}" for k, v in m.similarity.items())
        out_console.print(
            f"model {state} {m.store}: records {m.recorded}, vectors from {m.comes_from or 'no model tried'} "
            f"({m.records} records; lowest similarity {lowest or '-'})",
            highlight=False,
        )
        for note in m.notes:
            out_console.print(f"  [yellow]note:[/yellow] {note}", highlight=False)
    if saved:
        out_console.print(f"canaries recorded to {saved}")


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)
