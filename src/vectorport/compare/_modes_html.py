"""The HTML report of a search-mode comparison: the figures per store and mode, a bar chart of
them, and the score distributions of relevant vs non-relevant results with each threshold.
Self-contained like the comparison report (its CSS, inline SVG drawn here, no network)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._html import FONT, PALETTE, _e, _short, _table, bar_chart, page

if TYPE_CHECKING:
    from ._modes import ModeComparison, ModeFigures

__all__ = ["render_modes_html", "score_chart"]

RELEVANT, OTHER, THRESHOLD = PALETTE[2], "#9aa4ad", "#d62728"
_BINS = 24


def _ticks(lo: float, hi: float) -> list[float]:
    return [lo + (hi - lo) * i / 4 for i in range(5)]


@dataclass(frozen=True)
class _Axes:
    """Where a score chart draws: the score range ``lo``..``hi`` across the plot's width, the
    shares of relevant results above the axis and of the others below it."""

    lo: float
    hi: float
    top_share: float
    width: int = 510
    height: int = 250
    left: int = 44
    right: int = 16
    top: int = 58
    bottom: int = 34

    @property
    def pw(self) -> float:
        return self.width - self.left - self.right

    @property
    def half(self) -> float:
        return (self.height - self.top - self.bottom) / 2

    @property
    def axis(self) -> float:
        return self.top + self.half

    @property
    def scale(self) -> float:
        return self.half / self.top_share

    def x(self, v: float) -> float:
        return self.left + (v - self.lo) / (self.hi - self.lo) * self.pw


def _range(values: Sequence[float]) -> tuple[float, float]:
    """The scores' range with a little room on both sides (some room when all are equal)."""
    lo, hi = (min(values), max(values)) if values else (0.0, 1.0)
    pad = (hi - lo) * 0.04 or max(abs(hi) * 0.05, 1e-3)
    return lo - pad, hi + pad


def _shares(group: Sequence[float], lo: float, hi: float) -> list[float]:
    """The share of ``group`` in each of the chart's bins."""
    counts = [0] * _BINS
    for v in group:
        counts[min(_BINS - 1, int((v - lo) / (hi - lo) * _BINS))] += 1
    return [c / len(group) if group else 0.0 for c in counts]


def score_chart(
    plot_id: str,
    title: str,
    subtitle: str,
    relevant: Sequence[float],
    other: Sequence[float],
    threshold: float | None,
    note: str,
) -> str:
    """A back-to-back histogram of one row's scores: the share of relevant results per score
    bin above the axis, of non-relevant ones below, and the threshold as a dashed line."""
    lo, hi = _range([*relevant, *other] + ([threshold] if threshold is not None else []))
    rel, oth = _shares(relevant, lo, hi), _shares(other, lo, hi)
    a = _Axes(lo, hi, max([*rel, *oth, 0.05]))
    parts = [
        f'<svg class="plot scores" id="{_e(plot_id)}" role="img" xmlns="http://www.w3.org/2000/svg" '
        f'width="{a.width}" height="{a.height}" viewBox="0 0 {a.width} {a.height}" style="{FONT}">',
        f"<title>{_e(title)}: {_e(subtitle)}</title>",
        f'<text x="0" y="15" font-size="13" font-weight="600">{_e(_short(title, 70))}</text>',
        f'<text x="0" y="31" font-size="11" fill="#555">{_e(_short(subtitle, 88))}</text>',
        f'<rect x="{a.left}" y="38" width="10" height="10" fill="{RELEVANT}"/>',
        f'<text x="{a.left + 14}" y="47" font-size="11">relevant ({len(relevant)}) ↑</text>',
        f'<rect x="{a.left + 130}" y="38" width="10" height="10" fill="{OTHER}"/>',
        f'<text x="{a.left + 144}" y="47" font-size="11">not relevant ({len(other)}) ↓</text>',
        *_score_axes(a),
        *_score_bars(a, rel, oth),
        f'<line x1="{a.left}" y1="{a.axis:.1f}" x2="{a.left + a.pw}" y2="{a.axis:.1f}" stroke="#333"/>',
    ]
    if threshold is not None:
        parts += _threshold_line(a, threshold, note)
    parts.append("</svg>")
    return "".join(parts)


def _score_axes(a: _Axes) -> list[str]:
    """The score ticks with their grid lines, the axis title and the largest share."""
    parts = []
    floor = a.top + 2 * a.half
    for t in _ticks(a.lo, a.hi):
        x = a.x(t)
        parts.append(f'<line x1="{x:.1f}" y1="{a.top}" x2="{x:.1f}" y2="{floor}" stroke="#eee"/>')
        parts.append(
            f'<text x="{x:.1f}" y="{a.height - a.bottom + 14}" font-size="10" text-anchor="middle" '
            f'fill="#555">{t:.3g}</text>'
        )
    parts.append(
        f'<text x="{a.left + a.pw / 2}" y="{a.height - 4}" font-size="11" text-anchor="middle">score</text>'
    )
    parts.append(
        f'<text x="{a.left - 6}" y="{a.top + 8}" font-size="10" text-anchor="end" fill="#555">'
        f"{a.top_share:.0%}</text>"
    )
    return parts


def _score_bars(a: _Axes, rel: Sequence[float], oth: Sequence[float]) -> list[str]:
    """Per bin, the relevant share above the axis and the others' below."""
    parts = []
    bin_w, axis, scale = a.pw / _BINS, a.axis, a.scale
    for i, (r, o) in enumerate(zip(rel, oth, strict=True)):
        x = a.left + i * bin_w
        b_lo, b_hi = a.lo + (a.hi - a.lo) * i / _BINS, a.lo + (a.hi - a.lo) * (i + 1) / _BINS
        span = f"{b_lo:.3g} to {b_hi:.3g}"
        if r > 0:
            parts.append(
                f'<rect class="bar" x="{x + 0.5:.1f}" y="{axis - r * scale:.1f}" width="{bin_w - 1:.1f}" '
                f'height="{r * scale:.1f}" fill="{RELEVANT}"><title>relevant, {span}: {r:.0%}</title></rect>'
            )
        if o > 0:
            parts.append(
                f'<rect class="bar" x="{x + 0.5:.1f}" y="{axis:.1f}" width="{bin_w - 1:.1f}" '
                f'height="{o * scale:.1f}" fill="{OTHER}"><title>not relevant, {span}: {o:.0%}</title></rect>'
            )
    return parts


def _threshold_line(a: _Axes, threshold: float, note: str) -> list[str]:
    """The min_score threshold as a dashed line, its note on the side with room."""
    x = a.x(threshold)
    anchor = "end" if x > a.left + a.pw * 0.6 else "start"
    dx = -4 if anchor == "end" else 4
    return [
        f'<line class="threshold" x1="{x:.1f}" y1="{a.top - 4}" x2="{x:.1f}" y2="{a.top + 2 * a.half}" '
        f'stroke="{THRESHOLD}" stroke-width="1.5" stroke-dasharray="4 3">'
        f"<title>min_score {threshold:.4g}</title></line>",
        f'<text x="{x + dx:.1f}" y="{a.top + 2 * a.half - 6:.1f}" font-size="10" fill="{THRESHOLD}" '
        f'text-anchor="{anchor}">{_e(note)}</text>',
    ]


def _note(row: ModeFigures) -> str:
    t = row.scores
    assert t is not None and t.threshold is not None
    text = f"min_score {t.threshold:.4g}: keeps {t.relevant_kept:.0%}"
    if not math.isnan(t.other_dropped):
        text += f", drops {t.other_dropped:.0%} of others"
    return text


def render_modes_html(result: ModeComparison) -> str:
    """The whole search-mode report as one HTML string."""
    k, keep = result.k, result.keep
    stores = list(dict.fromkeys(r.store for r in result.rows))
    labels = list(dict.fromkeys(r.label for r in result.rows))
    queries = max((r.queries for r in result.rows), default=0)
    body = [
        f"<h1>vectorport compare --mode · {len(stores)} store(s), {queries} labelled queries, k={k}</h1>",
        '<p class="muted">hit@1, MRR and nDCG@k per store and search mode (hybrid: per fusion '
        "weight), and the scores of relevant vs non-relevant results with the min_score that keeps "
        f"{keep:.0%} of the relevant ones.</p>",
    ]
    rows = [[(_e(c), "l" if i < 2 else "") for i, c in enumerate(row)] for row in result.table_rows()]
    body.append("<h2>Retrieval quality by mode</h2>" + _table(result.headers(), rows))
    best = [(s, result.best(s)) for s in stores]
    body.append(
        '<p class="muted">'
        + " · ".join(f"{_e(s)}: best MRR with {_e(b.label)} ({b.mrr:.3f})" for s, b in best if b is not None)
        + "</p>"
    )
    body.append('<h2>Charts</h2><div class="plots">' + "".join(_charts(result, stores, labels)) + "</div>")

    rows = [[(_e(c), "l" if i < 4 else "") for i, c in enumerate(row)] for row in result.threshold_rows()]
    body.append(
        f'<h2 id="thresholds">Score thresholds (keeping {keep:.0%} of the relevant results)</h2>'
        '<p class="muted">score = what min_score compares (Match.score, higher is better): the '
        "vector similarity in vector and hybrid modes (cosine: 1 &minus; cosine distance; "
        "euclidean: &minus;L2; dot: the dot product), the store's text score in text mode. Each "
        "scale belongs to one model and mode: re-tune min_score when either changes. A scores cell "
        "reads n: p10 / median / p90.</p>" + _table(result.threshold_headers(), rows)
    )
    body.append('<div class="plots">' + "".join(_score_charts(result)) + "</div>")
    title = f"vectorport compare --mode: {', '.join(stores)}"
    return page(title, body)


def _charts(result: ModeComparison, stores: list[str], labels: list[str]) -> list[str]:
    """MRR and hit@1 per search mode, a bar per store."""

    def figure(store: str, label: str, name: str) -> float:
        row = next((r for r in result.rows if r.store == store and r.label == label), None)
        return math.nan if row is None else float(getattr(row, name))

    return [
        bar_chart(
            f"plot-{name}",
            f"{title} per search mode",
            labels,
            [(s, [figure(s, lb, name) for lb in labels]) for s in stores],
            max_value=1.0,
        )
        for name, title in (("mrr", "MRR"), ("hit_at_1", "hit@1"))
    ]


def _score_charts(result: ModeComparison) -> list[str]:
    """The score distributions of each row that has scores, with its threshold."""
    plots = []
    for i, row in enumerate(result.rows):
        t = row.scores
        if t is None or not (row.relevant_scores or row.other_scores):
            continue
        plots.append(
            score_chart(
                f"plot-scores-{i}",
                f"{row.store} · {row.label}",
                f"{t.kind}; model {row.model or 'not recorded'}",
                row.relevant_scores,
                row.other_scores,
                t.threshold,
                _note(row) if t.threshold is not None else "",
            )
        )
    return plots
