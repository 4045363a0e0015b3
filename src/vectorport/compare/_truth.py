"""Exact ground truth for a query set: one scan of a store, one mask per distinct filter,
batched matrix products (see :meth:`vectorport.testing.ExactIndex.search_many`)."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .._exact import ExactIndex, TopK
from .._models import Metric, Record
from .._protocol import VectorStore
from ..exceptions import ConfigurationError
from ..filters import FilterNode
from ._queries import Query

__all__ = ["FilterGroup", "GroundTruth", "TruthTable"]

log = logging.getLogger("vectorport.compare")


@dataclass(frozen=True)
class FilterGroup:
    """The queries sharing one filter, and how much of the collection that filter selects."""

    label: str
    where: FilterNode | None
    queries: tuple[int, ...]
    matching: int
    """Records matching the filter."""
    selectivity: float
    """``matching / total``."""


@dataclass(frozen=True)
class TruthTable:
    """Exact answers, aligned with the query list."""

    k: int
    topk: TopK
    groups: tuple[FilterGroup, ...]
    masks: dict[str, npt.NDArray[np.bool_]]
    """Rows matching each group's filter, by group label."""
    seconds: float

    def keys(self, index: ExactIndex, qi: int) -> list[str]:
        """The exact best-first keys of query ``qi``."""
        n = int(self.topk.counts[qi])
        return [str(k) for k in index.keys[self.topk.rows[qi, :n]]]

    def distances(self, qi: int) -> npt.NDArray[np.float64]:
        """The exact best-first distances of query ``qi``."""
        return self.topk.distances[qi, : int(self.topk.counts[qi])]


class GroundTruth:
    """An exact copy of one collection (keys, vectors, metadata) that answers query sets.

    >>> import vectorport
    >>> s = vectorport.connect("memory://doctest-truth", dimension=2, metric="euclidean")
    >>> _ = s.upsert([vectorport.Record("a", [0, 0]), vectorport.Record("b", [3, 4])])
    >>> truth = GroundTruth.from_store(s)
    >>> table = truth.solve([Query([0.0, 0.0])], k=2)
    >>> table.keys(truth.index, 0), table.distances(0).tolist()
    (['a', 'b'], [0.0, 5.0])
    >>> s.drop()
    """

    def __init__(self, index: ExactIndex, source: str = "records", scan_seconds: float = 0.0) -> None:
        self.index = index
        self.source = source
        self.scan_seconds = scan_seconds

    @property
    def metric(self) -> Metric:
        return self.index.metric

    @property
    def dimension(self) -> int:
        return int(self.index.vectors.shape[1])

    def __len__(self) -> int:
        return len(self.index)

    @classmethod
    def from_records(
        cls, metric: str | Metric, records: Sequence[Record], source: str = "records"
    ) -> GroundTruth:
        """Truth over records already in memory (every record needs a vector)."""
        if any(r.vector is None for r in records):
            raise ConfigurationError("ground truth needs every record's vector")
        return cls(ExactIndex.from_records(metric, records), source)

    @classmethod
    def from_store(cls, store: VectorStore, *, batch_size: int | None = None) -> GroundTruth:
        """Scan every record of ``store`` (vectors and metadata) into an exact index."""
        start = time.perf_counter()
        spec = store.spec
        keys: list[str] = []
        metadatas: list[dict[str, object]] = []
        chunks: list[npt.NDArray[np.float32]] = []
        for page in store.scan(batch_size=batch_size, include=["vector", "metadata"]):
            if not page.records:
                continue
            keys.extend(r.key for r in page)
            metadatas.extend(r.metadata for r in page)
            chunks.append(np.stack([np.asarray(r.vector, dtype=np.float32) for r in page]))
        vectors = np.concatenate(chunks) if chunks else np.empty((0, spec.dimension), dtype=np.float32)
        if len(set(keys)) != len(keys):
            raise ConfigurationError(f"the scan of {store.url} returned some keys twice; its scan is broken")
        elapsed = time.perf_counter() - start
        log.info("truth: scanned %d records of %s in %.2fs", len(keys), store.url, elapsed)
        return cls(ExactIndex(spec.metric, keys, vectors, metadatas), str(store.url), elapsed)

    def solve(self, queries: Sequence[Query], k: int, *, batch_size: int = 256) -> TruthTable:
        """Exact filtered top-``k`` of every query: one mask and one batched search per filter."""
        start = time.perf_counter()
        dim = self.dimension
        for i, q in enumerate(queries):
            if q.vector is None:
                raise ConfigurationError(f"{q.describe(i)} has no vector (embed its text first)")
            size = np.asarray(q.vector).size
            if size != dim:
                raise ConfigurationError(f"{q.describe(i)} has {size} dimensions; the collection has {dim}")
            if self.metric is Metric.COSINE and not np.any(np.asarray(q.vector)):
                raise ConfigurationError(f"{q.describe(i)} is the zero vector, which has no cosine distance")
        by_label: dict[str, list[int]] = {}
        for i, q in enumerate(queries):
            by_label.setdefault(q.filter_label, []).append(i)
        rows = np.full((len(queries), k), -1, dtype=np.int64)
        dists = np.full((len(queries), k), np.inf, dtype=np.float64)
        counts = np.zeros(len(queries), dtype=np.int64)
        groups: list[FilterGroup] = []
        masks: dict[str, npt.NDArray[np.bool_]] = {}
        total = max(len(self.index), 1)
        for label, members in by_label.items():
            where = queries[members[0]].where
            mask = self.index.mask(where)
            masks[label] = mask
            matrix = np.stack([np.asarray(queries[i].vector, dtype=np.float32) for i in members])
            top = self.index.search_many(matrix, k, mask=mask, batch_size=batch_size)
            rows[members] = top.rows
            dists[members] = top.distances
            counts[members] = top.counts
            matching = int(mask.sum())
            groups.append(FilterGroup(label, where, tuple(members), matching, matching / total))
        elapsed = time.perf_counter() - start
        log.info("truth: %d queries, %d filters solved in %.2fs", len(queries), len(groups), elapsed)
        return TruthTable(k, TopK(rows, dists, counts), tuple(groups), masks, elapsed)
