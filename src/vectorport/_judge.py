"""Judge a store's answer against the exact truth: recall with near ties counted as hits,
under-fill, filter-scope violations and distance agreement. The comparison harness, the
conformance kit and the migration verifier all apply this one rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from ._exact import ExactIndex
from ._models import QueryResult, Vector, canonical_distances
from .filters import FilterNode

__all__ = ["TIE_EPSILON", "Judgement", "judge", "tie_tolerance"]

TIE_EPSILON = 1e-4
"""Relative distance within which a returned record ties the true k-th (ann-benchmarks' ε)."""


def tie_tolerance(kth: float, eps: float = TIE_EPSILON) -> float:
    """How far past the true k-th distance ``kth`` a returned record still counts as a hit."""
    return eps * (1.0 + abs(kth))


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
    eps: float = TIE_EPSILON,
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
    truth_keys, truth_dist, exact = _truth(index, query, k, where, mask, truth, returned_rows)
    kth = float(truth_dist[-1]) if len(truth_dist) else float("inf")
    tol = tie_tolerance(kth, eps)
    tally = _tally(result, returned_rows, mask, exact, kth + tol)
    required = [key for key, d in zip(truth_keys, truth_dist, strict=True) if d < kth - tol]
    missing = tuple(key for key in required if key not in tally.returned)
    expected = len(truth_keys)
    recall = 1.0 if expected == 0 else min(tally.hits, expected) / expected
    return Judgement(
        recall,
        k,
        result.k_returned,
        expected,
        tuple(tally.violations),
        missing,
        max(tally.errors, default=0.0),
        tally.hits,
        tuple(tally.wrong),
        tuple(tally.unknown),
        tuple(tally.duplicates),
        tuple(tally.errors),
        tuple(truth_keys),
        kth,
    )


def _truth(
    index: ExactIndex,
    query: Vector,
    k: int,
    where: FilterNode | None,
    mask: npt.NDArray[np.bool_],
    truth: tuple[Sequence[str], npt.ArrayLike] | None,
    returned_rows: list[int | None],
) -> tuple[list[str], npt.NDArray[np.float64], dict[int, float]]:
    """The exact best-first keys and distances (``truth`` when given, else computed) and the
    exact distance of each returned row the index holds."""
    if truth is None:
        truth_keys, truth_dist, all_dist = index.top_k(query, k, where, mask)
        known = [r for r in returned_rows if r is not None]
        return list(truth_keys), np.asarray(truth_dist), {r: float(all_dist[r]) for r in known}
    rows = sorted({r for r in returned_rows if r is not None})
    dists = canonical_distances(index.metric, np.asarray(query, dtype=np.float32), index.vectors[rows])
    exact = {r: float(d) for r, d in zip(rows, dists, strict=True)}
    return [str(key) for key in truth[0]], np.asarray(truth[1], dtype=np.float64), exact


@dataclass
class _Tally:
    """The returned keys sorted into hits, wrong, out-of-scope, unknown and duplicates."""

    returned: set[str] = field(default_factory=set)
    violations: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    errors: list[float] = field(default_factory=list)
    hits: int = 0


def _tally(
    result: QueryResult,
    returned_rows: list[int | None],
    mask: npt.NDArray[np.bool_],
    exact: dict[int, float],
    limit: float,
) -> _Tally:
    """Sort each returned key: a hit when its exact distance is within ``limit``."""
    tally = _Tally()
    for match, row in zip(result, returned_rows, strict=True):
        if match.key in tally.returned:
            tally.duplicates.append(match.key)
            continue
        tally.returned.add(match.key)
        if row is None or not mask[row]:
            tally.violations.append(match.key)
            if row is None:
                tally.unknown.append(match.key)
            continue
        true = exact[row]
        tally.errors.append(abs(match.distance - true))
        if true <= limit:
            tally.hits += 1
        else:
            tally.wrong.append(match.key)
    return tally
