"""Snapshot export and import rates against the raw scan and raw write rates of the same store,
measured in the same run.

    python benchmarks/snapshot_bench.py [--n 100000] [--dim 384] [--stores memory,pgvector] [--json]

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

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import vectorport
from vectorport import Record
from vectorport._features import bulk_load_of
from vectorport._registry import resolve
from vectorport.testing import clustered_records

BATCH = 1000
CONCURRENCY = 4
LOAD_BATCH = 5000


def _records(n: int, dim: int) -> list[Record]:
    """Clustered vectors (uniform random ones defeat any HNSW graph, so the query check of the
    verification would fail on data no one embeds) with metadata every target accepts."""
    rules = resolve("s3vectors").load().capabilities.metadata
    return clustered_records(n, dim, seed=1, rules=rules)


def _rate(n: int, seconds: float) -> float:
    return round(n / seconds) if seconds > 0 else 0.0


def store_leg(name: str, url: str, n: int, dim: int, work: Path) -> dict[str, Any]:
    """``url`` has one ``%s``: the collection (or table) name."""
    from vectorport.snapshot import export, import_snapshot

    out: dict[str, Any] = {"store": name, "records": n}
    source = vectorport.connect(url % "source", dimension=dim)
    records = _records(n, dim)
    with bulk_load_of(source, n):
        for start in range(0, n, LOAD_BATCH):
            source.upsert(records[start : start + LOAD_BATCH])
    source.close()

    print(f"[{name}] raw scan …", flush=True, file=sys.stderr)
    with vectorport.connect(url % "source") as s:
        t0 = time.monotonic()
        scanned = sum(len(page) for page in s.scan(batch_size=BATCH))
        scan_s = time.monotonic() - t0
    assert scanned == n, scanned

    print(f"[{name}] export …", flush=True, file=sys.stderr)
    snap = work / f"snap-{name}"
    exported = export(url % "source", snap, sample_queries=5)
    assert exported.count == n and exported.verification is not None, exported.to_dict()
    assert exported.verification.differences == 0, exported.to_dict()
    export_s = exported.timings["export"]

    print(f"[{name}] raw write …", flush=True, file=sys.stderr)
    chunks = [records[i : i + BATCH] for i in range(0, n, BATCH)]
    with vectorport.connect(url % "raw", dimension=dim) as s:
        t0 = time.monotonic()
        with bulk_load_of(s, n), ThreadPoolExecutor(CONCURRENCY) as pool:
            list(pool.map(s.upsert, chunks))
        write_s = time.monotonic() - t0
        s.drop()
    del chunks

    print(f"[{name}] import …", flush=True, file=sys.stderr)
    t0 = time.monotonic()
    imported = import_snapshot(
        snap, url % "restored", checkpoint=work / f"{name}-import.json", sample_queries=5
    )
    import_total = time.monotonic() - t0
    assert imported.verification is not None and imported.verification.differences == 0, imported.to_json()
    assert imported.copy is not None
    import_write_s = imported.copy.seconds + imported.copy.index_seconds

    out.update(
        {
            "raw_scan_per_s": _rate(n, scan_s),
            "export_per_s": _rate(n, export_s),
            "export_vs_scan": round(scan_s / export_s, 2),
            "export_verify_s": round(exported.timings.get("verify", 0.0), 2),
            "snapshot_parts": exported.parts,
            "snapshot_mib": round(exported.bytes / 2**20, 1),
            "raw_write_per_s": _rate(n, write_s),
            "import_write_per_s": _rate(n, import_write_s),
            "import_vs_write": round(write_s / import_write_s, 2),
            "import_index_s": round(imported.copy.index_seconds, 2),
            "import_timings_s": {k: round(v, 2) for k, v in imported.timings.items()},
            "import_total_s": round(import_total, 2),
            "export_status": exported.status,
            "import_status": imported.status,
        }
    )
    return out


def run(n: int, dim: int, stores: list[str]) -> dict[str, Any]:
    from vectorport.backends.pgvector._embedded import stop_embedded

    work = Path(tempfile.mkdtemp(prefix="vectorport-snapshot-bench-"))
    work.chmod(0o755)
    out: dict[str, Any] = {
        "n": n,
        "dim": dim,
        "batch_size": BATCH,
        "concurrency": CONCURRENCY,
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "stores": [],
    }
    try:
        if "memory" in stores:
            out["stores"].append(store_leg("memory", "memory://snapshot-bench-%s", n, dim, work))
            print(out["stores"][-1], flush=True, file=sys.stderr)
        if "pgvector" in stores:
            out["stores"].append(store_leg("pgvector", f"pgvector://{work / 'pg'}?table=%s", n, dim, work))
            print(out["stores"][-1], flush=True, file=sys.stderr)
        out["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
        return out
    finally:
        stop_embedded(work / "pg")
        shutil.rmtree(work, ignore_errors=True)


def _table(out: dict[str, Any]) -> str:
    rows = [
        f"{out['n']:,} records x {out['dim']} dims, load average {out['load_average_at_start']} at start",
        "",
        "| store | raw scan /s | export /s | export / scan | raw write /s | import write /s "
        "| import / write | snapshot | export verify s | import total s |",
        "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|",
    ]
    for r in out["stores"]:
        rows.append(
            f"| {r['store']} | {r['raw_scan_per_s']:,} | {r['export_per_s']:,} | {r['export_vs_scan']:.2f} | "
            f"{r['raw_write_per_s']:,} | {r['import_write_per_s']:,} | {r['import_vs_write']:.2f} | "
            f"{r['snapshot_parts']} parts, {r['snapshot_mib']} MiB | {r['export_verify_s']:.1f} | "
            f"{r['import_total_s']:.1f} |"
        )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--stores", default="memory,pgvector")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    out = run(args.n, args.dim, args.stores.split(","))
    print(json.dumps(out, indent=2) if args.json else _table(out))


if __name__ == "__main__":
    main()
