"""Exact filtered top-k search, written once: the memory store, the bucket server, the migration
verifier, the comparison harness and the conformance kit all rank with it.

Ranking is two-step. Candidates are found with float32 matrix products (unit rows under cosine,
``2 q.x - |x|^2`` under euclidean), cut at the k-th best score minus a bound on float32 rounding,
so every row that can be in the exact top k survives, ties included. The survivors' canonical
distances are then computed in float64 (:func:`~vectorport._models.canonical_distances`) and
ordered by ``(distance, key)``. The answer is therefore the same as sorting every row by its
float64 distance and key, at the cost of one matrix product.

:class:`SearchMatrix` ranks a fixed set of rows (batched queries); :class:`StreamingTopK` keeps
the best rows of a stream of pages (a scan) for a few queries, in bounded memory;
:class:`ExactIndex` adds keys' metadata and the filter oracle.

A row without a defined distance (a NaN or infinite component, or all zeros under cosine) is
never an answer, and a query without one has no answers: writes refuse such vectors, so they come
from storage written by other tools or corrupted, and must neither crash a search nor rank.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ._models import Metric, Record, Vector, canonical_distances
from .filters import FilterNode, evaluate_many, to_dict

__all__ = ["ExactIndex", "SearchMatrix", "StreamingTopK", "TopK"]

_UNIT = 2.0**-24  # float32 unit roundoff
_SAFETY = 4.0  # the bound below is a worst case already; the factor covers BLAS summation order
_WIDE = 1e37  # |q| * max |x| (or max |x|^2) beyond this, a float32 score may overflow (max 3.4e38)


@dataclass(frozen=True)
class TopK:
    """Exact answers to a batch of queries: row ``i`` holds query ``i``'s best rows, best first.

    Rows past ``counts[i]`` are padding (``-1`` and ``inf``).
    """

    rows: npt.NDArray[np.int64]
    """(queries, k) row numbers into the searched matrix."""
    distances: npt.NDArray[np.float64]
    """(queries, k) exact canonical distances (float64 maths)."""
    counts: npt.NDArray[np.int64]
    """Valid entries per query: ``min(k, allowed rows)``."""


class SearchMatrix:
    """Exact top-k over the rows of one float32 matrix, keys breaking distance ties.

    >>> import numpy as np
    >>> from vectorport import Metric
    >>> m = SearchMatrix(Metric.EUCLIDEAN, np.array([[0, 0], [3, 4], [0, 1]]), ["a", "b", "c"])
    >>> top = m.search(np.array([[0, 0]]), 2)
    >>> top.rows.tolist(), top.distances.tolist()
    ([[0, 2]], [[0.0, 1.0]])
    """

    def __init__(
        self, metric: Metric, vectors: npt.ArrayLike, keys: Sequence[str] | npt.NDArray[Any]
    ) -> None:
        self.metric = metric
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.keys = keys if isinstance(keys, np.ndarray) else np.array(list(keys), dtype=object)
        if self.vectors.ndim != 2:
            self.vectors = self.vectors.reshape(len(self.keys), -1)
        self._base: npt.NDArray[np.float32] | None = None
        self._sqnorms: npt.NDArray[np.float32] | None = None
        self._rankable: npt.NDArray[np.bool_] | None = None
        self._all_rankable = True
        self._max_norm = 0.0

    def __len__(self) -> int:
        return int(self.vectors.shape[0])

    def _prepared(self) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32], npt.NDArray[np.bool_]]:
        """The matrix candidates are ranked against (unit rows under cosine, unrankable rows
        zeroed), squared norms, and which rows have a distance at all."""
        if self._base is None or self._sqnorms is None or self._rankable is None:
            with np.errstate(over="ignore", invalid="ignore"):  # non-finite rows, dropped below
                sqnorms = np.einsum("ij,ij->i", self.vectors, self.vectors, dtype=np.float64)
            rankable = _rankable_rows(self.metric, sqnorms)
            base = self.vectors if rankable.all() else np.where(rankable[:, None], self.vectors, 0)
            sqnorms = np.where(rankable, sqnorms, 0.0)
            if self.metric is Metric.COSINE:
                norms = np.sqrt(sqnorms)[:, None]
                base = (base / np.where(norms == 0, 1, norms)).astype(np.float32)
                self._max_norm = 1.0
            else:
                self._max_norm = float(np.sqrt(sqnorms.max())) if len(sqnorms) else 0.0
            self._base = np.ascontiguousarray(base, dtype=np.float32)
            self._sqnorms = sqnorms.astype(np.float32)
            self._rankable, self._all_rankable = rankable, bool(rankable.all())
        return self._base, self._sqnorms, self._rankable

    def _slack(self, qnorm: npt.NDArray[np.float64], dim: int) -> npt.NDArray[np.float64]:
        """Per query, twice a bound on the float32 error of a candidate score."""
        m = self._max_norm
        scale = 2.0 * qnorm * m + m * m if self.metric is Metric.EUCLIDEAN else qnorm * m
        return np.asarray(2.0 * _SAFETY * (dim + 2) * _UNIT * scale, dtype=np.float64)

    def search(
        self,
        queries: npt.ArrayLike,
        k: int,
        rows: npt.NDArray[np.int64] | None = None,
        *,
        batch_size: int = 256,
        single_thread: bool = False,
    ) -> TopK:
        """Exact top-``k`` of every query among ``rows`` (all rows when ``None``).

        ``single_thread``: score on this thread only (numpy's own loops) instead of the BLAS
        library's threads, for work that runs beside other work (:class:`StreamingTopK`): after
        every call OpenBLAS's threads spin for about a tenth of a second waiting for the next,
        taking a core from whatever runs beside them (a page-by-page top-k during a scan kept a
        core spinning for the whole scan, beside an index build on two cores)."""
        dim = self.vectors.shape[1] if self.vectors.ndim == 2 else 0
        q = np.asarray(queries, dtype=np.float32).reshape(-1, dim)
        nq = q.shape[0]
        base, sqnorms, rankable = self._prepared()
        every = rows is None and self._all_rankable
        allowed = np.arange(len(self), dtype=np.int64) if rows is None else rows
        if not self._all_rankable:
            allowed = allowed[rankable[allowed]]
        with np.errstate(over="ignore", invalid="ignore"):  # NaN and inf queries are dropped here
            qnorm = np.linalg.norm(q.astype(np.float64), axis=1)
        answerable = np.isfinite(qnorm) & ((qnorm > 0) if self.metric is Metric.COSINE else True)
        kk = min(k, int(allowed.size))
        out = TopK(
            np.full((nq, k), -1, dtype=np.int64),
            np.full((nq, k), np.inf, dtype=np.float64),
            np.where(answerable, kk, 0).astype(np.int64),
        )
        if kk == 0 or not answerable.any():
            return out
        q = np.where(answerable[:, None], q, np.float32(0))
        sub = base if every else base[allowed]
        subnorms = sqnorms if every else sqnorms[allowed]
        slack = self._slack(qnorm, dim)
        # float32 scores that may overflow rank every row in float64 instead
        exhaustive = ~np.isfinite(slack) | (qnorm * self._max_norm > _WIDE) | (self._max_norm**2 > _WIDE)
        for start in range(0, nq, batch_size):
            qb = q[start : start + batch_size]
            part = slice(start, start + qb.shape[0])
            with np.errstate(over="ignore", invalid="ignore"):  # such queries are ranked exhaustively
                # larger is nearer (cosine: unit rows, |q| does not change the order)
                score = np.einsum("qd,nd->qn", qb, sub, optimize=False) if single_thread else qb @ sub.T
                if self.metric is Metric.EUCLIDEAN:
                    # -(|x|^2 - 2 q.x): |q|^2 is the same for every row; in place, no copy
                    score *= 2.0
                    score -= subnorms[None, :]
            cut = np.full(qb.shape[0], -np.inf)
            if kk < allowed.size:  # every row within rounding of the k-th best score, ties included
                kth = np.partition(score, allowed.size - kk, axis=1)[:, allowed.size - kk]
                cut = np.where(exhaustive[part], -np.inf, kth - slack[part])
            for i in range(qb.shape[0]):
                if answerable[start + i]:
                    cand = allowed[np.flatnonzero(score[i] >= cut[i])]
                    self._rank(out, start + i, qb[i], allowed if cand.size < kk else cand, kk)
        return out

    def _rank(
        self,
        out: TopK,
        qi: int,
        query: npt.NDArray[np.float32],
        cand: npt.NDArray[np.int64],
        kk: int,
    ) -> None:
        """Order ``cand`` by exact distance and key into row ``qi`` of ``out``."""
        dist = canonical_distances(self.metric, query, self.vectors[cand])
        order = np.lexsort((self.keys[cand], dist))[:kk]
        out.rows[qi, :kk] = cand[order]
        out.distances[qi, :kk] = dist[order]


def _rankable_rows(metric: Metric, sqnorms: npt.NDArray[np.float64]) -> npt.NDArray[np.bool_]:
    """Rows with a distance: finite (so is the float64 squared norm), and not zero under cosine."""
    ok = np.isfinite(sqnorms)
    return ok & (sqnorms > 0) if metric is Metric.COSINE else ok


class StreamingTopK:
    """The exact best ``size`` rows, by ``(distance, key)``, of a stream of pages, for a few
    query vectors; memory stays ``queries * size`` whatever the stream's length.

    >>> import numpy as np
    >>> from vectorport import Metric
    >>> top = StreamingTopK(Metric.EUCLIDEAN, np.array([[0, 0]]), 2)
    >>> top.update(["b", "a"], np.array([[3, 4], [0, 1]]))
    >>> top.update(["c"], np.array([[0, 0]]))
    >>> top.keys[0].tolist(), top.distances[0].tolist()
    (['c', 'a'], [0.0, 1.0])
    """

    def __init__(self, metric: Metric, queries: npt.ArrayLike, size: int) -> None:
        self.metric = metric
        self.queries = np.asarray(queries, dtype=np.float32)
        if self.queries.ndim == 1:
            self.queries = self.queries.reshape(1, -1)
        self.size = size
        nq = len(self.queries)
        self.distances: list[npt.NDArray[np.float64]] = [np.empty(0, dtype=np.float64)] * nq
        self.keys: list[npt.NDArray[np.object_]] = [np.empty(0, dtype=object)] * nq

    def update(self, keys: Sequence[str], vectors: npt.ArrayLike) -> None:
        """Fold one page of rows into every query's best ``size``."""
        if not len(self.queries) or not len(keys):
            return
        page = SearchMatrix(self.metric, vectors, keys)
        # a scan's pages come every few milliseconds, beside the scan's own work: one thread
        top = page.search(self.queries, self.size, single_thread=True)
        for i in range(len(self.queries)):
            n = int(top.counts[i])
            d = np.concatenate([self.distances[i], top.distances[i, :n]])
            k = np.concatenate([self.keys[i], page.keys[top.rows[i, :n]]])
            order = np.lexsort((k, d))[: self.size]
            self.distances[i], self.keys[i] = d[order], k[order]

    def merge(self, other: StreamingTopK) -> None:
        """Fold in the best rows ``other`` kept for the same queries (from other pages)."""
        for i in range(len(self.queries)):
            d = np.concatenate([self.distances[i], other.distances[i]])
            k = np.concatenate([self.keys[i], other.keys[i]])
            order = np.lexsort((k, d))[: self.size]
            self.distances[i], self.keys[i] = d[order], k[order]

    def empty_like(self) -> StreamingTopK:
        """A new, empty top-k for the same queries (one per thread, merged at the end)."""
        return StreamingTopK(self.metric, self.queries, self.size)

    def update_records(self, records: Sequence[Record]) -> None:
        """:meth:`update` with records that carry their vectors."""
        if records:
            self.update(
                [r.key for r in records], np.stack([np.asarray(r.vector, np.float32) for r in records])
            )


class ExactIndex:
    """Exact filtered top-k over an in-memory copy of a collection (keys, vectors, metadata);
    filters are judged by the oracle (:func:`vectorport.filters.evaluate_many`).

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
        self.matrix = SearchMatrix(metric, vectors, keys)
        self.keys = self.matrix.keys
        self.vectors = self.matrix.vectors
        self.metadatas = list(metadatas)
        self.row = {k: i for i, k in enumerate(keys)}
        self._masks: dict[str, npt.NDArray[np.bool_]] = {}

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

    def distances(self, query: Vector | npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Exact canonical distances from ``query`` to every row."""
        return canonical_distances(self.metric, np.asarray(query, dtype=np.float32), self.vectors)

    def top_k(
        self,
        query: Vector | npt.ArrayLike,
        k: int,
        where: FilterNode | None = None,
        mask: npt.NDArray[np.bool_] | None = None,
    ) -> tuple[list[str], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """Best-first keys and distances among matching rows that have a distance, plus all
        distances (NaN or infinite for rows and queries without one)."""
        dist = self.distances(query)
        allowed = self.mask(where) if mask is None else mask
        rows = np.flatnonzero(allowed & np.isfinite(dist))
        order = rows[np.lexsort((self.keys[rows], dist[rows]))][:k]
        return [str(k_) for k_ in self.keys[order]], dist[order], dist

    def search_many(
        self,
        queries: npt.ArrayLike,
        k: int,
        where: FilterNode | None = None,
        *,
        mask: npt.NDArray[np.bool_] | None = None,
        batch_size: int = 256,
    ) -> TopK:
        """Exact top-``k`` of every query among rows matching ``where`` (or ``mask``), ordered
        by (distance, key) exactly as :meth:`top_k` orders them."""
        allowed = self.mask(where) if mask is None else mask
        rows = None if bool(allowed.all()) else np.flatnonzero(allowed).astype(np.int64)
        return self.matrix.search(queries, k, rows, batch_size=batch_size)
