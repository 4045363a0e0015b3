"""Reading a Chroma collection: ``get`` by id, ``query`` (the ``where`` filter inside the HNSW
search, Chroma's raw distances made canonical), ``scan`` pages in Chroma's stable order and
``count``. Served to :class:`~.store.ChromaStore` as its read primitives."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..._cursor import Position, position_field
from ..._digest import bin_of
from ..._models import Include, Match, Metric, Record, Vector, score_from_distance
from ...exceptions import ConfigurationError, ConflictError
from ._mapping import fields
from .filters import Where

if TYPE_CHECKING:
    from .store import ChromaStore

__all__ = ["Reader"]

# Chroma raw distance → canonical distance (see vectorport.Metric).
_TO_CANONICAL: dict[Metric, Any] = {
    Metric.COSINE: lambda d: d,
    Metric.DOT: lambda d: d - 1.0,  # ip is 1 - dot; canonical is -dot
    Metric.EUCLIDEAN: lambda d: math.sqrt(max(d, 0.0)),  # l2 is squared
}


def _offset_and_key(position: Position) -> tuple[int, str]:
    offset = position_field(position, "o", int, "chroma")
    if offset < 1:
        raise ConfigurationError("not a chroma scan cursor: its offset is not positive")
    return offset, position_field(position, "k", str, "chroma")


class Reader:
    """``get``, ``query``, ``scan`` pages and ``count`` of one collection."""

    def __init__(self, store: ChromaStore) -> None:
        self.store = store

    def read(self, keys: Sequence[str], include: frozenset[Include]) -> list[Record]:
        """The stored records of ``keys``; missing ones left out."""
        conn = self.store.connection
        coll = conn.collection()
        with conn.op("get"):
            res = coll.get(ids=list(keys), include=fields(include))
        return self.store.mapping.records(res, include)

    def count(self) -> int:
        conn = self.store.connection
        coll = conn.collection()
        with conn.op("count"):
            return int(coll.count())

    def search(
        self,
        vector: Vector,
        k: int,
        where: Where | None,
        include: frozenset[Include],
        params: Mapping[str, Any],
    ) -> list[Match]:
        """The ``k`` nearest records among those matching ``where`` (ties by key)."""
        if params:
            raise ConfigurationError(
                f"chroma takes no per-query params (got {sorted(params)}); set ef_search on the "
                "collection (chroma URL parameter ef_search=) instead"
            )
        conn = self.store.connection
        coll = conn.collection()
        wanted = ["distances", *fields(include)]
        with conn.op("query"):
            res = coll.query(query_embeddings=vector.reshape(1, -1), n_results=k, where=where, include=wanted)
        metric = self.store.spec.metric
        convert = _TO_CANONICAL[metric]
        ids: list[str] = res["ids"][0]
        dists = res["distances"][0]
        metas = (res.get("metadatas") or [None])[0] or [None] * len(ids)
        docs = (res.get("documents") or [None])[0] or [None] * len(ids)
        vecs = res["embeddings"][0] if Include.VECTOR in include else None
        out = []
        for i, key in enumerate(ids):
            d = float(convert(float(dists[i])))
            meta, text = self.store.mapping.decode(metas[i], docs[i])
            out.append(
                Match(
                    key,
                    d,
                    score_from_distance(metric, d),
                    meta if Include.METADATA in include else None,
                    text if Include.TEXT in include else None,
                    np.asarray(vecs[i], dtype=np.float32) if vecs is not None else None,
                )
            )
        out.sort(key=lambda m: (m.distance, m.key))
        return out

    def scan_page(
        self, limit: int, include: frozenset[Include], segment: tuple[int, int], after: Position | None
    ) -> tuple[Sequence[Record], Position | None]:
        """Pages by position in Chroma's stable (insertion) order. The cursor keeps the offset
        and the key just before it, checked on resume: if records before the cursor were
        deleted (or lost their text, which deletes and adds them) the offsets moved, and
        resuming could skip records, so the scan stops with ConflictError instead. Segments
        hash keys (``bin_of``): their pages read ids only, then fetch the chosen records
        by id."""
        conn = self.store.connection
        coll = conn.collection()
        index, parts = segment
        offset, last = (0, None) if after is None else _offset_and_key(after)
        inc = fields(include) if parts == 1 else []
        step = limit if parts == 1 else conn.batch - 1
        # one row past the page tells whether another follows (a count after a full page cost
        # 10-30 ms a page in a migration; another get past the end reads nothing for 30-50 ms
        # past 10k records: an offset is skipped row by row)
        ahead = 1 if parts == 1 else 0
        chosen: list[str] = []
        found: list[Record] = []
        done = False
        while len(chosen) < limit:
            with conn.op("scan"):
                if last is None:
                    res = coll.get(limit=step + ahead, offset=offset, include=inc)
                    ids: list[str] = res["ids"]
                    skip = 0
                else:
                    res = coll.get(limit=step + 1 + ahead, offset=offset - 1, include=inc)
                    ids = res["ids"]
                    if not ids or ids[0] != last:
                        raise ConflictError(
                            f"{conn.where}: records before the scan cursor were deleted or "
                            "replaced, so positions moved; restart the scan"
                        )
                    skip = 1
            taken = 0
            page = self.store.mapping.records(res, include) if parts == 1 else None
            for pos in range(skip, len(ids)):
                taken = pos - skip + 1
                if parts == 1 or bin_of(ids[pos], parts) == index:
                    chosen.append(ids[pos])
                    if page is not None:
                        found.append(page[pos])
                    if len(chosen) == limit:
                        break
            offset += taken
            if taken:
                last = ids[skip + taken - 1]
            if len(ids) - skip < step + ahead and taken == len(ids) - skip:
                done = True
                break
        if parts > 1 and chosen and include:
            found = self._fetch(chosen, include)
        elif parts > 1:
            found = [Record(k, None, {}, None) for k in chosen]
        return found, None if done or last is None else {"o": offset, "k": last}

    def _fetch(self, keys: list[str], include: frozenset[Include]) -> list[Record]:
        by_key = {r.key: r for r in self.read(keys, include)}
        # A record deleted between the two reads is simply gone.
        return [by_key[k] for k in keys if k in by_key]
