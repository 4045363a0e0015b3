"""Chroma: vectorport vs the same raw chromadb calls, in one run.

    python benchmarks/chroma_bench.py            # 100k x 384, clustered
    N=20000 python benchmarks/chroma_bench.py    # smaller

Measures upsert throughput (fresh collection), full-scan throughput (vectors, metadata,
text) and query latency (k=10, 200 queries, unfiltered and filtered), embedded
PersistentClient, cosine. Prints figures and ratios (vectorport / raw).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time

import chromadb
import numpy as np
from chromadb.config import Settings

import vectorport
from vectorport.testing import clustered_vectors, query_vectors

N = int(os.environ.get("N", "100000"))
DIM = int(os.environ.get("DIM", "384"))
QUERIES = 200
LANGS = ("en", "fr", "de", "ja")


def main() -> None:
    vecs, labels = clustered_vectors(N, DIM, clusters=64, seed=1)
    keys = [f"docs/file{i // 10}.md#chunk{i % 10}" for i in range(N)]
    metas = [{"lang": LANGS[i % 4], "cluster": int(labels[i]), "tags": ["a", "b"]} for i in range(N)]
    texts = [f"chunk {i} lorem ipsum dolor sit amet" for i in range(N)]
    qs = query_vectors(QUERIES, DIM, clusters=64, seed=1)
    root = tempfile.mkdtemp(prefix="chroma-bench-")
    print(f"chroma bench: {N} x {DIM}, clustered, cosine, embedded; data in {root}")

    # ---------------------------------------------------------------- raw chromadb
    client = chromadb.PersistentClient(path=f"{root}/raw", settings=Settings(anonymized_telemetry=False))
    coll = client.create_collection(
        "raw", configuration={"hnsw": {"space": "cosine"}}, embedding_function=None
    )
    batch = client.get_max_batch_size()
    t = time.perf_counter()
    for s in range(0, N, batch):
        coll.upsert(
            ids=keys[s : s + batch],
            embeddings=vecs[s : s + batch],
            metadatas=metas[s : s + batch],
            documents=texts[s : s + batch],
        )
    raw_up = N / (time.perf_counter() - t)
    t = time.perf_counter()
    seen = 0
    for off in range(0, N, batch - 1):
        seen += len(
            coll.get(limit=batch - 1, offset=off, include=["embeddings", "metadatas", "documents"])["ids"]
        )
    raw_scan = seen / (time.perf_counter() - t)
    raw_q = _lat(
        lambda q: coll.query(
            query_embeddings=[q], n_results=10, include=["distances", "metadatas", "documents"]
        ),
        qs,
    )
    where = {"$or": [{"lang": {"$eq": "fr"}}, {"lang": {"$contains": "fr"}}]}
    raw_qf = _lat(
        lambda q: coll.query(
            query_embeddings=[q], n_results=10, where=where, include=["distances", "metadatas", "documents"]
        ),
        qs,
    )
    client.close()

    # ---------------------------------------------------------------- vectorport
    store = vectorport.connect(f"chroma://{root}/vp?collection=bench", dimension=DIM, metric="cosine")
    records = (vectorport.Record(keys[i], vecs[i], metas[i], texts[i]) for i in range(N))
    t = time.perf_counter()
    store.upsert(records)
    vp_up = N / (time.perf_counter() - t)
    t = time.perf_counter()
    seen = sum(len(p) for p in store.scan())
    vp_scan = seen / (time.perf_counter() - t)
    assert seen == N
    vp_q = _lat(lambda q: store.query(q, k=10), qs)
    vp_qf = _lat(lambda q: store.query(q, k=10, filter={"lang": "fr"}), qs)
    # deep-offset cost of one page, for docs/performance.md
    coll2 = store.connection.collection()
    depth = []
    for off in (0, N // 2, N - 1000):
        t = time.perf_counter()
        coll2.get(limit=1000, offset=off, include=["embeddings", "metadatas", "documents"])
        depth.append((off, (time.perf_counter() - t) * 1000))
    store.close()

    print(f"{'':24}{'raw':>12}{'vectorport':>12}{'ratio':>8}")
    print(f"{'upsert rec/s':24}{raw_up:12.0f}{vp_up:12.0f}{vp_up / raw_up:8.2f}  (target >= 0.9)")
    print(f"{'scan rec/s':24}{raw_scan:12.0f}{vp_scan:12.0f}{vp_scan / raw_scan:8.2f}  (target >= 0.9)")
    print(f"{'query p50 ms':24}{raw_q:12.2f}{vp_q:12.2f}{vp_q / raw_q:8.2f}  (target <= 1.1)")
    print(f"{'filtered query p50 ms':24}{raw_qf:12.2f}{vp_qf:12.2f}{vp_qf / raw_qf:8.2f}  (target <= 1.1)")
    print(
        "get(limit=1000, offset) with vectors+metadata+text: "
        + ", ".join(f"offset {o}: {ms:.1f} ms" for o, ms in depth)
    )


def _lat(fn: object, qs: np.ndarray) -> float:
    call = fn  # type: ignore[assignment]
    for q in qs[:10]:
        call(q)  # type: ignore[operator]
    times = []
    for q in qs:
        t = time.perf_counter()
        call(q)  # type: ignore[operator]
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


if __name__ == "__main__":
    main()
