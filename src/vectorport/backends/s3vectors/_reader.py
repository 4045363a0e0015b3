"""Reading an index: ``GetVectors`` by key, ``QueryVectors`` (vector search, the filter inside)
and ``ListVectors`` pages for ``scan``, each vector's metadata decoded by the index's layout
(:mod:`._mapping`). Served to :class:`~.store.S3VectorsStore` as its read primitives."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..._cursor import Position, position_field
from ..._digest import bin_of
from ..._models import Include, Match, Record, Vector, score_from_distance
from ._bucket import NATIVE_SEGMENTS

if TYPE_CHECKING:
    from .store import S3VectorsStore

__all__ = ["Reader"]

_TEXT_INCLUDES = frozenset({Include.METADATA, Include.TEXT})


class Reader:
    """``get``, ``query`` and ``scan`` pages of one index, as vectorport records and matches."""

    def __init__(self, store: S3VectorsStore) -> None:
        self.store = store

    def _records(self, items: Sequence[Mapping[str, Any]], include: frozenset[Include]) -> list[Record]:
        vectors: Sequence[Vector | None] = [None] * len(items)
        if Include.VECTOR in include and items:
            vectors = _vectors([item["data"]["float32"] for item in items])
        if not include & _TEXT_INCLUDES:  # keys (and vectors) only: a key listing
            return [Record(item["key"], vec, {}, None) for item, vec in zip(items, vectors, strict=True)]
        decode = self.store.mapping.decode
        out = []
        for item, vec in zip(items, vectors, strict=True):
            meta, text = decode(item.get("metadata"), include)
            out.append(Record(item["key"], vec, meta, text))
        return out

    def read(self, keys: Sequence[str], include: frozenset[Include]) -> list[Record]:
        """The stored records of ``keys`` (at most 100, GetVectors' limit); missing ones left out."""
        calls = self.store.calls
        resp = calls.call(
            "GetVectors",
            **calls.ids,
            keys=list(keys),
            returnData=Include.VECTOR in include,
            returnMetadata=bool(include & _TEXT_INCLUDES),
        )
        return self._records(resp.get("vectors", []), include)

    def search(
        self,
        vector: Vector,
        k: int,
        where: dict[str, Any] | None,
        include: frozenset[Include],
        params: Mapping[str, Any],
    ) -> list[Match]:
        """The ``k`` nearest vectors among those matching ``where`` (ties by key)."""
        store, calls = self.store, self.store.calls
        request: dict[str, Any] = {
            **calls.ids,
            "topK": k,
            "queryVector": {"float32": vector.tolist()},
            "returnDistance": True,
            "returnMetadata": bool(include & _TEXT_INCLUDES),
        }
        if where is not None:
            request["filter"] = where
        request.update(params)
        metric = store.spec.metric
        hits = sorted(calls.query(request), key=lambda h: (float(h.get("distance", 0.0)), h["key"]))
        vectors: dict[str, Vector | None] = {}
        if Include.VECTOR in include and hits:
            for rec in self.read([h["key"] for h in hits], frozenset({Include.VECTOR})):
                vectors[rec.key] = None if rec.vector is None else np.asarray(rec.vector, np.float32)
        out = []
        for hit in hits:
            # S3 cosine distance is 1 - cos and euclidean is plain L2: both already canonical.
            distance = float(hit.get("distance", 0.0))
            meta, text = store.mapping.decode(hit.get("metadata"), include)
            out.append(
                Match(
                    hit["key"],
                    distance,
                    score_from_distance(metric, distance),
                    meta if Include.METADATA in include else None,
                    text,
                    vectors.get(hit["key"]),
                )
            )
        return out

    def scan_page(
        self, limit: int, include: frozenset[Include], segment: tuple[int, int], after: Position | None
    ) -> tuple[Sequence[Record], Position | None]:
        """One ListVectors page of ``segment``: the service's segments up to 16, beyond that
        split client-side by key hash."""
        calls = self.store.calls
        index, parts = segment
        request: dict[str, Any] = {
            **calls.ids,
            "maxResults": limit,
            "returnData": Include.VECTOR in include,
            "returnMetadata": bool(include & _TEXT_INCLUDES),
        }
        if 1 < parts <= NATIVE_SEGMENTS:
            request.update(segmentCount=parts, segmentIndex=index)
        if after is not None:
            request["nextToken"] = position_field(after, "token", str, self.store.name)
        resp = calls.call("ListVectors", **request)
        items = resp.get("vectors", [])
        if parts > NATIVE_SEGMENTS:  # more segments than the service offers: split client-side
            items = [item for item in items if bin_of(item["key"], parts) == index]
        token = resp.get("nextToken")
        return self._records(items, include), {"token": token} if token else None


def _vectors(rows: list[Any]) -> Sequence[Vector]:
    """Each item's ``float32`` list as a float32 array: one conversion for a page of equal
    lengths (a third cheaper than one per row), else row by row."""
    try:
        block = np.array(rows, np.float64)
    except ValueError:  # ragged: not one index's vectors
        return [np.asarray(row, np.float32) for row in rows]
    if block.ndim != 2:
        return [np.asarray(row, np.float32) for row in rows]
    return list(block.astype(np.float32))
