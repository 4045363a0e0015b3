"""Async against threads: 200 concurrent queries from one event loop (``vectorport.aconnect``,
pgvector on psycopg's async pool) next to the sync API driven by a thread pool.

    python benchmarks/async_bench.py [--n 20000] [--dim 384] [--queries 200] [--connections 8]
        [--rounds 5] [--json]

One collection (clustered float32 vectors, cosine, HNSW, metadata ``{"lang": one of 5}``) is
loaded into an embedded PostgreSQL + pgvector server. Then, for ``--rounds`` rounds, alternating
which goes first:

* async: ``asyncio.gather`` of ``--queries`` ``await store.aquery(q, k=10)`` (half of them with
  the filter ``{"lang": "fr"}``) on one event loop, the store opened with
  ``pool_size=--connections``;
* threads: the same queries through ``store.query`` from a ``ThreadPoolExecutor`` of
  ``--connections`` workers (the sync store keeps one connection per thread).

Both sides get the same number of connections; each first runs the whole query set once
untimed (connections opened, statements prepared). Reported: queries per second of each side
(the best and the median round), their ratio, the client process's CPU time per query (median
round: what the client side costs, whatever else the machine runs), and whether both returned
the same keys.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

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


def _filters(queries: int) -> list[dict[str, Any] | None]:
    return [None if i % 2 == 0 else {"lang": "fr"} for i in range(queries)]


async def _async_round(
    store: Any, qs: list[np.ndarray], filters: list[Any]
) -> tuple[float, float, list[list[str]]]:
    start, cpu = time.perf_counter(), time.process_time()
    results = await asyncio.gather(
        *(store.aquery(q, k=K, filter=f) for q, f in zip(qs, filters, strict=True))
    )
    return time.perf_counter() - start, time.process_time() - cpu, [r.keys for r in results]


def _thread_round(
    store: Any, pool: ThreadPoolExecutor, qs: list[np.ndarray], filters: list[Any]
) -> tuple[float, float, list[list[str]]]:
    start, cpu = time.perf_counter(), time.process_time()
    results = list(pool.map(lambda a: store.query(a[0], k=K, filter=a[1]), zip(qs, filters, strict=True)))
    return time.perf_counter() - start, time.process_time() - cpu, [r.keys for r in results]


async def _run(url: str, qs: list[np.ndarray], rounds: int, connections: int) -> dict[str, Any]:
    filters = _filters(len(qs))
    astore = await vectorport.aconnect(url, pool_size=connections)
    sync = vectorport.connect(url)
    pool = ThreadPoolExecutor(max_workers=connections)
    times: dict[str, list[float]] = {"async": [], "threads": []}
    cpus: dict[str, list[float]] = {"async": [], "threads": []}
    same = True
    try:
        await _async_round(astore, qs, filters)  # warm: pool filled, statements prepared
        _thread_round(sync, pool, qs, filters)
        for r in range(rounds):
            order = ("async", "threads") if r % 2 == 0 else ("threads", "async")
            keys: dict[str, list[list[str]]] = {}
            for side in order:
                if side == "async":
                    elapsed, cpu, keys[side] = await _async_round(astore, qs, filters)
                else:
                    elapsed, cpu, keys[side] = _thread_round(sync, pool, qs, filters)
                times[side].append(elapsed)
                cpus[side].append(cpu)
            same = same and keys["async"] == keys["threads"]
    finally:
        pool.shutdown()
        sync.close()
        await astore.aclose()
    n = len(qs)
    out: dict[str, Any] = {"queries": n, "connections": connections, "rounds": rounds, "same_keys": same}
    for side, values in times.items():
        out[side] = {
            "qps_best": round(n / min(values), 1),
            "qps_median": round(n / statistics.median(values), 1),
            "client_cpu_ms_per_query": round(1000 * statistics.median(cpus[side]) / n, 3),
        }
    out["ratio_best"] = round(out["async"]["qps_best"] / out["threads"]["qps_best"], 2)
    out["ratio_median"] = round(out["async"]["qps_median"] / out["threads"]["qps_median"], 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="vectorport-async-bench-"))
    root.chmod(0o755)
    url = f"pgvector://{root / 'pgdata'}?table=bench"
    try:
        base = _load(url, args.n, args.dim)
        qs = [base[i % len(base)] for i in range(args.queries)]
        result = asyncio.run(_run(url, qs, args.rounds, args.connections))
        result.update(n=args.n, dim=args.dim)
    finally:
        from vectorport.backends.pgvector import stop_embedded

        stop_embedded(root / "pgdata")
        shutil.rmtree(root, ignore_errors=True)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(
        f"{result['queries']} concurrent queries (half filtered), k={K}, {args.n} x {args.dim}, "
        f"{args.connections} connections, best / median of {args.rounds} rounds",
        file=sys.stderr,
    )
    for side in ("async", "threads"):
        r = result[side]
        print(
            f"  {side:8} {r['qps_best']:8.1f} q/s  {r['qps_median']:8.1f} q/s"
            f"  client CPU {r['client_cpu_ms_per_query']:.3f} ms/query"
        )
    ratios = f"{result['ratio_best']:8.2f}x    {result['ratio_median']:8.2f}x"
    print(f"  ratio    {ratios}   same keys: {result['same_keys']}")


if __name__ == "__main__":
    main()
