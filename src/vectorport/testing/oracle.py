"""Compare a store's answers with the exact reference: shared by the conformance kit, the
comparison harness and the migration verifier's query check."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._models import Metric, QueryResult, Vector, canonical_distances
from ..filters import FilterNode, evaluate

__all__ = ["ExactIndex", "Judgement", "judge"]


class ExactIndex:
    """Exact filtered top-k over an in-memory copy of a collection (keys, vectors, metadata)."""

    def __init__(
        self,
        metric: Metric,
        keys: Sequence[str],
        vectors: Vector,
        metadatas: Sequence[Mapping[str, Any]],
    ) -> None:
        self.metric = metric
        self.keys = np.array(list(keys), dtype=object)
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.metadatas = list(metadatas)
        self.row = {k: i for i, k in enumerate(keys)}

    def mask(self, where: FilterNode | None) -> np.ndarray:
        return np.fromiter(
            (evaluate(where, m) for m in self.metadatas), dtype=bool, count=len(self.metadatas)
        )

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


def judge(
    index: ExactIndex,
    query: Vector,
    result: QueryResult,
    where: FilterNode | None,
    eps: float = 1e-4,
) -> Judgement:
    """Judge ``result`` (a store's answer to ``query`` with ``where``) against ``index``."""
    k = result.k_requested
    mask = index.mask(where)
    truth_keys, truth_dist, all_dist = index.top_k(query, k, where, mask)
    kth = float(truth_dist[-1]) if len(truth_dist) else float("inf")
    tol = eps * (1.0 + abs(kth))
    violations: list[str] = []
    hits = 0
    err = 0.0
    returned = set()
    for match in result:
        row = index.row.get(match.key)
        if row is None or not mask[row]:
            violations.append(match.key)
            continue
        returned.add(match.key)
        true = float(all_dist[row])
        err = max(err, abs(match.distance - true))
        if true <= kth + tol:
            hits += 1
    required = [key for key, d in zip(truth_keys, truth_dist, strict=True) if d < kth - tol]
    missing = tuple(key for key in required if key not in returned)
    expected = len(truth_keys)
    recall = 1.0 if expected == 0 else min(hits, expected) / expected
    return Judgement(recall, k, result.k_returned, expected, tuple(violations), missing, err)
