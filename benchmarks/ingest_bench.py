"""Ingest benchmark: re-ingesting an unchanged 10k-chunk corpus, and embedding throughput.

    python benchmarks/ingest_bench.py [--chunks 10000] [--url memory://bench] [--st-texts 256] [--json]
        [--output FILE] [--quick]

1. Writes a synthetic corpus of ``--chunks`` chunks (``--files`` Markdown files), ingests it with
   the ``hash`` embedder (so the store and the bookkeeping are measured, not a model), then
   re-ingests it unchanged — which must make **0 embedding calls** — and again after touching 1 %
   of the files.
2. Embedding throughput of all-MiniLM-L6-v2 (offline) per batch size (the same texts, the same
   loaded weights, the batch sizes in turns; ratios against batch 1), and of the hash embedder.

Prints a table and the ratios; exit 1 if the unchanged re-ingest embedded anything.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _harness as h

import vectorport
from vectorport.ingest import ChunkingConfig, HashEmbedder, SentenceTransformerEmbedder, ingest

WORDS = [
    "vector",
    "store",
    "chunk",
    "embedding",
    "query",
    "filter",
    "metric",
    "cosine",
    "migrate",
    "verify",
    "index",
    "scan",
    "cursor",
    "segment",
    "batch",
    "upsert",
    "delete",
    "document",
    "section",
    "paragraph",
    "token",
    "model",
    "drift",
    "canary",
    "health",
]


def write_corpus(root: Path, files: int, chunks_per_file: int, words_per_chunk: int) -> None:
    n = 0
    for f in range(files):
        paras = [f"# Document {f}"]
        for _ in range(chunks_per_file):
            words = [f"{WORDS[(n + i) % len(WORDS)]}{(n * 7 + i) % 1009}" for i in range(words_per_chunk)]
            paras.append(" ".join(words) + ".")
            n += 1
        sub = root / f"part{f % 20:02d}"
        sub.mkdir(exist_ok=True)
        (sub / f"doc{f:05d}.md").write_text("\n\n".join(paras) + "\n")


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    got = h.timed(fn)
    return got.detail, got.seconds


def reingest(args: argparse.Namespace) -> dict[str, Any]:
    """The first ingest, an unchanged re-ingest and one after 1 % of the files changed."""
    per_file = max(1, args.n // args.files)
    words = 40
    chunking = ChunkingConfig(words + 2, 0, 1)  # one paragraph = one chunk with the hash tokenizer
    emb = HashEmbedder(384)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_corpus(root, args.files, per_file, words)
        first, t_first = timed(lambda: ingest(root, args.url, embedder=emb, chunking=chunking))
        again, t_again = timed(lambda: ingest(root, args.url, embedder=emb, chunking=chunking))
        touched = sorted(root.rglob("*.md"))[::100]
        for p in touched:
            p.write_text(p.read_text() + "\nAn edited closing line.\n")
        edited, t_edit = timed(lambda: ingest(root, args.url, embedder=emb, chunking=chunking))
        with vectorport.connect(args.url) as store:
            count = store.count()
            if args.url.startswith("memory://"):
                store.drop()
    return {
        "chunks": count,
        "first": {"s": round(t_first, 3), "calls": first.embedding_calls, "embedded": first.chunks_embedded},
        "unchanged": {"s": round(t_again, 3), "calls": again.embedding_calls, "skipped": again.skipped},
        "edited": {
            "files": len(touched),
            "s": round(t_edit, 3),
            "calls": edited.embedding_calls,
            "embedded": edited.chunks_embedded,
            "reused": edited.chunks_reused,
        },
        "unchanged_vs_first_time": round(t_again / t_first, 3),
    }


def throughput(st_texts: int) -> dict[str, Any]:
    """Texts per second of the hash embedder, and of MiniLM per batch size against batch 1."""
    texts = [" ".join(WORDS[(i + j) % len(WORDS)] for j in range(80)) for i in range(max(st_texts, 1))]
    hash_vecs, t_hash = timed(lambda: HashEmbedder(384, batch_size=256).embed_documents(texts * 20))
    out: dict[str, Any] = {"hash_384_texts_per_s": round(len(hash_vecs) / t_hash)}
    if not st_texts:
        return out
    st = SentenceTransformerEmbedder()
    _, t_load = timed(lambda: st.dimension)
    out["minilm_load_s"] = round(t_load, 1)
    st.embed_documents(texts[:8])  # warm-up
    ways: dict[str, h.Way] = {}
    for bs in (1, 8, 32, 128):
        batched = SentenceTransformerEmbedder(batch_size=bs)
        batched._model = st.model  # same loaded weights, another batch size
        ways[f"batch {bs}"] = lambda r, b=batched: b.embed_documents(texts)
    race = h.Race("batch 1", ways).run(1)
    out["minilm_texts_per_s"] = {w: round(len(texts) / race.median(w), 1) for w in ways}
    out["minilm_vs_batch_1"] = race.ratios()
    return out


def main() -> int:
    ap = h.parser(__doc__, n=10_000, quick={"n": 1000, "files": 100, "st_texts": 16})
    ap.add_argument("--chunks", dest="n", type=int, default=argparse.SUPPRESS, help="the same as --n")
    ap.add_argument("--files", type=int, default=1_000)
    ap.add_argument("--url", default="memory://ingest-bench")
    ap.add_argument("--st-texts", type=int, default=256, help="texts per MiniLM batch-size run (0: skip)")
    args = h.parse(ap)
    h.log(f"ingest of {args.n:,} chunks in {args.files:,} files, three times …")
    re = reingest(args)
    h.log("embedding throughput …")
    tp = throughput(args.st_texts)
    f, u, e = re["first"], re["unchanged"], re["edited"]
    rows = [
        ["chunks in the collection", f"{re['chunks']}"],
        ["first ingest", f"{f['s']:.2f} s, {f['calls']} embedding calls, {f['embedded']} texts"],
        ["re-ingest, unchanged", f"{u['s']:.2f} s, {u['calls']} embedding calls, skipped {u['skipped']}"],
        [
            f"re-ingest, {e['files']} files edited",
            f"{e['s']:.2f} s, {e['calls']} calls, {e['embedded']} embedded, {e['reused']} reused",
        ],
        ["unchanged / first (time)", f"{re['unchanged_vs_first_time']:.3f}"],
        ["hash:384 throughput", f"{tp['hash_384_texts_per_s']:,} texts/s"],
    ]
    if "minilm_load_s" in tp:
        rows.append(["MiniLM load (offline)", f"{tp['minilm_load_s']:.1f} s"])
        for way, rate in tp["minilm_texts_per_s"].items():
            ratio = tp["minilm_vs_batch_1"].get(way, 1.0)
            rows.append([f"MiniLM {way} (~100 tokens/text)", f"{rate:6.1f} texts/s  ({ratio:.2f}x batch 1)"])
    h.emit(
        "ingest",
        args,
        {"reingest": re, "throughput": tp},
        f"ingest benchmark ({args.url})\n" + h.table(["", ""], rows),
    )
    if u["calls"] != 0 or u["skipped"] != args.files:
        h.log("FAIL: an unchanged re-ingest embedded something")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
