"""What a replace costs in embedded Chroma: one ``upsert`` of stored ids against vectorport's
writes (metadata-only changes as one ``update``; inside ``split_replace``, a delete and a
write anew of the records whose vector or text changed).

    python benchmarks/chroma_replace_bench.py [--n 10000] [--dim 128] [--batch 900] [--rounds 3] [--json]
        [--output FILE] [--quick]

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

    python benchmarks/chroma_replace_bench.py batches [--n 5000] [--dim 384] [--batches 100,500,2000,5000]
        [--rounds 2] [--ways chromadb,vectorport]

``batches``: what one batch of ``sync --follow``'s writes costs, by batch size, written by
chromadb's own calls and through vectorport. Per batch size, one fresh collection per way
(``--n`` records), then ``--rounds`` batches in turns, each the mix of the follow benchmark (a
third new records, a third stored records with a new vector, a third with new metadata only):
``chromadb`` makes the fewest Chroma calls that apply it (``delete`` of the re-vectored ids,
one ``add`` of the new and re-vectored records, one ``update`` of the metadata-only ones);
``vectorport`` is ``store.upsert`` inside ``store.split_replace()``, as sync writes (it reads
the stored records to compare, validates, converts). Reported per way: ms and CPU ms (the
process, all threads: Chroma's Rust workers too) a record, and the Chroma write rate the
batch size allows. A way may name HNSW settings after ``@``
(``vectorport@ef_construction=50``): its collection is created with them.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import _harness as h
import numpy as np

import vectorport
from vectorport import Record

WAYS = ("upsert", "vectorport", "split_replace")


def mixed_batch(
    rng: np.random.Generator, vectors: np.ndarray, third: int, turn: int, fresh: int
) -> list[Record]:
    """A third new records, a third stored records with a new vector, a third stored records
    with new metadata only."""
    n, dim = vectors.shape
    base = (turn * 2 * third) % (n - 2 * third)
    records = [Record(f"new{fresh + i}", rng.standard_normal(dim), {"r": turn}, "new") for i in range(third)]
    records += [
        Record(f"k{i}", rng.standard_normal(dim), {"i": i}, f"text {i}") for i in range(base, base + third)
    ]
    records += [
        Record(f"k{i}", vectors[i], {"i": i, "touched": turn}, f"text {i}")
        for i in range(base + third, base + 2 * third)
    ]
    return records


def run(n: int, dim: int, batch: int, rounds: int) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    with h.workdir("chroma-replace") as root:
        store = vectorport.connect(f"chroma://{root}?collection=bench", dimension=dim)
        vectors = rng.standard_normal((n, dim)).astype(np.float32)
        for start in range(0, n, 2000):
            store.upsert(
                Record(f"k{i}", vectors[i], {"i": i}, f"text {i}") for i in range(start, min(n, start + 2000))
            )
        coll = store.connection.collection()  # chromadb's own collection, for the baseline
        third = batch // 3
        made = [0]

        def way(name: str) -> h.Way:
            def go(r: int) -> h.Timed:
                made[0] += 1  # a new batch each turn, so no way writes what another just wrote
                records = mixed_batch(rng, vectors, third, made[0], n + made[0] * third)
                return h.timed(lambda: write(name, store, coll, records))

            return go

        race = h.Race("upsert", {name: way(name) for name in WAYS}).run(rounds)
        store.close()
    written = rounds * 3 * third
    seconds = {w: sum(race.seconds[w]) for w in WAYS}
    return {
        "records": n,
        "dim": dim,
        "batch": 3 * third,
        "rounds": rounds,
        "seconds": {k: round(v, 2) for k, v in seconds.items()},
        "records_per_second": {k: round(written / v) for k, v in seconds.items()},
        "race": race.summary(),
    }


def write(way: str, store: Any, coll: Any, records: list[Record]) -> None:
    if way == "upsert":  # chromadb's own upsert: Chroma repairs each stored point in place
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


CHURN_WAYS = ("split_replace", "upsert")


def fill(store: Any, rng: np.random.Generator, n: int, dim: int) -> None:
    """``n`` random records ``k0`` … into ``store``, 2,000 a call."""
    for start in range(0, n, 2000):
        vecs = rng.standard_normal((min(n, start + 2000) - start, dim)).astype(np.float32)
        store.upsert(Record(f"k{start + j}", v, {"i": start + j}, "text") for j, v in enumerate(vecs))


def churn(
    n: int, dim: int, batch: int, windows: int, ways: tuple[str, ...] = ("split_replace",)
) -> dict[str, Any]:
    """See the module docstring (``churn``). With several ``ways``, one collection each, written
    in turns (a batch each, the same batch), so the machine's changing load falls on them alike."""
    rng = np.random.default_rng(0)
    with h.workdir("chroma-churn") as root:
        stores = {}
        for i, way in enumerate(ways):
            _, _, settings = way.partition("@")
            extra = f"&{settings.replace(',', '&')}" if settings else ""
            stores[way] = vectorport.connect(
                f"chroma://{root / f'c{i}'}?collection=bench{extra}", dimension=dim
            )
            fill(stores[way], rng, n, dim)
        batches: dict[int, list[Record]] = {}

        def batch_of(r: int) -> list[Record]:
            if r not in batches:
                keys = rng.choice(n, batch, replace=False)
                vecs = rng.standard_normal((batch, dim)).astype(np.float32)
                batches.clear()
                batches[r] = [
                    Record(f"k{k}", v, {"i": int(k)}, "text") for k, v in zip(keys, vecs, strict=True)
                ]
            return batches[r]

        def way(name: str) -> h.Way:
            kind = "split_replace" if name.partition("@")[0] == "split_replace" else "vectorport"
            return lambda r: h.timed(lambda: write(kind, stores[name], None, batch_of(r)))

        rows = []
        for window in range(windows):
            race = h.Race(ways[0], {name: way(name) for name in ways}).run(10)
            row: dict[str, Any] = {"rewritten": (window + 1) * 10 * batch}
            for i, name in enumerate(ways):
                level0 = list((root / f"c{i}").glob("*/data_level0.bin"))
                row[name] = {
                    "ms_per_record": round(sum(race.seconds[name]) / (10 * batch) * 1000, 2),
                    "cpu_ms_per_record": round(sum(race.cpu[name]) / (10 * batch) * 1000, 2),
                    # the HNSW graph's vectors and links: live and deleted points alike
                    "hnsw_level0_mb": round(sum(f.stat().st_size for f in level0) / 1e6, 1),
                }
            rows.append(row)
        for store in stores.values():
            store.close()
    return {"records": n, "dim": dim, "batch": batch, "windows": rows}


def _add50(coll: Any, rng: np.random.Generator, dim: int, first: int) -> None:
    coll.add(
        ids=[f"new{first + j}" for j in range(50)],
        embeddings=rng.standard_normal((50, dim)).astype(np.float32),
        metadatas=[{"i": j} for j in range(50)],
        documents=["text"] * 50,
    )


def calls(n: int, dim: int, rounds: int, thresholds: list[int]) -> dict[str, Any]:
    """See the module docstring (``calls``)."""
    rng = np.random.default_rng(0)
    out: dict[str, Any] = {"records": n, "dim": dim, "rounds": rounds}
    with h.workdir("chroma-calls") as root:
        for threshold in thresholds:
            url = f"chroma://{root / str(threshold)}?collection=bench&sync_threshold={threshold}"
            store = vectorport.connect(url, dimension=dim)
            fill(store, rng, n, dim)
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
    return out


def calls_main(argv: list[str]) -> None:
    ap = h.parser(
        __doc__, n=10_000, repeat=40, quick={"n": 2000, "repeat": 5}, prog="chroma_replace_bench.py calls"
    )
    ap.add_argument("--sync-thresholds", default="1000,100")
    args = h.parse(ap, argv)
    out = calls(args.n, args.dim, args.repeat, h.sizes(args.sync_thresholds))
    rows = [
        [t, out[t]["update_1_cpu_ms"], out[t]["add_50_cpu_ms"]]
        for t in args.sync_thresholds.split(",")
        if t in out
    ]
    h.emit(
        "chroma-replace.calls",
        args,
        out,
        h.table(["sync_threshold", "update of 1: CPU ms", "add of 50: CPU ms"], rows),
    )


def churn_main(argv: list[str]) -> None:
    ap = h.parser(
        __doc__, n=10_000, quick={"n": 2000, "windows": 2, "batch": 100}, prog="chroma_replace_bench.py churn"
    )
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--windows", type=int, default=8)
    ap.add_argument("--ways", default="split_replace", help=f"comma-separated, of {', '.join(CHURN_WAYS)}")
    args = h.parse(ap, argv)
    ways = tuple(h.csv(args.ways))
    if not ways or any(w.partition("@")[0] not in CHURN_WAYS for w in ways):
        ap.error(f"--ways: one or more of {', '.join(CHURN_WAYS)}, got {args.ways!r}")
    out = churn(args.n, args.dim, args.batch, args.windows, ways)
    rows = [
        [
            row["rewritten"],
            way,
            row[way]["ms_per_record"],
            row[way]["cpu_ms_per_record"],
            row[way]["hnsw_level0_mb"],
        ]
        for row in out["windows"]
        for way in ways
    ]
    text = h.table(["rewritten", "way", "ms/record", "CPU ms/record", "HNSW level0 MB"], rows)
    h.emit("chroma-replace.churn", args, out, text)


BATCH_WAYS = ("chromadb", "vectorport")


def chroma_calls(coll: Any, records: list[Record], stored: set[str]) -> None:
    """A mixed batch in the fewest chromadb calls: the re-vectored ids deleted, the new and
    re-vectored records added in one call, the metadata-only ones updated in one call (sync
    writes the same records inside ``split_replace``; no read of what is stored)."""
    third = len(records) // 3
    added, touched = records[: 2 * third], records[2 * third :]
    coll.delete(ids=[r.key for r in added if r.key in stored])
    coll.add(
        ids=[r.key for r in added],
        embeddings=np.stack([np.asarray(r.vector, dtype=np.float32) for r in added]),
        metadatas=[r.metadata for r in added],
        documents=[r.text for r in added],
    )
    coll.update(ids=[r.key for r in touched], metadatas=[r.metadata for r in touched])


def _batch_size_run(
    root: Any, rng: np.random.Generator, n: int, dim: int, batch: int, rounds: int, ways: tuple[str, ...]
) -> dict[str, Any]:
    """One batch size: a fresh collection per way, ``rounds`` mixed batches in turns."""
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    stores = {}
    for i, way in enumerate(ways):
        _, _, settings = way.partition("@")
        extra = f"&{settings.replace(',', '&')}" if settings else ""
        stores[way] = vectorport.connect(
            f"chroma://{root / f'b{batch}-{i}'}?collection=bench{extra}", dimension=dim
        )
        for start in range(0, n, 2000):
            stores[way].upsert(
                Record(f"k{j}", vectors[j], {"i": j}, f"text {j}") for j in range(start, min(n, start + 2000))
            )
    third = batch // 3
    stored = {f"k{j}" for j in range(n)}
    made: dict[int, list[Record]] = {}

    def batch_of(r: int) -> list[Record]:
        if r not in made:  # the same batch for every way of the round
            made.clear()
            made[r] = mixed_batch(rng, vectors, third, r + 1, n + (r + 1) * third)
        return made[r]

    def way(name: str) -> h.Way:
        store = stores[name]
        if name.partition("@")[0] == "chromadb":
            coll = store.connection.collection()
            return lambda r: chroma_calls(coll, batch_of(r), stored)
        return lambda r: write("split_replace", store, None, batch_of(r))

    race = h.Race(ways[0], {name: way(name) for name in ways}).run(rounds)
    for store in stores.values():
        store.close()
    written = rounds * 3 * third
    row: dict[str, Any] = {"batch": 3 * third}
    for name in ways:
        wall, cpu = sum(race.seconds[name]), sum(race.cpu[name])
        row[name] = {
            "ms_per_record": round(wall / written * 1000, 3),
            "cpu_ms_per_record": round(cpu / written * 1000, 3),
            "records_per_second": round(written / wall),
        }
    return row


def batches(
    n: int, dim: int, sizes: list[int], rounds: int, ways: tuple[str, ...] = BATCH_WAYS
) -> dict[str, Any]:
    """See the module docstring (``batches``)."""
    rng = np.random.default_rng(0)
    with h.workdir("chroma-batches") as root:
        rows = [_batch_size_run(root, rng, n, dim, size, rounds, ways) for size in sizes]
    return {"records": n, "dim": dim, "rounds": rounds, "ways": list(ways), "batches": rows}


def batches_main(argv: list[str]) -> None:
    ap = h.parser(
        __doc__,
        n=5_000,
        repeat=2,
        quick={"n": 1000, "batches": "60,300"},
        prog="chroma_replace_bench.py batches",
    )
    ap.add_argument("--batches", default="100,500,2000,5000", help="batch sizes, comma-separated")
    ap.add_argument(
        "--ways", default=",".join(BATCH_WAYS), help=f"comma-separated, of {', '.join(BATCH_WAYS)}"
    )
    args = h.parse(ap, argv)
    ways = tuple(h.csv(args.ways))
    if not ways or any(w.partition("@")[0] not in BATCH_WAYS for w in ways):
        ap.error(f"--ways: one or more of {', '.join(BATCH_WAYS)}, got {args.ways!r}")
    out = batches(args.n, args.dim, h.sizes(args.batches), args.repeat, ways)
    rows = [
        [
            row["batch"],
            way,
            row[way]["ms_per_record"],
            row[way]["cpu_ms_per_record"],
            row[way]["records_per_second"],
            round(row[way]["ms_per_record"] / row[ways[0]]["ms_per_record"], 2),
        ]
        for row in out["batches"]
        for way in ways
    ]
    text = h.table(["batch", "way", "ms/record", "CPU ms/record", "records/s", f"time / {ways[0]}"], rows)
    h.emit("chroma-replace.batches", args, out, text)


def main() -> None:
    if sys.argv[1:2] == ["batches"]:
        batches_main(sys.argv[2:])
        return
    if sys.argv[1:2] == ["calls"]:
        calls_main(sys.argv[2:])
        return
    if sys.argv[1:2] == ["churn"]:
        churn_main(sys.argv[2:])
        return
    ap = h.parser(__doc__, n=10_000, dim=128, repeat=3, quick={"n": 2000, "batch": 300, "repeat": 2})
    ap.add_argument("--batch", type=int, default=900)
    args = h.parse(ap)
    out = run(args.n, args.dim, args.batch, args.repeat)
    ratios = {"upsert": 1.0, **out["race"]["ratio_of_medians"]}
    rows = [[w, out["seconds"][w], out["records_per_second"][w], ratios[w]] for w in WAYS]
    h.emit("chroma-replace", args, out, h.table(["way", "seconds", "records/s", "vs upsert (speed)"], rows))


if __name__ == "__main__":
    main()
