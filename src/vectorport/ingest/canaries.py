"""Canary queries: record what a handful of query texts retrieve today, re-run them later.

The failure they catch is the silent one: an embedding endpoint starts returning plausible but
different vectors, nothing errors, and retrieval quietly degrades. A canary stores its query
text, the query vector, its top-k keys and their scores. A later check re-embeds the text with
the current embedder and reports *drift* when

- the new query vector's cosine similarity to the recorded one falls below
  ``min_vector_similarity`` (the model itself changed), or
- the overlap of the new top-k keys with the recorded ones falls below ``min_overlap``, or
- the scores of keys found both times moved by more than ``max_score_shift`` on average.

Re-record the canaries (``vectorport doctor --record-canaries FILE``) after an intended change
such as re-indexing with a new model.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import heapq
import json
import os
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._embedder import Embedder
from .._protocol import VectorStore
from ..exceptions import ConfigurationError
from .embedders import same_model

__all__ = ["Canary", "CanaryResult", "CanarySet", "check_canaries", "default_canary_texts", "record_canaries"]

FORMAT = "vectorport-canaries/1"
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


@dataclass
class Canary:
    """One recorded query."""

    text: str
    vector: list[float]
    keys: list[str]
    scores: list[float]


@dataclass
class CanarySet:
    """Canaries of one collection, as written to the canary file (JSON)."""

    collection: str
    embedding_model: str
    k: int
    created: str
    canaries: list[Canary] = field(default_factory=list)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the JSON file (parent folders created)."""
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"format": FORMAT, **asdict(self)}, indent=1) + "\n", encoding="utf-8")
        return out

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> CanarySet:
        """Read a canary file written by :meth:`save`."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigurationError(f"cannot read the canary file {path}: {exc}") from exc
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ConfigurationError(f"{path} is not a vectorport canary file ({FORMAT})")
        canaries = [Canary(**c) for c in data["canaries"]]
        return cls(data["collection"], data["embedding_model"], int(data["k"]), data["created"], canaries)


@dataclass
class CanaryResult:
    """How one canary fared."""

    text: str
    overlap: float
    """Share of the recorded top-k keys found again."""
    score_shift: float | None
    """Mean absolute score change over keys found both times."""
    vector_similarity: float
    """Cosine similarity of the new query vector to the recorded one."""
    drifted: bool
    reasons: list[str]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def default_canary_texts(store: VectorStore, n: int = 8) -> list[str]:
    """``n`` query texts drawn from the collection: the opening sentence(s) of ``n`` chunks
    chosen by key hash (so the choice is stable across runs and backends)."""
    chosen: list[tuple[int, str, str]] = []
    for page in store.scan(include=["text"]):
        for rec in page:
            if not rec.text or not rec.text.strip():
                continue
            rank = -int.from_bytes(hashlib.sha1(rec.key.encode()).digest()[:8], "big")
            item = (rank, rec.key, rec.text)
            if len(chosen) < n:
                heapq.heappush(chosen, item)
            elif item > chosen[0]:
                heapq.heapreplace(chosen, item)
    out = []
    for _, _, text in sorted(chosen, key=lambda t: t[1]):
        words = " ".join(text.split())
        lead = ""
        for sentence in _SENTENCE.split(words):
            lead = f"{lead} {sentence}".strip()
            if len(lead) >= 60:
                break
        out.append(lead[:300])
    return out


def record_canaries(
    store: VectorStore, embedder: Embedder, texts: Sequence[str] | None = None, *, k: int = 10, n: int = 8
) -> CanarySet:
    """Run the canary queries now and keep their results (``texts`` default: drawn from the
    collection, see :func:`default_canary_texts`)."""
    queries = list(texts) if texts else default_canary_texts(store, n)
    if not queries:
        raise ConfigurationError("no canary texts: the collection holds no chunk text; pass texts")
    created = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    out = CanarySet(store.spec.name, embedder.model_id, k, created)
    for text in queries:
        vec = embedder.embed_query(text)
        res = store.query(vec, k, include=[])
        out.canaries.append(
            Canary(text, [float(x) for x in vec], res.keys, [round(float(m.score), 6) for m in res])
        )
    return out


def check_canaries(
    store: VectorStore,
    embedder: Embedder,
    recorded: CanarySet,
    *,
    min_overlap: float = 0.8,
    max_score_shift: float = 0.05,
    min_vector_similarity: float = 0.99,
) -> list[CanaryResult]:
    """Re-run recorded canaries with the current embedder and report drift for each."""
    results = []
    for canary in recorded.canaries:
        vec = embedder.embed_query(canary.text)
        old = np.asarray(canary.vector, dtype=np.float64)
        new = vec.astype(np.float64)
        if old.shape == new.shape:
            denom = float(np.linalg.norm(old) * np.linalg.norm(new)) or 1.0
            similarity = float(old @ new) / denom
        else:
            similarity = 0.0
        res = store.query(vec, recorded.k, include=[]) if new.shape[0] == store.spec.dimension else None
        now = {m.key: float(m.score) for m in res} if res is not None else {}
        shared = [key for key in canary.keys if key in now]
        overlap = len(shared) / len(canary.keys) if canary.keys else 1.0
        before = dict(zip(canary.keys, canary.scores, strict=False))
        shift = float(np.mean([abs(now[key] - before[key]) for key in shared])) if shared else None
        reasons = []
        if not same_model(embedder.model_id, recorded.embedding_model):
            reasons.append(f"recorded with {recorded.embedding_model!r}, checked with {embedder.model_id!r}")
        if similarity < min_vector_similarity:
            reasons.append(f"query vector similarity {similarity:.4f} < {min_vector_similarity}")
        if overlap < min_overlap:
            reasons.append(f"top-{recorded.k} overlap {overlap:.2f} < {min_overlap}")
        if shift is not None and shift > max_score_shift:
            reasons.append(f"mean score shift {shift:.4f} > {max_score_shift}")
        results.append(
            CanaryResult(
                canary.text,
                round(overlap, 4),
                None if shift is None else round(shift, 6),
                round(similarity, 6),
                bool(reasons),
                reasons,
            )
        )
    return results
