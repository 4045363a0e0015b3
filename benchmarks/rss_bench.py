"""Peak RSS of the real ``vectorport migrate`` process, pgvector -> the local bucket server, from
100k to 1M records.

    python benchmarks/rss_bench.py [--sizes 100000,1000000] [--dim 384] [--modes two-pass,single-pass]

For each size: N clustered records (generated and loaded 50,000 at a time, so the bench's own
memory stays small) into an embedded pgvector table without an ANN index (``index=exact``: the
source's index plays no part in a migration's memory), then ``vectorport migrate SRC DST --json``
as a child process under ``/usr/bin/time -f %M``, into a new index of the local bucket server (a
separate process, pacing off so 1M records take minutes, not the 400 s of the 2,500/s cap). The
migration verifies by digest; the peak RSS is the CLI process's, drivers included (psycopg,
boto3), servers excluded. Prints one JSON object per run and the ratio of each size's peak to
the smallest size's.
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import vectorport
from vectorport._registry import resolve
from vectorport.backends.pgvector import start_embedded
from vectorport.backends.pgvector._embedded import stop_embedded
from vectorport.testing import clustered_records

CHUNK = 50_000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def load_source(url: str, n: int, dim: int) -> float:
    began = time.perf_counter()
    rules = resolve("s3vectors").load().capabilities.metadata  # metadata the target can hold
    with vectorport.connect(url, dimension=dim) as store:
        for c, start in enumerate(range(0, n, CHUNK)):
            size = min(CHUNK, n - start)
            store.upsert(clustered_records(size, dim, seed=c, rules=rules, key_prefix=f"docs/p{c}/file"))
        assert store.count() == n
    return time.perf_counter() - began


def run_migrate(src: str, dst: str, single_pass: bool) -> dict[str, object]:
    cmd = ["/usr/bin/time", "-f", "%M", sys.executable, "-m", "vectorport", "migrate", src, dst, "--json"]
    if single_pass:
        cmd.append("--single-pass")
    began = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - began
    peak_kib = int(done.stderr.strip().splitlines()[-1])
    report = json.loads(done.stdout)
    if done.returncode != 0:
        raise SystemExit(f"migrate exited {done.returncode}: {done.stdout[-2000:]} {done.stderr[-2000:]}")
    return {
        "peak_rss_mib": round(peak_kib / 1024, 1),
        "seconds": round(seconds, 1),
        "status": report.get("status"),
        "timings_s": {k: round(float(v), 1) for k, v in (report.get("timings") or {}).items()},
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--modes", default="two-pass,single-pass")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",") if x]
    modes = [m for m in args.modes.split(",") if m]
    work = Path(tempfile.mkdtemp(prefix="vp-rssbench-"))
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "vectorport.bucketserver", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    start_embedded(str(work / "pg"))
    results: list[dict[str, object]] = []
    try:
        for n in sizes:
            src = f"pgvector://{work}/pg?table=src{n}&index=exact"
            print(f"loading {n:,} x {args.dim} into pgvector …", file=sys.stderr, flush=True)
            load_s = load_source(src, n, args.dim)
            for mode in modes:
                dst = f"s3vectors://rss/n{n}{mode.replace('-', '')}?endpoint_url={endpoint}&write_rate=0"
                print(f"migrate {n:,} {mode} …", file=sys.stderr, flush=True)
                run = run_migrate(src, dst, mode == "single-pass")
                row = {"n": n, "mode": mode, "load_s": round(load_s, 1), **run}
                results.append(row)
                print(json.dumps(row), flush=True)
                with vectorport.connect(dst) as done:
                    done.drop()  # the server holds every index in memory
        base = {r["mode"]: r["peak_rss_mib"] for r in results if r["n"] == sizes[0]}
        for r in results:
            r["ratio_to_smallest"] = round(float(r["peak_rss_mib"]) / float(base[r["mode"]]), 2)  # type: ignore[arg-type]
        print(json.dumps({"runs": results}, indent=1))
    finally:
        server.terminate()
        server.wait()
        stop_embedded(work / "pg")
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
