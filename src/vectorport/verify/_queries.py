"""The sampled-query check of verification: the same queries against both stores, judged
against the exact top-k of the data (:class:`StreamingTopK`, fed by the verification's pass)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._exact import StreamingTopK
from .._judge import tie_tolerance
from .._models import JSON, CollectionSpec, Record, ScanPage
from .._protocol import VectorStore
from .._report import Capped
from .._validate import check_vector

__all__ = [
    "NOISE_SIGMAS",
    "QUERY_SLACK",
    "RELATIVE_SLACK",
    "QueryCheck",
    "SampledQueries",
    "ask",
    "ask_queries",
    "pick_queries",
    "query_check",
    "query_page",
    "relative_slack",
    "sampled_queries",
]

QUERY_SLACK = 0.1
"""How far an approximate target's mean recall may fall below its declared ``recall_tolerance``
on the sampled queries before verification fails: 20 queries are a small sample, and one bad
ANN answer is an index-quality fact, not lost data (it is still listed under
``below_required``). Garbled vectors or a wrong metric give recall near 0 and fail."""

RELATIVE_SLACK = 0.05
"""How far the target's mean recall may at least fall below the source's on the same sampled
queries and still count as "as good as the source" (sampling noise of 20 queries)."""

NOISE_SIGMAS = 3.0
"""Two approximate indexes of the same data answer a query differently by chance (a graph build
is not deterministic): the relative slack grows to this many standard errors of the mean paired
difference (target recall - source recall, query by query) when that is wider than
:data:`RELATIVE_SLACK`. A copy that lost or garbled data differs by far more, on every query."""


def relative_slack(src_recalls: Sequence[float], tgt_recalls: Sequence[float]) -> float:
    """The slack of the target-vs-source judgement for these paired per-query recalls:
    :data:`RELATIVE_SLACK`, or :data:`NOISE_SIGMAS` standard errors of their mean
    difference if wider."""
    n = len(src_recalls)
    if n < 2:
        return RELATIVE_SLACK
    diff = np.asarray(tgt_recalls, dtype=np.float64) - np.asarray(src_recalls, dtype=np.float64)
    stderr = float(diff.std(ddof=1)) / float(np.sqrt(n))
    return max(RELATIVE_SLACK, NOISE_SIGMAS * stderr)


@dataclass
class QueryCheck:
    """Sampled queries run against both stores, judged against the exact top-k of the source."""

    k: int
    queries: int
    mean_overlap: float
    """Mean ``|source top-k ∩ target top-k| / k``."""
    min_overlap: float
    source_recall: float
    """Mean recall@k of the source against the exact top-k (ties within 1e-4 count)."""
    target_recall: float
    required_recall: float
    """The target's declared ``recall_tolerance`` (1.0 for exact stores)."""
    slack: float = 0.0
    """Allowed shortfall of the mean recall (:data:`QUERY_SLACK` for approximate targets)."""
    worst: Capped[dict[str, JSON]] = field(default_factory=Capped)
    """Queries where the target's recall fell below ``required_recall``."""
    relative: float = RELATIVE_SLACK
    """Allowed shortfall against the source's recall on the same queries (:func:`relative_slack`)."""

    @property
    def meets_required(self) -> bool:
        """Against exact truth: the target's recall reaches its declared ``recall_tolerance``
        (less :attr:`slack`)."""
        return self.target_recall + 1e-9 >= self.required_recall - self.slack

    @property
    def as_good_as_source(self) -> bool:
        """Against the source: the target's recall on the same queries is no worse than the
        source's (less :attr:`relative`, the sampling noise of the paired answers)."""
        return self.target_recall + 1e-9 >= self.source_recall - self.relative

    @property
    def ok(self) -> bool:
        """Search quality passes when the target meets its declared recall or is as good as
        the source: a target that answers like the source lost nothing in the move."""
        return self.meets_required or self.as_good_as_source

    @property
    def verdict(self) -> str:
        """One line: passed or failed, and against what."""
        t, s, r = self.target_recall, self.source_recall, self.required_recall - self.slack
        vs_source = f"target recall {t:.3f} vs source {s:.3f} on the same queries"
        vs_truth = f"{t:.3f} vs the {r:.2f} required against exact truth"
        if self.meets_required and self.as_good_as_source:
            return f"passed: {vs_source}; {vs_truth}"
        if self.meets_required:
            return f"passed against exact truth ({vs_truth}), though below the source ({vs_source})"
        if self.as_good_as_source:
            return f"passed: as good as the source ({vs_source}); both are below exact truth ({vs_truth})"
        return f"failed: worse than the source ({vs_source}) and below exact truth ({vs_truth})"

    def to_dict(self) -> dict[str, JSON]:
        return {
            "ok": self.ok,
            "verdict": self.verdict,
            "as_good_as_source": self.as_good_as_source,
            "meets_required": self.meets_required,
            "relative_slack": round(self.relative, 4),
            "k": self.k,
            "queries": self.queries,
            "mean_overlap": round(self.mean_overlap, 4),
            "min_overlap": round(self.min_overlap, 4),
            "source_recall": round(self.source_recall, 4),
            "target_recall": round(self.target_recall, 4),
            "required_recall": self.required_recall,
            "slack": self.slack,
            "below_required": self.worst.to_dict(),
        }


def _near_tie_recall(exact: StreamingTopK, i: int, returned: Sequence[str], k: int) -> float:
    """Recall of ``returned`` against query ``i``'s exact top ``k``, near ties counting as hits
    (:func:`vectorport._judge.tie_tolerance`). ``exact`` keeps a few rows past ``k``: a
    returned key beyond them is a hit only when even the last kept row ties the k-th."""
    dist, keys = exact.distances[i], exact.keys[i]
    expected = min(k, len(keys))
    if expected == 0:
        return 1.0
    kth = float(dist[expected - 1])
    tol = tie_tolerance(kth)
    known = {str(key): float(d) for key, d in zip(keys, dist, strict=True)}
    beyond = float(dist[-1]) if len(dist) else float("inf")
    hits = 0
    for key in returned:
        true = known.get(key)
        if (true is not None and true <= kth + tol) or (true is None and beyond <= kth + tol):
            hits += 1
    return min(hits, expected) / expected


_QUERY_PAGE = 1000
"""Records of the first source page the queries are picked from (at least)."""


def query_page(n: int) -> int:
    """Records of the first source page ``n`` queries are picked from."""
    return max(n, _QUERY_PAGE)


def pick_queries(
    source: VectorStore, shard: tuple[int, int], n: int, first_page: ScanPage | None = None
) -> list[Record]:
    """Up to ``n`` records spread over the source's first scan page of at most ``max(n, 1000)``
    records (the queries; a larger page only costs time: Chroma's first 5,460 vectors took
    0.25-0.33 s, its first 1,000 0.06-0.08 s). ``first_page``: that page as a scan of the same
    ``shard`` already gave it with vectors (a migration's copy), so the source is not read twice.
    A vector no store takes as a query (NaN or inf, all zeros under cosine: stored by another
    tool, or corrupted) is not picked; the data checks report it."""
    if n <= 0:
        return []
    size = query_page(n)
    if first_page is not None and (len(first_page) >= size or first_page.cursor is None):
        picked = _spread(source.spec, first_page.records[:size], n)
        if picked or first_page.cursor is None:
            return picked
    for page in source.scan(include=["vector"], segment=shard, batch_size=size):
        picked = _spread(source.spec, page.records, n)
        if picked:
            return picked
    return []


def _spread(spec: CollectionSpec, page: Sequence[Record], n: int) -> list[Record]:
    """Up to ``n`` of ``page``'s records that can be queries, evenly spaced."""
    recs = [r for r in page if check_vector(r.vector, spec.dimension, spec.metric)[1] is None]
    if not recs:
        return []
    idx = np.unique(np.linspace(0, len(recs) - 1, num=min(n, len(recs))).astype(int))
    return [recs[int(i)] for i in idx]


@dataclass
class SampledQueries:
    """The queries a verification runs, and their exact top-k, fed by whichever pass reads the
    data (a digest scan, or the copy's read-back). ``source_answers``: the source's answers,
    when they were asked before the verification (:meth:`ask_source`)."""

    records: list[Record]
    exact: StreamingTopK
    k: int
    source_answers: list[Future[list[str]]] | None = None

    def ask_source(self, source: VectorStore) -> None:
        """Send the queries to ``source`` now: its answers do not wait for the target (a
        migration asks them once its copy ended, while the target builds its index)."""
        if self.source_answers is None and self.records:
            self.source_answers = ask(source, self.records, self.k)


def sampled_queries(
    source: VectorStore,
    target: VectorStore,
    shard: tuple[int, int],
    n: int,
    k: int,
    first_page: ScanPage | None = None,
) -> SampledQueries:
    """Up to ``n`` queries from ``source`` (:func:`pick_queries`, from ``first_page`` when a scan
    gave it), ``k`` capped by both stores' ``max_top_k``, with an empty exact top-k of a few
    rows more than ``k``."""
    limits = [t for t in (source.capabilities.max_top_k, target.capabilities.max_top_k) if t]
    top_k = min([k, *limits])
    queries = pick_queries(source, shard, n, first_page)
    matrix = (
        np.stack([np.asarray(r.vector, dtype=np.float32) for r in queries])
        if queries
        else np.empty((0, source.spec.dimension), dtype=np.float32)
    )
    return SampledQueries(queries, StreamingTopK(source.spec.metric, matrix, top_k + 5), top_k)


Answers = list[tuple[list[str], list[str]]]
"""Each query's top-k keys from the source and from the target."""


def ask(store: VectorStore, queries: list[Record], k: int) -> list[Future[list[str]]]:
    """Send ``queries`` to ``store`` now, a few at a time (stores are usually other processes);
    each future holds one query's top-k keys."""

    def top(vector: Any) -> list[str]:
        return store.query(vector, k=k, include=[]).keys

    pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="vectorport-queries")
    futures = [pool.submit(top, r.vector) for r in queries]
    pool.shutdown(wait=False)  # the submitted queries still run
    return futures


def ask_queries(
    source: VectorStore,
    target: VectorStore,
    queries: list[Record],
    k: int,
    source_answers: list[Future[list[str]]] | None = None,
) -> Callable[[], Answers]:
    """Send ``queries`` to both stores now (the source's unless ``source_answers`` holds them
    already): their answers do not depend on the pass that computes the exact top-k, which
    can run meanwhile; the returned function waits for the answers."""
    from_source = source_answers if source_answers is not None else ask(source, queries, k)
    from_target = ask(target, queries, k)

    def answers() -> Answers:
        return [(a.result(), b.result()) for a, b in zip(from_source, from_target, strict=True)]

    return answers


def query_check(
    target: VectorStore,
    queries: list[Record],
    exact: StreamingTopK,
    k: int,
    cap: int,
    answers: Answers,
) -> QueryCheck:
    """Judge the stores' ``answers`` to ``queries`` (:func:`ask_queries`) against ``exact``."""
    overlaps: list[float] = []
    src_recalls: list[float] = []
    tgt_recalls: list[float] = []
    required = 1.0 if target.capabilities.exact else target.capabilities.recall_tolerance
    worst: Capped[dict[str, JSON]] = Capped(cap)
    for i, rec in enumerate(queries):
        a, b = answers[i]
        expected = max(1, min(k, len(exact.keys[i])))
        overlaps.append(len(set(a) & set(b)) / expected)
        src_recalls.append(_near_tie_recall(exact, i, a, k))
        tgt = _near_tie_recall(exact, i, b, k)
        tgt_recalls.append(tgt)
        if tgt + 1e-9 < required:
            worst.add({"query_key": rec.key, "target_recall": round(tgt, 4), "target_keys": list(b)})
    n = len(queries)
    return QueryCheck(
        k=k,
        queries=n,
        mean_overlap=sum(overlaps) / n,
        min_overlap=min(overlaps),
        source_recall=sum(src_recalls) / n,
        target_recall=sum(tgt_recalls) / n,
        required_recall=required,
        slack=0.0 if target.capabilities.exact else QUERY_SLACK,
        worst=worst,
        relative=relative_slack(src_recalls, tgt_recalls),
    )
