"""Score thresholds from labelled queries: the scores of relevant and non-relevant results, and
the ``min_score`` that keeps a chosen share of the relevant ones.

A *score* here is always what ``min_score`` compares (``Match.score``, higher is better): in
vector and hybrid modes the vector similarity derived from the canonical distance (cosine:
``1 - cosine distance``, i.e. the cosine similarity; euclidean: ``-L2``; dot: the dot
product), in text mode the store's text score (``capabilities.text_ranking``: BM25 on the
memory store and buckets, ``ts_rank_cd`` on pgvector). These scales belong to one embedding
model and one mode, so a threshold is reported per store, model and mode, and must be re-tuned
when either changes.

>>> t = ScoreThresholds.of([0.9, 0.8, 0.7, 0.2], [0.75, 0.3, 0.1], keep=0.75, kind="cosine similarity")
>>> t.threshold, t.relevant_kept, round(t.other_dropped, 3)
(0.7, 0.75, 0.667)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .._models import Metric

__all__ = ["ScoreSummary", "ScoreThresholds", "score_kind", "threshold_keeping"]

# What Match.score is per metric (DESIGN §2: the score is derived from the canonical distance).
VECTOR_SCORE: dict[Metric, str] = {
    Metric.COSINE: "cosine similarity",
    Metric.DOT: "dot product",
    Metric.EUCLIDEAN: "-L2 distance",
}


def score_kind(mode: str, metric: Metric, text_ranking: str | None) -> str:
    """What a match's ``score`` is in ``mode``, for a store of ``metric`` whose capabilities
    declare ``text_ranking``."""
    if mode == "text":
        return text_ranking or "text score"
    return VECTOR_SCORE[metric]


def threshold_keeping(relevant: Sequence[float], keep: float) -> float | None:
    """The largest score ``t`` with at least ``keep`` of ``relevant`` scoring ``>= t``
    (``None`` when there is no relevant score)."""
    if not relevant:
        return None
    ordered = sorted(relevant, reverse=True)
    return ordered[max(0, math.ceil(keep * len(ordered) - 1e-9) - 1)]


@dataclass(frozen=True)
class ScoreSummary:
    """The distribution of one group of scores (NaN figures when the group is empty).

    Quantiles are numpy's default (linear interpolation between order statistics).
    """

    n: int
    min: float
    p10: float
    median: float
    p90: float
    max: float
    mean: float

    @classmethod
    def of(cls, scores: Sequence[float]) -> ScoreSummary:
        if not scores:
            nan = math.nan
            return cls(0, nan, nan, nan, nan, nan, nan)
        arr = np.asarray(scores, dtype=np.float64)
        p10, median, p90 = (float(v) for v in np.percentile(arr, [10, 50, 90]))
        return cls(int(arr.size), float(arr.min()), p10, median, p90, float(arr.max()), float(arr.mean()))

    def to_dict(self) -> dict[str, Any]:
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in asdict(self).items()}


@dataclass(frozen=True)
class ScoreThresholds:
    """Relevant vs non-relevant scores of one store, model and mode, and the threshold."""

    kind: str
    """What the score is (see the module docstring)."""
    keep: float
    relevant: ScoreSummary
    other: ScoreSummary
    threshold: float | None
    """The highest ``min_score`` keeping at least ``keep`` of the relevant results."""
    relevant_kept: float
    """Share of the relevant results scoring ``>= threshold`` (NaN without any)."""
    other_dropped: float
    """Share of the non-relevant results scoring ``< threshold`` (NaN without any)."""

    @classmethod
    def of(
        cls, relevant: Sequence[float], other: Sequence[float], *, keep: float, kind: str
    ) -> ScoreThresholds:
        t = threshold_keeping(relevant, keep)
        kept = math.nan if t is None else sum(s >= t for s in relevant) / len(relevant)
        dropped = math.nan if t is None or not other else sum(s < t for s in other) / len(other)
        return cls(kind, keep, ScoreSummary.of(relevant), ScoreSummary.of(other), t, kept, dropped)

    def to_dict(self) -> dict[str, Any]:
        def clean(x: float) -> float | None:
            return None if math.isnan(x) else x

        return {
            "kind": self.kind,
            "keep": self.keep,
            "threshold": self.threshold,
            "relevant_kept": clean(self.relevant_kept),
            "other_dropped": clean(self.other_dropped),
            "relevant": self.relevant.to_dict(),
            "other": self.other.to_dict(),
        }
