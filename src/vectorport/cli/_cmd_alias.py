"""``vectorport alias create|shadow|switch|rollback|retire|status``: move a running app from one
store to another through an alias (``alias://NAME``), thin commands over :mod:`vectorport.alias`.

Exit codes (:class:`vectorport._exit.ExitCode`): 0 done (``status``: healthy); 1 ``status`` has
findings (repairs pending, a member failing shadowed queries); 2 bad arguments, an unknown alias
or member, a phase that does not allow the command; 3 a store or the registry failed or could not
be reached; 4 ``switch`` refused: a gate failed, nothing changed (each failed gate is named).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .. import alias
from ._common import JsonOption, emit_json, err_console, out_console, reported_errors, writable_path

alias_app = typer.Typer(
    name="alias",
    help="Cut a running app over to another store: create, shadow, switch, rollback, retire, status.",
    no_args_is_help=True,
)

Name = Annotated[str, typer.Argument(help="The alias's name (the app opens alias://NAME).")]
Registry = Annotated[
    str | None,
    typer.Option(
        "--registry",
        help="Where aliases live: a postgresql:// URI (apps on several hosts), pgvector://DATA_DIR, or a "
        "SQLite file (default: aliases.sqlite in the state directory, $VECTORPORT_STATE_DIR).",
    ),
]


Queries = Annotated[
    Path | None,
    typer.Option(
        "--queries",
        help="Labelled queries (JSONL, as `vectorport compare --queries`): each member's nDCG@10, MRR, "
        "hit@10, the text embedded by its own model.",
        exists=True,
        dir_okay=False,
    ),
]


def _done(report: alias.AliasReport, as_json: bool) -> None:
    if as_json:
        emit_json(report.to_dict())
    else:
        out_console.print(report.render(), highlight=False, markup=False, soft_wrap=True)
    raise typer.Exit(int(report.exit_code))


@alias_app.command("create")
def create(
    name: Name,
    serve: Annotated[str, typer.Option("--serve", help="The URL of the store the app uses now.")],
    registry: Registry = None,
    sample: Annotated[float, typer.Option("--sample", help="Share of reads a candidate shadows.")] = 1.0,
    as_json: bool = JsonOption,
) -> None:
    """A new alias serving one store; point the app at alias://NAME."""
    with reported_errors():
        report = alias.create(name, serve, registry=registry, sample=sample)
    _done(report, as_json)


@alias_app.command("shadow")
def shadow(
    name: Name,
    url: Annotated[str, typer.Argument(help="The candidate store's URL (created when missing).")],
    feed: Annotated[
        alias.Feed,
        typer.Option(
            "--feed", help="dual-write: the alias writes it; capture: `vectorport sync --follow` does."
        ),
    ] = alias.Feed.DUAL_WRITE,
    sample: Annotated[float | None, typer.Option("--sample", help="Share of reads shadowed.")] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="The candidate's embedding model when it is another (hash:64, sentence-transformers:NAME, "
            "voyage:MODEL): backfilled by migrate --reembed, each written text embedded again by it.",
        ),
    ] = None,
    registry: Registry = None,
    as_json: bool = JsonOption,
) -> None:
    """A candidate joins: it receives every write, a sample of the reads, and a backfill."""
    with reported_errors():
        report = alias.shadow(name, url, registry=registry, feed=feed, sample=sample, model=model)
    _done(report, as_json)


@alias_app.command("switch")
def switch(
    name: Name,
    min_queries: Annotated[
        int, typer.Option("--min-queries", help="Shadowed queries needed (0: off).")
    ] = 100,
    min_overlap: Annotated[
        float, typer.Option("--min-overlap", help="Mean overlap@k needed (0: off).")
    ] = 0.9,
    max_p99_ratio: Annotated[
        float, typer.Option("--max-p99-ratio", help="Candidate p99 over serving p99, at most (0: off).")
    ] = 1.5,
    verify: Annotated[
        bool, typer.Option("--verify/--no-verify", help="Digest-verify the pair first.")
    ] = True,
    min_ndcg_ratio: Annotated[
        float | None,
        typer.Option(
            "--min-ndcg-ratio", help="Candidate nDCG@10 over serving nDCG@10 on --queries, at least."
        ),
    ] = None,
    queries: Queries = None,
    registry: Registry = None,
    as_json: bool = JsonOption,
) -> None:
    """Serve from the candidate when every gate holds (else exit 4, naming each failed gate)."""
    gates = alias.Gates(
        min_queries or None,
        min_overlap or None,
        max_p99_ratio or None,
        verify,
        min_ndcg_ratio,
        None if queries is None else str(queries),
    )
    with reported_errors():
        report = alias.switch(name, registry=registry, gates=gates)
    _done(report, as_json)


@alias_app.command("rollback")
def rollback(name: Name, registry: Registry = None, as_json: bool = JsonOption) -> None:
    """Serve from the previous store again, at once, with every write made since the switch."""
    with reported_errors():
        report = alias.rollback(name, registry=registry)
    _done(report, as_json)


@alias_app.command("retire")
def retire(
    name: Name,
    url: Annotated[str, typer.Argument(help="The member leaving the alias (not the serving one).")],
    registry: Registry = None,
    as_json: bool = JsonOption,
) -> None:
    """A member leaves the alias: no more writes reach it (its data stays)."""
    with reported_errors():
        report = alias.retire(name, url, registry=registry)
    _done(report, as_json)


@alias_app.command("status")
def status(
    name: Name,
    registry: Registry = None,
    report_path: Annotated[
        Path | None,
        typer.Option(
            "--report", help="Write the shadow figures over time as an HTML page.", callback=writable_path
        ),
    ] = None,
    queries: Queries = None,
    as_json: bool = JsonOption,
) -> None:
    """Phase, members, shadow figures per filter shape, repairs pending, phase history."""
    with reported_errors():
        report = alias.status(name, registry=registry, queries=None if queries is None else str(queries))
    if report_path is not None:
        from ..alias._html import write_html  # its charts and the quality figures: only here

        err_console.print(
            f"report written to {write_html(report, report_path)}", highlight=False, markup=False
        )
    _done(report, as_json)


def register(app: typer.Typer) -> None:
    app.add_typer(alias_app, name="alias")
