"""Whole migrations next to the hand-written path and the peers, 10k to 100k records in one run,
plus the engine's peak memory from 20k to 1M records.

    python benchmarks/migrate_bench.py [--n 100000 | --sizes 10000,30000,100000] [--dim 384] [--repeat R]
        [--modes default,two_pass] [--peers vecparity,langchain] [--no-plain-index] [--no-bucket]
        [--rss 20000,100000,300000,1000000] [--legs chroma-pgvector,pgvector-s3vectors] [--no-whole]
        [--json] [--output FILE] [--quick]

Whole runs: for each size (``--sizes``, else ``--n``), that many clustered 384-d records
(``clustered_records``: flat metadata of 7 keys, a text of 39-43 characters) in embedded Chroma,
then Chroma -> pgvector (embedded server) by every way below, in turns (the order turned each
round, ``--repeat`` rounds), each into a new table:

* ``hand`` (the baseline): chromadb ``get`` in pages of 5,000, psycopg ``COPY … FORMAT BINARY``
  with pgvector-python's dumper, ``CREATE INDEX … USING hnsw`` tuned (``maintenance_work_mem``
  1 GB, the graph in memory, as pgvector advises); in round 1 also again with the server's
  settings (``--no-plain-index`` skips it), reported as the ``vs_plain_index`` ratio;
* ``default``: ``vectorport.migrate`` as ``vectorport migrate SRC DST`` runs it (plan, copy,
  index build, verification), its report's total; ``two_pass``: the same with
  ``single_pass=False``;
* ``vecparity``: vecparity 0.1.0 as a user installs it, in its own venv (made on first use under
  ``~/.cache/vectorport-bench``: ``pip install "vecparity[chroma,pgvector]==0.1.0"`` with the
  chromadb that wrote the source), its ``SyncEngine.run_once`` from a ``ChromaAdapter`` on the
  collection into a ``PgVectorAdapter`` table made as its docs say, in a child process that
  times itself (no index, no documents: vecparity keeps neither);
* ``langchain``: what an app team writes with langchain-postgres: ``PGVectorStore`` on a new
  table (text ids), ``add_embeddings`` of each Chroma page of 5,000, then
  ``apply_vector_index(HNSWIndex())``.

Ratios: the hand path's time / the way's (>= 1: the way is faster), per round and of the
medians. Every copy is checked by a raw read-back (psycopg: the row count, and the vector,
metadata and text, where the way keeps text, of 200 sampled keys equal to what was loaded),
untimed. Then, at the largest size, pgvector -> the local bucket server (a separate process),
pacing on (2,500 vectors/s, the per-index write cap): by hand (a psycopg server-side cursor
feeding boto3 ``put_vectors`` of 500 from 4 threads paced to the cap) and by each vectorport
mode, as records per second of the whole run over the cap.

``--legs``: the older per-side figures at ``--n`` records (raw scan and write rates, the naive
one-record-per-call copy). Peak RSS: ``vectorport.migrate`` in a fresh process from a synthetic
source that generates records on the fly to a target that discards them, so the figure is the
migration engine's own memory (drivers and servers excluded); it must stay flat.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import json
import os
import resource
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Self

import _harness as h
import boto3
import chromadb
import numpy as np
import psycopg
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_postgres import Column, PGEngine, PGVectorStore
from langchain_postgres.v2.indexes import HNSWIndex
from pgvector.psycopg import register_vector
from psycopg.types.json import Jsonb

import vectorport
from vectorport import BaseStore, Capabilities, CollectionSpec, Metric, Record, StoreURL
from vectorport._features import bulk_load_of
from vectorport._registry import resolve
from vectorport._validate import Batch
from vectorport.backends.pgvector import start_embedded
from vectorport.migrate import Transformer
from vectorport.testing import clustered_records

BATCH = 1000
CONCURRENCY = 4
PAGE = 5000
SAMPLE = 200
VECPARITY = "0.1.0"
WAYS = ("hand", "default", "two_pass", "vecparity", "langchain")


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


# ----------------------------------------------------------------- per-side legs (--legs)
def timed_scan(url: str) -> tuple[float, int]:
    with vectorport.connect(url) as s:
        began = time.perf_counter()
        n = sum(len(p) for p in s.scan(batch_size=BATCH))
        return h.rate(n, time.perf_counter() - began), n


def timed_write(url: str, dim: int, records: list[Record], batch: int) -> float:
    with vectorport.connect(url, dimension=dim) as s:
        chunks = [records[i : i + batch] for i in range(0, len(records), batch)]
        began = time.perf_counter()
        # inside bulk_load like the migration's copy (pgvector: HNSW built once, build timed)
        with bulk_load_of(s, len(records)), ThreadPoolExecutor(CONCURRENCY) as pool:
            list(pool.map(s.upsert, chunks))
        out = h.rate(len(records), time.perf_counter() - began)
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


def leg(
    name: str, src_url: str, dst_url: str, scratch_url: str, records: list[Record], naive: int
) -> dict[str, Any]:
    dim = len(records[0].vector)
    h.log(f"[{name}] raw source scan …")
    scan_rate, n = timed_scan(src_url)
    h.log(f"[{name}] raw target write …")
    caps = resolve(StoreURL.parse(scratch_url).scheme).load().capabilities
    t = Transformer(caps.metadata, "error")
    fitted = [Record(r.key, r.vector, *_md(t, r)) for r in records]
    write_rate = timed_write(scratch_url, dim, fitted, min(BATCH, caps.max_write_batch))
    h.log(f"[{name}] migrate …")
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    report = vectorport.migrate.run(
        src_url, dst_url, metadata_policy="error", batch_size=BATCH, concurrency=CONCURRENCY
    )
    assert report.copy is not None and report.verification is not None, report.to_json()
    total = report.timings["total"]
    h.log(f"[{name}] naive copy of {naive} …")
    nv = naive_copy(src_url, scratch_url.replace("raw", "naive"), dim, naive)
    slower = min(scan_rate, write_rate)
    return {
        "leg": name,
        "records": n,
        "raw_scan_per_s": scan_rate,
        "raw_write_per_s": write_rate,
        "migrate_copy_per_s": round(report.copy.rate),
        "ratio_to_slower_side": round(report.copy.rate / slower, 2),
        "migrate_total_s": round(total, 1),
        "timings_s": {k: round(v, 1) for k, v in report.timings.items()},
        "verification": {
            "status": report.status,
            "differences": report.verification.differences,
            "queries": report.verification.queries.to_dict() if report.verification.queries else None,
        },
        "end_to_end_per_s": h.rate(n, total),
        "naive_write_per_s": round(nv["write_per_s"], 1),
        "naive_estimated_total_s": round(nv["estimated_total_s"]),
        "bench_process_maxrss_mib_before_after": [
            round(rss0 / 1024),
            round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        ],
    }


def _md(t: Any, r: Record) -> tuple[Any, Any]:
    out = t.apply(r.metadata, r.text)
    return out.metadata, out.text


# ----------------------------------------------------------------- the ways, Chroma -> pgvector
@dataclass(frozen=True)
class Columns:
    """Where a way's table keeps each part of a record (``text``: ``None`` when the way keeps
    no document)."""

    key: str = "key"
    vector: str = "embedding"
    metadata: str = "metadata"
    text: str | None = "text"


@dataclass(frozen=True)
class Pair:
    """One size's source and target: the Chroma collection and the embedded server."""

    chroma_dir: str
    collection: str
    pg_dir: str
    dsn: str
    dim: int

    @property
    def chroma_url(self) -> str:
        return f"chroma://{self.chroma_dir}?collection={self.collection}"

    def pg_url(self, table: str) -> str:
        return f"pgvector://{self.pg_dir}?table={table}"


def chroma_pages(pair: Pair) -> Iterator[tuple[list[str], list[Any], list[Any], list[Any]]]:
    """The source, page by page, as chromadb's own ``get`` gives it (ids, embeddings,
    metadatas, documents)."""
    # the settings vectorport's client uses (one system per directory and settings in a process)
    settings = chromadb.config.Settings(anonymized_telemetry=False)
    col = chromadb.PersistentClient(path=pair.chroma_dir, settings=settings).get_collection(pair.collection)
    offset = 0
    while True:
        got = col.get(include=["embeddings", "metadatas", "documents"], limit=PAGE, offset=offset)
        if not got["ids"]:
            return
        yield got["ids"], list(got["embeddings"]), list(got["metadatas"]), list(got["documents"])
        offset += len(got["ids"])


def hand(pair: Pair, table: str, plain: bool) -> h.Timed:
    """The best hand-written path: chromadb ``get`` in pages, psycopg ``COPY … FORMAT BINARY``
    (pgvector-python's dumper), ``CREATE INDEX … USING hnsw`` with the graph in memory; with
    ``plain``, then built again with the server's settings, timed apart."""
    out: dict[str, float] = {}
    began = time.perf_counter()
    rows = [row for page in chroma_pages(pair) for row in zip(*page, strict=True)]
    out["scan_s"] = time.perf_counter() - began
    t0 = time.perf_counter()
    with psycopg.connect(pair.dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(
            f"CREATE TABLE {table} (key text PRIMARY KEY, embedding vector({pair.dim}), "
            "metadata jsonb, text text)"
        )
        register_vector(conn)
        # what the script does before its first row (connect, the table, the type): its time too
        out["setup_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        with (
            conn.cursor() as cur,
            cur.copy(
                f"COPY {table} (key, embedding, metadata, text) FROM STDIN WITH (FORMAT BINARY)"
            ) as copy,
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
            conn.execute(f"CREATE INDEX {table}_hnsw ON {table} USING hnsw (embedding vector_cosine_ops)")
        out["index_tuned_s"] = time.perf_counter() - t0
        out["total_s"] = out["scan_s"] + out["setup_s"] + out["copy_s"] + out["index_tuned_s"]
        if plain:
            conn.execute(f"DROP INDEX {table}_hnsw")
            t0 = time.perf_counter()
            conn.execute(f"CREATE INDEX {table}_hnsw ON {table} USING hnsw (embedding vector_cosine_ops)")
            out["index_plain_s"] = time.perf_counter() - t0
            out["total_plain_s"] = out["scan_s"] + out["setup_s"] + out["copy_s"] + out["index_plain_s"]
    return h.Timed(out["total_s"], {k: round(v, 2) for k, v in out.items()})


def vp_run(src_url: str, dst_url: str, single_pass: bool | None) -> h.Timed:
    """``vectorport.migrate`` as ``vectorport migrate SRC DST`` runs it: the defaults, except
    ``single_pass=False`` for the two-pass run; its report's total."""
    options: dict[str, Any] = {} if single_pass is None else {"single_pass": single_pass}
    report = vectorport.migrate.run(src_url, dst_url, metadata_policy="error", **options)
    assert report.status == "verified", report.to_json()
    v = report.verification
    assert v is not None
    detail = {
        "timings_s": {k: round(val, 2) for k, val in report.timings.items()},
        "verify_method": v.method,
        "read_back": v.read_back,
        "bins": v.bins,
    }
    return h.Timed(report.timings["total"], detail)


VECPARITY_RUN = """
import json, sys, time
import chromadb, psycopg
from vecparity.adapters.chroma import ChromaAdapter
from vecparity.adapters.pgvector import PgVectorAdapter
from vecparity.sync.engine import SyncEngine

chroma_dir, collection, dsn, table, dim = sys.argv[1:6]
with psycopg.connect(dsn, autocommit=True) as conn:  # the table its docs ask for
    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    conn.execute(f"CREATE TABLE {table} (id TEXT PRIMARY KEY, embedding VECTOR({dim}), "
                 "metadata JSONB DEFAULT '{}', updated_at DOUBLE PRECISION)")
began = time.perf_counter()
settings = chromadb.config.Settings(anonymized_telemetry=False)
client = chromadb.PersistentClient(path=chroma_dir, settings=settings)
source = ChromaAdapter(collection=client.get_collection(collection))
target = PgVectorAdapter(conn=psycopg.connect(dsn), table=table)
synced = SyncEngine(source=source, target=target).run_once()
print(json.dumps({"seconds": time.perf_counter() - began, "synced": synced}))
"""


def vecparity_python() -> Path:
    """vecparity's own venv, made on first use as a user installs it (with the chromadb that
    wrote the source, so both read the same files)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "vectorport-bench"
    venv = cache / f"vecparity-{VECPARITY}"
    python = venv / "bin" / "python"
    if python.exists() and subprocess.run([python, "-c", "import vecparity.adapters.chroma"]).returncode == 0:
        return python
    h.log(f"installing vecparity {VECPARITY} into {venv} …")
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    chroma = importlib.metadata.version("chromadb")
    pip = [python, "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, f"vecparity[chroma,pgvector]=={VECPARITY}", f"chromadb=={chroma}"], check=True)
    return python


def vecparity(pair: Pair, table: str) -> h.Timed:
    args = [pair.chroma_dir, pair.collection, pair.dsn, table, str(pair.dim)]
    began = time.perf_counter()
    done = subprocess.run(
        [vecparity_python(), "-c", VECPARITY_RUN, *args], capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"vecparity failed ({done.returncode}): {done.stderr[-3000:]}")
    got = json.loads(done.stdout.strip().splitlines()[-1])
    return h.Timed(got["seconds"], {"synced": got["synced"], "process_wall_s": round(wall, 2)})


def langchain(pair: Pair, table: str) -> h.Timed:
    """What an app team writes: langchain-postgres' ``PGVectorStore`` fed from a Chroma scan,
    then its HNSW index."""
    began = time.perf_counter()
    # left open, as an app keeps it: its pool's idle sessions end with the server
    engine = PGEngine.from_connection_string(pair.dsn.replace("postgresql://", "postgresql+psycopg://"))
    engine.init_vectorstore_table(table, pair.dim, id_column=Column("langchain_id", "TEXT"))
    # add_embeddings never calls the embedder: the vectors come from the source
    store = PGVectorStore.create_sync(engine, DeterministicFakeEmbedding(size=pair.dim), table)
    for ids, vectors, metas, docs in chroma_pages(pair):
        store.add_embeddings(docs, [list(map(float, v)) for v in vectors], metas, ids)
    store.apply_vector_index(HNSWIndex())
    return h.Timed(time.perf_counter() - began)


COLUMNS = {
    "vecparity": Columns(key="id", text=None),
    "langchain": Columns(key="langchain_id", metadata="langchain_metadata", text="content"),
}
"""The ways whose tables differ from vectorport's (the hand path writes vectorport's)."""


def source_sample(pair: Pair, records: Sequence[Record]) -> dict[str, tuple[Any, Any, Any]]:
    """``SAMPLE`` records spread over the source, as the source holds them (chromadb's own
    ``get``): key -> (vector, metadata, text)."""
    keys = [r.key for r in records[:: max(1, len(records) // SAMPLE)]]
    settings = chromadb.config.Settings(anonymized_telemetry=False)
    col = chromadb.PersistentClient(path=pair.chroma_dir, settings=settings).get_collection(pair.collection)
    got = col.get(ids=keys, include=["embeddings", "metadatas", "documents"])
    return dict(
        zip(got["ids"], zip(got["embeddings"], got["metadatas"], got["documents"], strict=True), strict=True)
    )


def read_back(
    dsn: str, table: str, copy: Columns, count: int, sample: dict[str, tuple[Any, Any, Any]]
) -> dict[str, Any]:
    """The raw check of a copy: its row count, and every part it keeps of the sampled records
    equal to the source's."""
    text = copy.text or "NULL"
    query = (
        f"SELECT {copy.key}, {copy.vector}, {copy.metadata}, {text} FROM {table} WHERE {copy.key} = ANY(%s)"
    )
    with psycopg.connect(dsn) as conn:
        register_vector(conn)
        (rows,) = conn.execute(f"SELECT count(*) FROM {table}").fetchone() or (0,)
        got = {row[0]: row[1:] for row in conn.execute(query, (list(sample),))}
    unequal = [
        key
        for key, (vector, metadata, doc) in sample.items()
        if key not in got
        or not np.array_equal(np.asarray(got[key][0], dtype=np.float32), np.asarray(vector, dtype=np.float32))
        or _plain(got[key][1]) != _plain(metadata)
        or (copy.text is not None and got[key][2] != doc)
    ]
    if rows != count or unequal:
        raise SystemExit(f"{table}: {rows} rows of {count}; sampled keys unequal: {unequal[:5]}")
    return {"rows": rows, "sampled_equal": len(sample)}


def _plain(metadata: Any) -> Any:
    """Metadata as JSON gives it back (the records keep lists as tuples)."""
    return json.loads(json.dumps(dict(metadata or {})))


def _drop_table(dsn: str, table: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'DROP TABLE IF EXISTS "{table}" CASCADE')


def ways(args: Any, pair: Pair) -> dict[str, h.Way]:
    """The ways asked for, each writing a new table per round (``{way}{size}_{round}``)."""
    size = pair.collection.removeprefix("src")
    name = {w: f"{w}{size}" for w in WAYS}
    every: dict[str, h.Way] = {
        "hand": lambda r: hand(pair, f"{name['hand']}_{r}", args.plain_index and r == 0),
        "default": lambda r: vp_run(pair.chroma_url, pair.pg_url(f"{name['default']}_{r}"), None),
        "two_pass": lambda r: vp_run(pair.chroma_url, pair.pg_url(f"{name['two_pass']}_{r}"), False),
        "vecparity": lambda r: vecparity(pair, f"{name['vecparity']}_{r}"),
        "langchain": lambda r: langchain(pair, f"{name['langchain']}_{r}"),
    }
    wanted = {"hand", *h.csv(args.modes), *h.csv(args.peers)}
    return {w: every[w] for w in WAYS if w in wanted}


def checked(way: str, run: h.Way, pair: Pair, sample: dict[str, Any], keep: str | None) -> h.Way:
    """``run``, then (untimed) the raw read-back of what it wrote and the table dropped, unless
    it is ``keep`` (the bucket leg's source)."""
    size = int(pair.collection.removeprefix("src"))

    def go(r: int) -> h.Timed:
        got = run(r)
        table = f"{way}{size}_{r}"
        detail = {
            "detail": got.detail,
            "read_back": read_back(pair.dsn, table, COLUMNS.get(way, Columns()), size, sample),
        }
        if table != keep:
            _drop_table(pair.dsn, table)
        return h.Timed(got.seconds, detail)

    return go


def chroma_records(n: int, dim: int) -> list[Record]:
    """The source: metadata Chroma can hold (flat), so it loads as generated."""
    return clustered_records(n, dim, seed=1, rules=resolve("chroma").load().capabilities.metadata)


def chroma_to_pgvector(args: Any, work: Path, dsn: str, size: int) -> dict[str, Any]:
    """One size: the records loaded into Chroma (untimed), then every way, ``--repeat`` rounds."""
    records = chroma_records(size, args.dim)
    pair = Pair(str(work / "chroma"), f"src{size}", str(work / "pg"), dsn, args.dim)
    h.log(f"loading {size:,} x {args.dim} into chroma …")
    with vectorport.connect(pair.chroma_url, dimension=args.dim) as c:
        began = time.perf_counter()
        h.upsert_all(c, records, PAGE)
        load_per_s = h.rate(size, time.perf_counter() - began)
    sample = source_sample(pair, records)
    del records
    keep = f"default{size}_{args.repeat - 1}" if size == max(h.sizes(args.sizes)) else None
    race = h.Race("hand", {w: checked(w, run, pair, sample, keep) for w, run in ways(args, pair).items()})
    h.log(f"[chroma -> pgvector, {size:,}] {', '.join(race.ways)}; {args.repeat} round(s)")
    race.run(args.repeat, quiet=False)
    out = {"records": size, "chroma_load_per_s": load_per_s, **race.summary(), "rounds_detail": race.results}
    plain = race.results["hand"][0]["detail"].get("total_plain_s")
    if plain:
        # against the untuned hand build of round 1 (the server's settings as they are)
        out["vs_plain_index"] = {w: round(plain / race.seconds[w][0], 3) for w in race.ways if w != "hand"}
    h.log(f"[chroma -> pgvector, {size:,}] ratios to hand: {out['ratio_of_medians']}")
    return out


# ----------------------------------------------------------------- pgvector -> the bucket server
def hand_pgvector_to_bucket(
    dsn: str, table: str, endpoint: str, index: str, dim: int, cap: float
) -> dict[str, float]:
    """By hand: a psycopg server-side cursor, boto3 ``put_vectors`` of 500 from 4 threads, paced
    to ``cap`` vectors per second in all (the per-index write cap)."""
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


def pgvector_to_bucket(args: Any, pg_dir: str, dsn: str, bucket: str) -> dict[str, Any]:
    """The largest size's default copy, into the local bucket server at its write cap: by hand
    and by each vectorport mode; records per second of the whole run over the cap."""
    cap = 2500.0
    size = max(h.sizes(args.sizes))
    table = f"default{size}_{args.repeat - 1}"
    h.log("[pgvector -> bucket] hand-written: psycopg cursor + boto3 put_vectors at the cap …")
    hand_b = hand_pgvector_to_bucket(dsn, table, bucket, "hand", args.dim, cap)
    runs: dict[str, Any] = {}
    modes = {"default": None, "two_pass": False}
    for name in [m for m in h.csv(args.modes) if m in modes]:
        h.log(f"[pgvector -> bucket] vectorport migrate ({name}) …")
        dst = f"s3vectors://bench/vp-{name.replace('_', '-')}?endpoint_url={bucket}"
        got = vp_run(f"pgvector://{pg_dir}?table={table}", dst, modes[name])
        runs[name] = {"total_s": round(got.seconds, 1), **got.detail}
    return {
        "records": size,
        "write_cap_per_s": cap,
        "hand_written_s": round(hand_b["total_s"], 1),
        **runs,
        "hand_rate_of_cap": round(size / hand_b["total_s"] / cap, 2),
        **{f"{name}_rate_of_cap": round(size / runs[name]["total_s"] / cap, 2) for name in runs},
    }


# ----------------------------------------------------------------- the run
def rss_runs(args: Any) -> list[dict[str, Any]]:
    out = []
    for size in h.sizes(args.rss):
        h.log(f"peak RSS run at {size:,} …")
        done = subprocess.run(
            [sys.executable, __file__, "--rss-child", str(size), str(args.dim)],
            capture_output=True,
            text=True,
            check=True,
        )
        out.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return out


def per_side_legs(args: Any, work: Path, bucket: str) -> list[dict[str, Any]]:
    legs = h.csv(args.legs)
    if not legs:
        return []
    records = chroma_records(args.n, args.dim)
    chroma = f"chroma://{work}/chroma?collection=legs"
    pg = f"pgvector://{work}/pg?table=%s"
    with vectorport.connect(chroma, dimension=args.dim) as c:
        h.upsert_all(c, records, PAGE)
    out = []
    if "chroma-pgvector" in legs:
        out.append(leg("chroma -> pgvector", chroma, pg % "legmig", pg % "raw", records, args.naive))
    if "pgvector-s3vectors" in legs:
        s3 = f"s3vectors://bench/%s?endpoint_url={bucket}&write_rate=0"
        out.append(leg("pgvector -> s3vectors", pg % "legmig", s3 % "mig", s3 % "raw", records, args.naive))
    return out


def run(args: Any) -> dict[str, Any]:
    results: dict[str, Any] = {"dim": args.dim, "batch_size": BATCH, "concurrency": CONCURRENCY}
    results["rss"] = rss_runs(args)
    with h.workdir("migbench") as work, h.bucket_server() as bucket:
        dsn = start_embedded(str(work / "pg"))
        if not args.no_whole:
            results["chroma_to_pgvector"] = [
                chroma_to_pgvector(args, work, dsn, size) for size in h.sizes(args.sizes)
            ]
            if args.bucket and "default" in h.csv(args.modes):
                results["pgvector_to_bucket"] = pgvector_to_bucket(args, str(work / "pg"), dsn, bucket)
        results["legs"] = per_side_legs(args, work, bucket)
    return results


def text(results: dict[str, Any]) -> str:
    parts = []
    whole = results.get("chroma_to_pgvector", [])
    if whole:
        names = [w for w in whole[0]["median_s"] if w != "hand"]
        rows = [
            [
                s["records"],
                s["median_s"]["hand"],
                *(f"{s['median_s'][w]:.1f} s ({s['ratio_of_medians'][w]:.2f}x)" for w in names),
            ]
            for s in whole
        ]
        parts.append("Chroma -> pgvector, median seconds (hand time / way time):")
        parts.append(h.table(["records", "hand s", *names], rows))
    if "pgvector_to_bucket" in results:
        parts.append(f"pgvector -> bucket: {json.dumps(results['pgvector_to_bucket'])}")
    for r in results["legs"]:
        parts.append(
            f"{r['leg']}: migrate {r['migrate_copy_per_s']}/s vs scan {r['raw_scan_per_s']}/s, "
            f"write {r['raw_write_per_s']}/s -> ratio {r['ratio_to_slower_side']} to the slower side; "
            f"naive ~{r['naive_estimated_total_s']}s vs migrate {r['migrate_total_s']}s"
        )
    parts += [f"peak RSS at {r['n']:,} records: {r['peak_rss_mib']} MiB" for r in results["rss"]]
    return "\n".join(parts)


def main() -> None:
    ap = h.parser(
        __doc__,
        n=100_000,
        quick={"rss": "5000", "n": 2000, "naive": 200, "plain_index": False},
    )
    ap.add_argument("--sizes", help="record counts of the whole runs, e.g. 10000,30000,100000 (default: --n)")
    ap.add_argument("--modes", default="default,two_pass", help="vectorport runs: default,two_pass")
    ap.add_argument("--peers", default="vecparity,langchain", help="other tools: vecparity,langchain")
    ap.add_argument("--naive", type=int, default=2000, help="records timed for the naive copy")
    ap.add_argument("--rss", default="20000,100000,300000,1000000", help="sizes for the peak-RSS runs")
    ap.add_argument("--legs", default="", help="per-side rates: chroma-pgvector,pgvector-s3vectors")
    ap.add_argument("--no-whole", action="store_true", help="skip the whole-run comparison")
    ap.add_argument("--no-bucket", dest="bucket", action="store_false", help="skip pgvector -> bucket")
    ap.add_argument(
        "--no-plain-index",
        dest="plain_index",
        action="store_false",
        help="skip the hand path's second, untuned index build (about 2 minutes at 100k)",
    )
    ap.add_argument("--rss-child", nargs=2, type=int, help=argparse.SUPPRESS)
    args = h.parse(ap)
    args.sizes = args.sizes or str(args.n)
    if args.rss_child:
        rss_child(*args.rss_child)
        return
    results = run(args)
    h.emit("migrate", args, results, text(results))


if __name__ == "__main__":
    main()
