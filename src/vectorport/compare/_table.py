"""The text views of a comparison: rich tables per store, per filter, per pair, and gates, printed
to a terminal or rendered as Markdown (a CI job summary) from the same tables."""

from __future__ import annotations

import io
import math
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from ._result import ComparisonResult, StoreReport

__all__ = ["print_tables", "render_markdown", "render_text", "tables", "verdict_text"]


def _num(value: float | None, fmt: str = ".4f") -> str:
    if value is None or math.isnan(value):
        return "-"
    return format(value, fmt)


def _pct(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.1%}"


def _recall_style(value: float, threshold: float | None) -> str:
    if math.isnan(value):
        return "dim"
    if threshold is not None:
        return "green" if value >= threshold else "bold red"
    return "green" if value >= 0.999 else ("yellow" if value >= 0.9 else "red")


def tables(result: ComparisonResult) -> list[Table]:
    """The tables, in print order."""
    out = [_main_table(result)]
    if result.filtered:
        out.append(_filter_table(result))
    if len(result.pairs) > 1:
        out.append(_pairs_table(result))
    if result.gate_results:
        out.append(_gates_table(result))
    return out


def _main_table(result: ComparisonResult) -> Table:
    """One row per store: records, recall and its shortfalls, agreement with the first store,
    latency; with relevance labels, nDCG, MRR and hit@k (and the exact truth's own)."""
    k = result.k
    first = result.stores[0].label
    labelled = result.config.get("labelled_queries", 0) > 0
    main = Table(
        title=escape(
            f"vectorport compare: {len(result.queries)} queries, k={k}, truth = {result.truth.source} "
            f"({len(result.truth)} records)"
        ),
        title_justify="left",
    )
    main.add_column("store", justify="left")
    for col in (
        "records", "missing", f"recall@{k}", "min", "under-filled", "wrong", "violations", "dist err",
        escape(f"overlap@{k} vs {first}"), "RBO", "p50 ms", "p95 ms", "p99 ms", "QPS",
    ):  # fmt: skip
        main.add_column(col, justify="right")
    if labelled:
        for col in (f"nDCG@{k}", "MRR", f"hit@{k}"):
            main.add_column(col, justify="right")
    for s in result.stores:
        main.add_row(*_store_row(result, s, labelled))
    if labelled and result.truth_relevance is not None:
        rel = result.truth_relevance
        blank = [""] * 14
        main.add_row("[dim]exact truth[/dim]", *blank, _num(rel.ndcg), _num(rel.mrr), _num(rel.hit))
    return main


def _store_row(result: ComparisonResult, s: StoreReport, labelled: bool) -> list[str]:
    first = result.stores[0].label
    pair = next((p for p in result.pairs if p.a == first and p.b == s.label), None)
    f = s.overall
    rc = s.records
    row = [
        f"{escape(s.label)} [dim]({escape(s.backend)})[/dim]",
        "-" if rc is None else str(rc.count),
        "-" if rc is None else (f"[bold red]{rc.missing}[/]" if rc.missing else "0"),
        f"[{_recall_style(f.recall, result.gates.min_recall)}]{_num(f.recall)}[/]",
        _num(f.recall_min, ".2f"),
        f"{_pct(f.underfill)} ({f.shortfall})" if f.underfilled else "0",
        str(f.wrong),
        f"[bold red]{f.violations}[/]" if f.violations else "0",
        _num(f.distance_error_max, ".1e"),
        "-" if s.label == first else _num(pair.overall.overlap if pair else None),
        "-" if s.label == first else _num(pair.overall.rbo if pair else None),
        _num(f.latency.p50, ".2f"),
        _num(f.latency.p95, ".2f"),
        _num(f.latency.p99, ".2f"),
        _num(f.qps, ".0f"),
    ]
    if f.refused or f.errors:
        row[0] += f" [red]({f.refused} refused, {f.errors} failed)[/]"
    if labelled:
        rel = f.relevance
        row += [_num(getattr(rel, name) if rel else None) for name in ("ndcg", "mrr", "hit")]
    return row


def _filter_table(result: ComparisonResult) -> Table:
    """Per filter group: its selectivity, then recall / under-fill / violations / p50 per store."""
    per = Table(
        title=f"per filter: recall@{result.k} / under-filled / violations / p50 ms", title_justify="left"
    )
    per.add_column("filter")
    per.add_column("selects", justify="right")
    per.add_column("queries", justify="right")
    for s in result.stores:
        per.add_column(escape(s.label), justify="right")
    for g in result.groups:
        cells = []
        for s in result.stores:
            f = s.by_filter[g.label]
            style = _recall_style(f.recall, result.gates.min_recall)
            cells.append(
                f"[{style}]{_num(f.recall, '.3f')}[/] / {_pct(f.underfill)} / "
                f"{f.violations} / {_num(f.latency.p50, '.1f')}"
            )
        per.add_row(escape(g.label), f"{g.selectivity:.1%} ({g.matching})", str(len(g.queries)), *cells)
    return per


def _pairs_table(result: ComparisonResult) -> Table:
    """Per pair of stores: overlap@k, its minimum, rank-biased overlap."""
    pairs = Table(
        title=f"agreement between stores (overlap@{result.k}, rank-biased overlap)", title_justify="left"
    )
    for col in ("pair", "overlap", "min", "RBO"):
        pairs.add_column(col, justify="left" if col == "pair" else "right")
    for p in result.pairs:
        pairs.add_row(
            escape(p.label),
            _num(p.overall.overlap),
            _num(p.overall.overlap_min, ".2f"),
            _num(p.overall.rbo),
        )
    return pairs


def _gates_table(result: ComparisonResult) -> Table:
    """Every gate; per-filter passes are noise and left out, failures are shown in full."""
    gates = Table(title="gates", title_justify="left", show_header=False)
    gates.add_column("")
    gates.add_column("")
    for gr in result.gate_results:
        if gr.passed and gr.filter is not None:
            continue
        gates.add_row("[green]pass[/]" if gr.passed else "[bold red]FAIL[/]", escape(gr.message))
    return gates


def verdict_text(result: ComparisonResult) -> str:
    """One verdict for the terminal, Markdown and HTML: no gates is said as such, not as a pass."""
    gates = result.gate_results
    if not gates:
        return "no gates set (nothing checked against a threshold)"
    if result.passed:
        return f"all {len(gates)} gates passed"
    return f"{len(result.failures)} gate(s) failed"


def print_tables(result: ComparisonResult, console: Console | None = None) -> None:
    """Print every table to ``console`` (default: stdout)."""
    console = console or Console()
    for table in tables(result):
        console.print(table)


def render_text(result: ComparisonResult, width: int = 160) -> str:
    """The tables as plain text."""
    buffer = io.StringIO()
    print_tables(result, Console(file=buffer, width=width, color_system=None, force_terminal=False))
    return buffer.getvalue()


def _plain(cell: object) -> str:
    """A table cell as Markdown-safe plain text (rich markup removed, pipes escaped)."""
    text = cell.plain if isinstance(cell, Text) else Text.from_markup(str(cell)).plain
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(result: ComparisonResult) -> str:
    """The tables as GitHub-flavoured Markdown, e.g. for ``$GITHUB_STEP_SUMMARY``."""
    verdict = verdict_text(result) if result.passed else f"**FAILED** ({verdict_text(result)})"
    lines = [f"## vectorport compare: {verdict}", ""]
    for table in tables(result):
        if table.title:
            lines += [f"### {_plain(table.title)}", ""]
        columns = table.columns
        headers = [_plain(c.header) for c in columns]
        if not table.show_header:
            headers = [""] * len(columns)
        lines.append("| " + " | ".join(headers) + " |")
        lines.append("|" + "|".join("---" if c.justify == "left" else "---:" for c in columns) + "|")
        for row in zip(*(list(c.cells) for c in columns), strict=True):
            lines.append("| " + " | ".join(_plain(cell) for cell in row) + " |")
        lines.append("")
    return "\n".join(lines)
