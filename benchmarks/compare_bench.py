"""Comparison harness overhead, and the speed of its exact ground truth.

    python benchmarks/compare_bench.py [--n 20000] [--dim 384] [--queries 300] [--pgvector]
                                       [--truth-n 100000] [--truth-queries 1000]

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

import argparse
import shutil
import tempfile
import time
from pathlib import Path

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


def bench_truth(n: int, dim: int, nq: int) -> None:
    vectors, _ = clustered_vectors(n, dim, clusters=64, seed=1)
    metas = [{"lang": LANGS[i % 5]} for i in range(n)]
    truth = GroundTruth(ExactIndex(Metric.COSINE, [f"k{i}" for i in range(n)], vectors, metas))
    queries = [Query(vectors[i], filter=FILTERS[i % 2]) for i in range(nq)]
    start = time.perf_counter()
    table = truth.solve(queries, 10)
    elapsed = time.perf_counter() - start
    print(
        f"ground truth: {nq} queries x {n} x {dim}, 2 filters, k=10: {elapsed:.2f} s "
        f"({table.seconds:.2f} s solve)"
    )


def bench_overhead(label: str, urls: dict[str, str], nq: int) -> None:
    result = vectorport.compare(urls, nq, k=10, filter=FILTERS, warmup=10)
    t = result.timings
    wall, raw = t["total"], t["query_time_sum"]
    other = wall - raw - t["scan"] - t["truth"] - t["judge"]
    print(
        f"{label}: {len(result.queries)} queries x {len(urls)} stores: compare {wall:.2f} s, raw queries "
        f"{raw:.2f} s -> ratio {wall / raw:.2f}x  (scan {t['scan']:.2f} s, truth {t['truth']:.2f} s, "
        f"judge {t['judge']:.2f} s, other {other:.2f} s)"
    )
    for s in result.stores:
        f = s.overall
        print(
            f"    {s.label:<10} recall@10 {f.recall:.4f}  p50 {f.latency.p50:.2f} ms  "
            f"p99 {f.latency.p99:.2f} ms  QPS {f.qps:.0f}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--queries", type=int, default=300, help="sampled queries per filter")
    ap.add_argument("--truth-n", type=int, default=100_000)
    ap.add_argument("--truth-queries", type=int, default=1000)
    ap.add_argument("--pgvector", action="store_true", help="also compare an embedded pgvector HNSW copy")
    args = ap.parse_args()

    bench_truth(args.truth_n, args.dim, args.truth_queries)
    data = records(args.n, args.dim)
    made = []
    for name in ("bench-a", "bench-b"):
        store = vectorport.connect(f"memory://{name}", dimension=args.dim)
        store.upsert(data)
        made.append(store)
    urls = {"memory-a": "memory://bench-a", "memory-b": "memory://bench-b"}
    bench_overhead("memory vs memory", urls, args.queries)
    if args.pgvector:
        work = Path(tempfile.mkdtemp(prefix="vectorport-compare-bench-"))
        work.chmod(0o755)
        try:
            url = f"pgvector://{work / 'pg'}?table=bench"
            pg = vectorport.connect(url, dimension=args.dim)
            pg.upsert(data)
            bench_overhead(
                "memory vs pgvector", {"memory": "memory://bench-a", "pgvector": url}, args.queries
            )
            pg.drop()
            pg.close()
            from vectorport.backends.pgvector._embedded import stop_embedded

            stop_embedded(work / "pg")
        finally:
            shutil.rmtree(work, ignore_errors=True)
    for store in made:
        store.drop()


if __name__ == "__main__":
    main()
