"""Whole migrations next to the hand-written path, measured in the same run, plus the engine's
peak memory from 20k to 1M records.

    python benchmarks/migrate_bench.py [--n 100000] [--dim 384] [--rss 20000,100000,300000,1000000]
                                       [--legs chroma-pgvector,pgvector-s3vectors] [--no-whole]
                                       [--modes default,two_pass] [--repeat R] [--no-plain-index]
                                       [--no-bucket]

Whole runs (default): N clustered 384-d records (``clustered_records``: flat metadata of 7 keys,
a text of 39-43 characters) in embedded Chroma, then

* Chroma -> pgvector (embedded server). Hand-written: chromadb ``get`` in pages of 5,000,
  psycopg ``COPY … FORMAT BINARY`` with pgvector-python's dumper, ``CREATE INDEX … USING hnsw``
  twice: plain (the server's settings) and tuned (``maintenance_work_mem`` 1 GB, the graph in
  memory, as pgvector advises). vectorport: ``vectorport.migrate`` with plan, copy, index build
  and verification: the default (one read of the source into the new table) and two-pass
  (``single_pass=False``). Ratio = hand-written time /
  vectorport's (>= 1: vectorport is faster), against the tuned hand path. ``--repeat R``: R
  rounds, each the hand-written path then vectorport, and the median ratio (one round swings by
  the machine's state; the untuned build, ``--no-plain-index`` skips it, runs in round 1 only).
* pgvector -> the local bucket server (a separate process), pacing on (2,500 vectors/s, the
  per-index write cap). Hand-written: a psycopg server-side cursor feeding boto3
  ``put_vectors`` of 500 from 4 threads paced to the cap. Reported as records per second of the
  whole run over the cap.

``--legs``: the older per-side figures (raw scan and write rates, the naive one-record-per-call
copy). Peak RSS: ``vectorport.migrate`` in a fresh process from a synthetic source that
generates records on the fly to a target that discards them, so the figure is the migration
engine's own memory (drivers and servers excluded); it must stay flat.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar, Self

import numpy as np

import vectorport
from vectorport import BaseStore, Capabilities, CollectionSpec, Metric, Record, StoreURL
from vectorport._features import bulk_load_of
from vectorport._registry import resolve
from vectorport._validate import Batch
from vectorport.migrate import Transformer
from vectorport.testing import clustered_records

BATCH = 1000
CONCURRENCY = 4


# ----------------------------------------------------------------- synthetic ends (RSS run)
class SyntheticStore(BaseStore[None]):
    """``synthetic://N/DIM``: N records generated from their index, never held in memory."""

    name: ClassVar[str] = "synthetic"
    capabilities: ClassVar[Capabilities] = Capabilities(
        metrics=frozenset(Metric),
        max_dimension=65536,
        max_write_batch=10_000,
        max_read_batch=10_000,
        max_delete_batch=10_000,
        max_scan_page=1000,
    )

    def __init__(self, url: StoreURL, n: int, dim: int) -> None:
        super().__init__(url, "synthetic")
        self.n, self.dim = n, dim

    @classmethod
    def from_url(cls, url: StoreURL, **options: Any) -> Self:
        return cls(url, int(url.host or 0), int(url.path.strip("/")))

    def _describe_collection(self) -> CollectionSpec | None:
        return CollectionSpec("synthetic", self.dim, Metric.COSINE)

    def _create_collection(self, spec: CollectionSpec) -> None: ...
    def _drop_collection(self) -> None: ...
    def list_collections(self) -> list[str]:
        return ["synthetic"]

    def _write(self, batch: Batch) -> None:
        raise NotImplementedError

    def _record(self, i: int) -> Record:
        rng = np.random.default_rng(i)
        return Record(
            f"docs/file{i // 10}.md#chunk{i % 10}:{i:09d}",
            rng.standard_normal(self.dim).astype(np.float32),
            {"source": f"docs/file{i // 10}.md", "n": i, "tags": ["a", "b"], "author": {"id": i % 7}},
            f"chunk {i} " + "lorem ipsum " * 40,
        )

    def _read(self, keys: Sequence[str], include: Any) -> list[Record]:
        return [self._record(int(k.rsplit(":", 1)[1])) for k in keys]

    def _remove(self, keys: Sequence[str]) -> None:
        raise NotImplementedError

    def _compile_filter(self, where: Any) -> None:
        raise NotImplementedError

    def _search(self, *args: Any) -> list[Any]:
        raise NotImplementedError

    def _scan_page(
        self, limit: int, include: Any, segment: tuple[int, int], after: dict[str, Any] | None
    ) -> tuple[Sequence[Record], dict[str, Any] | None]:
        start = int(after["next"]) if after else 0
        stop = min(self.n, start + limit)
        recs = tuple(self._record(i) for i in range(start, stop))
        return recs, None if stop >= self.n else {"next": stop}

    def _count(self) -> int:
        return self.n


class NullStore(SyntheticStore):
    """A target that acknowledges every write and keeps nothing."""

    name: ClassVar[str] = "null"

    def _describe_collection(self) -> CollectionSpec | None:
        return CollectionSpec("null", self.dim, Metric.COSINE)

    def _write(self, batch: Batch) -> None:
        return None


def rss_child(n: int, dim: int) -> None:
    src = SyntheticStore(StoreURL.parse(f"synthetic://{n}/{dim}"), n, dim)
    dst = NullStore(StoreURL.parse(f"null://0/{dim}"), 0, dim)
    src.bind()
    dst.bind()
    began = time.perf_counter()
    report = vectorport.migrate.run(src, dst, verify=False, batch_size=BATCH, concurrency=CONCURRENCY)
    assert report.copy is not None and report.copy.records == n
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {
                "n": n,
                "peak_rss_mib": round(peak_kib / 1024, 1),
                "seconds": round(time.perf_counter() - began, 1),
            }
        )
    )


# ----------------------------------------------------------------- helpers
def rate(n: int, seconds: float) -> float:
    return n / seconds if seconds > 0 else float("inf")


def timed_scan(url: str) -> tuple[float, int]:
    with vectorport.connect(url) as s:
        began = time.perf_counter()
        n = sum(len(p) for p in s.scan(batch_size=BATCH))
        return rate(n, time.perf_counter() - began), n


def timed_write(url: str, dim: int, records: list[Record], batch: int) -> float:
    with vectorport.connect(url, dimension=dim) as s:
        chunks = [records[i : i + batch] for i in range(0, len(records), batch)]
        began = time.perf_counter()
        # inside bulk_load like the migration's copy (pgvector: HNSW built once, build timed)
        with bulk_load_of(s, len(records)), ThreadPoolExecutor(CONCURRENCY) as pool:
            list(pool.map(s.upsert, chunks))
        out = rate(len(records), time.perf_counter() - began)
        s.drop()
        return out


def naive_copy(src_url: str, dst_url: str, dim: int, limit: int) -> dict[str, float]:
    """The way it is often done: read everything, then write one record per call."""
    with vectorport.connect(src_url) as src, vectorport.connect(dst_url, dimension=dim) as dst:
        began = time.perf_counter()
        everything = list(src.records())
        read = time.perf_counter() - began
        began = time.perf_counter()
        for rec in everything[:limit]:
            dst.upsert([rec])
        per_record = (time.perf_counter() - began) / limit
        dst.drop()
    n = len(everything)
    return {"read_s": read, "write_per_s": 1 / per_record, "estimated_total_s": read + per_record * n}


# ----------------------------------------------------------------- hand-written best paths
def hand_chroma_to_pgvector(
    chroma_dir: str, collection: str, dsn: str, dim: int, plain: bool = True
) -> dict[str, float]:
    """What one would write by hand: chromadb ``get`` in pages, psycopg ``COPY … FORMAT BINARY``
    (pgvector-python's dumper), then ``CREATE INDEX … USING hnsw`` tuned (the graph in memory)
    and, when ``plain``, again with the server's settings as they are."""
    import chromadb
    import psycopg
    from pgvector.psycopg import register_vector
    from psycopg.types.json import Jsonb

    out: dict[str, float] = {}
    began = time.perf_counter()
    # the settings vectorport's client uses (one system per directory and settings in a process)
    settings = chromadb.config.Settings(anonymized_telemetry=False)
    col = chromadb.PersistentClient(path=chroma_dir, settings=settings).get_collection(collection)
    rows: list[tuple[str, Any, Any, Any]] = []
    offset = 0
    while True:
        got = col.get(include=["embeddings", "metadatas", "documents"], limit=5000, offset=offset)
        if not got["ids"]:
            break
        rows.extend(zip(got["ids"], got["embeddings"], got["metadatas"], got["documents"], strict=True))
        offset += len(got["ids"])
    out["scan_s"] = time.perf_counter() - began
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute("DROP TABLE IF EXISTS hand")
        conn.execute(
            f"CREATE TABLE hand (id text PRIMARY KEY, embedding vector({dim}), metadata jsonb, text text)"
        )
        register_vector(conn)
        t0 = time.perf_counter()
        with (
            conn.cursor() as cur,
            cur.copy("COPY hand (id, embedding, metadata, text) FROM STDIN WITH (FORMAT BINARY)") as copy,
        ):
            copy.set_types(["text", "vector", "jsonb", "text"])
            for key, vec, meta, doc in rows:
                copy.write_row((key, np.asarray(vec, dtype=np.float32), Jsonb(meta or {}), doc))
        out["copy_s"] = time.perf_counter() - t0
        # the best a hand can do, first (a build that follows another reads a table whose pages
        # the first one warmed and hinted): the graph in memory (pgvector's advice), parallel
        # workers as the server allows them
        t0 = time.perf_counter()
        with conn.transaction():
            conn.execute("SET LOCAL maintenance_work_mem = '1GB'")
            conn.execute("CREATE INDEX hand_tuned ON hand USING hnsw (embedding vector_cosine_ops)")
        out["index_tuned_s"] = time.perf_counter() - t0
        conn.execute("DROP INDEX hand_tuned")
        if plain:
            t0 = time.perf_counter()
            conn.execute("CREATE INDEX hand_plain ON hand USING hnsw (embedding vector_cosine_ops)")
            out["index_plain_s"] = time.perf_counter() - t0
            out["total_plain_s"] = out["scan_s"] + out["copy_s"] + out["index_plain_s"]
        conn.execute("DROP TABLE hand")
    out["total_s"] = out["scan_s"] + out["copy_s"] + out["index_tuned_s"]
    return out


def hand_pgvector_to_bucket(
    dsn: str, table: str, endpoint: str, index: str, dim: int, cap: float
) -> dict[str, float]:
    """By hand: a psycopg server-side cursor, boto3 ``put_vectors`` of 500 from 4 threads, paced
    to ``cap`` vectors per second in all (the per-index write cap)."""
    import boto3
    import psycopg
    from pgvector.psycopg import register_vector

    client = boto3.client(
        "s3vectors",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
    )
    with contextlib.suppress(client.exceptions.ConflictException):
        client.create_vector_bucket(vectorBucketName="hand")
    client.create_index(
        vectorBucketName="hand",
        indexName=index,
        dataType="float32",
        dimension=dim,
        distanceMetric="cosine",
        metadataConfiguration={"nonFilterableMetadataKeys": ["text"]},
    )
    lock = threading.Lock()
    next_slot = [time.perf_counter()]

    def put(batch: list[dict[str, Any]]) -> None:
        with lock:  # reserve this batch's share of the cap
            start = max(next_slot[0], time.perf_counter())
            next_slot[0] = start + len(batch) / cap
        delay = start - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        client.put_vectors(vectorBucketName="hand", indexName=index, vectors=batch)

    began = time.perf_counter()
    n = 0
    with psycopg.connect(dsn) as conn, ThreadPoolExecutor(CONCURRENCY) as pool:
        register_vector(conn)
        futures = []
        with conn.cursor(name="scan") as cur:
            cur.itersize = 2000
            cur.execute(f"SELECT key, embedding, metadata, text FROM {table}")
            batch: list[dict[str, Any]] = []
            for key, vec, meta, text in cur:
                md = dict(meta or {})
                if text is not None:
                    md["text"] = text
                batch.append({"key": key, "data": {"float32": vec.tolist()}, "metadata": md})
                if len(batch) == 500:
                    futures.append(pool.submit(put, batch))
                    n += len(batch)
                    batch = []
            if batch:
                futures.append(pool.submit(put, batch))
                n += len(batch)
        for f in futures:
            f.result()
    seconds = time.perf_counter() - began
    return {"total_s": seconds, "records": n, "per_s": n / seconds}


def vp_run(src_url: str, dst_url: str, policy: str, single_pass: bool | None) -> dict[str, Any]:
    """``vectorport.migrate`` as ``vectorport migrate SRC DST`` runs it: the defaults, except
    ``single_pass=False`` for the two-pass reference run."""
    options: dict[str, Any] = {} if single_pass is None else {"single_pass": single_pass}
    report = vectorport.migrate.run(src_url, dst_url, metadata_policy=policy, **options)
    assert report.status == "verified", report.to_json()
    v = report.verification
    assert v is not None
    return {
        "total_s": round(report.timings["total"], 1),
        "timings_s": {k: round(val, 1) for k, val in report.timings.items()},
        "verify_method": v.method,
        "read_back": v.read_back,
        "bins": v.bins,
    }


def leg(
    name: str,
    src_url: str,
    dst_url: str,
    scratch_url: str,
    dim: int,
    records: list[Record],
    naive: int,
    policy: str,
) -> dict[str, Any]:
    print(f"[{name}] raw source scan …", file=sys.stderr, flush=True)
    scan_rate, n = timed_scan(src_url)
    print(f"[{name}] raw target write …", file=sys.stderr, flush=True)
    t = Transformer(target_capabilities(scratch_url).metadata, policy)
    fitted = [Record(r.key, r.vector, *_md(t, r)) for r in records]
    write_batch = min(BATCH, target_capabilities(scratch_url).max_write_batch)
    write_rate = timed_write(scratch_url, dim, fitted, write_batch)
    print(f"[{name}] migrate …", file=sys.stderr, flush=True)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    report = vectorport.migrate.run(
        src_url, dst_url, metadata_policy=policy, batch_size=BATCH, concurrency=CONCURRENCY
    )
    assert report.copy is not None and report.verification is not None, report.to_json()
    copy_rate = report.copy.rate
    total = report.timings["total"]
    print(f"[{name}] naive copy of {naive} …", file=sys.stderr, flush=True)
    nv = naive_copy(src_url, scratch_url.replace("raw", "naive"), dim, naive)
    slower = min(scan_rate, write_rate)
    return {
        "leg": name,
        "records": n,
        "raw_scan_per_s": round(scan_rate),
        "raw_write_per_s": round(write_rate),
        "migrate_copy_per_s": round(copy_rate),
        "ratio_to_slower_side": round(copy_rate / slower, 2),
        "migrate_total_s": round(total, 1),
        "timings_s": {k: round(v, 1) for k, v in report.timings.items()},
        "verification": {
            "status": report.status,
            "differences": report.verification.differences,
            "queries": report.verification.queries.to_dict() if report.verification.queries else None,
        },
        "end_to_end_per_s": round(n / total),
        "naive_write_per_s": round(nv["write_per_s"], 1),
        "naive_estimated_total_s": round(nv["estimated_total_s"]),
        "bench_process_maxrss_mib_before_after": [
            round(rss0 / 1024),
            round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        ],
    }


def target_capabilities(url: str) -> Capabilities:
    return resolve(StoreURL.parse(url).scheme).load().capabilities


def _md(t: Any, r: Record) -> tuple[Any, Any]:
    out = t.apply(r.metadata, r.text)
    return out.metadata, out.text


def chroma_url() -> str:
    return "chroma:///tmp?collection=probe"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def chroma_to_pgvector(
    args: argparse.Namespace, chroma: str, pg: str, chroma_dir: str, dsn: str
) -> dict[str, Any]:
    """``--repeat`` rounds of the hand-written path then each vectorport mode, one after the
    other on the same source; a ratio per round (hand / vectorport) and their median."""
    rounds: list[dict[str, Any]] = []
    modes = [(n, s) for n, s in (("default", None), ("two_pass", False)) if n in args.modes.split(",")]
    for r in range(args.repeat):
        print(
            f"[chroma -> pgvector] round {r + 1}: hand-written (chromadb get + COPY + CREATE INDEX) …",
            file=sys.stderr,
            flush=True,
        )
        hand = hand_chroma_to_pgvector(chroma_dir, "src", dsn, args.dim, plain=args.plain_index and r == 0)
        one: dict[str, Any] = {
            "load": os.getloadavg()[0],
            "hand_written_s": {k: round(v, 1) for k, v in hand.items()},
        }
        for name, single in modes:
            print(
                f"[chroma -> pgvector] round {r + 1}: vectorport migrate ({name}) …",
                file=sys.stderr,
                flush=True,
            )
            table = f"mig{r}" if single is None else f"two{r}"
            one[name] = vp_run(chroma, pg % table, "error", single)
            # hand-written time / vectorport time (>= 1: vectorport is faster), against the tuned hand
            # path: the index built in memory, the same settings vectorport's build uses
            one[f"ratio_{name}"] = round(hand["total_s"] / one[name]["total_s"], 2)
            if "total_plain_s" in hand:
                one[f"ratio_{name}_vs_plain_index"] = round(hand["total_plain_s"] / one[name]["total_s"], 2)
            if r + 1 < args.repeat:
                _drop_table(dsn, table)
        print(one, file=sys.stderr, flush=True)
        rounds.append(one)
    out: dict[str, Any] = {"rounds": rounds}
    for name, _ in modes:
        out[f"median_ratio_{name}"] = round(float(np.median([one[f"ratio_{name}"] for one in rounds])), 3)
    return out


def _drop_table(dsn: str, table: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'DROP TABLE IF EXISTS "{table}" CASCADE')


def whole_runs(args: argparse.Namespace, work: str, bucket: str, records: list[Record]) -> dict[str, Any]:
    """Whole migrations (plan, copy, index, verify) next to the hand-written path, same run."""
    from vectorport.backends.pgvector import start_embedded

    out: dict[str, Any] = {}
    chroma_dir = f"{work}/chroma"
    chroma = f"chroma://{chroma_dir}?collection=src"
    pg = f"pgvector://{work}/pg?table=%s"
    dsn = start_embedded(f"{work}/pg")
    out["chroma -> pgvector"] = chroma_to_pgvector(args, chroma, pg, chroma_dir, dsn)
    print(out["chroma -> pgvector"], file=sys.stderr, flush=True)
    if args.bucket:
        last = args.repeat - 1
        table = f"mig{last}" if "default" in args.modes.split(",") else f"two{last}"
        out["pgvector -> bucket"] = pgvector_to_bucket(args, pg, table, dsn, bucket, len(records))
    return out


def pgvector_to_bucket(
    args: argparse.Namespace, pg: str, table: str, dsn: str, bucket: str, n: int
) -> dict[str, Any]:
    """The table the Chroma leg wrote, into the local bucket server at its write cap: by hand
    and with each vectorport mode; records per second of the whole run over the cap."""
    cap = 2500.0
    print(
        "[pgvector -> bucket] hand-written: psycopg cursor + boto3 put_vectors at the cap …",
        file=sys.stderr,
        flush=True,
    )
    hand_b = hand_pgvector_to_bucket(dsn, table, bucket, "hand", args.dim, cap)
    runs = {}
    modes = [(n, s) for n, s in (("default", None), ("two_pass", False)) if n in args.modes.split(",")]
    for name, single in modes:
        print(f"[pgvector -> bucket] vectorport migrate ({name}) …", file=sys.stderr, flush=True)
        dst = f"s3vectors://bench/vp-{name.replace('_', '-')}?endpoint_url={bucket}"
        runs[name] = vp_run(pg % table, dst, "error", single)
    out = {
        "write_cap_per_s": cap,
        "hand_written_s": round(hand_b["total_s"], 1),
        **runs,
        "hand_rate_of_cap": round(n / hand_b["total_s"] / cap, 2),
        **{f"{name}_rate_of_cap": round(n / runs[name]["total_s"] / cap, 2) for name in runs},
    }
    print(out, file=sys.stderr, flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--naive", type=int, default=2000, help="records timed for the naive copy")
    ap.add_argument("--rss", default="20000,100000,300000,1000000", help="sizes for the peak-RSS runs")
    ap.add_argument(
        "--legs",
        default="",
        help="also the per-side rates and naive copy: chroma-pgvector,pgvector-s3vectors",
    )
    ap.add_argument("--no-whole", action="store_true", help="skip the whole-run comparison")
    ap.add_argument("--modes", default="default,two_pass", help="vectorport runs: default,two_pass")
    ap.add_argument(
        "--no-bucket", dest="bucket", action="store_false", help="skip the pgvector -> bucket whole run"
    )
    ap.add_argument("--repeat", type=int, default=1, help="rounds of the Chroma -> pgvector comparison")
    ap.add_argument(
        "--no-plain-index",
        dest="plain_index",
        action="store_false",
        help="skip the hand path's second, untuned index build (about 2 minutes at 100k)",
    )
    ap.add_argument("--rss-child", nargs=2, type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rss_child:
        rss_child(*args.rss_child)
        return
    results: dict[str, Any] = {"n": args.n, "dim": args.dim, "batch_size": BATCH, "concurrency": CONCURRENCY}
    print("peak RSS runs …", file=sys.stderr, flush=True)
    results["rss"] = []
    for size in [int(x) for x in args.rss.split(",") if x]:
        out = subprocess.run(
            [sys.executable, __file__, "--rss-child", str(size), str(args.dim)],
            capture_output=True,
            text=True,
            check=True,
        )
        results["rss"].append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(results["rss"][-1], file=sys.stderr, flush=True)
    work = tempfile.mkdtemp(prefix="vp-migbench-")
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "vectorport.bucketserver", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    bucket = f"http://127.0.0.1:{port}"
    try:
        # metadata Chroma can hold (flat), so the source loads as generated
        records = clustered_records(
            args.n, args.dim, seed=1, rules=target_capabilities(chroma_url()).metadata
        )
        legs = [x for x in args.legs.split(",") if x]
        chroma = f"chroma://{work}/chroma?collection=src"
        pg = f"pgvector://{work}/pg?table=%s"
        if records:
            print(f"loading {args.n} x {args.dim} into chroma …", file=sys.stderr, flush=True)
            with vectorport.connect(chroma, dimension=args.dim) as c:
                began = time.perf_counter()
                for i in range(0, args.n, 5000):
                    c.upsert(records[i : i + 5000])
                results["chroma_load_per_s"] = round(rate(args.n, time.perf_counter() - began))
        if not args.no_whole:
            results["whole"] = whole_runs(args, work, bucket, records)
        results["legs"] = []
        if "chroma-pgvector" in legs:
            results["legs"].append(
                leg(
                    "chroma -> pgvector",
                    chroma,
                    pg % "mig",
                    pg % "raw",
                    args.dim,
                    records,
                    args.naive,
                    "error",
                )
            )
            print(results["legs"][-1], file=sys.stderr, flush=True)
        if "pgvector-s3vectors" in legs:
            s3 = f"s3vectors://bench/%s?endpoint_url={bucket}&write_rate=0"
            results["legs"].append(
                leg(
                    "pgvector -> s3vectors",
                    pg % "mig",
                    s3 % "mig",
                    s3 % "raw",
                    args.dim,
                    records,
                    args.naive,
                    "error",
                )
            )
            print(results["legs"][-1], file=sys.stderr, flush=True)
    finally:
        server.terminate()
        server.wait()
        try:
            from vectorport.backends.pgvector._embedded import stop_embedded

            stop_embedded(os.path.join(work, "pg"))
        except Exception:
            pass
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(results, indent=2))
    for r in results["legs"]:
        print(
            f"{r['leg']}: migrate {r['migrate_copy_per_s']}/s vs scan {r['raw_scan_per_s']}/s, "
            f"write {r['raw_write_per_s']}/s -> ratio {r['ratio_to_slower_side']} to the slower side; "
            f"naive ~{r['naive_estimated_total_s']}s vs migrate {r['migrate_total_s']}s"
        )
    for name, w in results.get("whole", {}).items():
        print(f"{name}: {json.dumps(w)}")
    for r in results["rss"]:
        print(f"peak RSS at {r['n']} records: {r['peak_rss_mib']} MiB")


if __name__ == "__main__":
    main()
