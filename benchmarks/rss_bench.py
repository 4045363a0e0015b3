"""Peak RSS of the real ``vectorport migrate`` process, pgvector -> the local bucket server, from
100k to 1M records.

    python benchmarks/rss_bench.py [--sizes 100000,1000000] [--dim 384] [--modes two-pass,single-pass]
        [--json] [--output FILE] [--quick]

For each size: N clustered records (generated and loaded 50,000 at a time, so the bench's own
memory stays small) into an embedded pgvector table without an ANN index (``index=exact``: the
source's index plays no part in a migration's memory), then ``vectorport migrate SRC DST --json``
as a child process under ``/usr/bin/time -f %M``, into a new index of the local bucket server (a
separate process, pacing off so 1M records take minutes, not the 400 s of the 2,500/s cap). The
migration verifies by digest; the peak RSS is the CLI process's, drivers included (psycopg,
boto3), servers excluded. Prints one row per run and the ratio of each size's peak to the
smallest size's.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

import _harness as h

import vectorport
from vectorport.backends.pgvector import start_embedded

CHUNK = 50_000


def load_source(url: str, n: int, dim: int) -> float:
    began = time.perf_counter()
    with vectorport.connect(url, dimension=dim) as store:
        for c, start in enumerate(range(0, n, CHUNK)):
            size = min(CHUNK, n - start)
            store.upsert(h.portable_records(size, dim, seed=c, key_prefix=f"docs/p{c}/file"))
        assert store.count() == n
    return time.perf_counter() - began


def run_migrate(src: str, dst: str, single_pass: bool) -> dict[str, Any]:
    cmd = ["/usr/bin/time", "-f", "%M", sys.executable, "-m", "vectorport", "migrate", src, dst, "--json"]
    if single_pass:
        cmd.append("--single-pass")
    began = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"migrate exited {done.returncode}: {done.stdout[-2000:]} {done.stderr[-2000:]}")
    peak_kib = int(done.stderr.strip().splitlines()[-1])
    report = json.loads(done.stdout)
    return {
        "peak_rss_mib": round(peak_kib / 1024, 1),
        "seconds": round(seconds, 1),
        "status": report.get("status"),
        "timings_s": {k: round(float(v), 1) for k, v in (report.get("timings") or {}).items()},
    }


def run(sizes: list[int], dim: int, modes: list[str]) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    with h.workdir("rssbench") as work, h.bucket_server() as endpoint:
        start_embedded(str(work / "pg"))
        for n in sizes:
            src = f"pgvector://{work}/pg?table=src{n}&index=exact"
            h.log(f"loading {n:,} x {dim} into pgvector …")
            load_s = load_source(src, n, dim)
            for mode in modes:
                dst = f"s3vectors://rss/n{n}{mode.replace('-', '')}?endpoint_url={endpoint}&write_rate=0"
                h.log(f"migrate {n:,} {mode} …")
                row = {
                    "n": n,
                    "mode": mode,
                    "load_s": round(load_s, 1),
                    **run_migrate(src, dst, mode == "single-pass"),
                }
                results.append(row)
                h.log(json.dumps(row))
                with vectorport.connect(dst) as done:
                    done.drop()  # the server holds every index in memory
    base = {r["mode"]: r["peak_rss_mib"] for r in results if r["n"] == sizes[0]}
    for r in results:
        r["ratio_to_smallest"] = round(r["peak_rss_mib"] / base[r["mode"]], 2)
    return results


def main() -> None:
    ap = h.parser(__doc__, n=None, quick={"sizes": "2000,5000"})
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--modes", default="two-pass,single-pass")
    args = h.parse(ap)
    runs = run(h.sizes(args.sizes), args.dim, h.csv(args.modes))
    rows = [
        [r["n"], r["mode"], r["peak_rss_mib"], r["ratio_to_smallest"], r["seconds"], r["status"]]
        for r in runs
    ]
    text = h.table(["records", "mode", "peak RSS MiB", "to smallest", "seconds", "status"], rows)
    h.emit("rss", args, {"runs": runs}, text)


if __name__ == "__main__":
    main()
