from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import vectorport
from vectorport.backends.memory import store as memory_backend
from vectorport.ingest import (
    CanarySet,
    ChunkingConfig,
    Corpus,
    HashEmbedder,
    Indexer,
    check_canaries,
    connect_for,
    diagnose,
    record_canaries,
)

from .ingest_helpers import long_markdown

pytestmark = pytest.mark.memory

SMALL = ChunkingConfig(60, 8, 10)


def build(root: Path, url: str, emb: HashEmbedder) -> vectorport.BaseStore:
    store = connect_for(url, emb)
    Indexer(store, emb, chunking=SMALL).run(Corpus(root))
    return store


def checks(report: object) -> set[str]:
    return {f.check for f in report.findings}  # type: ignore[attr-defined]


def test_healthy_collection_has_no_findings(tree: Callable[[dict[str, str]], Path], memory_url: str) -> None:
    root = tree({"a.md": long_markdown("A", 2), "b.md": long_markdown("B", 2)})
    emb = HashEmbedder(32)
    store = build(root, memory_url, emb)
    report = diagnose(store, embedder=emb, source_root=root, sample=0)
    assert report.ok, report.findings
    assert report.records == store.count() and report.stats["norm"]["normalised"]
    assert report.stats["embedding_drift"]["min_similarity"] > 0.999
    assert "orphan" in report.checks_run and "canary-drift" in report.checks_skipped
    # a skipped check names the keyword argument that enables it, not a command-line flag
    assert diagnose(store).checks_skipped == {
        "orphan": "no source root given (source_root)",
        "embedding-drift": "no embedder",
        "canary-drift": "no canaries given (canaries)",
    }


def test_document_reembedded_with_another_model_is_flagged(
    tree: Callable[[dict[str, str]], Path], memory_url: str
) -> None:
    root = tree({"a.md": long_markdown("A", 2), "b.md": long_markdown("B", 2)})
    emb = HashEmbedder(32)
    store = build(root, memory_url, emb)
    # someone re-embeds b.md with another model of the same dimension, bypassing the model check
    other = HashEmbedder(32, seed=9)
    recs = [r for r in store.records() if r.metadata["source"] == "b.md"]
    vecs = other.embed_documents([r.text or "" for r in recs])
    store.upsert(
        vectorport.Record(r.key, v, {**r.metadata, "embedding_model": other.model_id}, r.text)
        for r, v in zip(recs, vecs, strict=True)
    )
    report = diagnose(store, embedder=emb, sample=0)
    stale = next(f for f in report.findings if f.check == "stale-model")
    assert stale.count == len(recs) and "hash:32:9" in stale.message
    assert all(k.startswith("b.md#") for k in stale.keys)
    # the silent variant: new vectors, metadata still claiming the old model
    silent = [r for r in store.records() if r.metadata["source"] == "a.md"]
    store.upsert(
        vectorport.Record(r.key, v, {**r.metadata}, r.text)
        for r, v in zip(silent, other.embed_documents([r.text or "" for r in silent]), strict=True)
    )
    report = diagnose(store, embedder=emb, sample=0)
    drift = next(f for f in report.findings if f.check == "embedding-drift")
    assert drift.count == len(silent)


def test_vector_checks_duplicates_orphans_torn(
    tree: Callable[[dict[str, str]], Path], memory_url: str
) -> None:
    root = tree({"a.md": long_markdown("A", 2), "copy/a.md": long_markdown("A", 2), "c.txt": "short c"})
    emb = HashEmbedder(32)
    store = build(root, memory_url, emb)
    (root / "c.txt").unlink()
    # corrupt vectors behind the store's back: the doctor must still see it
    coll = memory_backend._NAMESPACE[store.collection]
    row = coll.rows["a.md#chunk0"]
    coll.vectors[row, 3] = np.nan
    coll.vectors[coll.rows["a.md#chunk1"]] *= 5.0
    # a torn document: one chunk claims another doc_hash
    meta = coll.metadatas[coll.rows["a.md#chunk2"]]
    meta["doc_hash"] = "0" * 64
    report = diagnose(store, embedder=emb, source_root=root)
    found = {f.check: f for f in report.findings}
    assert found["non-finite"].keys == ("a.md#chunk0",)
    assert found["norm"].keys == ("a.md#chunk1",)
    assert found["duplicate-content"].count >= 2 and "copy/a.md#chunk3" in found["duplicate-content"].keys
    assert found["orphan"].keys == ("c.txt#chunk0",)
    assert "a.md#chunk2" in found["torn-document"].keys
    skipped = diagnose(store, skip=("duplicate-content", "norm", "non-finite", "torn-document"))
    assert checks(skipped) == set()


def test_canaries_catch_a_silently_changed_embedder(
    tree: Callable[[dict[str, str]], Path], memory_url: str, tmp_path: Path
) -> None:
    root = tree({f"d{i}.md": long_markdown(f"Doc{i}", 2) for i in range(4)})
    emb = HashEmbedder(32)
    store = build(root, memory_url, emb)
    recorded = record_canaries(store, emb, k=5, n=4)
    assert len(recorded.canaries) == 4 and all(len(c.keys) == 5 for c in recorded.canaries)
    path = recorded.save(tmp_path / "canaries.json")
    loaded = CanarySet.load(path)
    steady = check_canaries(store, emb, loaded)
    assert not any(c.drifted for c in steady) and all(c.overlap == 1.0 for c in steady)
    # the endpoint now returns other vectors under the same model name
    changed = HashEmbedder(32, seed=3)
    changed_same_name = type("Impostor", (HashEmbedder,), {"model_id": property(lambda self: "hash:32")})(
        32, seed=3
    )
    assert changed_same_name.model_id == emb.model_id != changed.model_id
    drift = check_canaries(store, changed_same_name, loaded)
    assert all(c.drifted for c in drift)
    assert all(c.vector_similarity < 0.99 for c in drift)
    report = diagnose(store, embedder=changed_same_name, canaries=loaded)
    assert "canary-drift" in checks(report) and not report.ok
    with pytest.raises(vectorport.ConfigurationError):
        CanarySet.load(tmp_path / "nope.json")


def test_canaries_still_run_when_a_stored_vector_is_corrupt(
    tree: Callable[[dict[str, str]], Path], memory_url: str
) -> None:
    """The write path refuses NaN, so a NaN vector comes from storage corruption: the doctor
    must report it and still run the canaries (whose queries rank over that row)."""
    root = tree({f"d{i}.md": long_markdown(f"Doc{i}", 2) for i in range(3)})
    emb = HashEmbedder(32)
    store = build(root, memory_url, emb)
    key = sorted(r.key for r in store.records())[0]
    with pytest.raises(vectorport.ValidationError, match=r"index 3"):
        store.upsert([vectorport.Record(key, [0.0] * 3 + [float("nan")] + [1.0] * 28)])
    coll = memory_backend._NAMESPACE[store.collection]
    coll.vectors[coll.rows[key], 3] = np.nan
    recorded = record_canaries(store, emb, k=5, n=3)
    report = diagnose(store, embedder=emb, canaries=recorded)
    assert report.findings[0].check == "non-finite" and report.findings[0].keys == (key,)
    assert len(report.canaries) == 3 and "canary-drift" in report.checks_run
    assert all(key not in store.query(c.vector, 5).keys for c in recorded.canaries)
