"""The figures of a comparison: per-query outcomes and their aggregates (quality, latency,
relevance, agreement between stores). Pure functions over plain data; no I/O."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

import numpy as np

from .._judge import Judgement

__all__ = [
    "Figures",
    "Latency",
    "Outcome",
    "PairFigures",
    "Relevance",
    "Status",
    "hit_at_k",
    "ndcg_at_k",
    "overlap_at_k",
    "pair_figures",
    "rank_biased_overlap",
    "reciprocal_rank",
    "relevance_of",
    "summarize",
]


class Status(StrEnum):
    """How a store handled one query."""

    OK = "ok"
    REFUSED = "refused"
    """The store refused the query before I/O (an unsupported filter or k)."""
    ERROR = "error"
    """The store failed."""


@dataclass(frozen=True)
class Outcome:
    """One store's answer to one query, judged against the exact truth."""

    query: int
    status: Status
    keys: tuple[str, ...] = ()
    distances: tuple[float, ...] = ()
    latency: float = math.nan
    """Seconds spent in ``store.query`` (NaN when not measured)."""
    judgement: Judgement | None = None
    error: str | None = None
    relevance: tuple[float, float, float] | None = None
    """(nDCG@k, reciprocal rank, hit@k) when the query has relevance labels."""


# ---------------------------------------------------------------------- ranking measures
def overlap_at_k(a: Sequence[str], b: Sequence[str], k: int) -> float:
    """Shared keys of two top-k lists over ``min(k, longer list)``: 1.0 for the same set.

    >>> overlap_at_k(["a", "b", "c"], ["c", "b", "x"], 3)
    0.6666666666666666
    >>> overlap_at_k([], [], 10)
    1.0
    """
    sa, sb = set(a[:k]), set(b[:k])
    depth = min(k, max(len(sa), len(sb)))
    return 1.0 if depth == 0 else len(sa & sb) / depth


def rank_biased_overlap(a: Sequence[str], b: Sequence[str], p: float = 0.9) -> float:
    """Extrapolated rank-biased overlap (Webber, Moffat & Zobel 2010, eq. 32) of two rankings,
    lists of possibly different lengths. 1.0 for identical rankings, 0.0 for disjoint ones;
    ``p`` is the persistence (weight of deeper ranks).

    >>> rank_biased_overlap(["a", "b", "c"], ["a", "b", "c"])
    1.0
    >>> round(rank_biased_overlap(["a", "b", "c"], ["b", "a", "c"]), 4)
    0.9
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    short, long_ = (list(dict.fromkeys(a)), list(dict.fromkeys(b)))
    if len(short) > len(long_):
        short, long_ = long_, short
    s, ln = len(short), len(long_)
    if ln == 0:
        return 1.0
    if s == 0:
        return 0.0
    seen_s: set[str] = set()
    seen_l: set[str] = set()
    overlap = 0
    x: list[int] = []  # x[d-1] = overlap of the two prefixes of depth d
    for d in range(1, ln + 1):
        item_l = long_[d - 1]
        if d <= s:
            item_s = short[d - 1]
            if item_s == item_l:
                overlap += 1
            else:
                overlap += (item_s in seen_l) + (item_l in seen_s)
            seen_s.add(item_s)
        else:
            overlap += item_l in seen_s
        seen_l.add(item_l)
        x.append(overlap)
    x_s, x_l = x[s - 1], x[ln - 1]
    total = sum(x[d - 1] / d * p**d for d in range(1, ln + 1))
    total += sum(x_s * (d - s) / (s * d) * p**d for d in range(s + 1, ln + 1))
    result = (1 - p) / p * total + ((x_l - x_s) / ln + x_s / s) * p**ln
    return float(min(1.0, max(0.0, result)))


def ndcg_at_k(keys: Sequence[str], gains: Mapping[str, float], k: int) -> float:
    """Normalised discounted cumulative gain of a ranking at depth ``k`` (exponential-free, the
    ``gain / log2(rank + 1)`` form). NaN when nothing is relevant.

    >>> ndcg_at_k(["a", "x"], {"a": 1.0}, 2)
    1.0
    >>> round(ndcg_at_k(["x", "a"], {"a": 1.0}, 2), 4)
    0.6309
    """
    ideal = sorted((g for g in gains.values() if g > 0), reverse=True)[:k]
    if not ideal:
        return math.nan
    seen: set[str] = set()
    dcg = 0.0
    for rank, key in enumerate(keys[:k], start=1):
        if key in seen:
            continue
        seen.add(key)
        dcg += gains.get(key, 0.0) / math.log2(rank + 1)
    idcg = sum(g / math.log2(rank + 1) for rank, g in enumerate(ideal, start=1))
    return dcg / idcg


def reciprocal_rank(keys: Sequence[str], gains: Mapping[str, float]) -> float:
    """1 / rank of the first relevant key (0.0 when none is returned)."""
    for rank, key in enumerate(keys, start=1):
        if gains.get(key, 0.0) > 0:
            return 1.0 / rank
    return 0.0


def hit_at_k(keys: Sequence[str], gains: Mapping[str, float], k: int) -> float:
    """1.0 when any of the first ``k`` keys is relevant."""
    return 1.0 if any(gains.get(key, 0.0) > 0 for key in keys[:k]) else 0.0


def relevance_of(
    keys: Sequence[str], gains: Mapping[str, float], k: int
) -> tuple[float, float, float] | None:
    """(nDCG@k, reciprocal rank, hit@k), or ``None`` when the query has no relevant key."""
    if not any(g > 0 for g in gains.values()):
        return None
    return ndcg_at_k(keys, gains, k), reciprocal_rank(keys[:k], gains), hit_at_k(keys, gains, k)


# ---------------------------------------------------------------------- aggregates
@dataclass(frozen=True)
class Latency:
    """Per-query latency in milliseconds over the measured (post warm-up) queries."""

    count: int
    p50: float
    p95: float
    p99: float
    mean: float
    max: float

    @classmethod
    def of(cls, seconds: Sequence[float]) -> Latency:
        ms = np.asarray([s for s in seconds if not math.isnan(s)], dtype=np.float64) * 1000.0
        if ms.size == 0:
            return cls(0, math.nan, math.nan, math.nan, math.nan, math.nan)
        p50, p95, p99 = (float(v) for v in np.percentile(ms, [50, 95, 99]))
        return cls(int(ms.size), p50, p95, p99, float(ms.mean()), float(ms.max()))


@dataclass(frozen=True)
class Relevance:
    """Mean nDCG@k, MRR and hit@k over the queries that carry relevance labels."""

    queries: int
    ndcg: float
    mrr: float
    hit: float

    @classmethod
    def of(cls, triples: Sequence[tuple[float, float, float] | None]) -> Relevance | None:
        rows = [t for t in triples if t is not None]
        if not rows:
            return None
        arr = np.asarray(rows, dtype=np.float64)
        ndcg, mrr, hit = (float(v) for v in arr.mean(axis=0))
        return cls(len(rows), ndcg, mrr, hit)


@dataclass(frozen=True)
class Figures:
    """Everything measured for one store over a group of queries (all, or one filter)."""

    queries: int
    answered: int
    refused: int
    errors: int
    k: int
    recall: float
    """Mean recall@k, near-ties counted as hits (NaN when nothing was answered)."""
    recall_min: float
    perfect: float
    """Fraction of answered queries with recall 1."""
    returned: int
    """Results returned in total."""
    expected: int
    """Results the exact truth has in total (sum of min(k, matching))."""
    underfilled: int
    """Queries that returned fewer results than the truth has."""
    underfill: float
    """``underfilled / answered``."""
    shortfall: int
    """Results missing because of under-fill (sum of expected - returned)."""
    wrong: int
    """In-scope results farther than the true k-th distance (+ε): wrong, not missing."""
    wrong_rate: float
    """``wrong / returned``."""
    violations: int
    """Results whose stored metadata fails the query's filter (judged by the oracle)."""
    violating_queries: int
    unknown: int
    """Results whose key the truth does not hold."""
    duplicates: int
    distance_error_max: float
    distance_error_mean: float
    distance_agreement: float
    """Fraction of returned (known, in-scope) results whose distance is within the tolerance."""
    latency: Latency
    qps: float | None
    relevance: Relevance | None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (NaN becomes ``None``)."""
        out: dict[str, Any] = _clean(asdict(self))
        return out


def _clean(value: Any) -> Any:
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def summarize(
    outcomes: Sequence[Outcome], k: int, *, distance_tol: float = 1e-3, qps: float | None = None
) -> Figures:
    """Aggregate per-query outcomes into :class:`Figures`."""
    judged = [(o, o.judgement) for o in outcomes if o.status is Status.OK and o.judgement is not None]
    js = [j for _, j in judged]
    recalls = np.asarray([j.recall for j in js], dtype=np.float64)
    errors = [e for j in js for e in j.distance_errors]
    returned = sum(j.k_returned for j in js)
    wrong = sum(len(j.wrong) for j in js)
    violations = [len(j.out_of_scope) for j in js]
    return Figures(
        queries=len(outcomes),
        answered=len(js),
        refused=sum(o.status is Status.REFUSED for o in outcomes),
        errors=sum(o.status is Status.ERROR for o in outcomes),
        k=k,
        recall=float(recalls.mean()) if recalls.size else math.nan,
        recall_min=float(recalls.min()) if recalls.size else math.nan,
        perfect=float(np.mean(recalls >= 1.0)) if recalls.size else math.nan,
        returned=returned,
        expected=sum(j.k_expected for j in js),
        underfilled=sum(j.k_returned < j.k_expected for j in js),
        underfill=float(np.mean([j.k_returned < j.k_expected for j in js])) if js else math.nan,
        shortfall=sum(max(0, j.k_expected - j.k_returned) for j in js),
        wrong=wrong,
        wrong_rate=wrong / returned if returned else 0.0,
        violations=sum(violations),
        violating_queries=sum(v > 0 for v in violations),
        unknown=sum(len(j.unknown) for j in js),
        duplicates=sum(len(j.duplicates) for j in js),
        distance_error_max=max(errors, default=math.nan),
        distance_error_mean=float(np.mean(errors)) if errors else math.nan,
        distance_agreement=float(np.mean(np.asarray(errors) <= distance_tol)) if errors else math.nan,
        latency=Latency.of([o.latency for o in outcomes if o.status is Status.OK]),
        qps=qps,
        relevance=Relevance.of([o.relevance for o, _ in judged]),
    )


@dataclass(frozen=True)
class PairFigures:
    """Agreement between two stores over the queries both answered."""

    queries: int
    overlap: float
    """Mean overlap@k (shared keys / min(k, longer list))."""
    overlap_min: float
    rbo: float
    """Mean rank-biased overlap."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = _clean(asdict(self))
        return out


def pair_figures(a: Sequence[Outcome], b: Sequence[Outcome], k: int, *, p: float = 0.9) -> PairFigures:
    """Overlap@k and RBO of two stores' outcomes (aligned by query)."""
    overlaps: list[float] = []
    rbos: list[float] = []
    for oa, ob in zip(a, b, strict=True):
        if oa.status is not Status.OK or ob.status is not Status.OK:
            continue
        overlaps.append(overlap_at_k(oa.keys, ob.keys, k))
        rbos.append(rank_biased_overlap(oa.keys, ob.keys, p))
    if not overlaps:
        return PairFigures(0, math.nan, math.nan, math.nan)
    return PairFigures(len(overlaps), float(np.mean(overlaps)), float(min(overlaps)), float(np.mean(rbos)))
