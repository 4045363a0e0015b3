"""S3 Vectors adapter vs raw boto3 against the same local server, and the server's own
query latency at 100k x 384.

    python benchmarks/s3vectors_bench.py [--n 100000] [--dim 384] [--queries 200] [--data DIR]
        [--http-n 100000] [--server-n 100000] [--json] [--output FILE] [--quick]

Puts: raw boto3 with its default config (botocore validates every parameter) and with
``parameter_validation=False``; the adapter unpaced (``write_rate=0``) and with its default
client-side pacing (2,500 vectors/s per index, AWS's limit). Scans: ListVectors with
``returnData`` and ``returnMetadata`` over the whole index, raw boto3 vs ``store.scan``. Queries
(k=10, unfiltered and ``{"lang": "fr"}``): raw ``query_vectors`` and ``store.query``, alternating
which goes first.
``--data`` runs the server durably (write-ahead log, fsync per batch) instead of in memory.

Server alone: the server in a process of its own takes PutVectors requests of 500 x ``dim``
(metadata: ~500 characters of non-filterable text and two small keys) encoded beforehand and
sent over plain HTTP keep-alive from 4 threads, unpaced, so neither botocore nor the client's
JSON encoding is in the figure (``--server-n``; 0 skips it). The per-index write cap of S3
Vectors is 2,500 vectors/s; a migration into the local server can only approach it when the
server alone is well above it.

Prints a table and the adapter/raw ratios (throughput for puts and scans, p50 latency for
queries; 1.0 = no overhead).
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from typing import Any

import _harness as h
import numpy as np

import vectorport
from vectorport import Record
from vectorport.bucketserver import LocalServer
from vectorport.bucketserver._filter import parse_filter
from vectorport.bucketserver._table import VectorTable


def _client(url: str, **config: Any) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3vectors",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
        config=Config(retries={"mode": "standard", "total_max_attempts": 1}, **config),
    )


def _raw_put(client: Any, index: str, vecs: Any, metas: list[dict[str, Any]]) -> float:
    n = len(vecs)
    began = time.perf_counter()
    for lo in range(0, n, 500):
        items = [
            {"key": f"k{i}", "data": {"float32": vecs[i].tolist()}, "metadata": metas[i]}
            for i in range(lo, min(n, lo + 500))
        ]
        client.put_vectors(vectorBucketName="bench", indexName=index, vectors=items)
    return n / (time.perf_counter() - began)


def _raw_scan(client: Any, index: str) -> float:
    began, seen, token = time.perf_counter(), 0, None
    while True:
        more = {"nextToken": token} if token else {}
        page = client.list_vectors(
            vectorBucketName="bench",
            indexName=index,
            maxResults=1000,
            returnData=True,
            returnMetadata=True,
            **more,
        )
        seen += len(page["vectors"])
        token = page.get("nextToken")
        if not token:
            return seen / (time.perf_counter() - began)


def query_race(raw: Any, store: Any, qs: np.ndarray, flt: dict[str, Any] | None) -> h.Race:
    kw: dict[str, Any] = {"filter": flt} if flt else {}
    request = {"vectorBucketName": "bench", "indexName": "raw", "topK": 10, "returnDistance": True, **kw}
    return h.Race(
        "raw",
        {
            "raw": lambda r: raw.query_vectors(queryVector={"float32": qs[r].tolist()}, **request),
            "vectorport": lambda r: store.query(qs[r], k=10, filter=flt),
        },
        ratio="time",
    ).run(len(qs))


def bench_http(n: int, dim: int, queries: int, data: str | None) -> dict[str, float]:
    rng = np.random.default_rng(0)
    vecs = rng.standard_normal((n, dim)).astype(np.float32)
    metas = [{"lang": ["en", "fr", "de"][i % 3], "n": i} for i in range(n)]
    qs = rng.standard_normal((queries, dim)).astype(np.float32)
    server = LocalServer(data)
    url = server.start()
    out: dict[str, float] = {}
    try:
        raw = _client(url)
        raw.create_vector_bucket(vectorBucketName="bench")
        for name in ("raw", "rawnoval"):
            raw.create_index(
                vectorBucketName="bench",
                indexName=name,
                dataType="float32",
                dimension=dim,
                distanceMetric="cosine",
            )
        out["raw_put_per_s"] = _raw_put(raw, "raw", vecs, metas)
        out["raw_noval_put_per_s"] = _raw_put(
            _client(url, parameter_validation=False), "rawnoval", vecs, metas
        )

        records = [Record(f"k{i}", vecs[i], metas[i]) for i in range(n)]
        paced = vectorport.connect(
            f"s3vectors://bench/paced?endpoint_url={url}", dimension=dim, metric="cosine"
        )
        began = time.perf_counter()
        paced.upsert(records)
        out["adapter_paced_put_per_s"] = n / (time.perf_counter() - began)
        paced.drop()
        store = vectorport.connect(
            f"s3vectors://bench/adapter?endpoint_url={url}&write_rate=0", dimension=dim, metric="cosine"
        )
        began = time.perf_counter()
        store.upsert(records)
        out["adapter_put_per_s"] = n / (time.perf_counter() - began)

        out["raw_scan_per_s"] = _raw_scan(raw, "raw")
        began = time.perf_counter()
        scanned = sum(len(page) for page in store.scan(include=["vector", "metadata"], batch_size=1000))
        out["adapter_scan_per_s"] = scanned / (time.perf_counter() - began)
        assert scanned == n

        for label, flt in (("", None), ("_filtered", {"lang": "fr"})):
            race = query_race(raw, store, qs, flt)
            for side, name in (("raw", "raw"), ("adapter", "vectorport")):
                out[f"{side}_query{label}_p50_ms"] = race.percentile_ms(name, 50)
                out[f"{side}_query{label}_p95_ms"] = race.percentile_ms(name, 95)
        began = time.perf_counter()
        counted = store.count()
        out["adapter_count_s"] = time.perf_counter() - began
        assert counted == n
    finally:
        server.stop()
    return out


def _post(conn: http.client.HTTPConnection, operation: str, body: bytes) -> None:
    conn.request("POST", f"/{operation}", body, {"Content-Type": "application/json"})
    resp = conn.getresponse()
    answer = resp.read()
    if resp.status != 200:
        raise RuntimeError(f"{operation}: HTTP {resp.status}: {answer[:300]!r}")


def bench_server_put(n: int, dim: int, threads: int = 4, batch: int = 500) -> dict[str, float]:
    """PutVectors throughput of the server alone (its own process, pre-encoded bodies)."""
    rng = np.random.default_rng(2)
    vecs = rng.standard_normal((n, dim)).astype(np.float32)
    text = "lorem ipsum dolor sit amet " * 19
    target = {"vectorBucketName": "bench", "indexName": "put"}
    bodies = [
        json.dumps(
            {
                **target,
                "vectors": [
                    {
                        "key": f"k{i}",
                        "data": {"float32": vecs[i].tolist()},
                        "metadata": {"text": text, "source": f"doc{i // 10}", "n": i},
                    }
                    for i in range(lo, min(n, lo + batch))
                ],
            }
        ).encode()
        for lo in range(0, n, batch)
    ]
    with h.bucket_server() as url:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        conns = [http.client.HTTPConnection(host, int(port), timeout=600) for _ in range(threads)]
        _post(conns[0], "CreateVectorBucket", b'{"vectorBucketName": "bench"}')
        index = {
            **target,
            "dataType": "float32",
            "dimension": dim,
            "distanceMetric": "cosine",
            "metadataConfiguration": {"nonFilterableMetadataKeys": ["text"]},
        }
        _post(conns[0], "CreateIndex", json.dumps(index).encode())

        def work(t: int) -> None:
            for body in bodies[t::threads]:
                _post(conns[t], "PutVectors", body)

        workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
        began = time.perf_counter()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        elapsed = time.perf_counter() - began
    return {"server_put_per_s": n / elapsed, "server_put_cap_ratio": n / elapsed / 2500.0}


def bench_engine(n: int, dim: int, queries: int) -> dict[str, float]:
    """The server's search itself (no HTTP): exact numpy top-k at n x dim."""
    rng = np.random.default_rng(1)
    table = VectorTable(dim, "cosine")
    vecs = rng.standard_normal((n, dim)).astype(np.float32)
    metas = [{"lang": ["en", "fr", "de"][i % 3], "n": i} for i in range(n)]
    for lo in range(0, n, 5000):
        table.put(
            [f"k{i}" for i in range(lo, min(n, lo + 5000))], vecs[lo : lo + 5000], metas[lo : lo + 5000]
        )
    qs = rng.standard_normal((queries, dim)).astype(np.float32)
    out: dict[str, float] = {}
    for label, doc in (("", None), ("_filtered", {"$and": [{"lang": "fr"}, {"n": {"$gte": 1000}}]})):
        node = None if doc is None else parse_filter(doc)
        table.search(qs[0], 10, node)  # builds the filter columns once
        times = []
        for q in qs:
            t0 = time.perf_counter()
            table.search(q, 10, node)
            times.append(time.perf_counter() - t0)
        out[f"engine_query{label}_p50_ms"] = h.percentile_ms(times, 50)
        out[f"engine_query{label}_p95_ms"] = h.percentile_ms(times, 95)
    return out


def ratios(http: dict[str, float]) -> dict[str, float]:
    """adapter / raw: throughput for puts and scans (>= 1: the adapter is as fast), p50 latency
    for queries (<= 1: no overhead)."""
    out = {
        "put": http["adapter_put_per_s"] / http["raw_put_per_s"],
        "put_vs_raw_without_validation": http["adapter_put_per_s"] / http["raw_noval_put_per_s"],
        "put_paced_vs_raw": http["adapter_paced_put_per_s"] / http["raw_put_per_s"],
        "scan": http["adapter_scan_per_s"] / http["raw_scan_per_s"],
    }
    for label in ("", "_filtered"):
        out[f"query{label}_p50"] = http[f"adapter_query{label}_p50_ms"] / http[f"raw_query{label}_p50_ms"]
    return {k: round(v, 3) for k, v in out.items()}


def main() -> None:
    ap = h.parser(__doc__, n=100_000, quick={"n": 2000, "http_n": 2000, "server_n": 2000, "queries": 50})
    ap.add_argument("--http-n", type=int, default=100_000, help="records for the adapter-vs-boto3 part")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--server-n", type=int, default=100_000, help="records for the server-alone puts")
    ap.add_argument("--data", help="server data directory (durable); default: in memory")
    args = h.parse(ap)
    out: dict[str, Any] = {}
    if args.server_n:
        h.log(f"server alone: {args.server_n:,} x {args.dim} …")
        out["server_alone"] = bench_server_put(args.server_n, args.dim)
    h.log(f"adapter vs raw boto3: {args.http_n:,} x {args.dim} …")
    out["http"] = bench_http(args.http_n, args.dim, args.queries, args.data)
    out["ratios"] = ratios(out["http"])
    h.log(f"server engine: {args.n:,} x {args.dim} …")
    out["engine"] = bench_engine(args.n, args.dim, args.queries)
    where = f"durable in {args.data}" if args.data else "in memory"
    sections = [
        (
            f"server alone: PutVectors of 500 x {args.dim} from 4 connections, in memory",
            out.get("server_alone", {}),
        ),
        (
            f"adapter vs raw boto3 (local server over HTTP, {where}, {args.http_n:,} x {args.dim}, cosine)",
            out["http"],
        ),
        ("ratios, adapter / raw", out["ratios"]),
        (f"server engine, exact search at {args.n:,} x {args.dim} (cosine, top-10)", out["engine"]),
    ]
    text = "\n\n".join(
        f"## {title}\n" + h.table(["figure", "value"], list(figures.items()))
        for title, figures in sections
        if figures
    )
    h.emit("s3vectors", args, out, text)


if __name__ == "__main__":
    main()
