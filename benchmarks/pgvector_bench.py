"""pgvector backend benchmark: vectorport vs raw psycopg on the same embedded server.

    python benchmarks/pgvector_bench.py [--n 100000] [--dim 384] [--queries 200] [--maintained-n 20000]

Writes, into empty tables, in batches of 5,000:

* maintained (the first ``--maintained-n`` records; HNSW inserts dominate and are slow):
  ``store.upsert`` (validation, COPY BINARY into a staging table, INSERT … ON CONFLICT, one
  transaction per batch) vs raw psycopg ``COPY … (FORMAT BINARY)`` with ``write_row`` + the same
  merge into an identical table (same DDL, same HNSW index);
* bulk load (all ``--n`` records): the same upserts inside ``store.bulk_load()`` (HNSW index
  dropped, built once at the end with ``maintenance_work_mem`` sized to the graph, then
  ANALYZE) vs raw psycopg doing exactly that by hand (DROP INDEX, the same COPY + merge, the same
  ``CREATE INDEX`` with the same memory setting, ANALYZE). Rates include the index build.

Queries (k=10; unfiltered, a 1 % filter, a 20 % filter) on the bulk-loaded table:
``store.query`` vs the very statement vectorport sends (taken from the store), with the same
``hnsw.*`` session settings, executed prepared and binary through a plain psycopg connection
on the same table; the two alternate which goes first on each query vector.

Prints JSON and the ratios (targets: write >= 0.8x raw, query p50 <= 1.1x raw).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg.types.json import Jsonb

import vectorport
from vectorport._models import QUERY_INCLUDES
from vectorport.backends.pgvector.filters import PgFilterCompiler
from vectorport.backends.pgvector.store import BUILD_MEMORY_CAP_KB, PgVectorStore, set_gucs_sql
from vectorport.filters import parse_filter
from vectorport.testing import clustered_vectors, query_vectors

BATCH = 5_000
LANGS = ("en", "fr", "de", "ja", "pt")
MERGE = (
    "INSERT INTO {table} AS t (key, embedding, metadata, text, updated_at) "
    "SELECT key, embedding, metadata, text, now() FROM raw_stage "
    "ON CONFLICT (key) DO UPDATE SET embedding = EXCLUDED.embedding, "
    "metadata = EXCLUDED.metadata, text = EXCLUDED.text, updated_at = EXCLUDED.updated_at"
)


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


def vp_load(store: PgVectorStore, data: tuple[Any, ...], n: int) -> None:
    keys, vectors, metas, texts = data
    for start in range(0, n, BATCH):
        end = min(start + BATCH, n)
        store.upsert(vectorport.Record(keys[i], vectors[i], metas[i], texts[i]) for i in range(start, end))


def raw_load(conn: psycopg.Connection[Any], table: str, data: tuple[Any, ...], n: int) -> None:
    keys, vectors, metas, texts = data
    for start in range(0, n, BATCH):
        with conn.transaction():
            with (
                conn.cursor() as cur,
                cur.copy("COPY raw_stage (key, embedding, metadata, text) FROM STDIN (FORMAT BINARY)") as cp,
            ):
                cp.set_types(["text", "vector", "jsonb", "text"])
                for i in range(start, min(start + BATCH, n)):
                    cp.write_row((keys[i], vectors[i], Jsonb(metas[i]), texts[i]))
            conn.execute(MERGE.format(table=table).encode())


def rates(n: int, vp_s: float, raw_s: float) -> dict[str, Any]:
    return {
        "records": n,
        "vectorport_s": round(vp_s, 2),
        "vectorport_rows_per_s": round(n / vp_s),
        "raw_s": round(raw_s, 2),
        "raw_rows_per_s": round(n / raw_s),
        "ratio_throughput_vs_raw": round(raw_s / vp_s, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--maintained-n",
        type=int,
        default=20_000,
        help="records for the index-maintained write legs (0: skip)",
    )
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="vectorport-pgbench-"))
    root.chmod(0o755)
    url = f"pgvector://{root}/data?table="
    data = records(args.n, args.dim)
    out: dict[str, Any] = {"n": args.n, "dim": args.dim, "batch": BATCH}
    stores: list[PgVectorStore] = []

    def store(table: str) -> PgVectorStore:
        s = vectorport.connect(url + table, dimension=args.dim, metric="cosine")
        assert isinstance(s, PgVectorStore)
        stores.append(s)
        return s

    try:
        vp = store("vp_docs")
        conninfo = vp._conninfo
        assert conninfo is not None
        conn = psycopg.connect(conninfo, autocommit=True)  # the raw side: a plain connection
        register_vector(conn)
        conn.execute(
            f'CREATE TEMP TABLE raw_stage (key text COLLATE "C", embedding vector({args.dim}), '
            "metadata jsonb, text text) ON COMMIT DELETE ROWS".encode()
        )

        # ------------------------------------------------------- writes, index maintained
        m = min(args.maintained_n, args.n)
        if m:
            raw_m = store("raw_maintained")
            t0 = time.perf_counter()
            vp_load(store("vp_maintained"), data, m)
            vp_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            raw_load(conn, "raw_maintained", data, m)
            raw_s = time.perf_counter() - t0
            out["write_index_maintained"] = rates(m, vp_s, raw_s)
            raw_m.drop()
            print(f"maintained: {out['write_index_maintained']}", flush=True)

        # ------------------------------------------------------- writes, bulk load
        t0 = time.perf_counter()
        with vp.bulk_load(expected=args.n):
            vp_load(vp, data, args.n)
        vp_s = time.perf_counter() - t0
        raw = store("raw_bulk")
        layout = raw.layout
        t0 = time.perf_counter()
        conn.execute(f"DROP INDEX {layout.hnsw_index_name}".encode())
        raw_load(conn, "raw_bulk", data, args.n)
        (current_kb,) = conn.execute(
            "SELECT setting::bigint FROM pg_settings WHERE name = 'maintenance_work_mem'"
        ).fetchone()
        memory_kb = max(
            current_kb, min(layout.hnsw_build_bytes(args.n) * 5 // 4 // 1024 + 1024, BUILD_MEMORY_CAP_KB)
        )
        with conn.transaction():
            conn.execute("SELECT set_config('maintenance_work_mem', %s, true)", (f"{memory_kb}kB",))
            ddl = layout.hnsw_index_ddl()
            assert ddl is not None
            conn.execute(ddl)
        conn.execute(b"ANALYZE raw_bulk")
        raw_s = time.perf_counter() - t0
        out["write_bulk_load"] = rates(args.n, vp_s, raw_s)
        print(f"bulk load: {out['write_bulk_load']}", flush=True)
        raw.drop()

        # ------------------------------------------------------- queries
        queries = query_vectors(args.queries, args.dim, clusters=64, seed=7)
        known: dict[str, str] = {}
        for label, flt in (
            ("unfiltered", None),
            ("filtered_bucket_1pct", {"bucket": 7}),
            ("filtered_lang_20pct", {"lang": "fr"}),
        ):
            where = parse_filter(flt)
            pred = PgFilterCompiler().where(where)
            statement = vp._search_sql(pred.text, QUERY_INCLUDES).as_bytes(conn)
            gucs = vp.search_defaults.gucs(10, where is not None)
            changed = [(k, v) for k, v in gucs if known.get(k) != v]
            fixed = dict(pred.params)

            def run_raw(
                qv: np.ndarray,
                changed: list[tuple[str, str]] = changed,
                statement: bytes = statement,
                fixed: dict[str, Any] = fixed,
            ) -> None:
                if changed:  # like vectorport: session settings sent only when they change
                    names = [k for k, _ in changed]
                    conn.execute(set_gucs_sql(names).encode(), [x for kv in changed for x in kv])
                    known.update(changed)
                    changed.clear()
                conn.execute(statement, {**fixed, "q": qv, "k": 10}, binary=True, prepare=True).fetchall()

            def run_vp(qv: np.ndarray, flt: dict[str, Any] | None = flt) -> None:
                vp.query(qv, k=10, filter=flt)

            sides: list[tuple[str, Callable[[np.ndarray], None]]] = [("vp", run_vp), ("raw", run_raw)]
            for qv in queries[:10]:  # warm both paths (plans, prepared statements, caches)
                for _, fn in sides:
                    fn(qv)
            times: dict[str, list[float]] = {"vp": [], "raw": []}
            for i, qv in enumerate(queries):
                for name, fn in sides if i % 2 == 0 else sides[::-1]:
                    t0 = time.perf_counter()
                    fn(qv)
                    times[name].append(time.perf_counter() - t0)
            out[label] = {
                "vectorport_p50_ms": round(percentile(times["vp"], 50), 3),
                "vectorport_p95_ms": round(percentile(times["vp"], 95), 3),
                "raw_p50_ms": round(percentile(times["raw"], 50), 3),
                "raw_p95_ms": round(percentile(times["raw"], 95), 3),
                "ratio_p50_vs_raw": round(
                    statistics.median(times["vp"]) / statistics.median(times["raw"]), 3
                ),
                "ratio_p95_vs_raw": round(percentile(times["vp"], 95) / percentile(times["raw"], 95), 3),
            }
            print(f"{label}: {out[label]}", flush=True)
        conn.close()
    finally:
        for s in stores:
            try:
                s.drop()
            finally:
                s.close()
        from vectorport.backends.pgvector._embedded import stop_embedded

        stop_embedded(root / "data")
        shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
