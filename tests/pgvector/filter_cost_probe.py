"""What long ``$in``/``$nin`` filters cost the server (pgvector): peak memory over rows with
large metadata, and access paths and query times on a normal table.

Not a test (pytest does not collect it): the measurements behind docs/performance.md, run with
the compiler on the path, e.g. ``PYTHONPATH=src python tests/pgvector/filter_cost_probe.py``.
It starts an embedded server (in ``--data-dir``, kept, or a temporary one), loads ``--rows``
rows whose metadata holds a ``--meta-kb`` string, and for each ``--values`` count runs
``SELECT key … WHERE <$in filter>`` on a fresh connection with index scans off, so the filter
is evaluated on every row (as an HNSW scan evaluates it on every row it visits). The backend's
anonymous RSS is sampled every 2 ms, and the query is cancelled once it grew by ``--cap-mb``
(the backend may notice only between rows, so keep values x 2 x size well under the free
memory when probing a compiler that multiplies memory by the list length).

``--plans 20000`` instead loads 20,000 rows of small metadata (``--dimension`` 384) and prints,
for each of :data:`PLAN_CASES`, the access path of the store's search statement and the median
``store.query`` time.
"""

from __future__ import annotations

import argparse
import re
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

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


def _cats(n: int, matching: int = 5) -> list[str]:
    """``n`` values of ``cat`` of which ``matching`` occur (10 rows each)."""
    return [f"c{i}" for i in range(min(n, matching))] + [f"z{i}" for i in range(n - min(n, matching))]


PLAN_CASES: dict[str, dict[str, Any]] = {
    "$eq (10 rows)": {"cat": "c7"},
    **{f"$in {n} (30-50 rows)": {"cat": {"$in": _cats(n)}} for n in (3, 20, 100, 200, 300, 1000, 10_000)},
    "$in 2 of a list field (134 rows)": {"tags": {"$in": ["t1", "t2"]}},
    "$in 200 of a list field (134 rows)": {"tags": {"$in": ["t1", "t2", *_cats(198, 0)]}},
    "$in 2 (8,000 rows)": {"lang": {"$in": ["en", "fr"]}},
    "$or of 2 $eq (20 rows)": {"$or": [{"cat": "c7"}, {"cat": "c8"}]},
    **{f"$nin {n}": {"cat": {"$nin": _cats(n)}} for n in (3, 20, 1000)},
}
# what the store sets for a filtered top-10 query (docs/backends/pgvector.md)
_GUCS = {"hnsw.ef_search": "1000", "hnsw.iterative_scan": "strict_order", "hnsw.max_scan_tuples": "100000"}


def load_plain(url: str, rows: int, dimension: int) -> None:
    """``rows`` clustered vectors with small metadata: ``cat`` (10 rows each), ``lang`` (1 in 5),
    ``tags`` (a list)."""
    rng = np.random.default_rng(1)
    centers = rng.standard_normal((64, dimension))
    with vectorport.connect(url, dimension=dimension) as store:
        if store.count() == rows:
            return
        store.upsert(
            vectorport.Record(
                f"k{i}",
                centers[i % 64] + 0.3 * rng.standard_normal(dimension),
                {"lang": LANGS[i % 5], "n": i, "cat": f"c{i % 2000}", "tags": [f"t{i % 300}", f"u{i % 11}"]},
            )
            for i in range(rows)
        )


def plans(url: str, conninfo: str, table: str, repeat: int = 30) -> None:
    """For each of :data:`PLAN_CASES`: the access paths PostgreSQL picks for the store's search
    statement (GIN, HNSW or a sequential scan; in its custom/generic plan: the store prepares
    its statements, and PostgreSQL moves to the generic plan after five executions when it
    costs no more) and the median ``store.query`` time, each case on
    a fresh connection (prepared statements are per connection, so its plan does not depend on
    the cases before)."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'VACUUM ANALYZE "{table}"')
        for name, value in _GUCS.items():
            conn.execute("SELECT set_config(%s, %s, false)", (name, value))
        for label, where in PLAN_CASES.items():
            with vectorport.connect(url) as store:
                queries = np.random.default_rng(2).standard_normal((repeat + 5, store.spec.dimension))
                pred = PgFilterCompiler(sql.Identifier("t", "metadata")).compile(parse_filter(where))
                q = "[" + ",".join(map(str, queries[0])) + "]"
                statement = (
                    "SELECT key, distance FROM (SELECT key, embedding <=> %(q)s::vector AS distance "
                    f'FROM "{table}" AS t WHERE {pred.text} ORDER BY distance LIMIT 10) AS hits '
                    "ORDER BY distance, key"
                )
                custom = conn.execute("EXPLAIN " + statement, {**pred.params, "q": q}, prepare=False)
                numbers = {name: f"${i}" for i, name in enumerate([*pred.params, "q"], 1)}
                generic_sql = re.sub(r"%\((\w+)\)s", lambda m, n=numbers: n[m.group(1)], statement)
                generic = conn.execute("EXPLAIN (GENERIC_PLAN) " + generic_sql, prepare=False)
                path = "/".join(_path(plan.fetchall()) for plan in (custom, generic))
                times = []
                for vector in queries:
                    t0 = time.perf_counter()
                    store.query(vector, k=10, filter=where)
                    times.append(time.perf_counter() - t0)
            ms = statistics.median(times[5:]) * 1000
            print(f"{label:36} {path:9} {ms:8.2f} ms  ({len(pred.params)} parameters)", flush=True)


def _path(plan: list[tuple[str]]) -> str:
    text = "\n".join(row[0] for row in plan)
    return "GIN" if "_metadata_gin" in text else "HNSW" if "_hnsw" in text else "seq"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data-dir", type=Path, help="the embedded server's data directory (default: a temporary one)"
    )
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--meta-kb", type=int, default=1024)
    parser.add_argument("--values", type=int, nargs="+", default=[10, 100, 1000, 10_000])
    parser.add_argument("--cap-mb", type=int, default=4096)
    parser.add_argument(
        "--plans",
        type=int,
        metavar="ROWS",
        help="instead: access paths and query times of a few filters on ROWS rows of small metadata",
    )
    parser.add_argument("--dimension", type=int, default=384, help="with --plans")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="filter-cost-") as tmp:
        Path(tmp).chmod(0o755)  # run as root, the server runs as another user that must reach it
        data_dir = (args.data_dir or Path(tmp) / "db").resolve()
        table = f"filter_cost_{args.rows}_{args.meta_kb}"
        url = f"pgvector://{data_dir}?table={table}"
        try:
            if args.plans:
                table = f"filter_plans_{args.plans}_{args.dimension}"
                url = f"pgvector://{data_dir}?table={table}"
                load_plain(url, args.plans, args.dimension)
                plans(url, embedded_conninfo(data_dir), table)
                return
            t0 = time.perf_counter()
            load(url, args.rows, args.meta_kb)
            print(f"{args.rows} rows of {args.meta_kb} kB metadata ready in {time.perf_counter() - t0:.1f} s")
            conninfo = embedded_conninfo(data_dir)
            for n in args.values:
                # one value matches (1 row in 5), the others nothing: every row tests them all
                where = {"lang": {"$in": [f"x{i}" for i in range(n - 1)] + ["fr"]}}
                out = measure(conninfo, table, where, args.cap_mb)
                print({"values": n, "rows": len(out.pop("keys")), **out}, flush=True)
        finally:
            if args.data_dir is None:
                stop_embedded(data_dir)


if __name__ == "__main__":
    main()
