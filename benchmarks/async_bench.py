"""Async against threads: 200 concurrent queries from one event loop (``vectorport.aconnect``,
pgvector on psycopg's async pool) next to the sync API driven by a thread pool.

    python benchmarks/async_bench.py [--n 20000] [--dim 384] [--queries 200] [--connections 8]
        [--rounds 5] [--json] [--output FILE] [--quick]

One collection (clustered float32 vectors, cosine, HNSW, metadata ``{"lang": one of 5}``) is
loaded into an embedded PostgreSQL + pgvector server. Then, for ``--rounds`` rounds, alternating
which goes first:

* async: ``asyncio.gather`` of ``--queries`` ``await store.aquery(q, k=10)`` (half of them with
  the filter ``{"lang": "fr"}``) on one event loop, the store opened with
  ``pool_size=--connections``;
* threads (the baseline): the same queries through ``store.query`` from a ``ThreadPoolExecutor``
  of ``--connections`` workers (the sync store keeps one connection per thread).

Both sides get the same number of connections; each first runs the whole query set once
untimed (connections opened, statements prepared). Reported: queries per second of each side
(the best and the median round), their ratio (async / threads), the client process's CPU time
per query (median round: what the client side costs, whatever else the machine runs), and
whether both returned the same keys.
"""

from __future__ import annotations

import asyncio
import statistics
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import _harness as h
import numpy as np

import vectorport
from vectorport.testing import clustered_vectors, query_vectors

K = 10
LANGS = ("en", "fr", "de", "ja", "pt")


def _load(url: str, n: int, dim: int) -> np.ndarray:
    vectors, _ = clustered_vectors(n, dim, seed=7)
    with vectorport.connect(url, dimension=dim) as store, store.bulk_load(n):
        for start in range(0, n, 2_000):
            store.upsert(
                vectorport.Record(
                    f"docs/{i // 20}.md#chunk{i % 20}", vectors[i], {"lang": LANGS[i % 5]}, f"t{i}"
                )
                for i in range(start, min(n, start + 2_000))
            )
    return query_vectors(64, dim, seed=7)


async def _gather(store: Any, calls: list[tuple[np.ndarray, Any]]) -> list[list[str]]:
    results = await asyncio.gather(*(store.aquery(q, k=K, filter=f) for q, f in calls))
    return [r.keys for r in results]


def _run(url: str, qs: list[np.ndarray], rounds: int, connections: int) -> dict[str, Any]:
    calls = [(q, None if i % 2 == 0 else {"lang": "fr"}) for i, q in enumerate(qs)]
    loop = asyncio.new_event_loop()
    astore = loop.run_until_complete(vectorport.aconnect(url, pool_size=connections))
    sync = vectorport.connect(url)
    pool = ThreadPoolExecutor(max_workers=connections)
    race = h.Race(
        "threads",
        {
            "async": lambda r: loop.run_until_complete(_gather(astore, calls)),
            "threads": lambda r: [
                res.keys for res in pool.map(lambda c: sync.query(c[0], k=K, filter=c[1]), calls)
            ],
        },
    )
    try:
        race.run(rounds, warmup=1)  # warm: pool filled, statements prepared
    finally:
        pool.shutdown()
        sync.close()
        loop.run_until_complete(astore.aclose())
        loop.close()
    n = len(qs)
    out: dict[str, Any] = {"queries": n, "connections": connections, "rounds": rounds}
    out["same_keys"] = race.results["async"] == race.results["threads"]
    for side in race.ways:
        out[side] = {
            "qps_best": round(n / min(race.seconds[side]), 1),
            "qps_median": round(n / race.median(side), 1),
            "client_cpu_ms_per_query": round(1000 * statistics.median(race.cpu[side]) / n, 3),
        }
    # async queries per second / threads' (>= 1: async is faster): the best and the median round
    out["ratio_best"] = race.ratios(p=0)["async"]
    out["ratio_median"] = race.ratios()["async"]
    out["race"] = race.summary()
    return out


def main() -> None:
    ap = h.parser(__doc__, n=20_000, repeat=5, quick={"n": 2000, "queries": 50, "repeat": 2})
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--connections", type=int, default=8)
    args = h.parse(ap)
    with h.workdir("async-bench") as root:
        url = f"pgvector://{root / 'pgdata'}?table=bench"
        h.log(f"loading {args.n:,} x {args.dim} …")
        base = _load(url, args.n, args.dim)
        qs = [base[i % len(base)] for i in range(args.queries)]
        h.log(f"{args.repeat} rounds of {args.queries} queries, async and threads in turns …")
        result = _run(url, qs, args.repeat, args.connections)
    rows = [
        [side, result[side]["qps_best"], result[side]["qps_median"], result[side]["client_cpu_ms_per_query"]]
        for side in ("async", "threads")
    ]
    rows.append(["ratio (async / threads)", result["ratio_best"], result["ratio_median"], ""])
    text = (
        f"{result['queries']} concurrent queries (half filtered), k={K}, {args.n:,} x {args.dim}, "
        f"{args.connections} connections, best / median of {args.repeat} rounds; "
        f"same keys: {result['same_keys']}\n"
        + h.table(["side", "q/s best", "q/s median", "client CPU ms/query"], rows)
    )
    h.emit("async", args, {"n": args.n, "dim": args.dim, **result}, text)


if __name__ == "__main__":
    main()
