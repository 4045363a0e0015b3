"""``alias status --report FILE.html``: the shadow figures over time as one self-contained page,
drawn with the comparison report's style and plots (:mod:`vectorport.compare._html`)."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from pathlib import Path

from ..compare._html import _e, _f, _table, bar_chart, line_chart, page
from ._figures import figures
from ._registry import ShadowRow
from ._report import AliasReport

__all__ = ["WINDOWS", "render_html", "write_html"]

WINDOWS = 12
"""Time windows the shadow log is cut into for the plots over time."""


def _windows(rows: Sequence[ShadowRow]) -> list[tuple[str, list[ShadowRow]]]:
    """The rows cut into at most :data:`WINDOWS` equal spans of time, each labelled by its start."""
    if not rows:
        return []
    lo, hi = min(r.at for r in rows), max(r.at for r in rows)
    n = WINDOWS if hi > lo else 1
    span = (hi - lo) / n or 1.0
    out: list[tuple[str, list[ShadowRow]]] = []
    for i in range(n):
        start = lo + i * span
        inside = [r for r in rows if start <= r.at < start + span or (i == n - 1 and r.at == hi)]
        label = dt.datetime.fromtimestamp(start, dt.UTC).strftime("%H:%M:%S")
        out.append((label, inside))
    return out


def _plots(rows: dict[str, list[ShadowRow]]) -> list[str]:
    members = list(rows)
    every = sorted((r for rs in rows.values() for r in rs), key=lambda r: r.at)
    cuts = [label for label, _ in _windows(every)]
    if not cuts:
        return ["<p>No shadowed queries yet.</p>"]
    spans = _windows(every)

    def series(pick: str) -> list[tuple[str, list[float]]]:
        out = []
        for m in members:
            values = []
            for _, inside in spans:
                mine = [r for r in inside if r.member == m]
                f = figures(mine)
                values.append(
                    {"overlap": f.overlap, "p99": f.candidate.p99, "errors": float(f.errors)}[pick]
                    if mine
                    else math.nan
                )
            out.append((m, values))
        return out

    serving = [("serving store", [figures(inside).serving.p99 for _, inside in spans])]
    return [
        bar_chart(
            "plot-overlap-time",
            "overlap@k with the served answer, by time",
            cuts,
            series("overlap"),
            max_value=1.0,
        ),
        bar_chart(
            "plot-p99-time", "p99 latency (ms), by time", cuts, serving + series("p99"), unit=" ms", fmt=".2f"
        ),
        bar_chart("plot-errors-time", "failed shadow queries, by time", cuts, series("errors"), fmt=".0f"),
        line_chart(
            "plot-latency-cdf",
            "latency distribution (ms)",
            [("serving store", [r.serving_ms for r in every if r.error is None])]
            + [(m, [r.candidate_ms or math.nan for r in rs if r.error is None]) for m, rs in rows.items()],
            x_label="ms",
            y_label="fraction of queries",
            log_x=True,
        ),
    ]


def _shape_table(report: AliasReport) -> str:
    headers = [
        "member / filter shape",
        "queries",
        "errors",
        "overlap@k",
        "rbo",
        "top-1",
        "p99 ms",
        "serving p99 ms",
    ]
    rows = []
    for url, shapes in report.shapes.items():
        for shape, f in shapes.items():
            rows.append(
                [
                    (_e(f"{url} · {shape}"), "l"),
                    (str(f.queries), ""),
                    (str(f.errors), "bad" if f.errors else ""),
                    (_f(f.overlap, ".3f"), ""),
                    (_f(f.rbo, ".3f"), ""),
                    (_f(f.top1, ".3f"), ""),
                    (_f(f.candidate.p99, ".2f"), ""),
                    (_f(f.serving.p99, ".2f"), ""),
                ]
            )
    return _table(headers, rows)


def render_html(report: AliasReport) -> str:
    """The page of a ``status`` report (its shadow log: ``report.rows``)."""
    rows = report.rows
    s = report.state
    members = _table(
        ["member", "role", "feed", "backfilled"],
        [
            [(_e(m.label), "l"), (m.role.value, ""), (m.feed.value, ""), (str(m.backfilled), "")]
            for m in s.members
        ],
    )
    counters = _table(
        ["member", "counter", "value"],
        [
            [(_e(u), "l"), (_e(k), ""), (str(v), "")]
            for u, c in sorted(report.counters.items())
            for k, v in sorted(c.items())
        ],
    )
    events = _table(
        ["time (UTC)", "phase", "version", "what"],
        [
            [
                (dt.datetime.fromtimestamp(e["at"], dt.UTC).strftime("%Y-%m-%d %H:%M:%S"), "l"),
                (e["phase"], ""),
                (str(e["version"]), ""),
                (_e(e["detail"]), "l"),
            ]
            for e in report.events
        ],
    )
    body = [
        f"<h1>alias {_e(s.name)}: {_e(s.phase.value)}</h1>",
        f"<p>version {s.version}, sample {s.sample:g}, registry {_e(report.registry)}; status "
        f"<b>{_e(report.status.value)}</b>; repairs pending: {report.repairs}</p>",
        *[f'<p class="bad">{_e(r)}</p>' for r in report.reasons],
        "<h2>Members</h2>",
        members,
        "<h2>Shadowed queries over time</h2>",
        *_plots(rows),
        "<h2>By filter shape</h2>",
        _shape_table(report),
        "<h2>Counters</h2>",
        counters,
        "<h2>Phase history</h2>",
        events,
    ]
    return page(f"alias {s.name}", body)


def write_html(report: AliasReport, path: Path) -> Path:
    """Write :func:`render_html` to ``path``."""
    path.write_text(render_html(report), encoding="utf-8")
    return path
