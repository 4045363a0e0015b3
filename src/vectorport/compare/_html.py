"""The HTML report: one self-contained file (inline CSS and SVG plots drawn here, nothing
fetched from the network), suitable as a CI artifact and readable offline."""

from __future__ import annotations

import functools
import html
import json
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ._table import verdict_text

if TYPE_CHECKING:
    from ._result import ComparisonResult

__all__ = ["bar_chart", "heatmap", "line_chart", "page", "render_html"]

PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f")
BAR_H = 14
"""The height of one bar of a bar chart, with its gap of 2."""
FONT = "font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif"


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _short(text: str, n: int = 38) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _nice_max(value: float) -> float:
    if value <= 0 or math.isnan(value):
        return 1.0
    exp = 10.0 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * exp:
            return float(step * exp)
    return float(10 * exp)


def _legend(names: Sequence[str], x: float, y: float, width: float = 760) -> list[str]:
    """One row of colour keys from ``x`` to ``width``; long names are shortened to fit."""
    out = []
    step = min(150.0, (width - x - 10) / max(len(names), 1))
    chars = max(4, int((step - 20) / 6.2))
    for i, name in enumerate(names):
        cx = x + i * step
        colour = PALETTE[i % len(PALETTE)]
        out.append(f'<rect x="{cx:.1f}" y="{y - 9:.1f}" width="10" height="10" fill="{colour}"/>')
        out.append(
            f'<text x="{cx + 14:.1f}" y="{y:.1f}" font-size="11"><title>{_e(name)}</title>'
            f"{_e(_short(name, chars))}</text>"
        )
    return out


def _svg_open(plot_id: str, title: str, width: float, height: float) -> list[str]:
    """A plot's opening: the ``<svg>`` element (found by the page's CHECK), its title and heading."""
    return [
        f'<svg class="plot" id="{_e(plot_id)}" role="img" xmlns="http://www.w3.org/2000/svg" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" style="{FONT}">',
        f"<title>{_e(title)}</title>",
        f'<text x="0" y="16" font-size="14" font-weight="600">{_e(title)}</text>',
    ]


def bar_chart(
    plot_id: str,
    title: str,
    categories: Sequence[str],
    series: Sequence[tuple[str, Sequence[float]]],
    *,
    unit: str = "",
    max_value: float | None = None,
    threshold: float | None = None,
    fmt: str = ".3f",
) -> str:
    """A horizontal grouped bar chart: one row per category, one bar per series."""
    width, label_w, right = 760, 250, 70
    bar_h, gap = BAR_H, 12
    group_h = bar_h * len(series) + gap
    top = 46
    height = top + group_h * len(categories) + 30
    values = [v for _, vs in series for v in vs if not math.isnan(v)]
    vmax = max_value if max_value is not None else _nice_max(max(values, default=1.0))
    plot_w = width - label_w - right
    parts = [
        *_svg_open(plot_id, title, width, height),
        *_legend([name for name, _ in series], label_w, 36),
    ]
    for t in range(5):
        x = label_w + plot_w * t / 4
        parts.append(f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{height - 26}" stroke="#e3e3e3"/>')
        parts.append(
            f'<text x="{x:.1f}" y="{height - 12}" font-size="10" text-anchor="middle" fill="#555">'
            f"{vmax * t / 4:g}{_e(unit)}</text>"
        )
    bar = functools.partial(_bar, x0=label_w, plot_w=plot_w, vmax=vmax, fmt=fmt, unit=unit)
    for ci, cat in enumerate(categories):
        y0 = top + ci * group_h
        parts.append(
            f'<text x="{label_w - 8}" y="{y0 + group_h / 2:.1f}" font-size="11" text-anchor="end" '
            f'dominant-baseline="middle"><title>{_e(cat)}</title>{_e(_short(cat))}</text>'
        )
        for si, (name, vs) in enumerate(series):
            parts += bar(y0 + si * bar_h, vs[ci], PALETTE[si % len(PALETTE)], f"{_e(name)} · {_e(cat)}")
    if threshold is not None and 0 <= threshold <= vmax:
        x = label_w + threshold / vmax * plot_w
        parts.append(
            f'<line class="threshold" x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{height - 26}" '
            f'stroke="#d62728" stroke-width="1.5" stroke-dasharray="4 3">'
            f"<title>gate {threshold:g}</title></line>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _bar(
    y: float, v: float, color: str, title: str, *, x0: float, plot_w: float, vmax: float, fmt: str, unit: str
) -> list[str]:
    """One bar of a bar chart at ``y`` with its value beside it (``n/a`` for NaN)."""
    if math.isnan(v):
        return [f'<text x="{x0 + 4}" y="{y + 11}" font-size="10" fill="#999">n/a</text>']
    w = max(0.0, min(v, vmax)) / vmax * plot_w
    return [
        f'<rect class="bar" x="{x0}" y="{y}" width="{w:.2f}" height="{BAR_H - 2}" fill="{color}">'
        f"<title>{title}: {format(v, fmt)}{_e(unit)}</title></rect>",
        f'<text x="{x0 + w + 4:.1f}" y="{y + 10}" font-size="10" fill="#333">{format(v, fmt)}</text>',
    ]


def _log_ticks(lo: float, hi: float) -> list[float]:
    """Tick values for a log axis over whole decades ``lo``..``hi``: 1-2-5 steps when it spans
    few decades, decades only otherwise."""
    decades = range(round(math.log10(lo)), round(math.log10(hi)) + 1)
    steps = (1, 2, 5) if len(decades) <= 3 else (1,)
    return [m * 10.0**d for d in decades for m in steps if m * 10.0**d <= hi * (1 + 1e-9)]


def line_chart(
    plot_id: str,
    title: str,
    series: Sequence[tuple[str, Sequence[float]]],
    *,
    x_label: str,
    y_label: str,
    log_x: bool = False,
) -> str:
    """Cumulative distribution lines: each series' sorted values on x, fraction on y.

    ``log_x`` puts x on a log scale over whole decades, so one slow outlier does not squeeze
    every other value against the left edge (latencies)."""
    width, height, left, bottom, top, right = 760, 300, 60, 40, 46, 20
    values = [v for _, vs in series for v in vs if not math.isnan(v)]
    pw, ph = width - left - right, height - top - bottom
    to_x, x_ticks = _x_scale(values, log_x, left, pw)
    parts = [
        *_svg_open(plot_id, title, width, height),
        *_legend([name for name, _ in series], left, 36),
    ]
    for x, value in x_ticks:
        parts.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + ph}" stroke="#e3e3e3"/>')
        parts.append(
            f'<text class="tick" x="{x:.1f}" y="{top + ph + 14}" font-size="10" text-anchor="middle" '
            f'fill="#555">{value:g}</text>'
        )
    for t in range(5):
        y = top + ph - ph * t / 4
        parts.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + pw}" y2="{y:.1f}" stroke="#e3e3e3"/>')
        parts.append(
            f'<text x="{left - 6}" y="{y + 3:.1f}" font-size="10" text-anchor="end" fill="#555">'
            f"{t / 4:g}</text>"
        )
    parts.append(
        f'<text x="{left + pw / 2}" y="{height - 4}" font-size="11" text-anchor="middle">{_e(x_label)}</text>'
    )
    parts.append(
        f'<text x="12" y="{top + ph / 2}" font-size="11" text-anchor="middle" '
        f'transform="rotate(-90 12 {top + ph / 2})">{_e(y_label)}</text>'
    )
    for si, (name, vs) in enumerate(series):
        pts = _cdf(vs)
        if not pts:
            continue
        coords = " ".join(f"{to_x(v):.1f},{top + ph - f * ph:.1f}" for v, f in pts)
        parts.append(
            f'<polyline class="line" fill="none" stroke="{PALETTE[si % len(PALETTE)]}" stroke-width="2" '
            f'points="{coords}"><title>{_e(name)}</title></polyline>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _x_scale(
    values: Sequence[float], log_x: bool, left: float, pw: float
) -> tuple[Callable[[float], float], list[tuple[float, float]]]:
    """Value → x over ``pw`` pixels from ``left``, and the ticks (x, value): whole decades on a
    log scale (when asked and there are positive values), else four steps up to a round maximum."""
    positive = [v for v in values if v > 0]
    if log_x and positive:
        lo = 10.0 ** math.floor(math.log10(min(positive)))
        hi = 10.0 ** math.ceil(math.log10(max(positive)))
        hi = hi if hi > lo else lo * 10
        span = math.log10(hi) - math.log10(lo)

        def to_log_x(v: float) -> float:
            return left + (math.log10(min(max(v, lo), hi)) - math.log10(lo)) / span * pw

        return to_log_x, [(to_log_x(t), t) for t in _log_ticks(lo, hi)]
    xmax = _nice_max(max(values, default=1.0))

    def to_x(v: float) -> float:
        return left + min(v, xmax) / xmax * pw

    return to_x, [(left + pw * t / 4, xmax * t / 4) for t in range(5)]


def _cdf(values: Sequence[float]) -> list[tuple[float, float]]:
    """The points (value, fraction of values up to it) of a cumulative distribution curve."""
    clean = sorted(v for v in values if not math.isnan(v))
    if not clean:
        return []
    n = len(clean)
    step = max(1, n // 400)  # a few hundred points draw the same curve
    return [*[(v, (i + 1) / n) for i, v in enumerate(clean)][::step], (clean[-1], 1.0)]


def heatmap(plot_id: str, title: str, labels: Sequence[str], matrix: Sequence[Sequence[float]]) -> str:
    """A square matrix of values in [0, 1] (pairwise overlap), white to blue."""
    cell, left, top = 64, 170, 40
    n = len(labels)
    width, height = left + cell * n + 20, top + cell * n + 110
    parts = _svg_open(plot_id, title, width, height)
    for i, row_label in enumerate(labels):
        y = top + i * cell
        parts.append(
            f'<text x="{left - 8}" y="{y + cell / 2}" font-size="11" text-anchor="end" '
            f'dominant-baseline="middle">{_e(_short(row_label, 24))}</text>'
        )
        for j, v in enumerate(matrix[i]):
            x = left + j * cell
            shade = 0.0 if math.isnan(v) else max(0.0, min(1.0, v))
            r, g, b = (int(255 - (255 - c) * shade) for c in (31, 95, 170))
            text = "n/a" if math.isnan(v) else f"{v:.3f}"
            ink = "#fff" if shade > 0.6 else "#222"
            parts.append(
                f'<rect class="cell" x="{x}" y="{y}" width="{cell - 2}" height="{cell - 2}" '
                f'fill="rgb({r},{g},{b})"><title>{_e(row_label)} vs {_e(labels[j])}: {text}</title></rect>'
            )
            parts.append(
                f'<text x="{x + cell / 2 - 1}" y="{y + cell / 2}" font-size="11" text-anchor="middle" '
                f'dominant-baseline="middle" fill="{ink}">{text}</text>'
            )
    for j, col_label in enumerate(labels):
        cx = left + j * cell + cell / 2
        cy = top + n * cell + 8
        parts.append(
            f'<text x="{cx}" y="{cy}" font-size="11" text-anchor="end" transform="rotate(-40 {cx} {cy})">'
            f"{_e(_short(col_label, 24))}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


# ---------------------------------------------------------------------- the page
CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:24px auto;max-width:1600px;
color:#1d1d1f;padding:0 16px}
h1{font-size:22px;margin-bottom:4px}h2{font-size:17px;margin-top:32px;border-bottom:1px solid #ddd;
padding-bottom:4px}
.verdict{display:inline-block;padding:4px 10px;border-radius:4px;font-weight:600;color:#fff}
.pass{background:#2e7d32}.fail{background:#c62828}.none{background:#777}
table{border-collapse:collapse;font-size:13px;margin:8px 0}
th,td{border:1px solid #ddd;padding:3px 6px;text-align:right;white-space:nowrap}th{background:#f5f5f7}
details{margin-top:32px}summary{font-size:17px;font-weight:600;cursor:pointer}
td.l,th.l{text-align:left;white-space:normal;overflow-wrap:anywhere}td.bad,p.bad{color:#c62828;font-weight:600}
.scroll{overflow-x:auto;max-width:100%}
.plots{display:flex;flex-wrap:wrap;gap:18px}.plots svg{background:#fff;border:1px solid #eee;padding:6px}
pre{background:#f5f5f7;padding:10px;overflow-x:auto;font-size:12px}
.muted{color:#666;font-size:13px}
"""
# A report is read at 1,280 px: the body grows to 1,600 px on wider screens, the summary is two
# tables (data and quality, latency) narrow enough that no column needs the scroll bar there.

# Reports nothing; marks on <html> how many plots the browser laid out (a CI smoke test reads it).
CHECK = """
(function(){var n=0;document.querySelectorAll('svg.plot').forEach(function(s){
var b=s.getBBox();if(b.width>0&&b.height>0&&s.querySelectorAll('rect,polyline').length>0)n++;});
document.documentElement.setAttribute('data-plots-rendered',String(n));
var hidden=0;document.querySelectorAll('div.scroll').forEach(function(d){
if(d.scrollWidth>d.clientWidth+1)hidden++;});
document.documentElement.setAttribute('data-tables-cut',String(hidden));})();
"""


def _f(v: float | None, fmt: str = ".4f") -> str:
    return "-" if v is None or math.isnan(v) else format(v, fmt)


def _table(headers: Sequence[str], rows: Sequence[Sequence[tuple[str, str]]], cls: str = "") -> str:
    out = [f'<div class="scroll"><table class="{cls}"><tr>']
    out += [f'<th class="{"l" if i == 0 else ""}">{_e(h)}</th>' for i, h in enumerate(headers)]
    out.append("</tr>")
    for row in rows:
        out.append("<tr>" + "".join(f'<td class="{c}">{v}</td>' for v, c in row) + "</tr>")
    out.append("</table></div>")
    return "".join(out)


def _latency_table(result: ComparisonResult) -> str:
    """Per store: latency percentiles (ms) and throughput over the timed queries."""
    rows = [
        [
            (_e(s.label), "l"),
            (str(s.overall.latency.count), ""),
            (_f(s.overall.latency.p50, ".2f"), ""),
            (_f(s.overall.latency.p95, ".2f"), ""),
            (_f(s.overall.latency.p99, ".2f"), ""),
            (_f(s.overall.latency.mean, ".2f"), ""),
            (_f(s.overall.latency.max, ".2f"), ""),
            (_f(s.overall.qps, ".0f"), ""),
        ]
        for s in result.stores
    ]
    headers = ["store", "timed queries", "p50 ms", "p95 ms", "p99 ms", "mean ms", "max ms", "QPS"]
    return _table(headers, rows)


def render_html(result: ComparisonResult) -> str:
    """The whole report as one HTML string."""
    labels = [s.label for s in result.stores]
    body = [
        *_heading(result),
        "<h2>Summary</h2>" + _summary_table(result),
        "<h2>Latency</h2>" + _latency_table(result),
        *_missing_notes(result),
        *_truth_note(result),
        '<h2>Plots</h2><div class="plots">' + "".join(_plots(result)) + "</div>",
    ]
    if result.filtered:
        body.append("<h2>Per filter</h2>" + _filter_table(result))
    if result.pairs:
        body.append("<h2>Agreement between stores</h2>" + _pairs_table(result))
    if result.gate_results:
        body += _gates(result)
    body.append(_config(result))
    return page(f"vectorport compare: {', '.join(labels)}", body)


def page(title: str, body: Sequence[str]) -> str:
    """A self-contained page: the report's CSS, ``body``, and the plot check script."""
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<style>{CSS}</style></head><body>" + "".join(body) + f"<script>{CHECK}</script></body></html>\n"
    )


def _heading(result: ComparisonResult) -> list[str]:
    """The title, what the truth is, and the verdict."""
    css = "none" if not result.gate_results else "pass" if result.passed else "fail"
    verdict = f'<span class="verdict {css}">{_e(verdict_text(result))}</span>'
    return [
        f"<h1>vectorport compare · {len(result.stores)} store(s), {len(result.queries)} queries, "
        f"k={result.k}</h1>",
        f'<p class="muted">truth: exact search over {len(result.truth)} records of {_e(result.truth.source)} '
        f"({result.truth.dimension}-d, {result.truth.metric.value}) · started "
        f"{_e(result.config.get('started_at', ''))} · vectorport {_e(result.config.get('vectorport'))}</p>",
        f"<p>{verdict}</p>",
    ]


def _labelled(result: ComparisonResult) -> bool:
    return bool(result.config.get("labelled_queries", 0) > 0)


def _below(value: float, threshold: float | None) -> bool:
    """Does ``value`` fail a minimum (NaN fails; no threshold: nothing fails)?"""
    return threshold is not None and not (value >= threshold)


def _summary_table(result: ComparisonResult) -> str:
    """Per store: records, recall and its shortfalls, distances, agreement with the first store."""
    k, g = result.k, result.gates
    first = result.stores[0].label
    pair_of = {p.b: p for p in result.pairs if p.a == first}
    headers = [
        "store", "backend", "records", "missing", "extra", f"recall@{k}", "min", "under-filled",
        "shortfall", "wrong", "violations", "dist err max", "dist agree", f"overlap@{k} vs {first}", "RBO",
    ]  # fmt: skip
    if _labelled(result):
        headers += [f"nDCG@{k}", "MRR", f"hit@{k}"]
    rows = []
    for s in result.stores:
        f = s.overall
        pair = pair_of.get(s.label)
        rc = s.records
        row = [
            (_e(s.label), "l"),
            (_e(s.backend), "l"),
            ("-" if rc is None else str(rc.count), ""),
            ("-" if rc is None else str(rc.missing), "bad" if rc is not None and rc.missing else ""),
            ("-" if rc is None else str(rc.extra), ""),
            (_f(f.recall), "bad" if _below(f.recall, g.min_recall) else ""),
            (_f(f.recall_min, ".2f"), ""),
            (_f(f.underfill, ".1%"), "bad" if f.underfilled and g.max_underfill is not None else ""),
            (str(f.shortfall), ""),
            (str(f.wrong), ""),
            (str(f.violations), "bad" if f.violations else ""),
            (_f(f.distance_error_max, ".1e"), ""),
            (_f(f.distance_agreement, ".1%"), ""),
            ("-" if pair is None else _f(pair.overall.overlap), ""),
            ("-" if pair is None else _f(pair.overall.rbo), ""),
        ]
        if _labelled(result):
            rel = f.relevance
            row += [(_f(getattr(rel, name) if rel else None), "") for name in ("ndcg", "mrr", "hit")]
        rows.append(row)
    return _table(headers, rows)


def _missing_notes(result: ComparisonResult) -> list[str]:
    """One line per store that lacks records of the truth, naming the first of them."""
    out = []
    for s in result.stores:
        rc = s.records
        if rc is None or not rc.missing:
            continue
        shown = ", ".join(rc.missing_keys) + (", …" if rc.missing > len(rc.missing_keys) else "")
        out.append(f'<p class="bad">{_e(s.label)} lacks {rc.missing} record(s) of the truth: {_e(shown)}</p>')
    return out


def _truth_note(result: ComparisonResult) -> list[str]:
    """With relevance labels: how the exact truth itself scores on them."""
    rel = result.truth_relevance
    if not _labelled(result) or rel is None:
        return []
    k = result.k
    return [
        f'<p class="muted">exact truth on the labelled queries: nDCG@{k} {_f(rel.ndcg)}, '
        f"MRR {_f(rel.mrr)}, hit@{k} {_f(rel.hit)} ({rel.queries} queries)</p>"
    ]


def _plots(result: ComparisonResult) -> list[str]:
    """Recall and latency per store (and per filter), the latency CDF, the overlap heatmap."""
    k, stores, gate = result.k, result.stores, result.gates.min_recall
    labels = [s.label for s in stores]
    latency = [(p, [getattr(s.overall.latency, p) for s in stores]) for p in ("p50", "p95", "p99")]
    plots = [
        bar_chart(
            "plot-recall",
            f"recall@{k} per store",
            labels,
            [(f"recall@{k}", [s.overall.recall for s in stores])],
            max_value=1.0,
            threshold=gate,
        ),
        bar_chart("plot-latency", "latency per store (ms)", labels, latency, unit="", fmt=".2f"),
    ]
    if result.filtered:
        cats = [f"{gr.label} ({gr.selectivity:.1%})" for gr in result.groups]
        recall = [(s.label, [s.by_filter[gr.label].recall for gr in result.groups]) for s in stores]
        p50 = [(s.label, [s.by_filter[gr.label].latency.p50 for gr in result.groups]) for s in stores]
        plots.append(
            bar_chart(
                "plot-recall-filter",
                f"recall@{k} per filter (selectivity)",
                cats,
                recall,
                max_value=1.0,
                threshold=gate,
            )
        )
        plots.append(bar_chart("plot-latency-filter", "p50 latency per filter (ms)", cats, p50, fmt=".2f"))
    plots.append(
        line_chart(
            "plot-latency-cdf",
            "latency distribution (CDF, log scale)",
            [(s.label, [o.latency * 1000 for o in s.outcomes]) for s in stores],
            x_label="ms per query (log scale)",
            y_label="fraction of queries",
            log_x=True,
        )
    )
    if len(labels) > 1:
        overlap = {(p.a, p.b): p.overall.overlap for p in result.pairs}
        matrix = [
            [1.0 if a == b else overlap.get((a, b), overlap.get((b, a), math.nan)) for b in labels]
            for a in labels
        ]
        plots.append(heatmap("plot-overlap", f"pairwise overlap@{k}", labels, matrix))
    return plots


def _filter_table(result: ComparisonResult) -> str:
    """Per filter group: its selectivity, then recall, under-fill, violations and p50 per store."""
    headers = ["filter", "selects", "queries"]
    for s in result.stores:
        headers += [f"{s.label} recall", "under-filled", "violations", "p50 ms"]
    rows = []
    for gr in result.groups:
        row = [
            (_e(gr.label), "l"),
            (f"{gr.selectivity:.1%} ({gr.matching})", ""),
            (str(len(gr.queries)), ""),
        ]
        for s in result.stores:
            f = s.by_filter[gr.label]
            row += [
                (_f(f.recall), "bad" if _below(f.recall, result.gates.min_recall) else ""),
                (_f(f.underfill, ".1%"), ""),
                (str(f.violations), "bad" if f.violations else ""),
                (_f(f.latency.p50, ".2f"), ""),
            ]
        rows.append(row)
    return _table(headers, rows)


def _pairs_table(result: ComparisonResult) -> str:
    """Per pair of stores: overlap@k (marked against the gate), its minimum, RBO."""
    rows = [
        [
            (_e(p.label), "l"),
            (_f(p.overall.overlap), "bad" if _below(p.overall.overlap, result.gates.min_overlap) else ""),
            (_f(p.overall.overlap_min, ".2f"), ""),
            (_f(p.overall.rbo), ""),
            (str(p.overall.queries), ""),
        ]
        for p in result.pairs
    ]
    k = result.k
    return _table(["pair", f"overlap@{k}", "min", f"RBO (p={result.config.get('rbo_p')})", "queries"], rows)


def _gates(result: ComparisonResult) -> list[str]:
    """Every gate (per-filter passes left out: noise), then the failures in detail."""
    rows = [
        [("pass" if r.passed else "FAIL", "l" if r.passed else "l bad"), (_e(r.message), "l")]
        for r in result.gate_results
        if not (r.passed and r.filter is not None)
    ]
    out = ["<h2>Gates</h2>" + _table(["", "gate"], rows)]
    if not result.passed:
        out.append("<h2>Failures in detail</h2><pre>" + _e(result.explain()) + "</pre>")
    return out


def _config(result: ComparisonResult) -> str:
    """The run configuration, folded: it is long and read only when a figure needs explaining."""
    timings = {name: round(v, 4) for name, v in result.timings.items()}
    config = {"config": result.config, "timings": timings, "gates": result.gates.to_dict()}
    return (
        "<details><summary>Run configuration (stores, versions, index parameters, timings)</summary><pre>"
        + _e(json.dumps(config, indent=2, default=str))
        + "</pre></details>"
    )
