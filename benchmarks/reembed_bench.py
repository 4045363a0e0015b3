"""Re-embedding throughput: ``vectorport.migrate`` with ``reembed=MODEL`` against the same embedder
called directly, in the same run, with the default batch size and concurrency.

    python benchmarks/reembed_bench.py [--n 5000] [--model sentence-transformers:all-MiniLM-L6-v2]
        [--repeat 3] [--json] [--output FILE] [--quick]

N records (``clustered_records``: a text of 39-43 characters each) in a ``memory://`` source. Direct:
``embedder.embed_documents`` over every text, in the embedder's own batches, one caller. Through
vectorport: ``vectorport.migrate.run(src, dst, reembed=MODEL, verify=False)``, its copy's seconds
(scan, embedding, writes; the model load before it and the plan are not counted, as the direct leg
loads its model before the clock starts too). Ratio = vectorport's chunks/s over the direct chunks/s
(goal >= 0.9); ``--repeat R``: R rounds, the two in turns, and the median ratio. ``--quick``
uses the ``hash:384`` embedder (no model to load). Torch's own threads contend with the copy's on
a small busy machine: compare with ``OMP_NUM_THREADS=1``.
"""

from __future__ import annotations

import uuid
from typing import Any

import _harness as h

import vectorport
from vectorport.ingest.embedders import resolve_embedder
from vectorport.testing import clustered_records


def _through_vectorport(model: str, source: str) -> h.Timed:
    """The migration's copy seconds (scan, embedding, writes), with the defaults it chose."""
    target = f"memory://reembed-bench-dst-{uuid.uuid4().hex[:8]}"
    report = vectorport.migrate.run(source, target, reembed=model, verify=False)
    vectorport.connect(target).drop()
    assert report.copy is not None and report.copy.complete
    defaults = {"batch_size": report.copy.batch_size, "concurrency": report.copy.concurrency}
    return h.Timed(report.copy.records / report.copy.rate, defaults)


def run(n: int, dim: int, model: str, rounds: int) -> dict[str, Any]:
    source = f"memory://reembed-bench-src-{uuid.uuid4().hex[:8]}"
    records = list(clustered_records(n, dim))
    with vectorport.connect(source, dimension=dim) as src:
        src.upsert(records)
    texts = [r.text or "" for r in records]
    embedder = resolve_embedder(model)
    embedder.embed_documents(texts[:8])  # loads the model (lazily loaded ones) before the clock
    race = h.Race(
        "direct",
        {
            "direct": lambda r: h.timed(lambda: embedder.embed_documents(texts)),
            "vectorport": lambda r: _through_vectorport(model, source),
        },
    ).run(rounds)
    vectorport.connect(source).drop()
    out: dict[str, Any] = {"n": n, "model": model, "defaults": race.results["vectorport"][-1]}
    out["rounds"] = [
        {"direct_chunks_per_s": round(n / d, 1), "vectorport_chunks_per_s": round(n / v, 1)}
        for d, v in zip(race.seconds["direct"], race.seconds["vectorport"], strict=True)
    ]
    # vectorport's chunks/s over the direct chunks/s, round by round, and their median
    out["ratio_median"] = race.summary()["median_round_ratio"]["vectorport"]
    return out


def main() -> None:
    ap = h.parser(__doc__, n=5000, repeat=3, quick={"n": 500, "repeat": 1, "model": "hash:384"})
    ap.add_argument("--model", default="sentence-transformers:all-MiniLM-L6-v2")
    args = h.parse(ap)
    out = run(args.n, args.dim, args.model, args.repeat)
    rows = [
        [i + 1, r["direct_chunks_per_s"], r["vectorport_chunks_per_s"]] for i, r in enumerate(out["rounds"])
    ]
    text = (
        f"re-embedding {args.n:,} chunks with {args.model} (defaults {out['defaults']})\n"
        + h.table(["round", "direct chunks/s", "vectorport chunks/s"], rows)
        + f"\nratio (vectorport / direct), median of rounds: {out['ratio_median']}"
    )
    h.emit("reembed", args, out, text)


if __name__ == "__main__":
    main()
