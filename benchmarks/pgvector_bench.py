"""pgvector backend benchmark: vectorport vs raw psycopg on the same embedded server.

    python benchmarks/pgvector_bench.py [--n 100000] [--dim 384] [--queries 200] [--maintained-n 20000]
        [--json] [--output FILE] [--quick]

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

Prints a table of the ratios (targets: write >= 0.8x raw, query p50 <= 1.1x raw); ``--json``
every figure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import _harness as h
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


def rates(n: int, race: h.Race) -> dict[str, Any]:
    vp_s, raw_s = race.median("vectorport"), race.median("raw")
    return {
        "records": n,
        "vectorport_s": round(vp_s, 2),
        "vectorport_rows_per_s": round(n / vp_s),
        "raw_s": round(raw_s, 2),
        "raw_rows_per_s": round(n / raw_s),
        "ratio_throughput_vs_raw": race.ratios()["vectorport"],
    }


def raw_bulk(conn: psycopg.Connection[Any], raw: PgVectorStore, data: tuple[Any, ...], n: int) -> None:
    """By hand what ``bulk_load`` does: the index dropped, the same COPY + merge, the same
    ``CREATE INDEX`` with the same memory setting, ANALYZE."""
    layout = raw.layout
    conn.execute(f"DROP INDEX {layout.hnsw_index_name}".encode())
    raw_load(conn, "raw_bulk", data, n)
    (current_kb,) = conn.execute(
        "SELECT setting::bigint FROM pg_settings WHERE name = 'maintenance_work_mem'"
    ).fetchone() or (0,)
    memory_kb = max(current_kb, min(layout.hnsw_build_bytes(n) * 5 // 4 // 1024 + 1024, BUILD_MEMORY_CAP_KB))
    with conn.transaction():
        conn.execute("SELECT set_config('maintenance_work_mem', %s, true)", (f"{memory_kb}kB",))
        ddl = layout.hnsw_index_ddl()
        assert ddl is not None
        conn.execute(ddl)
    conn.execute(b"ANALYZE raw_bulk")


def vp_bulk(vp: PgVectorStore, data: tuple[Any, ...], n: int) -> None:
    with vp.bulk_load(expected=n):
        vp_load(vp, data, n)


class RawQuery:
    """The very statement vectorport sends for one filter, prepared and binary on a plain
    connection, with the same ``hnsw.*`` session settings, sent only when they change."""

    def __init__(
        self,
        conn: psycopg.Connection[Any],
        vp: PgVectorStore,
        flt: dict[str, Any] | None,
        known: dict[str, str],
    ) -> None:
        self.known = known  # the connection's session settings as last sent
        where = parse_filter(flt)
        pred = PgFilterCompiler().where(where)
        self.conn = conn
        self.statement = vp.searcher._search_sql(pred.text, QUERY_INCLUDES).as_bytes(conn)
        gucs = vp.search_defaults.gucs(10, where is not None)
        self.changed = [(k, v) for k, v in gucs if self.known.get(k) != v]
        self.fixed = dict(pred.params)

    def __call__(self, qv: np.ndarray) -> None:
        if self.changed:  # like vectorport: session settings sent only when they change
            names = [k for k, _ in self.changed]
            self.conn.execute(set_gucs_sql(names).encode(), [x for kv in self.changed for x in kv])
            self.known.update(self.changed)
            self.changed.clear()
        self.conn.execute(
            self.statement, {**self.fixed, "q": qv, "k": 10}, binary=True, prepare=True
        ).fetchall()


FILTERS: dict[str, dict[str, Any] | None] = {
    "unfiltered": None,
    "filtered_bucket_1pct": {"bucket": 7},
    "filtered_lang_20pct": {"lang": "fr"},
}


def queries(conn: psycopg.Connection[Any], vp: PgVectorStore, qs: np.ndarray) -> dict[str, Any]:
    out = {}
    known: dict[str, str] = {}
    for label, flt in FILTERS.items():
        raw = RawQuery(conn, vp, flt, known)
        race = h.Race(
            "raw",
            {
                "vectorport": lambda r, f=flt: vp.query(qs[r], k=10, filter=f),
                "raw": lambda r, q=raw: q(qs[r]),
            },
            ratio="time",
        ).run(len(qs), warmup=10)  # warm both paths (plans, prepared statements, caches)
        out[label] = {
            "vectorport_p50_ms": round(race.percentile_ms("vectorport", 50), 3),
            "vectorport_p95_ms": round(race.percentile_ms("vectorport", 95), 3),
            "raw_p50_ms": round(race.percentile_ms("raw", 50), 3),
            "raw_p95_ms": round(race.percentile_ms("raw", 95), 3),
            "ratio_p50_vs_raw": race.ratios(50)["vectorport"],
            "ratio_p95_vs_raw": race.ratios(95)["vectorport"],
        }
        h.log(f"{label}: {out[label]}")
    return out


def run(args: Any, root: Path) -> dict[str, Any]:
    url = f"pgvector://{root}/data?table="
    data = records(args.n, args.dim)
    out: dict[str, Any] = {"n": args.n, "dim": args.dim, "batch": BATCH}

    def store(table: str) -> PgVectorStore:
        s = vectorport.connect(url + table, dimension=args.dim, metric="cosine")
        assert isinstance(s, PgVectorStore)
        return s

    vp = store("vp_docs")
    assert vp.server.conninfo is not None
    with psycopg.connect(vp.server.conninfo, autocommit=True) as conn:  # the raw side: a plain connection
        register_vector(conn)
        conn.execute(
            f'CREATE TEMP TABLE raw_stage (key text COLLATE "C", embedding vector({args.dim}), '
            "metadata jsonb, text text) ON COMMIT DELETE ROWS".encode()
        )
        m = min(args.maintained_n, args.n)
        if m:
            vp_m, raw_m = store("vp_maintained"), store("raw_maintained")
            h.log(f"writes of {m:,}, index maintained …")
            race = h.Race(
                "raw",
                {
                    "vectorport": lambda r: vp_load(vp_m, data, m),
                    "raw": lambda r: raw_load(conn, "raw_maintained", data, m),
                },
            ).run(1)
            out["write_index_maintained"] = rates(m, race)
            for s in (vp_m, raw_m):
                s.drop()
                s.close()
        raw = store("raw_bulk")
        h.log(f"bulk load of {args.n:,} …")
        race = h.Race(
            "raw",
            {
                "vectorport": lambda r: vp_bulk(vp, data, args.n),
                "raw": lambda r: raw_bulk(conn, raw, data, args.n),
            },
        ).run(1)
        out["write_bulk_load"] = rates(args.n, race)
        raw.drop()
        raw.close()
        out.update(queries(conn, vp, query_vectors(args.queries, args.dim, clusters=64, seed=7)))
    vp.drop()
    vp.close()
    return out


def main() -> None:
    ap = h.parser(__doc__, n=100_000, quick={"n": 3000, "maintained_n": 1000, "queries": 50})
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument(
        "--maintained-n",
        type=int,
        default=20_000,
        help="records for the index-maintained write legs (0: skip)",
    )
    args = h.parse(ap)
    with h.workdir("pgbench") as root:
        out = run(args, root)
    rows = [
        [
            leg,
            out[leg]["vectorport_rows_per_s"],
            out[leg]["raw_rows_per_s"],
            out[leg]["ratio_throughput_vs_raw"],
        ]
        for leg in ("write_index_maintained", "write_bulk_load")
        if leg in out
    ]
    rows += [
        [label, out[label]["vectorport_p50_ms"], out[label]["raw_p50_ms"], out[label]["ratio_p50_vs_raw"]]
        for label in FILTERS
    ]
    text = (
        h.table(["figure", "vectorport (rows/s or p50 ms)", "raw", "ratio"], rows)
        + "\n(writes: throughput vectorport / raw, target >= 0.8;"
        + " queries: p50 vectorport / raw, target <= 1.1)"
    )
    h.emit("pgvector", args, out, text)


if __name__ == "__main__":
    main()
