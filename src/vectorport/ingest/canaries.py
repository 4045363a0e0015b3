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

*Model canaries* (:func:`model_canaries`) ask which model a store's vectors come from: a few
known records (drawn by key hash, like the default canary texts) have their text embedded by the
model the store records, and their stored vectors must agree; when they do not, the other models
known (another member's of an alias, the one passed to ``doctor``, those named in the records'
metadata) are tried, and the one that agrees is named. An alias is checked member by member
(:class:`HasMembers`), each with its own recorded model.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import heapq
import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .._embedder import Embedder
from .._models import Record
from .._protocol import VectorStore
from ..exceptions import ConfigurationError, VectorportError
from .embedders import resolve_embedder, same_model

__all__ = [
    "Canary",
    "CanaryResult",
    "CanarySet",
    "HasMembers",
    "ModelCanary",
    "check_canaries",
    "default_canary_texts",
    "model_canaries",
    "record_canaries",
]

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


def drawn_records(store: VectorStore, n: int, include: Sequence[str] = ("text",)) -> list[Record]:
    """``n`` records with text chosen by key hash (the same ones on every run and backend), by
    key."""
    chosen: list[tuple[int, str, Record]] = []
    for page in store.scan(include=list(include)):
        for rec in page:
            if not rec.text or not rec.text.strip():
                continue
            item = (-int.from_bytes(hashlib.sha1(rec.key.encode()).digest()[:8], "big"), rec.key, rec)
            if len(chosen) < n:
                heapq.heappush(chosen, item)
            elif item[:2] > chosen[0][:2]:
                heapq.heapreplace(chosen, item)
    return [rec for _, _, rec in sorted(chosen, key=lambda t: t[1])]


def default_canary_texts(store: VectorStore, n: int = 8) -> list[str]:
    """``n`` query texts drawn from the collection: the opening sentence(s) of ``n`` chunks
    chosen by key hash (so the choice is stable across runs and backends)."""
    out = []
    for rec in drawn_records(store, n):
        words = " ".join((rec.text or "").split())
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


@runtime_checkable
class HasMembers(Protocol):
    """A store made of member stores of their own models (the alias): doctor checks each."""

    def member_stores(self) -> list[tuple[str, VectorStore, str | None]]:
        """Each member: its label, its opened store, its recorded embedding model."""
        ...


@dataclass
class ModelCanary:
    """Which model one store's vectors come from, by known records re-embedded."""

    store: str
    recorded: str | None
    records: int
    """Records drawn (with text) and embedded again."""
    similarity: dict[str, float] = field(default_factory=dict)
    """Each model tried: the lowest cosine similarity of its vectors to the stored ones."""
    comes_from: str | None = None
    """The model whose vectors agree with the stored ones; ``None``: none tried."""
    notes: list[str] = field(default_factory=list)

    @property
    def agrees(self) -> bool:
        """The store's vectors come from the model it records, or nothing tells otherwise (no
        record with text, or the recorded model could not be run here: see ``notes``)."""
        if self.comes_from is not None:
            return same_model(self.comes_from, self.recorded)
        return not self.records or not any(same_model(m, self.recorded) for m in self.similarity)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "agrees": self.agrees}


def model_canaries(
    store: VectorStore,
    recorded: str,
    others: Sequence[str] = (),
    *,
    label: str | None = None,
    n: int = 8,
    threshold: float = 0.99,
    load: Callable[[str], Embedder] = resolve_embedder,
) -> ModelCanary:
    """Embed the text of ``n`` known records with ``recorded`` (then, if their stored vectors
    disagree, with each of ``others`` of the store's dimension) and name the model whose vectors
    agree (every record's cosine similarity at least ``threshold``)."""
    dim = store.spec.dimension
    drawn = [  # a vector of another length or with NaN is the other checks' finding, not a model's
        r
        for r in drawn_records(store, n, ("vector", "text"))
        if r.vector is not None and len(r.vector) == dim and np.isfinite(np.asarray(r.vector)).all()
    ]
    out = ModelCanary(label or store.url.masked, recorded, len(drawn))
    if not drawn:
        return out
    stored = np.asarray([r.vector for r in drawn], dtype=np.float64)
    tried: list[str] = []
    for model in (recorded, *others):
        if any(same_model(model, t) for t in tried):
            continue
        tried.append(model)
        try:
            embedder = load(model)
            if embedder.dimension != dim:
                continue
            fresh = np.asarray(embedder.embed_documents([r.text or "" for r in drawn]), dtype=np.float64)
        except VectorportError as exc:  # a model this process cannot run, a provider that failed
            out.notes.append(f"{model} not tried: {exc}")
            continue
        sims = np.einsum("ij,ij->i", fresh, stored) / (
            np.linalg.norm(fresh, axis=1) * np.linalg.norm(stored, axis=1) + 1e-12
        )
        out.similarity[model] = round(float(sims.min()), 6)
        if float(sims.min()) >= threshold:
            out.comes_from = model
            break
    return out
