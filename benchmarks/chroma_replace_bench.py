"""What a replace costs in embedded Chroma: one ``upsert`` of stored ids against vectorport's
writes (metadata-only changes as one ``update``; inside ``split_replace``, a delete and a
write anew of the records whose vector or text changed).

    python benchmarks/chroma_replace_bench.py [--n 10000] [--dim 128] [--batch 900] [--rounds 3]

One collection of ``--n`` records; each batch is a third new records, a third stored records
with a new vector, a third stored records with new metadata only (the mix ``sync --follow``
applies under the follow benchmark's writes). The three ways take turns, a new batch each, so
a machine's changing load falls on all three alike:

- ``upsert``: chromadb's own ``collection.upsert`` of the batch (what a full replace was before:
  Chroma repairs the HNSW neighbours of every stored id it upserts);
- ``vectorport``: ``store.upsert`` (the metadata-only third is one ``update`` without vectors);
- ``split_replace``: ``store.upsert`` inside ``store.split_replace()`` (what sync uses).

    python benchmarks/chroma_replace_bench.py churn [--n 10000] [--dim 384] [--batch 500] [--windows 8]
        [--ways split_replace,upsert]

``churn``: stored records written again with a new vector inside ``split_replace``, ``--batch``
at a time, ten batches a window, and each window's cost per record (wall and the process's CPU
time). Every such write (and every delete) leaves a deleted point in Chroma's HNSW graph, which
Chroma keeps for good; later inserts search past them (Chroma's hnswlib fills its
``ef_construction`` candidates with live points only), so the cost of an insert grows with the
deleted points a collection has gathered, and so do its HNSW files (``hnsw_level0_mb``).
``--ways split_replace,upsert`` runs the same batches, in turns, into a second collection
written by one ``upsert`` a batch (Chroma's in-place repair of each stored point: no deleted
point, a dearer write). A way may name HNSW settings for its collection after ``@``
(``--ways split_replace,split_replace@sync_threshold=50000``): the same writes into collections
that differ in those settings alone.

    python benchmarks/chroma_replace_bench.py calls [--n 10000] [--dim 384] [--rounds 40]
        [--sync-thresholds 1000,100]

``calls``: the fixed cost of a small write call. Per collection (one per ``sync_threshold``),
``--rounds`` times: an ``add`` of 50 new records, then an ``update`` of one record's metadata,
timed (CPU of the process, all threads); then 20 ``add`` calls of 50 records, timed. Every write
call of an embedded Chroma first reads back its log from the HNSW index's last save (Rust
``local_compaction_manager.rs``), which happens every ``sync_threshold`` records.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import vectorport
from vectorport import Record


def run(n: int, dim: int, batch: int, rounds: int) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="vectorport-chroma-replace-"))
    rng = np.random.default_rng(0)
    try:
        store = vectorport.connect(f"chroma://{root}?collection=bench", dimension=dim)
        vectors = rng.standard_normal((n, dim)).astype(np.float32)
        for start in range(0, n, 2000):
            store.upsert(
                Record(f"k{i}", vectors[i], {"i": i}, f"text {i}") for i in range(start, min(n, start + 2000))
            )
        coll = store.connection.collection()  # chromadb's own collection, for the baseline
        third = batch // 3
        fresh = n
        seconds = {"upsert": 0.0, "vectorport": 0.0, "split_replace": 0.0}
        turn = 0
        for _ in range(rounds):
            for way in seconds:
                base = (turn * 2 * third) % (n - 2 * third)
                turn += 1
                records = [
                    Record(f"new{fresh + i}", rng.standard_normal(dim), {"r": turn}, "new")
                    for i in range(third)
                ]
                fresh += third
                records += [
                    Record(f"k{i}", rng.standard_normal(dim), {"i": i}, f"text {i}")
                    for i in range(base, base + third)
                ]
                records += [
                    Record(f"k{i}", vectors[i], {"i": i, "touched": turn}, f"text {i}")
                    for i in range(base + third, base + 2 * third)
                ]
                t0 = time.monotonic()
                if way == "upsert":
                    coll.upsert(
                        ids=[r.key for r in records],
                        embeddings=np.stack([np.asarray(r.vector, dtype=np.float32) for r in records]),
                        metadatas=[r.metadata for r in records],
                        documents=[r.text for r in records],
                    )
                elif way == "vectorport":
                    store.upsert(records)
                else:
                    with store.split_replace():
                        store.upsert(records)
                seconds[way] += time.monotonic() - t0
        written = rounds * 3 * third
        store.close()
        return {
            "records": n,
            "dim": dim,
            "batch": 3 * third,
            "rounds": rounds,
            "seconds": {k: round(v, 2) for k, v in seconds.items()},
            "records_per_second": {k: round(written / v) for k, v in seconds.items()},
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)


CHURN_WAYS = ("split_replace", "upsert")


def churn(
    n: int, dim: int, batch: int, windows: int, ways: tuple[str, ...] = ("split_replace",)
) -> dict[str, Any]:
    """See the module docstring (``churn``). With several ``ways``, one collection each, written
    in turns (a batch each), so the machine's changing load falls on them alike."""
    root = Path(tempfile.mkdtemp(prefix="vectorport-chroma-churn-"))
    rng = np.random.default_rng(0)
    try:
        stores = {}
        for i, way in enumerate(ways):
            _, _, settings = way.partition("@")
            extra = f"&{settings.replace(',', '&')}" if settings else ""
            store = vectorport.connect(f"chroma://{root / f'c{i}'}?collection=bench{extra}", dimension=dim)
            for start in range(0, n, 2000):
                vecs = rng.standard_normal((min(n, start + 2000) - start, dim)).astype(np.float32)
                store.upsert(Record(f"k{start + j}", v, {"i": start + j}, "text") for j, v in enumerate(vecs))
            stores[way] = store
        rows = []
        rewritten = 0
        for _ in range(windows):
            wall = dict.fromkeys(ways, 0.0)
            cpu = dict.fromkeys(ways, 0.0)
            for _ in range(10):
                keys = rng.choice(n, batch, replace=False)
                vecs = rng.standard_normal((batch, dim)).astype(np.float32)
                records = [Record(f"k{k}", v, {"i": int(k)}, "text") for k, v in zip(keys, vecs, strict=True)]
                for way, store in stores.items():
                    w, c = time.monotonic(), time.process_time()
                    if way.partition("@")[0] == "split_replace":
                        with store.split_replace():
                            store.upsert(records)
                    else:  # one upsert call: Chroma repairs each stored point in place
                        store.upsert(records)
                    wall[way] += time.monotonic() - w
                    cpu[way] += time.process_time() - c
            rewritten += 10 * batch
            done = 10 * batch
            row: dict[str, Any] = {"rewritten": rewritten}
            for i, way in enumerate(ways):
                level0 = list((root / f"c{i}").glob("*/data_level0.bin"))
                row[way] = {
                    "ms_per_record": round(wall[way] / done * 1000, 2),
                    "cpu_ms_per_record": round(cpu[way] / done * 1000, 2),
                    # the HNSW graph's vectors and links: live and deleted points alike
                    "hnsw_level0_mb": round(sum(f.stat().st_size for f in level0) / 1e6, 1),
                }
            rows.append(row)
        for store in stores.values():
            store.close()
        return {"records": n, "dim": dim, "batch": batch, "windows": rows}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _add50(coll: Any, rng: np.random.Generator, dim: int, first: int) -> None:
    coll.add(
        ids=[f"new{first + j}" for j in range(50)],
        embeddings=rng.standard_normal((50, dim)).astype(np.float32),
        metadatas=[{"i": j} for j in range(50)],
        documents=["text"] * 50,
    )


def calls(n: int, dim: int, rounds: int, thresholds: tuple[int, ...]) -> dict[str, Any]:
    """See the module docstring (``calls``)."""

    root = Path(tempfile.mkdtemp(prefix="vectorport-chroma-calls-"))
    rng = np.random.default_rng(0)
    out: dict[str, Any] = {"records": n, "dim": dim, "rounds": rounds, "load_average": [os.getloadavg()[0]]}
    try:
        for threshold in thresholds:
            store = vectorport.connect(
                f"chroma://{root / str(threshold)}?collection=bench&sync_threshold={threshold}", dimension=dim
            )
            for start in range(0, n, 2000):
                vecs = rng.standard_normal((min(n, start + 2000) - start, dim)).astype(np.float32)
                store.upsert(Record(f"k{start + j}", v, {"i": start + j}, "text") for j, v in enumerate(vecs))
            coll = store.connection.collection()  # chromadb's own calls: their cost, not vectorport's
            update = 0.0
            for r in range(rounds):
                _add50(coll, rng, dim, 50 * r)
                c = time.process_time()
                coll.update(ids=["k1"], metadatas=[{"i": r}])
                update += time.process_time() - c
            c = time.process_time()
            for r in range(rounds, rounds + 20):
                _add50(coll, rng, dim, 50 * r)
            out[str(threshold)] = {
                "update_1_cpu_ms": round(update / rounds * 1000, 1),
                "add_50_cpu_ms": round((time.process_time() - c) / 20 * 1000, 1),
            }
            store.close()
        out["load_average"].append(os.getloadavg()[0])
        return out
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    if sys.argv[1:2] == ["calls"]:
        parser = argparse.ArgumentParser(prog="chroma_replace_bench.py calls")
        parser.add_argument("--n", type=int, default=10_000)
        parser.add_argument("--dim", type=int, default=384)
        parser.add_argument("--rounds", type=int, default=40)
        parser.add_argument("--sync-thresholds", default="1000,100")
        a = parser.parse_args(sys.argv[2:])
        thresholds = tuple(int(t) for t in a.sync_thresholds.split(",") if t)
        print(json.dumps(calls(a.n, a.dim, a.rounds, thresholds), indent=2))
        return
    if sys.argv[1:2] == ["churn"]:
        parser = argparse.ArgumentParser(prog="chroma_replace_bench.py churn")
        parser.add_argument("--n", type=int, default=10_000)
        parser.add_argument("--dim", type=int, default=384)
        parser.add_argument("--batch", type=int, default=500)
        parser.add_argument("--windows", type=int, default=8)
        parser.add_argument(
            "--ways", default="split_replace", help=f"comma-separated, of {', '.join(CHURN_WAYS)}"
        )
        a = parser.parse_args(sys.argv[2:])
        ways = tuple(w for w in a.ways.split(",") if w)
        if not ways or any(w.partition("@")[0] not in CHURN_WAYS for w in ways):
            parser.error(f"--ways: one or more of {', '.join(CHURN_WAYS)}, got {a.ways!r}")
        print(json.dumps(churn(a.n, a.dim, a.batch, a.windows, ways), indent=2))
        return
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--batch", type=int, default=900)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(json.dumps(run(args.n, args.dim, args.batch, args.rounds), indent=2))


if __name__ == "__main__":
    main()
