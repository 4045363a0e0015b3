"""Comparison harness overhead, and the speed of its exact ground truth.

    python benchmarks/compare_bench.py [--n 20000] [--dim 384] [--queries 300] [--pgvector]
        [--truth-n 100000] [--truth-queries 1000] [--json] [--output FILE] [--quick]

1. Ground truth: ``GroundTruth.solve`` for ``--truth-queries`` queries over ``--truth-n`` x
   ``--dim`` clustered vectors, half of them under a filter (one mask per distinct filter,
   batched matrix products + argpartition). Target: seconds for 1,000 x 100k x 384.
2. Harness overhead: ``vectorport.compare`` of two stores holding the same ``--n`` records
   (two memory:// stores, plus an embedded pgvector HNSW collection with ``--pgvector``) with
   ``--queries`` sampled queries per filter, against the sum of the raw ``store.query`` times it
   issued (warm-up included). ratio = compare wall time / raw query time; the rest is the scan
   for the truth, the truth itself, judging, and the report.
"""

from __future__ import annotations

import time
from typing import Any

import _harness as h

import vectorport
from vectorport import Metric, Record
from vectorport.compare import GroundTruth, Query
from vectorport.testing import ExactIndex, clustered_vectors

FILTERS = [None, {"lang": "en"}]
LANGS = ("en", "fr", "de", "ja", "pt")


def records(n: int, dim: int) -> list[Record]:
    vectors, labels = clustered_vectors(n, dim, clusters=64, seed=3)
    return [
        Record(
            f"doc{i // 10}.md#chunk{i % 10}", vectors[i], {"lang": LANGS[i % 5], "cluster": int(labels[i])}
        )
        for i in range(n)
    ]


def bench_truth(n: int, dim: int, nq: int) -> dict[str, Any]:
    vectors, _ = clustered_vectors(n, dim, clusters=64, seed=1)
    metas = [{"lang": LANGS[i % 5]} for i in range(n)]
    truth = GroundTruth(ExactIndex(Metric.COSINE, [f"k{i}" for i in range(n)], vectors, metas))
    queries = [Query(vectors[i], filter=FILTERS[i % 2]) for i in range(nq)]
    start = time.perf_counter()
    solved = truth.solve(queries, 10)
    elapsed = time.perf_counter() - start
    return {
        "queries": nq,
        "n": n,
        "dim": dim,
        "seconds": round(elapsed, 3),
        "solve_s": round(solved.seconds, 3),
    }


def bench_overhead(label: str, urls: dict[str, str], nq: int) -> dict[str, Any]:
    result = vectorport.compare(urls, nq, k=10, filter=FILTERS, warmup=10)
    t = result.timings
    wall, raw = t["total"], t["query_time_sum"]
    out: dict[str, Any] = {
        "pair": label,
        "queries": len(result.queries),
        "compare_s": round(wall, 3),
        "raw_queries_s": round(raw, 3),
        "ratio": round(wall / raw, 3),
        **{f"{k}_s": round(t[k], 3) for k in ("scan", "truth", "judge")},
        "other_s": round(wall - raw - t["scan"] - t["truth"] - t["judge"], 3),
        "stores": [
            {
                "label": s.label,
                "recall_at_10": round(s.overall.recall, 4),
                "p50_ms": round(s.overall.latency.p50, 3),
                "p99_ms": round(s.overall.latency.p99, 3),
                "qps": round(s.overall.qps),
            }
            for s in result.stores
        ],
    }
    h.log(f"{label}: ratio {out['ratio']}")
    return out


def overheads(args: Any) -> list[dict[str, Any]]:
    data = records(args.n, args.dim)
    made = []
    for name in ("bench-a", "bench-b"):
        store = vectorport.connect(f"memory://{name}", dimension=args.dim)
        store.upsert(data)
        made.append(store)
    out = [
        bench_overhead(
            "memory vs memory", {"memory-a": "memory://bench-a", "memory-b": "memory://bench-b"}, args.queries
        )
    ]
    if args.pgvector:
        with h.workdir("compare-bench") as work:
            url = f"pgvector://{work / 'pg'}?table=bench"
            with vectorport.connect(url, dimension=args.dim) as pg:
                pg.upsert(data)
                pair = {"memory": "memory://bench-a", "pgvector": url}
                out.append(bench_overhead("memory vs pgvector", pair, args.queries))
                pg.drop()
    for store in made:
        store.drop()
    return out


def main() -> None:
    ap = h.parser(__doc__, n=20_000, quick={"n": 2000, "queries": 50, "truth_n": 5000, "truth_queries": 100})
    ap.add_argument("--queries", type=int, default=300, help="sampled queries per filter")
    ap.add_argument("--truth-n", type=int, default=100_000)
    ap.add_argument("--truth-queries", type=int, default=1000)
    ap.add_argument("--pgvector", action="store_true", help="also compare an embedded pgvector HNSW copy")
    args = h.parse(ap)
    h.log(f"ground truth: {args.truth_queries} queries x {args.truth_n:,} x {args.dim} …")
    truth = bench_truth(args.truth_n, args.dim, args.truth_queries)
    pairs = overheads(args)
    text = [
        f"ground truth: {truth['queries']} queries x {truth['n']:,} x {truth['dim']}, 2 filters, k=10: "
        f"{truth['seconds']:.2f} s ({truth['solve_s']:.2f} s solve)",
        h.table(
            [
                "pair",
                "queries",
                "compare s",
                "raw queries s",
                "ratio",
                "scan s",
                "truth s",
                "judge s",
                "other s",
            ],
            [
                [
                    p["pair"],
                    p["queries"],
                    p["compare_s"],
                    p["raw_queries_s"],
                    p["ratio"],
                    p["scan_s"],
                    p["truth_s"],
                    p["judge_s"],
                    p["other_s"],
                ]
                for p in pairs
            ],
        ),
        h.table(
            ["pair", "store", "recall@10", "p50 ms", "p99 ms", "QPS"],
            [
                [p["pair"], s["label"], s["recall_at_10"], s["p50_ms"], s["p99_ms"], s["qps"]]
                for p in pairs
                for s in p["stores"]
            ],
        ),
    ]
    h.emit("compare", args, {"truth": truth, "overhead": pairs}, "\n\n".join(text))


if __name__ == "__main__":
    main()
