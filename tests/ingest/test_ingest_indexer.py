from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import vectorport
from vectorport.ingest import (
    ChunkingConfig,
    Corpus,
    HashEmbedder,
    Indexer,
    ModelMismatchError,
    connect_for,
    ingest,
)
from vectorport.ingest.embedders.base import InputType, Matrix
from vectorport.search import search

from .ingest_helpers import long_markdown

pytestmark = pytest.mark.memory

SMALL = ChunkingConfig(60, 8, 10)


def keys_by_source(store: vectorport.VectorStore) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for rec in store.records(include=["metadata"]):  # type: ignore[attr-defined]
        out.setdefault(rec.metadata["source"], []).append(rec.key)
    return {s: sorted(k, key=lambda x: int(x.rsplit("chunk", 1)[1])) for s, k in out.items()}


def test_add_skip_update_shrink_delete(tree: Callable[[dict[str, str]], Path], memory_url: str) -> None:
    root = tree(
        {
            "docs/a.md": long_markdown("Alpha", sections=3),
            "docs/b.md": long_markdown("Beta", sections=2),
            "notes/c.txt": "Gamma notes.\n\nSecond paragraph of gamma.",
            "ignored.bin": "x",
            ".hidden/d.md": "# hidden",
        }
    )
    emb = HashEmbedder(32)
    store = connect_for(memory_url, emb)
    first = Indexer(store, emb, chunking=SMALL).run(Corpus(root))
    assert (first.added, first.updated, first.removed, first.skipped) == (3, 0, 0, 0)
    assert first.embedding_calls >= 1 and first.chunks_written == store.count()
    state = keys_by_source(store)
    assert set(state) == {"docs/a.md", "docs/b.md", "notes/c.txt"}
    a_keys = state["docs/a.md"]
    assert a_keys == [f"docs/a.md#chunk{i}" for i in range(len(a_keys))]
    rec = store.get(["docs/a.md#chunk1"])[0]
    meta = rec.metadata
    assert meta["source"] == "docs/a.md" and meta["chunk_index"] == 1 and meta["total_chunks"] == len(a_keys)
    assert (
        meta["embedding_model"] == "hash:32"
        and meta["title"] == "Alpha"
        and meta["section"].startswith("Alpha")
    )
    assert len(meta["doc_hash"]) == 64 and len(meta["content_hash"]) == 64
    assert rec.text and store.spec.embedding_model == "hash:32"

    # unchanged: everything skipped, not a single embedding call
    calls = emb.calls
    again = Indexer(store, emb, chunking=SMALL).run(Corpus(root))
    assert (again.added, again.updated, again.removed, again.skipped) == (0, 0, 0, 3)
    assert again.embedding_calls == 0 and emb.calls == calls and again.chunks_written == 0

    # change a (shrink it), delete b
    (root / "docs/a.md").write_text(long_markdown("Alpha", sections=1))
    (root / "docs/b.md").unlink()
    third = Indexer(store, emb, chunking=SMALL).run(Corpus(root))
    assert (third.added, third.updated, third.removed, third.skipped) == (0, 1, 1, 1)
    state = keys_by_source(store)
    assert set(state) == {"docs/a.md", "notes/c.txt"}
    new_a = state["docs/a.md"]
    assert len(new_a) < len(a_keys) and new_a == [f"docs/a.md#chunk{i}" for i in range(len(new_a))]
    assert third.chunks_reused > 0  # the unchanged opening chunks kept their vectors
    assert store.count() == sum(len(v) for v in state.values())
    # idempotent
    fourth = Indexer(store, emb, chunking=SMALL).run(Corpus(root))
    assert fourth.skipped == 2 and fourth.embedding_calls == 0


def test_scope_and_no_prune(tree: Callable[[dict[str, str]], Path], memory_url: str) -> None:
    root = tree({"docs/a.md": "# A\n\nalpha text", "corpus/b.txt": "beta text"})
    report = ingest(root / "docs", memory_url, embedder="hash:16", root=root, extra_paths=[root / "corpus"])
    assert report.added == 2
    (root / "corpus/b.txt").unlink()
    only_docs = ingest(root / "docs", memory_url, embedder="hash:16", root=root)
    assert only_docs.removed == 0 and only_docs.skipped == 1  # corpus/ is outside this run's scope
    kept = ingest(root, memory_url, embedder="hash:16", prune=False)
    assert kept.removed == 0
    pruned = ingest(root, memory_url, embedder="hash:16")
    assert pruned.removed == 1
    assert {r.metadata["source"] for r in vectorport.connect(memory_url).records(include=["metadata"])} == {
        "docs/a.md"
    }


def test_records_not_ours_are_left_alone(tree: Callable[[dict[str, str]], Path], memory_url: str) -> None:
    root = tree({"a.md": "# A\n\nalpha"})
    emb = HashEmbedder(16)
    store = connect_for(memory_url, emb)
    store.upsert([vectorport.Record("manual-1", emb.embed_query("x"), {"note": "hand-written"}, "x")])
    ingest(root, store, embedder=emb)
    (root / "a.md").unlink()
    ingest(root, store, embedder=emb)
    assert [r.key for r in store.records(include=[])] == ["manual-1"]


class Flaky(HashEmbedder):
    """Fails on the n-th batch: an interrupted run."""

    def __init__(self, fail_at: int, **kw: Any) -> None:
        super().__init__(32, batch_size=4, **kw)
        self.fail_at = fail_at

    def _embed_batch(self, texts: list[str], input_type: InputType) -> Matrix:
        if self.calls == self.fail_at:
            raise KeyboardInterrupt("simulated interrupt")
        return super()._embed_batch(texts, input_type)


class FailingDelete:
    """Wraps a store; ``delete`` raises once, after the upsert went through."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.armed = True

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def delete(self, *a: Any, **kw: Any) -> int:
        if self.armed:
            self.armed = False
            raise KeyboardInterrupt("killed between write and delete")
        return int(self._store.delete(*a, **kw))


def test_interrupted_runs_converge(tree: Callable[[dict[str, str]], Path], memory_url: str) -> None:
    root = tree({f"d{i}.md": long_markdown(f"Doc{i}", sections=2) for i in range(4)})
    store = connect_for(memory_url, HashEmbedder(32))
    with pytest.raises(KeyboardInterrupt):
        Indexer(store, Flaky(3), chunking=SMALL, flush_texts=8).run(Corpus(root))
    partial = store.count()
    assert partial > 0
    done = Indexer(store, HashEmbedder(32), chunking=SMALL).run(Corpus(root))
    assert done.added + done.skipped == 4
    clean = connect_for("memory://ingest-reference", HashEmbedder(32))
    try:
        Indexer(clean, HashEmbedder(32), chunking=SMALL).run(Corpus(root))
        assert keys_by_source(store) == keys_by_source(clean)
    finally:
        clean.drop()

    # shrink a doc; die after the new chunks were written but before the stale ones went
    (root / "d0.md").write_text(long_markdown("Doc0", sections=1))
    wrapped = FailingDelete(store)
    with pytest.raises(KeyboardInterrupt):
        Indexer(wrapped, HashEmbedder(32), chunking=SMALL).run(Corpus(root))  # type: ignore[arg-type]
    emb = HashEmbedder(32)
    repaired = Indexer(store, emb, chunking=SMALL).run(Corpus(root))
    assert repaired.updated == 1 and repaired.embedding_calls == 0 and repaired.chunks_deleted > 0
    expected = len(keys_by_source(store)["d0.md"])
    assert keys_by_source(store)["d0.md"] == [f"d0.md#chunk{i}" for i in range(expected)]
    assert Indexer(store, emb, chunking=SMALL).run(Corpus(root)).skipped == 4


def test_changed_chunking_or_model_reembeds(tree: Callable[[dict[str, str]], Path], memory_url: str) -> None:
    root = tree({"a.md": long_markdown("A", sections=2)})
    emb = HashEmbedder(32)
    store = connect_for(memory_url, emb)
    Indexer(store, emb, chunking=SMALL).run(Corpus(root))
    other = Indexer(store, emb, chunking=ChunkingConfig(40, 5, 5)).run(Corpus(root))
    assert other.updated == 1 and other.chunks_written > 0
    with pytest.raises(ModelMismatchError, match="hash:32"):
        Indexer(store, HashEmbedder(32, seed=7)).run(Corpus(root))
    with pytest.raises(vectorport.ConfigurationError, match="embedded with"):
        connect_for(memory_url, HashEmbedder(32, seed=7))


def test_failed_file_is_reported_and_kept(tree: Callable[[dict[str, str]], Path], memory_url: str) -> None:
    root = tree({"a.md": "# A\n\nfine", "b.md": "# B\n\nalso fine"})
    ingest(root, memory_url, embedder="hash:16")
    (root / "b.md").unlink()
    (root / "b.md").symlink_to(root / "missing-target.md")  # listed, but unreadable
    report = ingest(root, memory_url, embedder="hash:16")
    assert report.failed == 1 and report.removed == 0 and report.skipped == 1
    failed = next(d for d in report.documents if d.action == "failed")
    assert failed.source == "b.md" and "FileNotFoundError" in (failed.error or "")
    assert vectorport.connect(memory_url).get(["b.md#chunk0"])  # its chunks were kept


def test_search_collapse_filter_min_score(tree: Callable[[dict[str, str]], Path], memory_url: str) -> None:
    root = tree(
        {
            "apples.md": "# Apples\n\n"
            + "\n\n".join(f"Red apples grow on trees, batch {i}." for i in range(12)),
            "pears.md": "# Pears\n\nGreen pears are sweet.",
            "stones.txt": "Granite and basalt are rocks.",
        }
    )
    emb = HashEmbedder(64)
    store = connect_for(memory_url, emb)
    Indexer(store, emb, chunking=ChunkingConfig(16, 0, 2)).run(Corpus(root))
    plain = search(store, emb, "red apples trees", k=3)
    assert plain.k_returned == 3 and all(m.key.startswith("apples.md#") for m in plain.matches)
    collapsed = search(store, emb, "red apples trees", k=3, collapse=True)
    sources = [m.metadata["source"] for m in collapsed.matches if m.metadata]
    assert sources[0] == "apples.md" and len(set(sources)) == len(sources)
    assert collapsed.collapsed[collapsed.matches[0].key] > 1
    filtered = search(store, emb, "red apples", k=5, filter={"format": "text"})
    assert [m.metadata["source"] for m in filtered.matches if m.metadata] == ["stones.txt"]
    strict = search(store, emb, "red apples trees", k=10, min_score=0.5)
    assert all(m.score >= 0.5 for m in strict.matches)
    with pytest.raises(ModelMismatchError, match="embedded with 'hash:64'"):
        search(store, HashEmbedder(64, seed=1), "apples")
    with pytest.raises(ModelMismatchError, match="64-dimensional"):
        bare = vectorport.connect(memory_url.replace("ingest-", "bare-"), dimension=64)
        try:
            search(bare, HashEmbedder(32), "apples")
        finally:
            bare.drop()


def test_unchanged_reingest_of_many_documents_makes_no_call(
    tree: Callable[[dict[str, str]], Path], memory_url: str
) -> None:
    root = tree({f"d/{i:03d}.txt": f"Document {i}.\n\n" + "words " * (i % 40 + 5) for i in range(150)})
    emb = HashEmbedder(16)
    ingest(root, memory_url, embedder=emb)
    before = emb.calls
    report = ingest(root, memory_url, embedder=emb)
    assert report.skipped == 150 and report.embedding_calls == 0 and emb.calls == before
    vecs = np.stack([np.asarray(r.vector) for r in vectorport.connect(memory_url).records()])
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
