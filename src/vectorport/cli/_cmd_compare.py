"""``vectorport compare URL [URL …]``: the same queries against every store, judged by exact search.

Exit codes, from :class:`vectorport._exit.ExitCode`:

* 0 ``OK`` — every gate held (or no gate was set)
* 1 ``PROBLEM`` — a gate failed; stderr names each failing gate, stdout shows the worst
  queries' diffs
* 2 ``USAGE`` — bad arguments, URL, filter or query file (also typer's code for a malformed
  command line)
* 3 ``FAILURE`` — operational failure: a backend failed or was unreachable
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from .._embedder import Embedder
from .._exit import ExitCode
from ..exceptions import ConfigurationError
from ._common import emit_json, err_console, note_json, out_console, parse_json_arg, reported_errors

_LABELLED = re.compile(r"^(?P<label>[A-Za-z0-9_.@+-]{1,64})=(?P<url>[A-Za-z][A-Za-z0-9+.-]*://.*)$")


def _stores(urls: list[str]) -> dict[str, str] | list[str]:
    """``label=URL`` arguments name their store; plain URLs are labelled by backend."""
    matches = [_LABELLED.match(u) for u in urls]
    if not any(matches):
        return urls
    out: dict[str, str] = {}
    for url, m in zip(urls, matches, strict=True):
        label, target = (m.group("label"), m.group("url")) if m else (url.split("://", 1)[0], url)
        if label in out:
            label = f"{label}#{sum(k.split('#')[0] == label for k in out) + 1}"
        out[label] = target
    return out


def _embedder(spec: str | None, first_url: str) -> Embedder:
    """An embedder from vectorport.ingest: ``spec``, else the model the first store records."""
    if importlib.util.find_spec("vectorport.ingest") is None:
        raise ConfigurationError(
            "text queries need vectorport.ingest's embedders, which this build lacks; give vectors"
        )
    from .._registry import connect
    from ..ingest import embedder_for

    with connect(first_url) as store:
        return embedder_for(store, spec)


def compare(
    urls: Annotated[
        list[str],
        typer.Argument(
            help="Store URLs, optionally labelled: pg=postgresql://…/db?table=docs", show_default=False
        ),
    ],
    queries: Annotated[
        Path | None,
        typer.Option(
            "--queries",
            "-Q",
            help="JSONL: one {vector | text, filter?, relevant?, id?} per line.",
            dir_okay=False,
        ),
    ] = None,
    sample: Annotated[
        int | None, typer.Option("--sample", "-n", help="Draw N query vectors from the data instead.")
    ] = None,
    filters: Annotated[
        list[str] | None,
        typer.Option(
            "--filter",
            "-f",
            help="JSON filter. With --sample: repeat for N queries per filter ('null' = unfiltered); "
            "with --queries: the filter of queries that have none.",
        ),
    ] = None,
    k: Annotated[int, typer.Option("--k", "-k", help="Results per query.")] = 10,
    truth: Annotated[
        str | None, typer.Option("--truth", help="Scan this store for the exact truth (default: the first).")
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print every figure and the run config as one JSON document on stdout.",
            callback=note_json,
        ),
    ] = False,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Also write the JSON document to this file.", dir_okay=False),
    ] = None,
    report: Annotated[
        Path | None,
        typer.Option(
            "--report",
            help="Write a self-contained HTML report with plots (a PATH ending in .md: Markdown).",
            dir_okay=False,
        ),
    ] = None,
    markdown: Annotated[
        Path | None,
        typer.Option(
            "--markdown",
            help="Write the tables as Markdown, e.g. to $GITHUB_STEP_SUMMARY.",
            dir_okay=False,
        ),
    ] = None,
    min_recall: Annotated[
        float | None, typer.Option("--min-recall", help="Gate: mean recall@k of every store (and filter).")
    ] = None,
    max_violations: Annotated[
        int | None, typer.Option("--max-violations", help="Gate: results outside the filter, per store.")
    ] = None,
    min_overlap: Annotated[
        float | None, typer.Option("--min-overlap", help="Gate: mean overlap@k of every pair of stores.")
    ] = None,
    max_underfill: Annotated[
        float | None,
        typer.Option("--max-underfill", help="Gate: fraction of queries answered with too few results."),
    ] = None,
    max_missing: Annotated[
        int,
        typer.Option(
            "--max-missing", min=0, help="Gate: records of the truth a store may lack (any recall)."
        ),
    ] = 0,
    allow_refused: Annotated[
        bool, typer.Option("--allow-refused", help="Do not fail when a store refuses a query.")
    ] = False,
    concurrency: Annotated[int, typer.Option("--concurrency", "-c", help="Query threads per store.")] = 1,
    warmup: Annotated[int, typer.Option("--warmup", help="Untimed queries per store first.")] = 10,
    embedder: Annotated[
        str | None,
        typer.Option(
            "--embedder", "-e", help="For text queries (default: the model the first store records)."
        ),
    ] = None,
    params: Annotated[
        str | None,
        typer.Option("--params", help='Query params per store label, JSON: {"pgvector": {"ef_search": 200}}'),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of --sample.")] = 0,
    mode: Annotated[
        str | None,
        typer.Option(
            "--mode",
            help="Compare search modes instead, e.g. vector,text,hybrid: hit@1, MRR and nDCG per "
            "store and mode over the labelled --queries (each with text and relevant keys).",
        ),
    ] = None,
    weight: Annotated[
        str,
        typer.Option("--weight", help="With --mode hybrid: fusion weights to sweep, e.g. 0.3,0.5,0.7."),
    ] = "0.5",
    keep: Annotated[
        float,
        typer.Option(
            "--keep",
            help="With --mode: the share of relevant results the reported min_score threshold keeps.",
        ),
    ] = 0.9,
) -> None:
    """Run the same queries against every store and judge them against exact search.

    Exit codes: 0 every gate held, 1 a gate failed, 2 bad arguments, 3 a backend failed.
    """
    from ..compare import Gates, load_queries
    from ..compare import compare as run_compare

    if mode is not None:
        _compare_modes(urls, queries, mode, weight, k, embedder, (as_json, output), markdown, report, keep)
        return
    if (queries is None) == (sample is None):
        err_console.print("[red]error:[/red] give exactly one of --queries FILE or --sample N")
        raise typer.Exit(ExitCode.USAGE)
    parsed_filters = [parse_json_arg(f, "--filter") for f in filters or []]
    query_params = parse_json_arg(params, "--params") or {}
    if not isinstance(query_params, dict) or not all(isinstance(v, dict) for v in query_params.values()):
        err_console.print("[red]error:[/red] --params must be a JSON object of objects, keyed by store label")
        raise typer.Exit(ExitCode.USAGE)
    gates = Gates(
        min_recall,
        max_violations,
        min_overlap,
        max_underfill,
        allow_refused=allow_refused,
        max_missing=max_missing,
    )
    stores = _stores(urls)
    with reported_errors():
        if queries is not None:
            if len(parsed_filters) > 1:
                raise ConfigurationError("--queries takes at most one --filter (the default filter)")
            query_set: Any = load_queries(queries)
            filter_arg: Any = parsed_filters[0] if parsed_filters else None
            needs_text = any(q.vector is None for q in query_set)
        else:
            query_set = sample
            filter_arg = parsed_filters or None
            needs_text = False
        first = next(iter(stores.values())) if isinstance(stores, dict) else stores[0]
        embed = _embedder(embedder, first) if needs_text else None
        result = run_compare(
            stores,
            query_set,
            k,
            truth=truth,
            filter=filter_arg,
            embedder=embed,
            concurrency=concurrency,
            warmup=warmup,
            params=query_params,
            gates=gates,
            seed=seed,
        )
    _outputs(result, as_json, output, report, markdown)
    if not result.passed:
        raise typer.Exit(ExitCode.PROBLEM)


def _outputs(
    result: Any, as_json: bool, output: Path | None, report: Path | None, markdown: Path | None
) -> None:
    """The tables (stderr under ``--json``), the files, the JSON document, then each failed
    gate once on stderr with the worst queries' diffs after the tables."""
    console = err_console if as_json else out_console
    result.print_table(console)
    if output is not None:
        err_console.print(f"JSON written to {result.write_json(output)}", highlight=False, markup=False)
    if report is not None:
        err_console.print(f"report written to {result.write_report(report)}", highlight=False, markup=False)
    if markdown is not None:
        err_console.print(
            f"Markdown written to {result.write_markdown(markdown)}", highlight=False, markup=False
        )
    if as_json:
        emit_json(result.to_dict())
    if not result.passed:
        console.print(result.explain(), markup=False, highlight=False)
        for g in result.failures:
            err_console.print(f"[red]gate failed:[/red] {escape(g.message)}", markup=True, highlight=False)


def _compare_modes(
    urls: list[str],
    queries: Path | None,
    mode: str,
    weight: str,
    k: int,
    embedder: str | None,
    json_out: tuple[bool, Path | None],
    markdown: Path | None,
    report: Path | None,
    keep: float,
) -> None:
    """``--mode``: the per-mode relevance table (and the hybrid weight sweep), then the score
    thresholds per store, model and mode."""
    from rich.table import Table

    from ..compare import compare_modes, load_queries

    if queries is None:
        err_console.print("[red]error:[/red] --mode needs --queries FILE with text and relevant keys")
        raise typer.Exit(ExitCode.USAGE)
    stores = _stores(urls)
    with reported_errors():
        modes = [m.strip() for m in mode.split(",") if m.strip()]
        try:
            weights = [float(w) for w in weight.split(",") if w.strip()]
        except ValueError:
            raise ConfigurationError(f"--weight takes numbers separated by commas, got {weight!r}") from None
        query_set = load_queries(queries)
        first = next(iter(stores.values())) if isinstance(stores, dict) else stores[0]
        needs_vectors = any(m != "text" for m in modes) and any(q.vector is None for q in query_set)
        embed = _embedder(embedder, first) if needs_vectors else None
        result = compare_modes(stores, query_set, k, modes=modes, weights=weights, embedder=embed, keep=keep)
    as_json, output = json_out
    console = err_console if as_json else out_console
    table = Table(title=f"retrieval quality by search mode (k={k})")
    for header in result.headers():
        table.add_column(header, overflow="fold")
    for row in result.table_rows():
        table.add_row(*row)
    console.print(table)
    for label in dict.fromkeys(r.store for r in result.rows):
        best = result.best(label)
        if best is not None:
            console.print(f"{label}: best MRR with {best.label} ({best.mrr:.3f})")
    thresholds = Table(
        title=f"score thresholds keeping {keep:.0%} of the relevant results (scores: n: p10 / median / p90)"
    )
    for header in result.threshold_headers():
        thresholds.add_column(header, overflow="fold")
    for row in result.threshold_rows():
        thresholds.add_row(*row)
    console.print(thresholds)
    if output is not None:
        output.write_text(json.dumps(result.to_dict(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        err_console.print(f"JSON written to {output}", highlight=False, markup=False)
    if as_json:
        emit_json(result.to_dict())
    if markdown is not None:
        with markdown.open("a", encoding="utf-8") as out:
            out.write(result.markdown())
        err_console.print(f"Markdown written to {markdown}")
    if report is not None:
        err_console.print(f"report written to {result.write_report(report)}")


def register(app: typer.Typer) -> None:
    app.command("compare")(compare)
