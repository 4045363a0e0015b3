"""Ingest benchmark: re-ingesting an unchanged 10k-chunk corpus, and embedding throughput.

    python benchmarks/ingest_bench.py [--chunks 10000] [--url memory://bench] [--st-texts 256]

1. Writes a synthetic corpus of ``--chunks`` chunks (``--files`` Markdown files), ingests it with
   the ``hash`` embedder (so the store and the bookkeeping are measured, not a model), then
   re-ingests it unchanged — which must make **0 embedding calls** — and again after touching 1 %
   of the files.
2. Embedding throughput of all-MiniLM-L6-v2 (offline) per batch size, and of the hash embedder.

Prints a table and the ratios; exit 1 if the unchanged re-ingest embedded anything.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

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


def timed(fn):  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", type=int, default=10_000)
    ap.add_argument("--files", type=int, default=1_000)
    ap.add_argument("--url", default="memory://ingest-bench")
    ap.add_argument("--st-texts", type=int, default=256, help="texts per MiniLM batch-size run (0: skip)")
    args = ap.parse_args()
    per_file = max(1, args.chunks // args.files)
    words = 40
    chunking = ChunkingConfig(words + 2, 0, 1)  # one paragraph = one chunk with the hash tokenizer
    emb = HashEmbedder(384)
    rows: list[tuple[str, str]] = []
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
    rows += [
        ("chunks in the collection", f"{count}"),
        (
            "first ingest",
            f"{t_first:.2f} s, {first.embedding_calls} embedding calls, {first.chunks_embedded} texts",
        ),
        (
            "re-ingest, unchanged",
            f"{t_again:.2f} s, {again.embedding_calls} embedding calls, skipped {again.skipped}",
        ),
        (
            f"re-ingest, {len(touched)} files edited",
            f"{t_edit:.2f} s, {edited.embedding_calls} calls, {edited.chunks_embedded} embedded, "
            f"{edited.chunks_reused} reused",
        ),
        ("unchanged / first (time)", f"{t_again / t_first:.3f}"),
    ]

    texts = [" ".join(WORDS[(i + j) % len(WORDS)] for j in range(80)) for i in range(max(args.st_texts, 1))]
    hash_vecs, t_hash = timed(lambda: HashEmbedder(384, batch_size=256).embed_documents(texts * 20))
    rows.append(("hash:384 throughput", f"{len(hash_vecs) / t_hash:,.0f} texts/s"))
    if args.st_texts:
        st = SentenceTransformerEmbedder()
        _, t_load = timed(lambda: st.dimension)
        rows.append(("MiniLM load (offline)", f"{t_load:.1f} s"))
        st.embed_documents(texts[:8])  # warm-up
        base = None
        for bs in (1, 8, 32, 128):
            st_b = SentenceTransformerEmbedder(batch_size=bs)
            st_b._model = st.model  # same loaded weights, another batch size
            _, t = timed(lambda b=st_b: b.embed_documents(texts))
            rate = len(texts) / t
            base = base or rate
            rows.append(
                (
                    f"MiniLM batch {bs:>3} (~100 tokens/text)",
                    f"{rate:6.1f} texts/s  ({rate / base:.2f}x batch 1)",
                )
            )
    width = max(len(a) for a, _ in rows)
    print(f"ingest benchmark ({args.url})")
    for a, b in rows:
        print(f"  {a:<{width}}  {b}")
    if again.embedding_calls != 0 or again.skipped != args.files:
        print("FAIL: an unchanged re-ingest embedded something", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
