"""Peak server memory and time of a long ``$in`` filter over rows with large metadata (pgvector).

Not a test (pytest does not collect it): the measurement behind docs/performance.md, run with
the compiler on the path, e.g. ``PYTHONPATH=src python tests/pgvector/filter_cost_probe.py``.
It starts an embedded server (in ``--data-dir``, kept, or a temporary one), loads ``--rows``
rows whose metadata holds a ``--meta-kb`` string, and for each ``--values`` count runs
``SELECT key … WHERE <$in filter>`` on a fresh connection with index scans off, so the filter
is evaluated on every row (as an HNSW scan evaluates it on every row it visits). The backend's
anonymous RSS is sampled every 2 ms, and the query is cancelled once it grew by ``--cap-mb``
(the backend notices only between rows, so keep values x 2 x size well under the free memory
when probing a compiler that multiplies memory by the list length).
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

import vectorport
from vectorport.backends.pgvector._embedded import embedded_conninfo, stop_embedded
from vectorport.backends.pgvector.filters import PgFilterCompiler
from vectorport.filters import parse_filter

LANGS = ["en", "fr", "de", "es", "it"]


def _status(pid: int) -> dict[str, int]:
    """The ``/proc/<pid>/status`` sizes, in kB."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if value.strip().endswith("kB"):
            out[name] = int(value.split()[0])
    return out


def load(url: str, rows: int, meta_kb: int) -> None:
    rng = np.random.default_rng(0)
    alphabet = np.frombuffer(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", np.uint8)
    blob = alphabet[rng.integers(0, len(alphabet), meta_kb * 1024)].tobytes().decode()
    with vectorport.connect(url, dimension=8) as store:
        if store.count() == rows:
            return
        for start in range(0, rows, 20):
            store.upsert(
                vectorport.Record(
                    f"k{i}",
                    rng.standard_normal(8),
                    {
                        "lang": LANGS[i % 5],
                        "n": i,
                        "tags": [LANGS[i % 5], f"t{i % 7}"],
                        "blob": blob[i:] + blob[:i],
                    },
                )
                for i in range(start, min(rows, start + 20))
            )


def measure(conninfo: str, table: str, where: dict[str, Any], cap_mb: int = 4096) -> dict[str, Any]:
    """Run ``SELECT key FROM table WHERE <where>`` on a fresh connection, scanning every row;
    its time, the keys, and the backend's peak anonymous memory above its start (MB)."""
    pred = PgFilterCompiler().compile(parse_filter(where))
    statement = f'SELECT key FROM "{table}" AS t WHERE {pred.text}'
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("SET enable_indexscan = off")
        conn.execute("SET enable_bitmapscan = off")
        pid = conn.info.backend_pid
        start = _status(pid)
        cap = start["RssAnon"] + cap_mb * 1024
        peak = start["RssAnon"]
        cancelled = False
        done = threading.Event()

        def sample() -> None:
            nonlocal peak, cancelled
            while not done.is_set():
                peak = max(peak, _status(pid)["RssAnon"])
                if peak > cap and not cancelled:
                    conn.cancel_safe()
                    cancelled = True
                time.sleep(0.002)

        sampler = threading.Thread(target=sample)
        sampler.start()
        t0 = time.perf_counter()
        error = None
        try:
            keys = [row[0] for row in conn.execute(statement, pred.params)]
        except psycopg.errors.QueryCanceled:
            keys, error = [], f"cancelled above {cap_mb} MB"
        finally:
            seconds = time.perf_counter() - t0
            done.set()
            sampler.join()
        end = _status(pid)
    return {
        "params": len(pred.params),
        "seconds": round(seconds, 2),
        "keys": keys,
        "peak_anon_mb": round((max(peak, end["RssAnon"]) - start["RssAnon"]) / 1024, 1),
        "vm_hwm_mb": round(end["VmHWM"] / 1024, 1),
        "error": error,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data-dir", type=Path, help="the embedded server's data directory (default: a temporary one)"
    )
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--meta-kb", type=int, default=1024)
    parser.add_argument("--values", type=int, nargs="+", default=[10, 100, 1000, 10_000])
    parser.add_argument("--cap-mb", type=int, default=4096)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="filter-cost-") as tmp:
        Path(tmp).chmod(0o755)  # run as root, the server runs as another user that must reach it
        data_dir = (args.data_dir or Path(tmp) / "db").resolve()
        url = f"pgvector://{data_dir}?table=filter_cost_{args.rows}_{args.meta_kb}"
        try:
            t0 = time.perf_counter()
            load(url, args.rows, args.meta_kb)
            print(f"{args.rows} rows of {args.meta_kb} kB metadata ready in {time.perf_counter() - t0:.1f} s")
            conninfo = embedded_conninfo(data_dir)
            for n in args.values:
                print(
                    measure(conninfo, f"filter_cost_{args.rows}_{args.meta_kb}", n, args.cap_mb), flush=True
                )
        finally:
            if args.data_dir is None:
                stop_embedded(data_dir)


if __name__ == "__main__":
    main()
