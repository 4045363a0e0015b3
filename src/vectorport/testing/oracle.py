"""Compare a store's answers with the exact reference: shared by the conformance kit, the
comparison harness and the migration verifier's query check.

:class:`ExactIndex` answers one query at a time (:meth:`ExactIndex.top_k`) or many at once
(:meth:`ExactIndex.search_many`: batched matrix products and ``argpartition``, one filter mask
per distinct filter). :func:`judge` scores one store answer against it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .._models import Metric, QueryResult, Record, Vector, canonical_distances
from ..filters import FilterNode, evaluate_many, to_dict

__all__ = ["ExactIndex", "Judgement", "TopK", "judge"]


@dataclass(frozen=True)
class TopK:
    """Exact answers to a batch of queries: row ``i`` holds query ``i``'s best rows, best first.

    Rows past ``counts[i]`` are padding (``-1`` and ``inf``).
    """

    rows: npt.NDArray[np.int64]
    """(queries, k) row numbers into the index."""
    distances: npt.NDArray[np.float64]
    """(queries, k) exact canonical distances (float64 maths)."""
    counts: npt.NDArray[np.int64]
    """Valid entries per query: ``min(k, matching records)``."""


class ExactIndex:
    """Exact filtered top-k over an in-memory copy of a collection (keys, vectors, metadata).

    >>> import numpy as np
    >>> from vectorport import Metric
    >>> ix = ExactIndex(Metric.EUCLIDEAN, ["a", "b"], np.array([[0, 0], [3, 4]]), [{}, {"x": 1}])
    >>> ix.top_k(np.array([0, 0]), 2)[:2]
    (['a', 'b'], array([0., 5.]))
    """

    def __init__(
        self,
        metric: Metric,
        keys: Sequence[str],
        vectors: Vector | npt.ArrayLike,
        metadatas: Sequence[Mapping[str, Any]],
    ) -> None:
        self.metric = metric
        self.keys = np.array(list(keys), dtype=object)
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if self.vectors.ndim != 2 or self.vectors.shape[0] != len(self.keys):
            self.vectors = self.vectors.reshape(len(self.keys), -1)
        self.metadatas = list(metadatas)
        self.row = {k: i for i, k in enumerate(keys)}
        self._masks: dict[str, npt.NDArray[np.bool_]] = {}
        self._search_base: npt.NDArray[np.float32] | None = None
        self._sqnorms: npt.NDArray[np.float32] | None = None

    @classmethod
    def from_records(cls, metric: Metric | str, records: Sequence[Record]) -> ExactIndex:
        """The index of ``records`` (every record needs a vector).

        >>> from vectorport import Record
        >>> ix = ExactIndex.from_records("euclidean", [Record("a", [0, 0]), Record("b", [3, 4])])
        >>> ix.top_k([0, 0], 1)[0]
        ['a']
        """
        vectors = (
            np.stack([np.asarray(r.vector, dtype=np.float32) for r in records])
            if records
            else np.empty((0, 0), dtype=np.float32)
        )
        return cls(Metric.parse(metric), [r.key for r in records], vectors, [r.metadata for r in records])

    def __len__(self) -> int:
        return len(self.keys)

    def mask(self, where: FilterNode | None) -> npt.NDArray[np.bool_]:
        """Which rows match ``where`` (by the oracle). Computed once per distinct filter."""
        if where is None:
            return np.ones(len(self.metadatas), dtype=bool)
        # canonical JSON, not the node, is the cache key: nodes compare 1 == True equal, the
        # filter semantics do not
        cache_key = json.dumps(to_dict(where), sort_keys=True)
        cached = self._masks.get(cache_key)
        if cached is None:
            cached = evaluate_many(where, self.metadatas)
            cached.flags.writeable = False
            self._masks[cache_key] = cached
        return cached

    def distances(self, query: Vector) -> np.ndarray:
        return canonical_distances(self.metric, np.asarray(query, dtype=np.float32), self.vectors)

    def top_k(
        self, query: Vector, k: int, where: FilterNode | None = None, mask: np.ndarray | None = None
    ) -> tuple[list[str], np.ndarray, np.ndarray]:
        """Best-first keys and distances among matching rows, plus all distances."""
        dist = self.distances(query)
        allowed = self.mask(where) if mask is None else mask
        rows = np.flatnonzero(allowed)
        order = rows[np.lexsort((self.keys[rows], dist[rows]))][:k]
        return [str(k_) for k_ in self.keys[order]], dist[order], dist

    # ------------------------------------------------------------------ batched search
    def _base(self) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
        """The matrix candidate ranking multiplies with (unit rows under cosine), squared norms."""
        if self._search_base is None or self._sqnorms is None:
            base = self.vectors
            if self.metric is Metric.COSINE:
                norms = np.linalg.norm(base, axis=1, keepdims=True)
                base = (base / np.where(norms == 0, 1, norms)).astype(np.float32)
            self._search_base = np.ascontiguousarray(base)
            self._sqnorms = np.einsum("ij,ij->i", self.vectors, self.vectors).astype(np.float32)
        return self._search_base, self._sqnorms

    def search_many(
        self,
        queries: npt.ArrayLike,
        k: int,
        where: FilterNode | None = None,
        *,
        mask: npt.NDArray[np.bool_] | None = None,
        batch_size: int = 256,
    ) -> TopK:
        """Exact top-``k`` of every query among rows matching ``where`` (or ``mask``).

        Candidates are ranked with float32 matrix products in batches and cut with
        ``argpartition`` (a margin of extra candidates absorbs float32 rounding); the survivors'
        distances are then recomputed in float64 and ordered by (distance, key), exactly as
        :meth:`top_k` orders them.
        """
        dim = self.vectors.shape[1] if self.vectors.ndim == 2 else 0
        q = np.asarray(queries, dtype=np.float32).reshape(-1, dim)
        nq = q.shape[0]
        out_rows = np.full((nq, k), -1, dtype=np.int64)
        out_dist = np.full((nq, k), np.inf, dtype=np.float64)
        allowed = self.mask(where) if mask is None else mask
        rows = np.flatnonzero(allowed)
        n = int(rows.size)
        kk = min(k, n)
        counts = np.full(nq, kk, dtype=np.int64)
        if kk == 0 or nq == 0:
            return TopK(out_rows, out_dist, counts)
        base, sqnorms = self._base()
        every = n == len(self.keys)
        sub = base if every else base[rows]
        subnorms = sqnorms if every else sqnorms[rows]
        cand = min(n, kk + max(kk, 32))
        for start in range(0, nq, batch_size):
            qb = q[start : start + batch_size]
            prod = qb @ sub.T
            if self.metric is Metric.EUCLIDEAN:
                # rank by -(|x|^2 - 2 q.x): |q|^2 is the same for every row; in place, no copy
                prod *= 2.0
                prod -= subnorms[None, :]
            # larger is nearer now (cosine: unit rows, so |q| does not change the order)
            if cand < n:
                picked = np.argpartition(prod, n - cand, axis=1)[:, n - cand :]
            else:
                picked = np.broadcast_to(np.arange(n), (qb.shape[0], n))
            for i in range(qb.shape[0]):
                cand_rows = rows[picked[i]]
                dist = canonical_distances(self.metric, qb[i], self.vectors[cand_rows])
                order = np.lexsort((self.keys[cand_rows], dist))[:kk]
                out_rows[start + i, :kk] = cand_rows[order]
                out_dist[start + i, :kk] = dist[order]
        return TopK(out_rows, out_dist, counts)


@dataclass(frozen=True)
class Judgement:
    """How one store answered one query, against the exact truth."""

    recall: float
    """Hits / expected, where a hit is a returned key within the true k-th distance (+ε)."""
    k_requested: int
    k_returned: int
    k_expected: int
    """min(k, matching records)."""
    violations: tuple[str, ...]
    """Returned keys whose stored metadata fails the filter (or that do not exist)."""
    missing_required: tuple[str, ...]
    """Truth keys strictly closer than the k-th true distance that the store did not return."""
    max_distance_error: float
    """Largest |store distance - exact distance| over returned keys."""
    hits: int = 0
    """Distinct returned keys within the true k-th distance (+ε)."""
    wrong: tuple[str, ...] = ()
    """Returned keys inside the filter scope but farther than the true k-th distance (+ε)."""
    unknown: tuple[str, ...] = ()
    """Returned keys the index does not hold (they are also in ``violations``)."""
    duplicates: tuple[str, ...] = ()
    """Keys returned more than once (counted once as hits)."""
    distance_errors: tuple[float, ...] = ()
    """|store distance - exact distance| for each returned key the index holds."""
    truth_keys: tuple[str, ...] = ()
    """The exact best-first keys."""
    kth_distance: float = float("inf")
    """The true k-th distance (``inf`` when nothing matches)."""

    @property
    def out_of_scope(self) -> tuple[str, ...]:
        """Returned keys the index holds whose metadata fails the filter."""
        unknown = set(self.unknown)
        return tuple(k for k in self.violations if k not in unknown)


def judge(
    index: ExactIndex,
    query: Vector,
    result: QueryResult,
    where: FilterNode | None,
    eps: float = 1e-4,
    *,
    mask: npt.NDArray[np.bool_] | None = None,
    truth: tuple[Sequence[str], npt.ArrayLike] | None = None,
) -> Judgement:
    """Judge ``result`` (a store's answer to ``query`` with ``where``) against ``index``.

    ``mask`` (rows matching ``where``) and ``truth`` (the exact best-first keys and distances,
    e.g. from :meth:`ExactIndex.search_many`) skip recomputing them; only the distances of the
    returned keys are computed then.
    """
    k = result.k_requested
    if mask is None:
        mask = index.mask(where)
    returned_rows = [index.row.get(m.key) for m in result]
    if truth is None:
        truth_keys, truth_dist, all_dist = index.top_k(query, k, where, mask)
        known = [r for r in returned_rows if r is not None]
        exact = {r: float(all_dist[r]) for r in known}
    else:
        truth_keys = [str(key) for key in truth[0]]
        truth_dist = np.asarray(truth[1], dtype=np.float64)
        known = sorted({r for r in returned_rows if r is not None})
        dists = canonical_distances(index.metric, np.asarray(query, dtype=np.float32), index.vectors[known])
        exact = {r: float(d) for r, d in zip(known, dists, strict=True)}
    kth = float(truth_dist[-1]) if len(truth_dist) else float("inf")
    tol = eps * (1.0 + abs(kth))
    violations: list[str] = []
    unknown: list[str] = []
    wrong: list[str] = []
    duplicates: list[str] = []
    errors: list[float] = []
    hits = 0
    returned: set[str] = set()
    for match, row in zip(result, returned_rows, strict=True):
        if match.key in returned:
            duplicates.append(match.key)
            continue
        returned.add(match.key)
        if row is None or not mask[row]:
            violations.append(match.key)
            if row is None:
                unknown.append(match.key)
            continue
        true = exact[row]
        errors.append(abs(match.distance - true))
        if true <= kth + tol:
            hits += 1
        else:
            wrong.append(match.key)
    required = [key for key, d in zip(truth_keys, truth_dist, strict=True) if d < kth - tol]
    missing = tuple(key for key in required if key not in returned)
    expected = len(truth_keys)
    recall = 1.0 if expected == 0 else min(hits, expected) / expected
    return Judgement(
        recall,
        k,
        result.k_returned,
        expected,
        tuple(violations),
        missing,
        max(errors, default=0.0),
        hits,
        tuple(wrong),
        tuple(unknown),
        tuple(duplicates),
        tuple(errors),
        tuple(truth_keys),
        kth,
    )
