"""Retrieval quality per store *and per search mode*: does text or hybrid search help here, and
with which fusion weight?

The same labelled queries (a text, its ``relevant`` keys, optionally a vector and a filter)
run as vector search, full-text search and hybrid search at each weight, on every store that
declares the mode; a store without it gets a row saying so (refused before any I/O). For each
row: hit@1, MRR and nDCG@k over the labelled queries, the scores of relevant and non-relevant
results and the score threshold that keeps a chosen share of the relevant ones
(:mod:`._thresholds`: ``min_score`` is model- and mode-specific: re-tune it when either
changes).

>>> import vectorport
>>> from vectorport.compare import Query, compare_modes
>>> s = vectorport.connect("memory://doctest-modes", dimension=2)
>>> _ = s.upsert([vectorport.Record("a", [1, 0], text="red fox"),
...               vectorport.Record("b", [0, 1], text="blue sky")])
>>> out = compare_modes({"mem": s}, [Query([0, 1], text="red fox", relevant=["a"])], k=2, weights=[0.5])
>>> [(r.mode, r.hit_at_1) for r in out.rows]
[('vector', 0.0), ('text', 1.0), ('hybrid', 1.0)]
>>> s.drop()
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from .._exit import Status
from .._features import hybrid_search_of, text_search_of
from .._models import QueryResult
from .._protocol import VectorStore
from .._registry import connect
from .._report import Report
from .._textsearch import check_fusion
from ..exceptions import ConfigurationError, UnsupportedFeatureError
from ._metrics import hit_at_k, ndcg_at_k, reciprocal_rank
from ._queries import Query, QueryEmbedder, QueryLike, embed_queries, normalize_queries
from ._thresholds import ScoreThresholds, score_kind, threshold_keeping

__all__ = ["MODES", "ModeComparison", "ModeFigures", "compare_modes"]

MODES = ("vector", "text", "hybrid")


@dataclass(frozen=True)
class ModeFigures:
    """One store in one mode (hybrid: at one weight), over the labelled queries."""

    store: str
    mode: str
    weight: float | None
    queries: int
    hit_at_1: float
    mrr: float
    ndcg: float
    threshold: float | None
    """The highest ``min_score`` that keeps ``keep`` of the relevant results returned."""
    relevant_scores: tuple[float, ...]
    """``Match.score`` (what ``min_score`` compares) of every relevant result returned."""
    other_scores: tuple[float, ...]
    """``Match.score`` of every non-relevant result returned."""
    refused: str | None = None
    """Why the store cannot run this mode (then the figures are NaN)."""
    model: str | None = None
    """The embedding model the store records (``None``: not recorded)."""
    scores: ScoreThresholds | None = None
    """The two score distributions and the threshold (``None`` when refused)."""

    @property
    def label(self) -> str:
        return self.mode if self.weight is None else f"{self.mode} w={self.weight:g}"

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for name in ("hit_at_1", "mrr", "ndcg"):
            out[name] = None if math.isnan(out[name]) else out[name]
        out["relevant_scores"] = list(self.relevant_scores)
        out["other_scores"] = list(self.other_scores)
        out["scores"] = None if self.scores is None else self.scores.to_dict()
        return out


@dataclass(frozen=True)
class ModeComparison(Report):
    """Every (store, mode) row, in the order stores and modes were given."""

    k: int
    keep: float
    rows: tuple[ModeFigures, ...]

    SCHEMA: ClassVar[str] = "vectorport.compare-modes/1"

    @property
    def status(self) -> Status:
        """Always ``passed``: the modes are measured, not gated."""
        return Status.PASSED

    def sections(self) -> dict[str, Any]:
        return {"k": self.k, "keep": self.keep, "rows": [r.to_dict() for r in self.rows]}

    def table_rows(self) -> list[list[str]]:
        """``store, mode, queries, hit@1, MRR, nDCG@k, threshold`` as text."""

        def f(x: float | None) -> str:
            return "-" if x is None or math.isnan(x) else f"{x:.3f}"

        return [
            [r.store, r.label, str(r.queries), f(r.hit_at_1), f(r.mrr), f(r.ndcg), f(r.threshold)]
            if r.refused is None
            else [r.store, r.label, "-", "refused", "", "", r.refused]
            for r in self.rows
        ]

    def headers(self) -> list[str]:
        return [
            "store",
            "mode",
            "queries",
            "hit@1",
            "MRR",
            f"nDCG@{self.k}",
            f"min_score keeping {self.keep:.0%}",
        ]

    def threshold_headers(self) -> list[str]:
        """Headers of :meth:`threshold_rows` (a scores cell reads ``n: p10 / median / p90``)."""
        return [
            "store",
            "model",
            "mode",
            "score",
            "relevant scores",
            "other scores",
            f"min_score ({self.keep:.0%})",
            "relevant kept",
            "others dropped",
        ]

    def threshold_rows(self) -> list[list[str]]:
        """Per store, model and mode: what the score is, the relevant and non-relevant score
        distributions, the threshold and what it keeps and drops, as text."""

        def f(x: float | None) -> str:
            return "-" if x is None or math.isnan(x) else f"{x:.3g}"

        def pct(x: float) -> str:
            return "-" if math.isnan(x) else f"{x:.0%}"

        out = []
        for r in self.rows:
            t = r.scores
            if t is None:
                continue
            rel, oth = t.relevant, t.other
            out.append(
                [
                    r.store,
                    r.model or "-",
                    r.label,
                    t.kind,
                    f"{rel.n}: {f(rel.p10)} / {f(rel.median)} / {f(rel.p90)}" if rel.n else "0",
                    f"{oth.n}: {f(oth.p10)} / {f(oth.median)} / {f(oth.p90)}" if oth.n else "0",
                    f(t.threshold),
                    pct(t.relevant_kept),
                    pct(t.other_dropped),
                ]
            )
        return out

    def markdown(self) -> str:
        """The figures and the score thresholds as two GitHub-flavoured Markdown tables."""
        lines = []
        for headers, rows in (
            (self.headers(), self.table_rows()),
            (self.threshold_headers(), self.threshold_rows()),
        ):
            lines += ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
            lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
            lines.append("")
        return "\n".join(lines)

    def to_html(self) -> str:
        """A self-contained HTML report: the figures, a chart per figure and the score
        distributions of relevant vs non-relevant results with each threshold (inline SVG)."""
        from ._modes_html import render_modes_html

        return render_modes_html(self)

    def write_report(self, path: str | Path) -> Path:
        """Write the report ``path``'s suffix names: ``.md`` Markdown, otherwise HTML."""
        out = Path(path)
        markdown = out.suffix.lower() in (".md", ".markdown")
        out.write_text(self.markdown() if markdown else self.to_html(), encoding="utf-8")
        return out

    def best(self, store: str) -> ModeFigures | None:
        """The store's row with the highest MRR (ties: nDCG, then the order given)."""
        rows = [r for r in self.rows if r.store == store and r.refused is None and not math.isnan(r.mrr)]
        return max(rows, key=lambda r: (r.mrr, r.ndcg), default=None)


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if values else math.nan


def _run(store: VectorStore, mode: str, weight: float | None, q: Query, k: int) -> QueryResult:
    include = ["metadata"]
    if mode == "vector":
        return store.query(q.vector, k, filter=q.where, include=include)
    if mode == "text":
        return text_search_of(store).text_query(str(q.text), k, filter=q.where, include=include)
    return hybrid_search_of(store).hybrid_query(
        q.vector, str(q.text), k, filter=q.where, weight=0.5 if weight is None else weight, include=include
    )


def _one(
    label: str,
    store: VectorStore,
    mode: str,
    weight: float | None,
    queries: Sequence[Query],
    k: int,
    keep: float,
) -> ModeFigures:
    model = store.spec.embedding_model
    try:
        if mode == "text":
            text_search_of(store)
        elif mode == "hybrid":
            hybrid_search_of(store)
    except UnsupportedFeatureError as exc:
        nan = math.nan
        return ModeFigures(label, mode, weight, 0, nan, nan, nan, None, (), (), str(exc), model)
    hits, rrs, ndcgs = [], [], []
    relevant_scores: list[float] = []
    other_scores: list[float] = []
    for q in queries:
        gains = q.gains
        result = _run(store, mode, weight, q, k)
        keys = [m.key for m in result]
        hits.append(hit_at_k(keys, gains, 1))
        rrs.append(reciprocal_rank(keys[:k], gains))
        ndcgs.append(ndcg_at_k(keys, gains, k))
        for m in result:
            (relevant_scores if gains.get(m.key, 0.0) > 0 else other_scores).append(float(m.score))
    return ModeFigures(
        label,
        mode,
        weight,
        len(queries),
        _mean(hits),
        _mean(rrs),
        _mean(ndcgs),
        threshold_keeping(relevant_scores, keep),
        tuple(relevant_scores),
        tuple(other_scores),
        None,
        model,
        ScoreThresholds.of(
            relevant_scores,
            other_scores,
            keep=keep,
            kind=score_kind(mode, store.spec.metric, store.capabilities.text_ranking),
        ),
    )


def compare_modes(
    stores: Mapping[str, VectorStore | str] | Sequence[VectorStore | str],
    queries: Iterable[QueryLike],
    k: int = 10,
    *,
    modes: Sequence[str] = MODES,
    weights: Sequence[float] = (0.5,),
    embedder: QueryEmbedder | None = None,
    keep: float = 0.9,
) -> ModeComparison:
    """hit@1, MRR, nDCG@k and the ``keep`` score threshold per store, per mode and (hybrid)
    per fusion weight, over the queries that carry ``relevant`` labels.

    Text and hybrid modes need each query's ``text``; vector and hybrid modes its vector (made
    by ``embedder`` from the text when missing). Scores and thresholds are on ``Match.score``,
    what ``min_score`` compares: the vector similarity in vector and hybrid modes, the text
    score in text mode (see :mod:`vectorport.compare._thresholds`).
    """
    from ._runner import _label

    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        raise ConfigurationError(f"modes must be among {', '.join(MODES)}, got {list(modes)}")
    checked = [check_fusion(w, 60)[0] for w in weights] if "hybrid" in modes else []
    if "hybrid" in modes and not checked:
        raise ConfigurationError("hybrid mode needs at least one fusion weight")
    if not 0 < keep <= 1:
        raise ConfigurationError(f"keep must be in (0, 1], got {keep!r}")
    labelled = [q for q in normalize_queries(queries) if q.gains]
    if not labelled:
        raise ConfigurationError("comparing search modes needs queries with relevant keys (labels)")
    if any(m != "vector" for m in modes):
        missing = [q.id or str(i) for i, q in enumerate(labelled) if not q.text]
        if missing:
            raise ConfigurationError(
                f"text and hybrid modes need a text on every query; missing on {missing[:5]}"
            )
    if any(m != "text" for m in modes):
        labelled = embed_queries(labelled, embedder)
    rows: list[ModeFigures] = []
    opened: list[VectorStore] = []
    try:
        for label, item in _label(stores):
            store = connect(item) if isinstance(item, str) else item
            if isinstance(item, str):
                opened.append(store)
            for mode in modes:
                for weight in checked if mode == "hybrid" else [None]:
                    rows.append(_one(label, store, mode, weight, labelled, k, keep))
    finally:
        for store in opened:
            store.close()
    return ModeComparison(k, keep, tuple(rows))
