"""``alias status --report FILE.html``: the shadow figures over time, and the members' quality
on labelled queries per member and per model, as one self-contained page drawn with the
comparison report's style and plots (:mod:`vectorport.compare._html`)."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from pathlib import Path

from ..compare._html import _e, _f, _table, bar_chart, line_chart, page
from ._figures import figures
from ._quality import K
from ._registry import QualityRow, ShadowRow
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


def _quality(report: AliasReport) -> list[str]:
    """Quality on labelled queries (nDCG@k, MRR, hit@k) per member and per model, as the
    registry recorded it (``status --queries``, now or before); a member's row against the
    serving store's nDCG@k where the serving store was measured."""
    rows = report.quality_recorded
    if not rows:
        return [
            f"<p>No labelled queries measured: <code>vectorport alias status {_e(report.state.name)} "
            "--queries Q.jsonl</code> (the JSONL of <code>vectorport compare --queries</code>).</p>"
        ]
    roles = {m.label: m.role.value for m in report.state.members}
    served = [r for r in rows if roles.get(r.member) == "serving"]
    base = served[-1].ndcg if served else math.nan
    members = _table(
        [
            "member",
            "role",
            "model",
            "queries",
            f"nDCG@{K}",
            "MRR",
            f"hit@{K}",
            "nDCG / serving",
            "measured (UTC)",
        ],
        [
            [
                (_e(r.member), "l"),
                (_e(roles.get(r.member, "left the alias")), ""),
                (_e(r.model or "unknown"), "l"),
                (str(r.queries), ""),
                (_f(r.ndcg, ".3f"), ""),
                (_f(r.mrr, ".3f"), ""),
                (_f(r.hit, ".3f"), ""),
                (_f(r.ndcg / base if base > 0 else math.nan, ".2f"), ""),
                (dt.datetime.fromtimestamp(r.at, dt.UTC).strftime("%Y-%m-%d %H:%M:%S"), ""),
            ]
            for r in rows
        ],
    )
    by_model: dict[str, list[QualityRow]] = {}
    for r in rows:
        by_model.setdefault(r.model or "unknown", []).append(r)
    models = _table(
        ["model", "members", "queries", f"nDCG@{K}", "MRR", f"hit@{K}"],
        [[(_e(m), "l"), (str(len(rs)), ""), *_weighted(rs)] for m, rs in by_model.items()],
    )
    labels = [f"{r.member} · {r.model or 'unknown'}" for r in rows]
    chart = bar_chart(
        "plot-quality",
        f"quality on labelled queries, per member and model (nDCG@{K}, MRR, hit@{K})",
        labels,
        [
            (f"nDCG@{K}", [r.ndcg for r in rows]),
            ("MRR", [r.mrr for r in rows]),
            (f"hit@{K}", [r.hit for r in rows]),
        ],
        max_value=1.0,
    )
    return ["<h3>Per member</h3>", members, "<h3>Per model</h3>", models, chart]


def _weighted(rows: list[QualityRow]) -> list[tuple[str, str]]:
    """A model's figures over its members: their means weighted by queries."""
    n = sum(r.queries for r in rows)
    cells = [(str(n), "")]
    for pick in ("ndcg", "mrr", "hit"):
        mean = sum(getattr(r, pick) * r.queries for r in rows) / n if n else math.nan
        cells.append((_f(mean, ".3f"), ""))
    return cells


def render_html(report: AliasReport) -> str:
    """The page of a ``status`` report (its shadow log: ``report.rows``)."""
    rows = report.rows
    s = report.state
    members = _table(
        ["member", "role", "feed", "model", "backfilled"],
        [
            [
                (_e(m.label), "l"),
                (m.role.value, ""),
                (m.feed.value, ""),
                (_e(m.embedding_model or "unknown"), "l"),
                (str(m.backfilled), ""),
            ]
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
        "<h2>Quality on labelled queries</h2>",
        *_quality(report),
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
