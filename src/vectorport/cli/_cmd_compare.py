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
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .._embedder import Embedder
from .._exit import ExitCode
from ..compare import CompareOptions
from ..exceptions import ConfigurationError
from ._common import (
    emit_json,
    err_console,
    note_json,
    out_console,
    parse_json_arg,
    reported_errors,
    writable_path,
)
from ._options import with_options

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


Urls = Annotated[
    list[str],
    typer.Argument(
        help="Store URLs, optionally labelled: pg=postgresql://…/db?table=docs", show_default=False
    ),
]
QueriesFile = Annotated[
    Path | None,
    typer.Option(
        "--queries",
        "-Q",
        help="JSONL: one {vector | text, filter?, relevant?, id?} per line.",
        dir_okay=False,
    ),
]
Sample = Annotated[
    int | None, typer.Option("--sample", "-n", help="Draw N query vectors from the data instead.")
]
Filters = Annotated[
    list[str] | None,
    typer.Option(
        "--filter",
        "-f",
        help="JSON filter. With --sample: repeat for N queries per filter ('null' = unfiltered); "
        "with --queries: the filter of queries that have none.",
    ),
]
Truth = Annotated[
    str | None, typer.Option("--truth", help="Scan this store for the exact truth (default: the first).")
]
AsJson = Annotated[
    bool,
    typer.Option(
        "--json",
        help="Print every figure and the run config as one JSON document on stdout.",
        callback=note_json,
    ),
]
Output = Annotated[
    Path | None,
    typer.Option(
        "--output",
        "-o",
        help="Also write the JSON document to this file.",
        dir_okay=False,
        callback=writable_path,
    ),
]
Report = Annotated[
    Path | None,
    typer.Option(
        "--report",
        help="Write a self-contained HTML report with plots (a PATH ending in .md: Markdown).",
        dir_okay=False,
        callback=writable_path,
    ),
]
Markdown = Annotated[
    Path | None,
    typer.Option(
        "--markdown",
        help="Write the tables as Markdown, e.g. to $GITHUB_STEP_SUMMARY.",
        dir_okay=False,
        callback=writable_path,
    ),
]
EmbedderSpec = Annotated[
    str | None,
    typer.Option("--embedder", "-e", help="For text queries (default: the model the first store records)."),
]
Params = Annotated[
    str | None,
    typer.Option("--params", help='Query params per store label, JSON: {"pgvector": {"ef_search": 200}}'),
]
Mode = Annotated[
    str | None,
    typer.Option(
        "--mode",
        help="Compare search modes instead, e.g. vector,text,hybrid: hit@1, MRR and nDCG per "
        "store and mode over the labelled --queries (each with text and relevant keys).",
    ),
]
Weight = Annotated[
    str, typer.Option("--weight", help="With --mode hybrid: fusion weights to sweep, e.g. 0.3,0.5,0.7.")
]
Keep = Annotated[
    float,
    typer.Option(
        "--keep", help="With --mode: the share of relevant results the reported min_score threshold keeps."
    ),
]

COMPARE_FLAGS = {"k": "--k -k", "concurrency": "--concurrency -c"}
"""The flags whose name is not the option's own (``min_recall`` is ``--min-recall``)."""


@dataclass(frozen=True)
class _Outputs:
    """Where a comparison goes besides the tables: ``--json``, ``--output``, ``--report``, ``--markdown``."""

    as_json: bool
    output: Path | None
    report: Path | None
    markdown: Path | None

    @property
    def console(self) -> Console:
        """The tables' console: stderr under ``--json`` (stdout holds the JSON document)."""
        return err_console if self.as_json else out_console


@with_options(CompareOptions, COMPARE_FLAGS, {})
def compare(
    urls: Urls,
    queries: QueriesFile = None,
    sample: Sample = None,
    filters: Filters = None,
    truth: Truth = None,
    as_json: AsJson = False,
    output: Output = None,
    report: Report = None,
    markdown: Markdown = None,
    embedder: EmbedderSpec = None,
    params: Params = None,
    mode: Mode = None,
    weight: Weight = "0.5",
    keep: Keep = 0.9,
    *,
    options: dict[str, Any],
) -> None:
    """Run the same queries against every store and judge them against exact search.

    Exit codes: 0 every gate held, 1 a gate failed, 2 bad arguments, 3 a backend failed.
    """
    from ..compare import compare as run_compare

    outputs = _Outputs(as_json, output, report, markdown)
    if mode is not None:
        _compare_modes(urls, queries, (mode, weight, keep), options["k"], embedder, outputs)
        return
    if (queries is None) == (sample is None):
        err_console.print("[red]error:[/red] give exactly one of --queries FILE or --sample N")
        raise typer.Exit(ExitCode.USAGE)
    parsed_filters = [parse_json_arg(f, "--filter") for f in filters or []]
    query_params = _query_params(params)
    stores = _stores(urls)
    with reported_errors():
        query_set, filter_arg = _query_set(queries, sample, parsed_filters)
        needs_text = queries is not None and any(q.vector is None for q in query_set)
        embed = _embedder(embedder, _first(stores)) if needs_text else None
        result = run_compare(
            stores, query_set, truth=truth, filter=filter_arg, embedder=embed, params=query_params, **options
        )
    _outputs(result, outputs)
    if not result.passed:
        raise typer.Exit(ExitCode.PROBLEM)


def _query_params(params: str | None) -> dict[str, Any]:
    """``--params``: a JSON object of objects keyed by store label, or exit 2."""
    query_params = parse_json_arg(params, "--params") or {}
    if not isinstance(query_params, dict) or not all(isinstance(v, dict) for v in query_params.values()):
        err_console.print("[red]error:[/red] --params must be a JSON object of objects, keyed by store label")
        raise typer.Exit(ExitCode.USAGE)
    return query_params


def _query_set(queries: Path | None, sample: int | None, filters: list[Any]) -> tuple[Any, Any]:
    """The queries (a file's, or the number to sample) and the filter argument they go with."""
    from ..compare import load_queries

    if queries is None:
        return sample, filters or None
    if len(filters) > 1:
        raise ConfigurationError("--queries takes at most one --filter (the default filter)")
    return load_queries(queries), filters[0] if filters else None


def _first(stores: dict[str, str] | list[str]) -> str:
    return next(iter(stores.values())) if isinstance(stores, dict) else stores[0]


def _outputs(result: Any, outputs: _Outputs) -> None:
    """The tables (stderr under ``--json``), the files, the JSON document, then each failed
    gate once on stderr with the worst queries' diffs after the tables."""
    console = outputs.console
    result.print_table(console)
    if outputs.output is not None:
        _written("JSON", result.write_json(outputs.output))
    if outputs.report is not None:
        _written("report", result.write_report(outputs.report))
    if outputs.markdown is not None:
        _written("Markdown", result.write_markdown(outputs.markdown))
    if outputs.as_json:
        emit_json(result.to_dict())
    if not result.passed:
        console.print(result.explain(), markup=False, highlight=False)
        for g in result.failures:
            err_console.print(f"[red]gate failed:[/red] {escape(g.message)}", markup=True, highlight=False)


def _written(what: str, path: Path) -> None:
    err_console.print(f"{what} written to {path}", highlight=False, markup=False)


def _compare_modes(
    urls: list[str],
    queries: Path | None,
    how: tuple[str, str, float],
    k: int,
    embedder: str | None,
    outputs: _Outputs,
) -> None:
    """``--mode``: the per-mode relevance table (and the hybrid weight sweep), then the score
    thresholds per store, model and mode."""
    from ..compare import compare_modes, load_queries

    mode, weight, keep = how
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
        if not weights or any(not 0.0 <= w <= 1.0 for w in weights):
            raise ConfigurationError(f"--weight takes fusion weights between 0 and 1, got {weight!r}")
        query_set = load_queries(queries)
        needs_vectors = any(m != "text" for m in modes) and any(q.vector is None for q in query_set)
        embed = _embedder(embedder, _first(stores)) if needs_vectors else None
        result = compare_modes(stores, query_set, k, modes=modes, weights=weights, embedder=embed, keep=keep)
    _print_modes(result, outputs.console, k, keep)
    if outputs.output is not None:
        text = json.dumps(result.to_dict(), indent=2, ensure_ascii=False) + "\n"
        outputs.output.write_text(text, encoding="utf-8")
        _written("JSON", outputs.output)
    if outputs.as_json:
        emit_json(result.to_dict())
    if outputs.markdown is not None:
        with outputs.markdown.open("a", encoding="utf-8") as out:
            out.write(result.markdown())
        err_console.print(f"Markdown written to {outputs.markdown}")
    if outputs.report is not None:
        err_console.print(f"report written to {result.write_report(outputs.report)}")


def _print_modes(result: Any, console: Console, k: int, keep: float) -> None:
    """The relevance table per store and mode, each store's best, then the score thresholds."""
    console.print(
        _rich_table(f"retrieval quality by search mode (k={k})", result.headers(), result.table_rows())
    )
    for label in dict.fromkeys(r.store for r in result.rows):
        best = result.best(label)
        if best is not None:
            console.print(f"{label}: best MRR with {best.label} ({best.mrr:.3f})")
    title = f"score thresholds keeping {keep:.0%} of the relevant results (scores: n: p10 / median / p90)"
    console.print(_rich_table(title, result.threshold_headers(), result.threshold_rows()))


def _rich_table(title: str, headers: list[str], rows: list[list[str]]) -> Table:
    table = Table(title=title)
    for header in headers:
        table.add_column(header, overflow="fold")
    for row in rows:
        table.add_row(*row)
    return table


def register(app: typer.Typer) -> None:
    app.command("compare")(compare)
