"""``memory://NAME``: exact numpy search over an in-process collection. The reference and oracle.

Text search is exact BM25 over the records' text and hybrid search fuses it with exact vector
search, both by the reference rules of :mod:`vectorport._textsearch`.

Collections live in a process-wide namespace (like fsspec's memory filesystem), so two
``connect("memory://docs")`` calls share data. Filters are evaluated by the oracle itself.
"""

from __future__ import annotations

import bisect
import copy
import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

import numpy as np
import numpy.typing as npt

from ..._base import BaseStore
from ..._capabilities import Capabilities
from ..._cursor import Position, position_field
from ..._digest import bin_of
from ..._exact import SearchMatrix
from ..._features import Feature
from ..._models import (
    CollectionSpec,
    Include,
    Match,
    Metric,
    QueryResult,
    Record,
    Vector,
    score_from_distance,
)
from ..._protocol import FilterLike
from ..._querying import prepare_query
from ..._textsearch import HYBRID_DEPTH, TextIndex, check_fusion, check_query_text, fuse, ranked, text_match
from ..._url import StoreURL
from ..._validate import Batch
from ...exceptions import ConfigurationError, NotFoundError
from ...filters import ALL_OPERATORS, FilterNode, evaluate_many, to_dict

__all__ = ["MemoryStore"]


@dataclass
class _Collection:
    spec: CollectionSpec
    vectors: Vector
    keys: list[str] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)
    metadatas: list[dict[str, Any]] = field(default_factory=list)
    texts: list[str | None] = field(default_factory=list)
    lock: threading.RLock = field(default_factory=threading.RLock)
    _sorted: list[str] | None = None
    _matrix: SearchMatrix | None = None
    _text: TextIndex | None = None
    _masks: dict[str, npt.NDArray[np.int64]] = field(default_factory=dict)

    def rows_matching(self, where: FilterNode) -> npt.NDArray[np.int64]:
        """Rows whose metadata matches ``where`` (by the oracle), cached until the next write."""
        # canonical JSON, not the node, is the cache key: nodes compare 1 == True equal, the
        # filter semantics do not
        key = json.dumps(to_dict(where), sort_keys=True)
        rows = self._masks.get(key)
        if rows is None:
            if len(self._masks) >= 64:
                self._masks.clear()
            rows = self._masks[key] = np.flatnonzero(evaluate_many(where, self.metadatas)).astype(np.int64)
        return rows

    def matrix(self) -> SearchMatrix:
        """The exact-search matrix of the current rows (rebuilt after a write)."""
        if self._matrix is None:
            n = len(self.keys)
            self._matrix = SearchMatrix(self.spec.metric, self.vectors[:n], self.keys)
        return self._matrix

    def text_index(self) -> TextIndex:
        """The BM25 index of the current rows' text (rebuilt after a write)."""
        if self._text is None:
            self._text = TextIndex.build(self.texts)
        return self._text

    def text_ranking(self, query: str, where: FilterNode | None) -> list[tuple[int, float]]:
        """``(row, bm25)`` of every row matching ``where`` that holds a query term, best first."""
        scores = self.text_index().scores(query, len(self.keys))
        rows = None if where is None else self.rows_matching(where)
        return [(int(r), float(scores[r])) for r in ranked(scores, self.keys, rows)]

    def sorted_keys(self) -> list[str]:
        if self._sorted is None:
            self._sorted = sorted(self.keys)
        return self._sorted

    def put(self, key: str, vector: Vector, metadata: dict[str, Any], text: str | None) -> None:
        self._matrix = None
        self._text = None
        self._masks.clear()
        row = self.rows.get(key)
        if row is None:
            row = len(self.keys)
            if row == self.vectors.shape[0]:
                grown = np.empty((max(16, row * 2), self.spec.dimension), dtype=np.float32)
                grown[:row] = self.vectors[:row]
                self.vectors = grown
            self.rows[key] = row
            self._sorted = None
            self.keys.append(key)
            self.metadatas.append(metadata)
            self.texts.append(text)
        else:
            self.metadatas[row] = metadata
            self.texts[row] = text
        self.vectors[row] = vector

    def remove(self, key: str) -> None:
        row = self.rows.pop(key, None)
        if row is None:
            return
        self._sorted = None
        self._matrix = None
        self._text = None
        self._masks.clear()
        last = len(self.keys) - 1
        if row != last:  # move the last row into the hole
            moved = self.keys[last]
            self.keys[row] = moved
            self.rows[moved] = row
            self.metadatas[row] = self.metadatas[last]
            self.texts[row] = self.texts[last]
            self.vectors[row] = self.vectors[last]
        self.keys.pop()
        self.metadatas.pop()
        self.texts.pop()


_NAMESPACE: dict[str, _Collection] = {}
_NAMESPACE_LOCK = threading.Lock()


class MemoryStore(BaseStore[FilterNode]):
    """Exact, in-process store. Every metric, every filter operator, no size limits but RAM.

    >>> import vectorport
    >>> s = vectorport.connect("memory://doctest-memory", dimension=2)
    >>> s.upsert([vectorport.Record("a#0", [1, 0], {"lang": "en"}, "hello")])
    1
    >>> s.get(["a#0"])[0].text
    'hello'
    >>> s.drop()
    """

    name: ClassVar[str] = "memory"
    url_params = frozenset({"collection"})
    capabilities: ClassVar[Capabilities] = Capabilities(
        metrics=frozenset(Metric),
        max_dimension=65_536,
        max_write_batch=10_000,
        max_read_batch=10_000,
        max_delete_batch=10_000,
        max_scan_page=1_000,
        exact=True,
        filter_operators=frozenset(ALL_OPERATORS),
        features=frozenset({Feature.NATIVE_COUNT, Feature.NATIVE_SEGMENTS, Feature.WRITE}),
        text_ranking="BM25",
    )

    @classmethod
    def processes(cls, url: StoreURL, *, writes: bool = False) -> str:
        return "this"  # a dict in this process

    @classmethod
    def from_url(cls, url: StoreURL, **options: Any) -> Self:
        opts = dict(options)
        named = opts.pop("collection", None)  # connect()'s or a migration's name replaces the URL's
        if opts:
            raise ConfigurationError(f"memory:// takes no options but collection=, got {sorted(opts)}")
        name = (
            str(named or "")
            or ((url.host or "") + url.path).strip("/")
            or url.param("collection")
            or "default"
        )
        return cls(url, name)

    def _get(self) -> _Collection:
        coll = _NAMESPACE.get(self.collection)
        if coll is None:
            raise NotFoundError(f"memory collection {self.collection!r} was dropped")
        return coll

    def _describe_collection(self) -> CollectionSpec | None:
        coll = _NAMESPACE.get(self.collection)
        return None if coll is None else coll.spec

    def _create_collection(self, spec: CollectionSpec) -> None:
        with _NAMESPACE_LOCK:
            _NAMESPACE.setdefault(
                spec.name, _Collection(spec, np.empty((0, spec.dimension), dtype=np.float32))
            )

    def _drop_collection(self) -> None:
        with _NAMESPACE_LOCK:
            _NAMESPACE.pop(self.collection, None)

    def list_collections(self) -> list[str]:
        return sorted(_NAMESPACE)

    def _write(self, batch: Batch) -> None:
        coll = self._get()
        with coll.lock:
            for i, key in enumerate(batch.keys):
                coll.put(key, batch.vectors[i].copy(), copy.deepcopy(batch.metadatas[i]), batch.texts[i])

    def _read(self, keys: Sequence[str], include: frozenset[Include]) -> list[Record]:
        coll = self._get()
        with coll.lock:
            return [self._record(coll, coll.rows[k], include) for k in keys if k in coll.rows]

    def _remove(self, keys: Sequence[str]) -> None:
        coll = self._get()
        with coll.lock:
            for key in keys:
                coll.remove(key)

    def _compile_filter(self, where: FilterNode) -> FilterNode:
        return where  # evaluated by the oracle itself

    def _search(
        self,
        vector: Vector,
        k: int,
        where: FilterNode | None,
        include: frozenset[Include],
        params: Mapping[str, Any],
    ) -> list[Match]:
        coll = self._get()
        with coll.lock:
            rows = None if where is None else coll.rows_matching(where)
            top = coll.matrix().search(vector, k, rows)
            n = int(top.counts[0])
            out = []
            for row_, dist in zip(top.rows[0, :n], top.distances[0, :n], strict=True):
                row = int(row_)
                d = float(dist)
                rec = self._record(coll, row, include)
                out.append(
                    Match(
                        rec.key,
                        d,
                        score_from_distance(coll.spec.metric, d),
                        rec.metadata if Include.METADATA in include else None,
                        rec.text,
                        coll.vectors[row].copy() if Include.VECTOR in include else None,
                    )
                )
            return out

    def text_query(
        self,
        text: str,
        k: int = 10,
        *,
        filter: FilterLike = None,
        include: Iterable[str] | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> QueryResult:
        """Exact BM25 over the records' text (the reference tokenizer: Unicode words,
        lowercased, no stemming), best first, ties by key, filter inside the ranking.

        >>> import vectorport
        >>> s = vectorport.connect("memory://doctest-bm25", dimension=2)
        >>> _ = s.upsert([vectorport.Record("a", [1, 0], text="the red fox"),
        ...               vectorport.Record("b", [0, 1], text="a red red hen")])
        >>> [(m.key, m.extra["text_rank"]) for m in s.text_query("red fox")]
        [('a', 1), ('b', 2)]
        >>> s.drop()
        """
        text = check_query_text(text, "text_query")
        prep = prepare_query(self, None, k, filter, include, params)
        self._no_params(prep.params, "text_query")
        coll = self._get()
        with coll.lock:
            hits = coll.text_ranking(text, prep.where)[: prep.k]
            out = []
            for rank, (row, score) in enumerate(hits, start=1):
                rec = self._record(coll, row, prep.include)
                meta = rec.metadata if Include.METADATA in prep.include else None
                out.append(text_match(rec.key, score, rank, meta, rec.text))
        return QueryResult(tuple(out), prep.k)

    def hybrid_query(
        self,
        vector: Sequence[float] | Any,
        text: str,
        k: int = 10,
        *,
        filter: FilterLike = None,
        weight: float = 0.5,
        rrf_k: int = 60,
        include: Iterable[str] | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> QueryResult:
        """Exact vector search and BM25 fused by the reference
        :func:`~vectorport._textsearch.fuse` (each side's ``2k`` best among the records
        matching ``filter``)."""
        text = check_query_text(text, "hybrid_query")
        prep = prepare_query(self, vector, k, filter, include, params)
        self._no_params(prep.params, "hybrid_query")
        weight, rrf_k = check_fusion(weight, rrf_k)
        assert prep.vector is not None
        depth = HYBRID_DEPTH * prep.k
        coll = self._get()
        with coll.lock:
            rows = None if prep.where is None else coll.rows_matching(prep.where)
            top = coll.matrix().search(prep.vector, depth, rows)
            nearest = [int(r) for r in top.rows[0, : int(top.counts[0])]]
            distance = {r: float(d) for r, d in zip(nearest, top.distances[0], strict=False)}
            by_text = [row for row, _ in coll.text_ranking(text, prep.where)[:depth]]
            fused = fuse(
                [coll.keys[r] for r in nearest], [coll.keys[r] for r in by_text], weight=weight, rrf_k=rrf_k
            )[: prep.k]
            chosen = [coll.rows[f.key] for f in fused]
            rest = np.asarray([r for r in chosen if r not in distance], np.int64)
            if rest.size:
                more = coll.matrix().search(prep.vector, int(rest.size), rest)
                distance.update(zip(more.rows[0].tolist(), more.distances[0].tolist(), strict=True))
            out = []
            for f, row in zip(fused, chosen, strict=True):
                rec = self._record(coll, row, prep.include)
                d = float(distance[row])
                out.append(
                    Match(
                        rec.key,
                        d,
                        score_from_distance(coll.spec.metric, d),
                        rec.metadata if Include.METADATA in prep.include else None,
                        rec.text,
                        None,
                        {"rrf_score": f.rrf_score, "vector_rank": f.vector_rank, "text_rank": f.text_rank},
                    )
                )
        return QueryResult(tuple(out), prep.k)

    @staticmethod
    def _no_params(params: Mapping[str, Any], what: str) -> None:
        if params:
            raise ConfigurationError(f"memory {what} takes no params, got {sorted(params)}")

    def _scan_page(
        self, limit: int, include: frozenset[Include], segment: tuple[int, int], position: Position | None
    ) -> tuple[Sequence[Record], Position | None]:
        coll = self._get()
        after = None if position is None else position_field(position, "after", str, "memory")
        index, parts = segment
        with coll.lock:
            ordered = coll.sorted_keys()
            pos = 0 if after is None else bisect.bisect_right(ordered, after)
            chosen: list[str] = []
            while pos < len(ordered) and len(chosen) < limit:
                key = ordered[pos]
                pos += 1
                if parts == 1 or bin_of(key, parts) == index:
                    chosen.append(key)
            records = tuple(self._record(coll, coll.rows[k], include) for k in chosen)
            done = pos >= len(ordered)
        return records, None if done or not chosen else {"after": chosen[-1]}

    def _count(self) -> int:
        return len(self._get().keys)

    @staticmethod
    def _record(coll: _Collection, row: int, include: frozenset[Include]) -> Record:
        return Record(
            coll.keys[row],
            coll.vectors[row].copy() if Include.VECTOR in include else None,
            copy.deepcopy(coll.metadatas[row]) if Include.METADATA in include else {},
            coll.texts[row] if Include.TEXT in include else None,
        )
