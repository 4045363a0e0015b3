"""Snapshot export and import rates against the raw scan and raw write rates of the same store,
measured in the same run.

    python benchmarks/snapshot_bench.py [--n 100000] [--dim 384] [--stores memory,pgvector] [--json]
        [--output FILE] [--quick]

For each store (``memory://`` in this process; pgvector on an embedded server):

1. load ``--n`` generated records (not timed);
2. raw scan: ``store.scan()`` of every record with vector, metadata and text, pages of 1,000;
3. export: ``vectorport.snapshot.export(URL, DIR)`` (Parquet parts + manifest); its rate is the
   records over the export's own seconds; the read-back verification that follows is timed apart;
4. raw write: ``upsert()`` of the same records into a fresh collection of the same store, in
   batches of 1,000 from 4 threads inside the store's ``bulk_load`` as a migration's copy is
   (pgvector: the HNSW index is built once at the end, inside the time);
5. import: ``vectorport.snapshot.import_snapshot(DIR, URL)`` into another fresh collection
   (a migration from ``parquet://DIR``: plan, copy, index build, verify). Its write rate is the
   records over copy + index seconds, the same work as the raw write.

Ratios: export / raw scan and import / raw write (1.0: the snapshot costs nothing beyond
moving the records; the Parquet side is cheap when it is well above 1 on the scan side).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import _harness as h

import vectorport
from vectorport._features import bulk_load_of
from vectorport.snapshot import export, import_snapshot

BATCH = 1000
CONCURRENCY = 4
LOAD_BATCH = 5000


def load(url: str, records: list[Any]) -> None:
    n, dim = len(records), len(records[0].vector)
    with vectorport.connect(url, dimension=dim) as source, bulk_load_of(source, n):
        h.upsert_all(source, records, LOAD_BATCH)


def raw_scan(url: str) -> int:
    with vectorport.connect(url) as s:
        return sum(len(page) for page in s.scan(batch_size=BATCH))


def raw_write(url: str, records: list[Any]) -> None:
    chunks = [records[i : i + BATCH] for i in range(0, len(records), BATCH)]
    with vectorport.connect(url, dimension=len(records[0].vector)) as s:
        with bulk_load_of(s, len(records)), ThreadPoolExecutor(CONCURRENCY) as pool:
            list(pool.map(s.upsert, chunks))
        s.drop()


def exported(url: str, snap: Path) -> h.Timed:
    """The export's own seconds; the read-back verification that follows is timed apart."""
    got = export(url, snap, sample_queries=5)
    assert got.verification is not None and got.verification.differences == 0, got.to_dict()
    return h.Timed(got.timings["export"], got)


def imported(snap: Path, url: str, checkpoint: Path) -> h.Timed:
    """Its write seconds: copy + index, the same work as the raw write."""
    t0 = time.monotonic()
    got = import_snapshot(snap, url, checkpoint=checkpoint, sample_queries=5)
    total = time.monotonic() - t0
    assert got.verification is not None and got.verification.differences == 0, got.to_json()
    assert got.copy is not None
    return h.Timed(got.copy.seconds + got.copy.index_seconds, (got, total))


def store_leg(name: str, url: str, n: int, dim: int, work: Path) -> dict[str, Any]:
    """``url`` has one ``%s``: the collection (or table) name."""
    records = h.portable_records(n, dim)
    load(url % "source", records)
    snap = work / f"snap-{name}"
    h.log(f"[{name}] raw scan, then export …")
    reading = h.Race(
        "raw_scan",
        {"raw_scan": lambda r: raw_scan(url % "source"), "export": lambda r: exported(url % "source", snap)},
    ).run(1)
    assert reading.results["raw_scan"][0] == n
    h.log(f"[{name}] raw write, then import …")
    writing = h.Race(
        "raw_write",
        {
            "raw_write": lambda r: raw_write(url % "raw", records),
            "import": lambda r: imported(snap, url % "restored", work / f"{name}-import.json"),
        },
    ).run(1)
    ex = reading.results["export"][0]
    im, import_total = writing.results["import"][0]
    return {
        "store": name,
        "records": n,
        "raw_scan_per_s": h.rate(n, reading.median("raw_scan")),
        "export_per_s": h.rate(n, reading.median("export")),
        "export_vs_scan": round(reading.ratios()["export"], 2),
        "export_verify_s": round(ex.timings.get("verify", 0.0), 2),
        "snapshot_parts": ex.parts,
        "snapshot_mib": round(ex.bytes / 2**20, 1),
        "raw_write_per_s": h.rate(n, writing.median("raw_write")),
        "import_write_per_s": h.rate(n, writing.median("import")),
        "import_vs_write": round(writing.ratios()["import"], 2),
        "import_index_s": round(im.copy.index_seconds, 2),
        "import_timings_s": {k: round(v, 2) for k, v in im.timings.items()},
        "import_total_s": round(import_total, 2),
        "export_status": ex.status,
        "import_status": im.status,
    }


def run(n: int, dim: int, stores: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"n": n, "dim": dim, "batch_size": BATCH, "concurrency": CONCURRENCY, "stores": []}
    with h.workdir("snapshot-bench") as work:
        if "memory" in stores:
            out["stores"].append(store_leg("memory", "memory://snapshot-bench-%s", n, dim, work))
        if "pgvector" in stores:
            out["stores"].append(store_leg("pgvector", f"pgvector://{work / 'pg'}?table=%s", n, dim, work))
    return out


def text(out: dict[str, Any]) -> str:
    head = [
        "store",
        "raw scan /s",
        "export /s",
        "export / scan",
        "raw write /s",
        "import write /s",
        "import / write",
        "snapshot",
        "export verify s",
        "import total s",
    ]
    rows = [
        [
            r["store"],
            r["raw_scan_per_s"],
            r["export_per_s"],
            r["export_vs_scan"],
            r["raw_write_per_s"],
            r["import_write_per_s"],
            r["import_vs_write"],
            f"{r['snapshot_parts']} parts, {r['snapshot_mib']} MiB",
            r["export_verify_s"],
            r["import_total_s"],
        ]
        for r in out["stores"]
    ]
    return f"{out['n']:,} records x {out['dim']} dims\n\n" + h.table(head, rows)


def main() -> None:
    ap = h.parser(__doc__, n=100_000, quick={"n": 2000})
    ap.add_argument("--stores", default="memory,pgvector")
    args = h.parse(ap)
    out = run(args.n, args.dim, h.csv(args.stores))
    h.emit("snapshot", args, out, text(out))


if __name__ == "__main__":
    main()
