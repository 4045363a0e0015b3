"""S3 Vectors adapter vs raw boto3 against the same local server, and the server's own
query latency at 100k x 384.

    python benchmarks/s3vectors_bench.py [--n 100000] [--dim 384] [--queries 200] [--data DIR]

Puts: raw boto3 with its default config (botocore validates every parameter) and with
``parameter_validation=False``; the adapter unpaced (``write_rate=0``) and with its default
client-side pacing (2,500 vectors/s per index, AWS's limit). Scans: ListVectors with
``returnData`` and ``returnMetadata`` over the whole index, raw boto3 vs ``store.scan``.
``--data`` runs the server durably (write-ahead log, fsync per batch) instead of in memory.

Server alone: the server in a process of its own takes PutVectors requests of 500 x ``dim``
(metadata: ~500 characters of non-filterable text and two small keys) encoded beforehand and
sent over plain HTTP keep-alive from 4 threads, unpaced, so neither botocore nor the client's
JSON encoding is in the figure (``--server-n``; 0 skips it). The per-index write cap of S3
Vectors is 2,500 vectors/s; a migration into the local server can only approach it when the
server alone is well above it.

Prints a table and the adapter/raw ratios (1.0 = no overhead).
"""

from __future__ import annotations

import argparse
import http.client
import json
import subprocess
import sys
import threading
import time
from typing import Any

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


def _pct(values: list[float], p: float) -> float:
    return float(np.percentile(np.asarray(values) * 1000.0, p))


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
            raw_t, ad_t = [], []
            for q in qs:
                t0 = time.perf_counter()
                kw: dict[str, Any] = {"filter": flt} if flt else {}
                raw.query_vectors(
                    vectorBucketName="bench",
                    indexName="raw",
                    topK=10,
                    queryVector={"float32": q.tolist()},
                    returnDistance=True,
                    **kw,
                )
                raw_t.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                store.query(q, k=10, filter=flt)
                ad_t.append(time.perf_counter() - t0)
            out[f"raw_query{label}_p50_ms"] = _pct(raw_t, 50)
            out[f"adapter_query{label}_p50_ms"] = _pct(ad_t, 50)
            out[f"raw_query{label}_p95_ms"] = _pct(raw_t, 95)
            out[f"adapter_query{label}_p95_ms"] = _pct(ad_t, 95)
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
    cmd = [sys.executable, "-m", "vectorport.bucketserver", "--port", "0"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        host, port = proc.stdout.readline().strip().removeprefix("http://").rsplit(":", 1)
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
    finally:
        proc.terminate()
        proc.wait(30)
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
        out[f"engine_query{label}_p50_ms"] = _pct(times, 50)
        out[f"engine_query{label}_p95_ms"] = _pct(times, 95)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--http-n", type=int, default=100_000, help="records for the adapter-vs-boto3 part")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--server-n", type=int, default=100_000, help="records for the server-alone puts")
    parser.add_argument("--data", help="server data directory (durable); default: in memory")
    args = parser.parse_args()
    if args.server_n:
        alone = bench_server_put(args.server_n, args.dim)
        print(f"## server alone: PutVectors of 500 x {args.dim} from 4 connections, in memory")
        for key, value in alone.items():
            print(f"{key:32s} {value:12.2f}")
    http = bench_http(args.http_n, args.dim, args.queries, args.data)
    engine = bench_engine(args.n, args.dim, args.queries)
    where = f"durable in {args.data}" if args.data else "in memory"
    print(f"## adapter vs raw boto3 (local server over HTTP, {where}, {args.http_n} x {args.dim}, cosine)")
    for key, value in http.items():
        print(f"{key:32s} {value:12.2f}")
    print(f"put throughput ratio (adapter/raw):   {http['adapter_put_per_s'] / http['raw_put_per_s']:.2f}")
    print(
        f"put ratio (adapter/raw, no botocore validation): "
        f"{http['adapter_put_per_s'] / http['raw_noval_put_per_s']:.2f}"
    )
    paced = http["adapter_paced_put_per_s"] / http["raw_put_per_s"]
    print(f"put ratio (adapter paced at 2,500/s / raw): {paced:.2f}")
    print(f"scan throughput ratio (adapter/raw):  {http['adapter_scan_per_s'] / http['raw_scan_per_s']:.2f}")
    for label in ("", "_filtered"):
        ratio = http[f"adapter_query{label}_p50_ms"] / http[f"raw_query{label}_p50_ms"]
        print(f"query{label} p50 latency ratio (adapter/raw): {ratio:.2f}")
    print(f"## server engine, exact search at {args.n} x {args.dim} (cosine, top-10)")
    for key, value in engine.items():
        print(f"{key:32s} {value:12.2f}")


if __name__ == "__main__":
    main()
