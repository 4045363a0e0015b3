"""``make demo``: the best end-to-end path that exists (replaced by the full demo with ingest).

Loads clustered chunk records into the exact memory store, runs a filtered top-k query, and
prints the result — the same calls work on every backend URL.
"""

from __future__ import annotations

import sys

import vectorport
from vectorport.testing.data import clustered_records, query_vectors


def main() -> int:
    store = vectorport.connect("memory://demo", dimension=32, metric="cosine")
    try:
        written = store.upsert(clustered_records(2_000, 32, clusters=8, seed=42))
        spec = store.spec
        print(f"upserted {written} records into {store.url} ({spec.metric.value}, {spec.dimension} dims)")
        flt = {"lang": {"$in": ["en", "fr"]}, "stars": {"$gte": 50}, "draft": False}
        result = store.query(query_vectors(1, 32, clusters=8, seed=42)[0], k=5, filter=flt)
        print(f"top {result.k_returned} of {result.k_requested} for filter {flt}:")
        for m in result:
            meta = m.metadata or {}
            print(f"  {m.score:.4f}  {m.key:<28} lang={meta.get('lang')} stars={meta.get('stars')}")
    finally:
        store.drop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
