"""One process against Ray with N workers on the same migration, as a ratio, in one run.

    python benchmarks/ray_bench.py [--n 200000] [--dim 384] [--workers 2] [--address ADDR]
        [--legs parquet-pgvector,parquet-s3vectors] [--json] [--output FILE] [--quick]

The source is a Parquet snapshot (``parquet://DIR``) of ``--n`` generated records, so every
worker process reads it as it is (loading it is not timed). For each leg the same source is
migrated twice into two fresh collections of the same target:

* one process: ``vectorport.migrate`` (plan, copy inside the target's ``bulk_load``, verify);
* Ray: ``vectorport.ray.migrate_on_ray`` with ``--workers`` tasks, one shard each (plan, copy,
  then the merged-digest verification of the whole pair), on a local cluster
  (``ray.init(num_cpus=workers)``) unless ``--address`` names a running one.

Targets: pgvector (an embedded server every worker reaches over its Unix socket; the HNSW index
is built once by the last shard to finish, inside the copy time) and the local bucket server
(``vectorport.bucketserver``, a separate process, in memory, pacing off: ``write_rate=0``).

Then, on the one-process target: ``vectorport.verify`` against ``vectorport.ray.verify_on_ray``
(merged per-segment digests, one task per scan segment of each store), and
``vectorport.snapshot.export`` against ``vectorport.ray.export_on_ray``, with the target's raw
scan rate as the yardstick (export / raw scan near 1.0: writing Parquet costs little beyond the
scan).

Reported per leg: seconds of each phase, copy rate (index build excluded; for Ray: the records
over the copy stage's seconds, the tasks running at once) and end-to-end rate of both runs, the
speed-up (one-process seconds / Ray seconds, for the copy and end to end) and each Ray task's
own copy rate (its records / its seconds), the figure a capacity plan multiplies.
On a machine with fewer free cores than workers the speed-up is bounded by the cores, not by
vectorport: say how many were free when quoting it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import _harness as h
import ray

import vectorport
from vectorport.ray import export_on_ray, migrate_on_ray, verify_on_ray
from vectorport.snapshot import export, snapshot_url

LOAD_BATCH = 5000


def make_snapshot(directory: Path, n: int, dim: int) -> str:
    """A ``parquet://`` source of ``n`` records (generated into memory, exported, not timed)."""
    store = vectorport.connect("memory://ray-bench-source", dimension=dim)
    records = h.portable_records(n, dim)
    h.upsert_all(store, records, LOAD_BATCH)
    export("memory://ray-bench-source", directory, verify=False)
    store.drop()
    return snapshot_url(directory)


def one_process(source: str, target: str, checkpoint: Path) -> Any:
    one = vectorport.migrate.run(source, target, checkpoint=checkpoint, sample_queries=5)
    # every record must be equal; the sampled query check is reported, not asserted
    assert one.verification is not None and one.verification.differences == 0, one.to_json()
    assert one.copy is not None
    return one


def on_ray(source: str, target: str, n: int, workers: int, checkpoint: Path) -> Any:
    got = migrate_on_ray(source, target, workers=workers, checkpoint=checkpoint, sample_queries=5)
    assert got.status in ("verified", "quality"), got.to_json()[:2000]
    assert got.copy is not None and got.copy.records == n, got.to_json()[:2000]
    assert got.verification is not None and got.verification.differences == 0, got.to_json()[:2000]
    return got


def leg(name: str, source: str, target: str, n: int, workers: int, work: Path) -> dict[str, Any]:
    h.log(f"[{name}] one process, then ray with {workers} workers …")
    race = h.Race(
        "one_process",
        {
            "one_process": lambda r: one_process(source, target % "single", work / f"{name}-one.json"),
            "ray": lambda r: on_ray(source, target % "ray", n, workers, work / f"{name}-ray.json"),
        },
    ).run(1)
    one, ray_report = race.results["one_process"][0], race.results["ray"][0]
    one_total, ray_total = race.median("one_process"), race.median("ray")
    one_copy = one.copy.seconds
    # the tasks copy at the same time: the Ray copy lasts from the first task's start to the last one's end
    ray_copy = ray_report.copy.seconds
    per_worker = [
        {
            "task": w.get("task", w.get("shard")),
            "records": w["records"],
            "seconds": w["seconds"],
            "copy_per_s": round(w["records_per_second"] or 0),
        }
        for w in ray_report.engine.get("per_worker", [])
    ]
    checks = verify_and_export(source, target % "single", n, workers, work / name.split()[-1])
    return {
        "leg": name,
        "records": n,
        **checks,
        "one_process": {
            "status": one.status,
            "timings_s": {k: round(v, 2) for k, v in one.timings.items()},
            "index_seconds": round(one.copy.index_seconds, 2),
            "copy_seconds": round(one_copy, 2),
            "copy_per_s": h.rate(n, one_copy),
            "total_s": round(one_total, 2),
            "end_to_end_per_s": h.rate(n, one_total),
        },
        "ray": {
            "status": ray_report.status,
            "workers": workers,
            "timings_s": {k: round(v, 2) for k, v in ray_report.timings.items()},
            "index_seconds": round(ray_report.copy.index_seconds, 2),
            "copy_seconds": round(ray_copy, 2),
            "copy_per_s": h.rate(n, ray_copy),
            "total_s": round(ray_total, 2),
            "end_to_end_per_s": h.rate(n, ray_total),
            "per_worker": per_worker,
        },
        "speedup_copy": round(one_copy / ray_copy, 2),
        "speedup_end_to_end": round(race.ratios()["ray"], 2),
    }


def verify_and_export(source: str, target: str, n: int, workers: int, work: Path) -> dict[str, Any]:
    """On the migrated target: verify in one process vs ``verify_on_ray`` (merged segment
    digests), and export in one process vs ``export_on_ray``, with the raw scan rate of the
    same target as the yardstick of both exports."""
    t0 = time.monotonic()
    one = vectorport.verify(source, target, sample_queries=5)
    one_s = time.monotonic() - t0
    t0 = time.monotonic()
    clustered = verify_on_ray(source, target, workers=workers, sample_queries=5)
    ray_s = time.monotonic() - t0
    assert one.differences == clustered.differences == 0, clustered.to_dict()
    with vectorport.connect(target) as store:
        t0 = time.monotonic()
        scanned = sum(len(page) for page in store.scan(batch_size=1000))
        scan_s = time.monotonic() - t0
    assert scanned == n
    t0 = time.monotonic()
    export(target, work / "export-one", verify=False)
    export_one_s = time.monotonic() - t0
    t0 = time.monotonic()
    ray_export = export_on_ray(target, work / "export-ray", workers=workers, verify=False)
    export_ray_s = time.monotonic() - t0
    assert ray_export.count == n
    return {
        "verify": {
            "one_process_s": round(one_s, 2),
            "ray_s": round(ray_s, 2),
            "speedup": round(one_s / ray_s, 2),
            "ray_per_task": [
                {"task": w["task"], "per_s": w["records_per_second"]} for w in clustered.per_worker
            ],
        },
        "export": {
            "raw_scan_per_s": h.rate(n, scan_s),
            "one_process_per_s": h.rate(n, export_one_s),
            "ray_per_s": h.rate(n, export_ray_s),
            "one_process_vs_raw_scan": round(scan_s / export_one_s, 2),
            "ray_vs_one_process": round(export_one_s / export_ray_s, 2),
        },
    }


def start_ray(workers: int, address: str | None) -> None:
    src = str(Path(vectorport.__file__).resolve().parents[1])
    # the workers import the same vectorport as this process
    env = {"env_vars": {"PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}}
    if address:
        ray.init(address=address, runtime_env=env, log_to_driver=False)
    else:
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, runtime_env=env)


def run(n: int, dim: int, workers: int, address: str | None, legs: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "n": n,
        "dim": dim,
        "workers": workers,
        "cluster": address or f"local, num_cpus={workers}",
    }
    with h.workdir("ray-bench") as work, h.bucket_server() as bucket:
        h.log(f"snapshot of {n:,} x {dim} …")
        t0 = time.monotonic()
        source = make_snapshot(work / "snap", n, dim)
        out["snapshot_seconds"] = round(time.monotonic() - t0, 1)
        start_ray(workers, address)
        try:
            out["legs"] = []
            if "parquet-pgvector" in legs:
                pg = f"pgvector://{work / 'pg'}?table=%s"
                out["legs"].append(leg("parquet -> pgvector", source, pg, n, workers, work))
            if "parquet-s3vectors" in legs:
                s3 = f"s3vectors://bench/%s?endpoint_url={bucket}&write_rate=0"
                out["legs"].append(leg("parquet -> s3vectors (bucket server)", source, s3, n, workers, work))
        finally:
            ray.shutdown()
    return out


def _copies(legs: list[dict[str, Any]]) -> str:
    rows = [
        [
            r["leg"],
            r["one_process"]["copy_per_s"],
            r["ray"]["copy_per_s"],
            ", ".join(f"{w['copy_per_s']:,}" for w in r["ray"]["per_worker"]),
            r["one_process"]["total_s"],
            r["ray"]["total_s"],
            f"{r['speedup_copy']:.2f}x",
            f"{r['speedup_end_to_end']:.2f}x",
        ]
        for r in legs
    ]
    return h.table(
        [
            "leg",
            "one process copy /s",
            "Ray copy /s",
            "per worker copy /s",
            "one process total s",
            "Ray total s",
            "speed-up copy",
            "speed-up end to end",
        ],
        rows,
    )


def _checks(legs: list[dict[str, Any]]) -> str:
    rows = [
        [
            r["leg"],
            r["verify"]["one_process_s"],
            r["verify"]["ray_s"],
            f"{r['verify']['speedup']:.2f}x",
            r["export"]["raw_scan_per_s"],
            r["export"]["one_process_per_s"],
            r["export"]["ray_per_s"],
            r["export"]["one_process_vs_raw_scan"],
            f"{r['export']['ray_vs_one_process']:.2f}x",
        ]
        for r in legs
    ]
    return h.table(
        [
            "leg",
            "verify one process s",
            "verify Ray s",
            "speed-up",
            "raw scan /s",
            "export one process /s",
            "export Ray /s",
            "export / raw scan",
            "Ray export speed-up",
        ],
        rows,
    )


def _table(out: dict[str, Any]) -> str:
    head = f"{out['n']:,} records x {out['dim']} dims, Ray: {out['workers']} workers ({out['cluster']})"
    return "\n\n".join([head, _copies(out["legs"]), _checks(out["legs"])])


def main() -> None:
    ap = h.parser(__doc__, n=200_000, quick={"n": 2000})
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--address", default=None, help="a running Ray cluster (e.g. auto); default: a local one")
    ap.add_argument("--legs", default="parquet-pgvector,parquet-s3vectors")
    args = h.parse(ap)
    out = run(args.n, args.dim, args.workers, args.address, h.csv(args.legs))
    h.emit("ray", args, out, _table(out))


if __name__ == "__main__":
    main()
