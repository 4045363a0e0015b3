"""The ingest cycle on the real backends (skipped when a backend is not in this tree)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import pytest

import vectorport
from vectorport.ingest import ChunkingConfig, HashEmbedder, diagnose, ingest
from vectorport.search import search
from vectorport.testing.backends import backend_params

from .ingest_helpers import long_markdown

SMALL = ChunkingConfig(60, 8, 10)
_names = itertools.count()


@pytest.mark.parametrize("backend", backend_params())
def test_ingest_cycle(
    backend: str, url_for: Callable[..., str], tree: Callable[[dict[str, str]], Path]
) -> None:
    url = url_for(backend)
    root = tree(
        {
            "docs/a.md": long_markdown("Alpha", 3),
            "docs/b.md": long_markdown("Beta", 2),
            "mail/list.mbox": "From x@y Mon Jan  1 00:00:00 2024\nSubject: Hello\n\nA mail body.\n",
            "page.html": "<title>P</title><p>Some page text about orchards.</p>",
        }
    )
    emb = HashEmbedder(48)
    first = ingest(root, url, embedder=emb, chunking=SMALL)
    assert first.added == 4
    with vectorport.connect(url) as store:
        assert store.count() == first.chunks_written
        assert store.spec.embedding_model == emb.model_id  # recorded on the collection
        rec = store.get(["docs/a.md#chunk0"])[0]
        assert rec.metadata["embedding_model"] == emb.model_id and rec.metadata["title"] == "Alpha"
    again = ingest(root, url, embedder=emb, chunking=SMALL)
    assert again.skipped == 4 and again.embedding_calls == 0

    (root / "docs/a.md").write_text(long_markdown("Alpha", 1))
    (root / "page.html").unlink()
    third = ingest(root, url, embedder=emb, chunking=SMALL)
    assert (third.updated, third.removed, third.skipped) == (1, 1, 2)
    with vectorport.connect(url) as store:
        keys = sorted(r.key for r in store.records(include=["metadata"]))  # type: ignore[attr-defined]
        a_keys = [k for k in keys if k.startswith("docs/a.md#")]
        assert sorted(a_keys) == sorted(f"docs/a.md#chunk{i}" for i in range(len(a_keys)))
        assert not any(k.startswith("page.html") for k in keys)
        found = search(store, emb, "orchards mail body", k=3, collapse=True)
        assert found.k_returned >= 1
        with pytest.raises(vectorport.ConfigurationError):
            search(store, HashEmbedder(48, seed=2), "x")
        report = diagnose(store, embedder=emb, source_root=root, sample=0)
        assert report.ok, report.findings
        store.drop()
