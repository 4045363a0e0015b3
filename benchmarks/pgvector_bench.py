"""pgvector backend benchmark: vectorport vs raw psycopg on the same embedded server.

    python benchmarks/pgvector_bench.py [--n 100000] [--dim 384] [--queries 200]

* write: ``store.upsert`` (validation, COPY BINARY into a staging table, INSERT … ON CONFLICT,
  one transaction per 5,000 records) vs raw psycopg ``COPY … (FORMAT BINARY)`` with
  ``write_row`` + the same merge into an identical table (same DDL, same HNSW index);
* query: p50/p95 of ``store.query(k=10)`` with and without a filter vs the same SQL (same
  ``set_config`` settings, same statement) run directly through psycopg.

Prints the figures and the ratios (targets: write >= 0.8x raw, query <= 1.1x raw).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from psycopg import sql
from psycopg.types.json import Jsonb

import vectorport
from vectorport.backends.pgvector.filters import PgFilterCompiler
from vectorport.backends.pgvector.store import _SET_GUCS, SearchSettings
from vectorport.filters import parse_filter
from vectorport.testing import clustered_vectors, query_vectors

BATCH = 5_000
LANGS = ("en", "fr", "de", "ja", "pt")


def records(n: int, dim: int) -> tuple[list[str], np.ndarray, list[dict[str, Any]], list[str]]:
    vectors, labels = clustered_vectors(n, dim, clusters=64, seed=7)
    keys = [f"docs/file{i // 10}.md#chunk{i % 10}" for i in range(n)]
    metas = [
        {"cluster": int(labels[i]), "lang": LANGS[i % 5], "bucket": i % 100, "stars": i % 1000}
        for i in range(n)
    ]
    texts = [f"chunk {i} of cluster {int(labels[i])}" for i in range(n)]
    return keys, vectors, metas, texts


def percentile(values: list[float], p: float) -> float:
    return float(np.percentile(np.asarray(values) * 1000.0, p))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="vectorport-pgbench-"))
    root.chmod(0o755)
    url = f"pgvector://{root}/data?table="
    keys, vectors, metas, texts = records(args.n, args.dim)
    out: dict[str, Any] = {"n": args.n, "dim": args.dim, "batch": BATCH}
    try:
        store = vectorport.connect(url + "vp_docs", dimension=args.dim, metric="cosine")
        raw_store = vectorport.connect(url + "raw_docs", dimension=args.dim, metric="cosine")
        conn, _ = raw_store._conn()  # same server, same DDL, a plain psycopg connection

        # ---------------------------------------------------------------- writes
        t0 = time.perf_counter()
        for start in range(0, args.n, BATCH):
            end = min(start + BATCH, args.n)
            store.upsert(
                vectorport.Record(keys[i], vectors[i], metas[i], texts[i]) for i in range(start, end)
            )
        vp_write = time.perf_counter() - t0

        conn.execute(
            'CREATE TEMP TABLE raw_stage (key text COLLATE "C", embedding vector(%s), metadata jsonb, '
            "text text) ON COMMIT DELETE ROWS" % args.dim
        )
        t0 = time.perf_counter()
        for start in range(0, args.n, BATCH):
            with conn.transaction():
                with (
                    conn.cursor() as cur,
                    cur.copy(
                        "COPY raw_stage (key, embedding, metadata, text) FROM STDIN (FORMAT BINARY)"
                    ) as cp,
                ):
                    cp.set_types(["text", "vector", "jsonb", "text"])
                    for i in range(start, min(start + BATCH, args.n)):
                        cp.write_row((keys[i], vectors[i], Jsonb(metas[i]), texts[i]))
                conn.execute(
                    "INSERT INTO raw_docs AS t (key, embedding, metadata, text, updated_at) "
                    "SELECT key, embedding, metadata, text, now() FROM raw_stage "
                    "ON CONFLICT (key) DO UPDATE SET embedding = EXCLUDED.embedding, "
                    "metadata = EXCLUDED.metadata, text = EXCLUDED.text, updated_at = EXCLUDED.updated_at"
                )
        raw_write = time.perf_counter() - t0
        out["write"] = {
            "vectorport_s": round(vp_write, 2),
            "vectorport_rows_per_s": round(args.n / vp_write),
            "raw_s": round(raw_write, 2),
            "raw_rows_per_s": round(args.n / raw_write),
            "ratio_throughput_vs_raw": round(raw_write / vp_write, 3),
        }

        # ---------------------------------------------------------------- queries
        queries = query_vectors(args.queries, args.dim, clusters=64, seed=7)
        layout = store.layout  # type: ignore[attr-defined]
        for label, flt in (("unfiltered", None), ("filtered_bucket_1pct", {"bucket": 7})):
            where = parse_filter(flt)
            pred = PgFilterCompiler().where(where)
            q = sql.Placeholder("q")
            select = sql.SQL("key, {} AS distance, metadata, text").format(
                layout.distance(sql.Identifier("embedding"), q)
            )
            statement = sql.SQL(
                "SELECT key, distance, metadata, text FROM (SELECT {select} FROM {table} WHERE {where} "
                "ORDER BY distance LIMIT %(k)s) AS hits ORDER BY distance, key"
            ).format(select=select, table=sql.Identifier("raw_docs"), where=pred.sql)
            gucs = SearchSettings().gucs(10, where is not None)
            for qv in queries[:10]:  # warm both paths
                store.query(qv, k=10, filter=flt)
            vp_times: list[float] = []
            raw_times: list[float] = []
            for qv in queries:
                t0 = time.perf_counter()
                store.query(qv, k=10, filter=flt)
                vp_times.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                with conn.transaction():
                    conn.execute(_SET_GUCS, gucs)
                    conn.execute(statement, {**pred.params, "q": qv, "k": 10}, binary=True).fetchall()
                raw_times.append(time.perf_counter() - t0)
            out[label] = {
                "vectorport_p50_ms": round(percentile(vp_times, 50), 3),
                "vectorport_p95_ms": round(percentile(vp_times, 95), 3),
                "raw_p50_ms": round(percentile(raw_times, 50), 3),
                "raw_p95_ms": round(percentile(raw_times, 95), 3),
                "ratio_p50_vs_raw": round(statistics.median(vp_times) / statistics.median(raw_times), 3),
                "ratio_p95_vs_raw": round(percentile(vp_times, 95) / percentile(raw_times, 95), 3),
            }
        store.drop()
        raw_store.drop()
        store.close()
        raw_store.close()
    finally:
        from vectorport.backends.pgvector._embedded import stop_embedded

        stop_embedded(root / "data")
        shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
