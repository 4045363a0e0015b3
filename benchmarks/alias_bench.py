"""Shadow overhead: the serving path's latency through an alias against the store directly.

    python benchmarks/alias_bench.py [--n 20000] [--dim 128] [--queries 400] [--rounds 3] [--think MS]
        [--json] [--output FILE] [--quick]

One collection (clustered float32 vectors, cosine, HNSW, metadata ``{"lang": one of 5}``) in an
embedded PostgreSQL + pgvector server, copied into a second table, the candidate. Two aliases
serve the first table while the second shadows them, one sampling 10% of the reads, one all of
them (the shadow queries run on the alias's background thread, in the same process); a third
alias serves the first table alone (the cost of the routing without shadow reads). In each
round: ``--queries`` queries (half with the filter ``{"lang": "fr"}``), each through the store
directly, through the alias alone, through the alias at sample 0.1, and at sample 1.0, each
query timed alone. The sides take turns in blocks of :data:`BLOCK` queries (the order rotating
block by block), so a change of the machine's load reaches all of them alike, while an alias's
shadow thread competes with that alias's own next queries, as in an app: after its block a side's
shadow queue is drained, untimed, so its background work never lands on another side's queries
(asked query by query, the shadow thread of the alias at 1.0 ran during the direct store's next
query, and the direct store came out slower than the aliases). Reported: p50 and p99 of each side
over all rounds, and the alias's p50/p99 over the direct store's, as ratios (the issue's bar:
p99 <= 1.1x direct at sample 0.1).
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import _harness as h

import vectorport
from vectorport import alias
from vectorport.testing import clustered_vectors, query_vectors

K = 10
BLOCK = 5
"""Queries a side asks in a row before the next side's turn."""
LANGS = ("en", "fr", "de", "ja", "pt")
WARM = 50


def _load(url: str, n: int, dim: int) -> None:
    vectors, _ = clustered_vectors(n, dim, seed=7)
    with vectorport.connect(url, dimension=dim) as store:
        for start in range(0, n, 2_000):
            store.upsert(
                vectorport.Record(f"doc{i}", vectors[i], {"lang": LANGS[i % 5]}, f"t{i}")
                for i in range(start, min(n, start + 2_000))
            )


def _sides(root: Path, n: int, dim: int) -> tuple[dict[str, Any], str, str]:
    """The store directly and the three aliases serving it (registry, candidate)."""
    pgdir = root / "pg"
    serving, candidate = f"pgvector://{pgdir}?table=serving", f"pgvector://{pgdir}?table=candidate"
    _load(serving, n, dim)
    vectorport.migrate.run(serving, candidate, verify=False, progress="none")
    reg = str(root / "aliases.sqlite")
    alias.create("s00", serving, registry=reg)  # no candidate: the routing alone
    for name, sample in (("s01", 0.1), ("s10", 1.0)):
        alias.create(name, serving, registry=reg, sample=sample)
        alias.shadow(name, candidate, registry=reg, copy=lambda s, c: 0, settle=0.0)
    sides = {
        "direct": vectorport.connect(serving),
        "alias, no candidate": vectorport.connect(f"alias://s00?registry={reg}"),
        "alias sample 0.1": vectorport.connect(f"alias://s01?registry={reg}"),
        "alias sample 1.0": vectorport.connect(f"alias://s10?registry={reg}"),
    }
    return sides, reg, candidate


def run(n: int, dim: int, queries: int, rounds: int, root: Path, think_ms: float = 0.0) -> dict[str, Any]:
    sides, reg, candidate = _sides(root, n, dim)
    qs = query_vectors(queries, dim, seed=7)
    pauses = random.Random(7)

    def way(store: Any) -> h.Way:
        def go(r: int) -> h.Timed:
            # warm-up rounds are negative: the first queries again (connections, statements, caches)
            first = r * BLOCK if r >= 0 else 0
            times = []
            for j in range(first, first + BLOCK):
                i = j % len(qs) if r >= 0 else j % min(WARM, len(qs))
                if think_ms > 0:  # the app's own time between two calls (untimed)
                    time.sleep(pauses.expovariate(1000.0 / think_ms))
                started = time.perf_counter()
                store.query(qs[i], k=K, filter={"lang": "fr"} if i % 2 else None)
                times.append(time.perf_counter() - started)
            shadow = getattr(store, "shadow", None)
            if shadow is not None:
                shadow.drained(30.0)  # untimed: the next side starts on an idle thread
            return h.Timed(sum(times), times)

        return go

    race = h.Race("direct", {name: way(store) for name, store in sides.items()}, ratio="time")
    race.run(max(1, rounds * len(qs) // BLOCK), warmup=max(1, min(WARM, len(qs)) // BLOCK))
    for store in sides.values():
        store.close()
    per_query = {name: [t for block in race.results[name] for t in block] for name in sides}
    shadowed = {name: alias.status(name, registry=reg).figures[candidate] for name in ("s01", "s10")}
    out: dict[str, Any] = {"n": n, "dim": dim, "queries": queries, "rounds": rounds, "think_ms": think_ms}
    for name, times in per_query.items():
        out[name] = {
            "p50_ms": round(h.percentile_ms(times, 50), 3),
            "p99_ms": round(h.percentile_ms(times, 99), 3),
        }
        if name != "direct":
            out[name] |= {
                "p50_ratio": round(out[name]["p50_ms"] / out["direct"]["p50_ms"], 3),
                "p99_ratio": round(out[name]["p99_ms"] / out["direct"]["p99_ms"], 3),
            }
    out["shadowed"] = {k: {"queries": v.queries, "overlap": v.overlap} for k, v in shadowed.items()}
    return out


def main() -> None:
    ap = h.parser(__doc__, n=20_000, dim=128, repeat=3, quick={"n": 2000, "queries": 60, "repeat": 1})
    ap.add_argument("--queries", type=int, default=400)
    ap.add_argument(
        "--think",
        type=float,
        default=0.0,
        help="mean milliseconds of the app's own work between two calls (exponential; 0: back to back)",
    )
    args = h.parse(ap)
    with h.workdir("alias-bench") as root:
        out = run(args.n, args.dim, args.queries, args.repeat, root, args.think)
    names = [k for k in out if k == "direct" or k.startswith("alias")]
    rows = [
        [
            name,
            out[name]["p50_ms"],
            out[name]["p99_ms"],
            out[name].get("p50_ratio", 1.0),
            out[name].get("p99_ratio", 1.0),
        ]
        for name in names
    ]
    text = (
        f"{args.n:,} records, {args.dim} dims, {args.queries} queries x {args.repeat} rounds, "
        f"think {args.think:g} ms\n"
        + h.table(["side", "p50 ms", "p99 ms", "p50 / direct", "p99 / direct"], rows)
        + "".join(
            f"\nshadowed by {k}: {s['queries']} queries, overlap@k {s['overlap']:.3f}"
            for k, s in out["shadowed"].items()
        )
    )
    h.emit("alias", args, out, text)


if __name__ == "__main__":
    main()
