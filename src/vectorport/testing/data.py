"""Deterministic test data: clustered vectors with realistic metadata.

Random uniform vectors make approximate search look perfect or hopeless at random; clustered
data (Gaussian blobs around random centres) is what real embeddings look like to an index.
"""

from __future__ import annotations

import numpy as np

from .._capabilities import MetadataRules
from .._models import JSON, Record, Vector

__all__ = ["LANGS", "TAGS", "clustered_records", "clustered_vectors", "query_vectors"]

LANGS = ("en", "fr", "de", "ja", "pt")
TAGS = ("api", "guide", "faq", "news", "blog", "ref")


def _centres(dim: int, clusters: int, seed: int) -> np.ndarray:
    centres = np.random.default_rng(seed).normal(size=(clusters, dim))
    return np.asarray(centres / np.linalg.norm(centres, axis=1, keepdims=True))


def clustered_vectors(
    n: int, dim: int, clusters: int = 16, seed: int = 0, spread: float = 0.15
) -> tuple[Vector, np.ndarray]:
    """``n`` float32 vectors around ``clusters`` random unit centres, and each one's cluster."""
    centres = _centres(dim, clusters, seed)
    rng = np.random.default_rng(seed + 1)
    labels = rng.integers(0, clusters, size=n)
    noise = rng.normal(scale=spread / np.sqrt(dim), size=(n, dim))
    return (centres[labels] + noise).astype(np.float32), labels


def query_vectors(n: int, dim: int, clusters: int = 16, seed: int = 0, spread: float = 0.3) -> Vector:
    """Query vectors near the same centres as :func:`clustered_vectors` with that ``seed``."""
    centres = _centres(dim, clusters, seed)
    rng = np.random.default_rng(seed + 2)
    picks = rng.integers(0, clusters, size=n)
    noise = rng.normal(scale=spread / np.sqrt(dim), size=(n, dim))
    return (centres[picks] + noise).astype(np.float32)


def _metadata(i: int, cluster: int, rng: np.random.Generator, rules: MetadataRules) -> dict[str, JSON]:
    meta: dict[str, JSON] = {
        "cluster": int(cluster),
        "lang": LANGS[int(rng.integers(0, len(LANGS)))],
        "stars": int(rng.integers(0, 100)),
        "score": round(float(rng.random()), 4),
        "draft": bool(rng.random() < 0.3),
        "source": f"docs/file{i % 37}.md",
    }
    ntags = int(rng.integers(1, 4))
    meta["tags"] = sorted({TAGS[int(t)] for t in rng.integers(0, len(TAGS), size=ntags)})
    if rng.random() < 0.25:  # a field missing on some records exercises $ne/$exists semantics
        del meta["lang"]
    if rng.random() < 0.2:
        meta["year"] = int(rng.integers(2015, 2026))
    if rules.nested_objects and rng.random() < 0.1:
        meta["author"] = {"name": f"user{i % 11}", "id": i % 11}
    return meta


def clustered_records(
    n: int,
    dim: int,
    *,
    clusters: int = 16,
    seed: int = 0,
    rules: MetadataRules | None = None,
    key_prefix: str = "docs/file",
) -> list[Record]:
    """``n`` records with chunk-style keys (``docs/file3.md#chunk7``), clustered vectors,
    metadata that fits ``rules`` (default: anything JSON), and a short text."""
    rules = rules or MetadataRules()
    vectors, labels = clustered_vectors(n, dim, clusters, seed)
    rng = np.random.default_rng(seed + 3)
    return [
        Record(
            f"{key_prefix}{i // 10}.md#chunk{i % 10}",
            vectors[i],
            _metadata(i, int(labels[i]), rng, rules),
            f"chunk {i} of cluster {int(labels[i])}: lorem ipsum dolor",
        )
        for i in range(n)
    ]
