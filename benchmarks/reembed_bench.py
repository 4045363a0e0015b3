"""Re-embedding throughput: ``vectorport.migrate`` with ``reembed=MODEL`` against the same embedder
called directly, in the same run, with the default batch size and concurrency.

    python benchmarks/reembed_bench.py [--n 5000] [--model sentence-transformers:all-MiniLM-L6-v2]
                                       [--repeat 3]

N records (``clustered_records``: a text of 39-43 characters each) in a ``memory://`` source. Direct:
``embedder.embed_documents`` over every text, in the embedder's own batches, one caller. Through
vectorport: ``vectorport.migrate.run(src, dst, reembed=MODEL, verify=False)``, its copy's seconds
(scan, embedding, writes; the model load before it and the plan are not counted: the direct leg
also times a fresh embedder whose model is loaded). Torch's own threads contend with the copy's
on a small busy machine: compare with ``OMP_NUM_THREADS=1``. Ratio = vectorport's chunks/s over
the direct chunks/s (goal >= 0.9); ``--repeat R``: R rounds, each the direct leg then vectorport,
and the median ratio. Prints one JSON document.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import uuid

import vectorport
from vectorport.ingest.embedders import resolve_embedder
from vectorport.testing import clustered_records


def _direct(model: str, texts: list[str]) -> float:
    embedder = resolve_embedder(model)
    # loads the model, as the migration does (its plan reads the dimension) before its copy; the
    # instance is as fresh as the migration's (a torch model's first pass over new shapes is slower)
    assert embedder.dimension > 0
    t0 = time.perf_counter()
    embedder.embed_documents(texts)
    return len(texts) / (time.perf_counter() - t0)


def _through_vectorport(model: str, source: str) -> tuple[float, dict[str, object]]:
    target = f"memory://reembed-bench-dst-{uuid.uuid4().hex[:8]}"
    report = vectorport.migrate.run(source, target, reembed=model, verify=False)
    vectorport.connect(target).drop()
    assert report.copy is not None and report.copy.complete
    return report.copy.rate, {"batch_size": report.copy.batch_size, "concurrency": report.copy.concurrency}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--dim", type=int, default=384, help="source vectors (replaced by the model's)")
    parser.add_argument("--model", default="sentence-transformers:all-MiniLM-L6-v2")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    source = f"memory://reembed-bench-src-{uuid.uuid4().hex[:8]}"
    records = list(clustered_records(args.n, args.dim))
    with vectorport.connect(source, dimension=args.dim) as src:
        src.upsert(records)
    texts = [r.text or "" for r in records]
    rounds = []
    for _ in range(args.repeat):
        direct = _direct(args.model, texts)
        through, defaults = _through_vectorport(args.model, source)
        rounds.append({"direct_chunks_per_s": round(direct, 1), "vectorport_chunks_per_s": round(through, 1)})
    vectorport.connect(source).drop()
    ratios = [r["vectorport_chunks_per_s"] / r["direct_chunks_per_s"] for r in rounds]
    out = {"n": args.n, "model": args.model, "defaults": defaults, "rounds": rounds}
    out["ratio_median"] = round(statistics.median(ratios), 3)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
