"""``chroma:default`` is all-MiniLM-L6-v2: vectorport's sentence-transformers embedder and
chromadb's own ``DefaultEmbeddingFunction`` (ONNX Runtime) agree on real text, vector by vector."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import vectorport
from vectorport.cli._common import cli_text
from vectorport.ingest import ModelMismatchError, check_embedder, resolve_embedder, same_model

pytestmark = pytest.mark.chroma

CORPUS = Path(__file__).resolve().parents[2] / "corpus"


def real_texts() -> list[str]:
    """Paragraphs of the demo corpus (verse, speeches, scripture, fables), a whole document far
    beyond the 256-token window, and a few short queries and non-English lines."""
    paragraphs: list[str] = []
    for path in sorted(CORPUS.rglob("*")):
        if path.suffix in (".md", ".txt"):
            text = path.read_text(encoding="utf-8")
            paragraphs += [p.strip() for p in text.split("\n\n") if len(p.strip()) > 40][:6]
    long_document = (CORPUS / "america" / "declaration_of_independence.txt").read_text(encoding="utf-8")
    return [
        *paragraphs,
        long_document,
        "login problems",
        "I cannot sign in after resetting my password",
        "Ünïcödé, naïve café — 東京の天気は晴れです",
        "x",
    ]


def test_chroma_default_is_the_packaged_minilm(chroma_default_ef: Path) -> None:
    from chromadb.utils.embedding_functions import DefaultEmbeddingFunction

    texts = real_texts()
    assert len(texts) > 40
    theirs = np.asarray(DefaultEmbeddingFunction()(texts), dtype=np.float64)
    embedder = resolve_embedder("chroma:default")
    ours = embedder.embed_documents(texts).astype(np.float64)
    assert embedder.model_id == "chroma:default" and embedder.dimension == 384
    assert theirs.shape == ours.shape == (len(texts), 384)
    np.testing.assert_allclose(np.linalg.norm(theirs, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    cosine = np.einsum("ij,ij->i", theirs, ours)
    worst = int(np.argmin(cosine))
    assert cosine.min() >= 0.999, f"cosine {cosine.min():.6f} for {texts[worst][:80]!r}"


def test_chroma_default_names_the_same_model_as_the_default_embedder() -> None:
    assert same_model("chroma:default", "sentence-transformers:all-MiniLM-L6-v2")
    assert same_model("chroma:all-MiniLM-L6-v2", "st:all-MiniLM-L6-v2")
    assert not same_model("chroma:default", "hash:384")
    with pytest.raises(vectorport.ConfigurationError, match="cannot run"):
        resolve_embedder("chroma:text-embedding-3-small")


def test_mismatch_advice_is_typable() -> None:
    from vectorport.ingest import HashEmbedder

    store = vectorport.connect("memory://default-advice", dimension=16, embedding_model="chroma:default")
    try:
        with pytest.raises(ModelMismatchError, match="embedder='chroma:default'") as caught:
            check_embedder(store, HashEmbedder(16))
        (advice,) = [a for a in caught.value.advice if a.option == "embedder"]
        assert resolve_embedder(advice.value).model_id == "chroma:default"
        assert "query with --embedder chroma:default, or re-embed" in cli_text(caught.value)
        # a model vectorport cannot run is not offered as an embedder
        other = vectorport.connect("memory://chroma-openai-advice", dimension=16, embedding_model="chroma:x")
        with pytest.raises(ModelMismatchError) as caught:
            check_embedder(other, HashEmbedder(16))
        assert not [a for a in caught.value.advice if a.option == "embedder"], str(caught.value)
        other.drop()
    finally:
        store.drop()
