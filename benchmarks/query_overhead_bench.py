"""Query overhead: ``store.query`` latency over the raw driver doing the same search, same run.

    python benchmarks/query_overhead_bench.py [--n 20000] [--dim 384] [--queries 200]
        [--backends memory,pgvector,chroma,s3vectors[,pgvector-engine]] [--warmup 10] [--json]
        [--output FILE] [--quick]

One dataset (clustered float32 vectors, cosine, metadata ``{"lang": one of 5, "n": i}``, a short
text) is loaded through vectorport into each backend; then, for every query vector, unfiltered
and with ``{"lang": "fr"}`` (20 % of the rows), ``store.query(q, k=10, filter=...)`` and the raw
client doing the same search are timed one after the other, alternating which goes first, after
``--warmup`` untimed queries of each. The raw side of each backend:

* memory: numpy brute force over unit rows (float32 product, ``np.argpartition``, the rows of
  the filter taken once from a precomputed mask), distance ``clip(1 - cos, 0, 2)``;
* pgvector (embedded server, HNSW default): plain psycopg on a second connection to the same
  server (URI from ``vectorport pgvector start``), ``SELECT key, embedding <=> q AS distance,
  metadata, text FROM bench [WHERE metadata @> filter] ORDER BY embedding <=> q LIMIT 10``,
  prepared and binary, with the ``hnsw.*`` session settings vectorport uses by default. The
  table is ANALYZEd after the load so autovacuum cannot change the plans mid-run;
* pgvector-engine: the same, with the store opened from a SQLAlchemy ``Engine`` on psycopg
  (``vectorport.connect(engine, table=...)``): each query borrows a pooled connection and gives
  it back as it was lent (the raw side keeps its own connection and session settings);
* chroma (embedded): ``PersistentClient(path).get_collection(name).query(...)`` with the same
  ``include`` as vectorport (distances, metadatas, documents);
* s3vectors (vectorport's local server, in this process): boto3 ``query_vectors`` with
  ``returnDistance`` and ``returnMetadata``.

Only vectorport's public API is used (``connect``, ``Record``, ``upsert``, ``query``, the
``vectorport pgvector start/stop`` commands and the local server class, found where either
layout keeps it), so the same script measures a tree before and after a refactoring. Prints a
table (p50 / p95 of both sides in ms, the p50, p95 and p99 ratios, and how many raw top-k keys vectorport also
returned); ``--json`` prints the figures as JSON on stdout and the table on stderr.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import _harness as h
import numpy as np

import vectorport
from vectorport.testing import clustered_vectors, query_vectors

K = 10
SEED = 7
LANGS = ("en", "fr", "de", "ja", "pt")
FILTERS: dict[str, dict[str, Any] | None] = {"none": None, '{"lang": "fr"}': {"lang": "fr"}}
BATCH = 1_000
# vectorport's pgvector query defaults (docs/backends/pgvector.md): ef_search max(100, 2k)
# unfiltered and 1,000 filtered, strict_order iterative scan, 100,000 tuples, 4x work_mem.
PG_GUCS = {
    "hnsw.iterative_scan": "strict_order",
    "hnsw.max_scan_tuples": "100000",
    "hnsw.scan_mem_multiplier": "4",
}
ALL_BACKENDS = ("memory", "pgvector", "chroma", "s3vectors")
OTHER_BACKENDS = ("pgvector-engine",)
"""Run when named in ``--backends`` only."""

Query = Callable[[np.ndarray, dict[str, Any] | None], list[str]]


def local_server_class() -> Any:
    """The local S3 Vectors server class, from where this tree keeps it (it moved)."""
    try:
        from vectorport.bucketserver import LocalServer
    except ImportError:
        from vectorport.backends.s3vectors.server import LocalServer  # type: ignore[no-redef]
    return LocalServer


class Dataset:
    def __init__(self, n: int, dim: int, queries: int) -> None:
        self.vectors, _ = clustered_vectors(n, dim, clusters=64, seed=SEED)
        self.keys = [f"docs/file{i // 10}.md#chunk{i % 10}" for i in range(n)]
        self.metas: list[dict[str, Any]] = [{"lang": LANGS[i % len(LANGS)], "n": i} for i in range(n)]
        self.texts = [f"chunk {i} of file {i // 10}" for i in range(n)]
        self.queries = query_vectors(queries, dim, clusters=64, seed=SEED)

    def load(self, store: Any) -> float:
        began = time.perf_counter()
        for lo in range(0, len(self.keys), BATCH):
            store.upsert(
                vectorport.Record(self.keys[i], self.vectors[i], self.metas[i], self.texts[i])
                for i in range(lo, min(lo + BATCH, len(self.keys)))
            )
        return time.perf_counter() - began


class Bench:
    """One backend: a vectorport store and the raw client doing the same search."""

    def __init__(self, store: Any, raw: Query) -> None:
        self.store = store
        self.raw = raw

    def vp(self, q: np.ndarray, where: dict[str, Any] | None) -> list[str]:
        return [m.key for m in self.store.query(q, k=K, filter=where)]


def close_all(cleanup: list[Callable[[], Any]]) -> None:
    """Undo what an opener set up, last first, every step even when one fails."""
    for step in reversed(cleanup):
        try:
            step()
        except Exception as exc:
            h.log(f"cleanup: {exc!r}")


def open_memory(data: Dataset, root: Path, cleanup: list[Callable[[], Any]]) -> tuple[Any, Query]:
    store = vectorport.connect("memory://bench", dimension=data.vectors.shape[1], metric="cosine")
    cleanup.append(store.close)
    data.load(store)
    norms = np.linalg.norm(data.vectors, axis=1, keepdims=True)
    unit = (data.vectors / np.where(norms == 0, 1, norms)).astype(np.float32)
    keys = np.array(data.keys, dtype=object)
    subsets: dict[str | None, tuple[np.ndarray, np.ndarray]] = {None: (np.arange(len(keys)), unit)}
    fr = np.array([m["lang"] == "fr" for m in data.metas])
    rows = np.flatnonzero(fr)
    subsets["fr"] = (rows, unit[rows])

    def raw(q: np.ndarray, where: dict[str, Any] | None) -> list[str]:
        rows, matrix = subsets[None if where is None else where["lang"]]
        cos = matrix @ (q / np.linalg.norm(q)).astype(np.float32)
        top = np.argpartition(-cos, K)[:K] if len(cos) > K else np.arange(len(cos))
        dist = np.clip(1.0 - cos[top].astype(np.float64), 0.0, 2.0)
        return [key for _, key in sorted(zip(dist.tolist(), keys[rows[top]].tolist(), strict=True))]

    return store, raw


def _cli(*args: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "vectorport", *args, "--json"], check=True, capture_output=True, text=True
    )
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def open_pgvector(
    data: Dataset, root: Path, cleanup: list[Callable[[], Any]], engine: bool = False
) -> tuple[Any, Query]:
    import psycopg
    from pgvector.psycopg import register_vector
    from psycopg.types.json import Jsonb

    pgdir = root / "pg"
    uri = _cli("pgvector", "start", str(pgdir))["uri"]
    cleanup.append(lambda: _cli("pgvector", "stop", str(pgdir)))
    target: Any = f"pgvector://{pgdir}?table=bench"
    if engine:
        import sqlalchemy
        from psycopg.conninfo import conninfo_to_dict

        given = {k: str(v) for k, v in conninfo_to_dict(uri).items()}
        user, db = given.pop("user", None), given.pop("dbname", None)
        target = sqlalchemy.create_engine(
            sqlalchemy.engine.URL.create("postgresql+psycopg", username=user, database=db, query=given)
        )
        cleanup.append(target.dispose)
    store = vectorport.connect(
        target, dimension=data.vectors.shape[1], metric="cosine", **({"table": "bench"} if engine else {})
    )
    cleanup.append(store.close)
    data.load(store)
    conn = psycopg.connect(uri, autocommit=True)
    cleanup.append(conn.close)
    register_vector(conn)
    conn.execute("ANALYZE bench")
    applied: dict[str, str] = {}
    statements = {
        False: "SELECT key, embedding <=> %(q)s AS distance, metadata, text FROM bench "
        "ORDER BY embedding <=> %(q)s LIMIT %(k)s",
        True: "SELECT key, embedding <=> %(q)s AS distance, metadata, text FROM bench "
        "WHERE metadata @> %(f)s ORDER BY embedding <=> %(q)s LIMIT %(k)s",
    }

    def raw(q: np.ndarray, where: dict[str, Any] | None) -> list[str]:
        wanted = {
            **PG_GUCS,
            "hnsw.ef_search": "1000" if where is not None else str(min(1000, max(100, 2 * K))),
        }
        if wanted != applied:  # session settings, sent only when they change (as vectorport does)
            for name, value in wanted.items():
                conn.execute("SELECT set_config(%s, %s, false)", (name, value))
            applied.clear()
            applied.update(wanted)
        params: dict[str, Any] = {"q": q, "k": K}
        if where is not None:
            params["f"] = Jsonb(where)
        rows = conn.execute(statements[where is not None], params, binary=True, prepare=True).fetchall()
        return [row[0] for row in rows]

    return store, raw


def open_chroma(data: Dataset, root: Path, cleanup: list[Callable[[], Any]]) -> tuple[Any, Query]:
    import chromadb
    from chromadb.config import Settings

    path = root / "chroma"
    store = vectorport.connect(
        f"chroma://{path}?collection=bench", dimension=data.vectors.shape[1], metric="cosine"
    )
    cleanup.append(store.close)
    data.load(store)
    # The same settings as vectorport's client: chromadb shares one system per path and
    # refuses a second client of that path with different settings.
    collection = chromadb.PersistentClient(
        str(path), settings=Settings(anonymized_telemetry=False)
    ).get_collection("bench")

    def raw(q: np.ndarray, where: dict[str, Any] | None) -> list[str]:
        res = collection.query(
            query_embeddings=[q],
            n_results=K,
            where=where,
            include=["distances", "metadatas", "documents"],
        )
        return list(res["ids"][0])

    return store, raw


def open_s3vectors(data: Dataset, root: Path, cleanup: list[Callable[[], Any]]) -> tuple[Any, Query]:
    import boto3

    # The local server checks no signature; boto3 only needs some credentials to sign with.
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
    server = local_server_class()()
    url = server.start()
    cleanup.append(server.stop)
    store = vectorport.connect(
        f"s3vectors://bench-bucket/bench?endpoint_url={url}&region=us-east-1",
        dimension=data.vectors.shape[1],
        metric="cosine",
    )
    cleanup.append(store.close)
    data.load(store)
    client = boto3.client("s3vectors", endpoint_url=url, region_name="us-east-1")

    def raw(q: np.ndarray, where: dict[str, Any] | None) -> list[str]:
        request: dict[str, Any] = {}
        if where is not None:
            request["filter"] = where
        resp = client.query_vectors(
            vectorBucketName="bench-bucket",
            indexName="bench",
            queryVector={"float32": q.tolist()},
            topK=K,
            returnDistance=True,
            returnMetadata=True,
            **request,
        )
        return [hit["key"] for hit in resp["vectors"]]

    return store, raw


OPENERS: dict[str, Callable[[Dataset, Path, list[Callable[[], Any]]], tuple[Any, Query]]] = {
    "memory": open_memory,
    "pgvector": open_pgvector,
    "pgvector-engine": partial(open_pgvector, engine=True),
    "chroma": open_chroma,
    "s3vectors": open_s3vectors,
}


def measure(
    bench: Bench, warm: np.ndarray, queries: np.ndarray, where: dict[str, Any] | None
) -> dict[str, Any]:
    """Both sides query by query, alternating which goes first, after the warm-up queries."""

    def vector(r: int) -> np.ndarray:
        return warm[-1 - r] if r < 0 else queries[r]

    race = h.Race(
        "raw",
        {"vp": lambda r: bench.vp(vector(r), where), "raw": lambda r: bench.raw(vector(r), where)},
        ratio="time",
    ).run(len(queries), warmup=len(warm))
    agree = [
        len(set(vp) & set(raw)) / max(1, len(raw))
        for vp, raw in zip(race.results["vp"], race.results["raw"], strict=True)
    ]
    out: dict[str, float] = {}
    for p in (50, 95, 99):
        out[f"vectorport_p{p}_ms"] = race.percentile_ms("vp", p)
        out[f"raw_p{p}_ms"] = race.percentile_ms("raw", p)
        out[f"ratio_p{p}"] = out[f"vectorport_p{p}_ms"] / out[f"raw_p{p}_ms"]
    out["agreement"] = float(np.mean(agree))
    return {key: round(value, 4) for key, value in out.items()}


HEADERS = [
    "backend",
    "filter",
    "vp p50",
    "vp p95",
    "raw p50",
    "raw p95",
    "p50 ratio",
    "p95 ratio",
    "p99 ratio",
    "agree",
]
FIELDS = [
    "vectorport_p50_ms",
    "vectorport_p95_ms",
    "raw_p50_ms",
    "raw_p95_ms",
    "ratio_p50",
    "ratio_p95",
    "ratio_p99",
    "agreement",
]


def table(rows: list[dict[str, Any]]) -> str:
    return h.table(
        HEADERS,
        [
            [row["backend"], row.get("filter", ""), f"error: {row['error']}"]
            if "error" in row
            else [row["backend"], row["filter"], *(row[f] for f in FIELDS)]
            for row in rows
        ],
    )


def run_backend(backend: str, data: Dataset, warm: np.ndarray, root: Path, report: dict[str, Any]) -> None:
    cleanup: list[Callable[[], Any]] = []
    try:
        began = time.perf_counter()
        store, raw = OPENERS[backend](data, root, cleanup)
        report["load_s"][backend] = round(time.perf_counter() - began, 2)
        bench = Bench(store, raw)
        h.log(f"{backend}: loaded {len(data.keys):,} in {report['load_s'][backend]} s")
        for label, where in FILTERS.items():
            row = {"backend": backend, "filter": label, **measure(bench, warm, data.queries, where)}
            report["results"].append(row)
            h.log(table([row]).splitlines()[-1])
    except Exception as exc:  # one backend failing must not hide the others
        report["results"].append({"backend": backend, "error": f"{type(exc).__name__}: {exc}"})
        h.log(f"{backend}: {type(exc).__name__}: {exc}")
    finally:
        close_all(cleanup)


def main() -> None:
    ap = h.parser(__doc__.splitlines()[0], n=20_000, quick={"n": 2000, "queries": 50})
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=10, help="untimed queries per side and filter")
    ap.add_argument("--backends", default=",".join(ALL_BACKENDS))
    args = h.parse(ap)
    backends = h.csv(args.backends)
    unknown = sorted(set(backends) - set(ALL_BACKENDS) - set(OTHER_BACKENDS))
    if unknown:
        ap.error(f"unknown backends {unknown}; choose among {', '.join(ALL_BACKENDS + OTHER_BACKENDS)}")
    data = Dataset(args.n, args.dim, args.queries)
    warm = (
        query_vectors(args.warmup, args.dim, clusters=64, seed=SEED + 1) if args.warmup else data.queries[:0]
    )
    report: dict[str, Any] = {
        "vectorport": str(Path(vectorport.__file__).parent),
        "k": K,
        "load_s": {},
        "results": [],
    }
    # When run as root the embedded PostgreSQL runs as another user that must reach its directory.
    with h.workdir("overhead") as root:
        for backend in backends:
            run_backend(backend, data, warm, root, report)
    h.emit("query-overhead", args, report, table(report["results"]))


if __name__ == "__main__":
    main()
