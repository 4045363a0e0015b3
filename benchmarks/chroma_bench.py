"""Chroma: vectorport vs the same raw chromadb calls, in one run.

    python benchmarks/chroma_bench.py [--n 100000] [--dim 384] [--queries 200] [--json] [--output FILE]
        [--quick]

Measures upsert throughput (fresh collection), full-scan throughput (vectors, metadata,
text) and query latency (k=10, 200 queries, unfiltered and filtered, raw and vectorport
alternating which goes first, after 10 untimed queries each), embedded PersistentClient,
cosine. Prints figures and ratios (vectorport / raw: throughput for writes and scans,
latency p50 for queries), and the cost of one deep-offset page.
"""

from __future__ import annotations

import time
from typing import Any

import _harness as h
import chromadb
import numpy as np
from chromadb.config import Settings

import vectorport
from vectorport.testing import clustered_vectors, query_vectors

LANGS = ("en", "fr", "de", "ja")
INCLUDE: Any = ["embeddings", "metadatas", "documents"]
WHERE_FR = {"$or": [{"lang": {"$eq": "fr"}}, {"lang": {"$contains": "fr"}}]}


class Data:
    def __init__(self, n: int, dim: int, queries: int) -> None:
        vecs, labels = clustered_vectors(n, dim, clusters=64, seed=1)
        self.vecs = vecs
        self.keys = [f"docs/file{i // 10}.md#chunk{i % 10}" for i in range(n)]
        self.metas = [{"lang": LANGS[i % 4], "cluster": int(labels[i]), "tags": ["a", "b"]} for i in range(n)]
        self.texts = [f"chunk {i} lorem ipsum dolor sit amet" for i in range(n)]
        self.queries = query_vectors(queries, dim, clusters=64, seed=1)


def raw_upsert(coll: Any, d: Data, batch: int) -> None:
    for s in range(0, len(d.keys), batch):
        coll.upsert(
            ids=d.keys[s : s + batch],
            embeddings=d.vecs[s : s + batch],
            metadatas=d.metas[s : s + batch],
            documents=d.texts[s : s + batch],
        )


def raw_scan(coll: Any, n: int, batch: int) -> int:
    return sum(
        len(coll.get(limit=batch - 1, offset=off, include=INCLUDE)["ids"]) for off in range(0, n, batch - 1)
    )


def query_race(coll: Any, store: Any, qs: np.ndarray, filtered: bool) -> h.Race:
    include: Any = ["distances", "metadatas", "documents"]
    where: Any = WHERE_FR if filtered else None
    flt = {"lang": "fr"} if filtered else None
    return h.Race(
        "raw",
        {
            "raw": lambda r: coll.query(query_embeddings=[qs[r]], n_results=10, where=where, include=include),
            "vectorport": lambda r: store.query(qs[r], k=10, filter=flt),
        },
        ratio="time",
    ).run(len(qs), warmup=10)


def deep_pages(store: Any, n: int) -> list[dict[str, float]]:
    """The cost of one page of 1,000 at growing offsets (chromadb's own ``get``)."""
    coll = store.connection.collection()
    out = []
    for off in (0, n // 2, max(0, n - 1000)):
        t = time.perf_counter()
        coll.get(limit=1000, offset=off, include=INCLUDE)
        out.append({"offset": off, "ms": round((time.perf_counter() - t) * 1000, 1)})
    return out


def run(args: Any) -> dict[str, Any]:
    d = Data(args.n, args.dim, args.queries)
    with h.workdir("chroma-bench") as root:
        client = chromadb.PersistentClient(path=f"{root}/raw", settings=Settings(anonymized_telemetry=False))
        coll = client.create_collection(
            "raw", configuration={"hnsw": {"space": "cosine"}}, embedding_function=None
        )
        batch = client.get_max_batch_size()
        store = vectorport.connect(
            f"chroma://{root}/vp?collection=bench", dimension=args.dim, metric="cosine"
        )
        records = [vectorport.Record(d.keys[i], d.vecs[i], d.metas[i], d.texts[i]) for i in range(args.n)]
        h.log("upserts …")
        up = h.Race(
            "raw",
            {"raw": lambda r: raw_upsert(coll, d, batch), "vectorport": lambda r: store.upsert(records)},
        )
        up.run(1)
        h.log("scans …")
        scan = h.Race(
            "raw",
            {
                "raw": lambda r: raw_scan(coll, args.n, batch),
                "vectorport": lambda r: sum(len(p) for p in store.scan()),
            },
        ).run(1)
        assert scan.results["vectorport"][0] == args.n == scan.results["raw"][0]
        h.log("queries …")
        plain, filtered = (query_race(coll, store, d.queries, f) for f in (False, True))
        depth = deep_pages(store, args.n)
        store.close()
        client.close()
    out: dict[str, Any] = {"n": args.n, "dim": args.dim, "deep_offset_page_ms": depth}
    for label, race in (("upsert", up), ("scan", scan)):
        out[label] = {
            "raw_per_s": h.rate(args.n, race.median("raw")),
            "vectorport_per_s": h.rate(args.n, race.median("vectorport")),
            "ratio": race.ratios()["vectorport"],
        }
    for label, race in (("query", plain), ("filtered_query", filtered)):
        out[label] = {
            "raw_p50_ms": round(race.percentile_ms("raw", 50), 3),
            "vectorport_p50_ms": round(race.percentile_ms("vectorport", 50), 3),
            "ratio": race.ratios()["vectorport"],
        }
    return out


def main() -> None:
    ap = h.parser(__doc__, n=100_000, quick={"n": 2000, "queries": 50})
    ap.add_argument("--queries", type=int, default=200)
    args = h.parse(ap)
    out = run(args)
    rows = [
        [
            "upsert rec/s",
            out["upsert"]["raw_per_s"],
            out["upsert"]["vectorport_per_s"],
            out["upsert"]["ratio"],
            ">= 0.9",
        ],
        [
            "scan rec/s",
            out["scan"]["raw_per_s"],
            out["scan"]["vectorport_per_s"],
            out["scan"]["ratio"],
            ">= 0.9",
        ],
    ]
    rows += [
        [
            f"{label.replace('_', ' ')} p50 ms",
            out[label]["raw_p50_ms"],
            out[label]["vectorport_p50_ms"],
            out[label]["ratio"],
            "<= 1.1",
        ]
        for label in ("query", "filtered_query")
    ]
    text = (
        f"chroma bench: {args.n:,} x {args.dim}, clustered, cosine, embedded\n"
        + h.table(["", "raw", "vectorport", "ratio", "target"], rows)
        + "\nget(limit=1000, offset) with vectors+metadata+text: "
        + ", ".join(f"offset {p['offset']}: {p['ms']:.1f} ms" for p in out["deep_offset_page_ms"])
    )
    h.emit("chroma", args, out, text)


if __name__ == "__main__":
    main()
