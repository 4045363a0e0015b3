"""A small labelled corpus of real sentences (not the demo corpus) for search-mode comparisons."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

import vectorport
from vectorport.ingest import HashEmbedder

PASSAGES = {
    "tea#0": "Green tea is steamed or pan-fired soon after picking, which keeps its leaves from oxidising.",
    "tea#1": "Black tea leaves are rolled and fully oxidised before drying, giving a darker, stronger cup.",
    "bread#0": "Sourdough bread rises with a starter of wild yeast and lactic acid bacteria.",
    "bread#1": "Kneading develops gluten, the protein network that traps gas and lets bread rise.",
    "rail#0": "The first public steam railway opened in 1825 between Stockton and Darlington.",
    "rail#1": "High-speed trains in Japan, the Shinkansen, began service in 1964 for the Tokyo Olympics.",
    "bees#0": "Honey bees communicate the direction of flowers with a waggle dance inside the hive.",
    "bees#1": "A worker bee lives about six weeks in summer, foraging for nectar and pollen.",
    "moon#0": "The Moon's tides are caused by its gravity pulling on the oceans of the Earth.",
    "moon#1": "Apollo 11 landed on the Moon in July 1969 and returned lunar rocks to Earth.",
    "chess#0": "In chess, castling moves the king two squares toward a rook, which jumps over it.",
    "chess#1": "The en passant rule lets a pawn capture an adjacent pawn that has just moved two squares.",
}
TOPIC = {key: key.split("#")[0] for key in PASSAGES}

QUERIES = [
    ("how is green tea processed after picking", ["tea#0"]),
    ("why does black tea taste stronger", ["tea#1"]),
    ("what makes sourdough rise", ["bread#0"]),
    ("gluten kneading", ["bread#1"]),
    ("first steam railway", ["rail#0"]),
    ("Shinkansen Olympics", ["rail#1"]),
    ("waggle dance of honey bees", ["bees#0"]),
    ("how long does a worker bee live", ["bees#1"]),
    ("what causes tides", ["moon#0"]),
    ("Apollo 11 moon landing", ["moon#1"]),
    ("castling king rook", ["chess#0"]),
    ("en passant pawn capture", ["chess#1"]),
]

EMBEDDER = HashEmbedder(64)


def load(store: vectorport.VectorStore) -> None:
    """Write the corpus, embedded with :data:`EMBEDDER`, topic in the metadata."""
    keys = list(PASSAGES)
    vectors = EMBEDDER.embed_documents([PASSAGES[k] for k in keys])
    store.upsert(
        vectorport.Record(k, v, {"topic": TOPIC[k]}, PASSAGES[k]) for k, v in zip(keys, vectors, strict=True)
    )


def write_queries(path: Path) -> Path:
    """The labelled queries as the JSONL ``compare --queries`` reads (texts only)."""
    path.write_text(
        "".join(
            json.dumps({"id": f"q{i}", "text": t, "relevant": r}) + "\n" for i, (t, r) in enumerate(QUERIES)
        ),
        encoding="utf-8",
    )
    return path


def direct_figures(
    store: vectorport.VectorStore, mode: str, k: int, weight: float = 0.5
) -> tuple[float, float, float]:
    """(hit@1, MRR, nDCG@k) computed here from the store's own answers, independently of compare."""
    hits, rrs, ndcgs = [], [], []
    for text, relevant in QUERIES:
        vector = EMBEDDER.embed_query(text)
        if mode == "vector":
            keys = [m.key for m in store.query(vector, k)]
        elif mode == "text":
            keys = [m.key for m in store.text_query(text, k)]  # type: ignore[attr-defined]
        else:
            keys = [m.key for m in store.hybrid_query(vector, text, k, weight=weight)]  # type: ignore[attr-defined]
        hits.append(1.0 if keys[:1] and keys[0] in relevant else 0.0)
        first = next((i for i, key in enumerate(keys, start=1) if key in relevant), None)
        rrs.append(0.0 if first is None else 1.0 / first)
        dcg = sum(1.0 / math.log2(i + 1) for i, key in enumerate(keys, start=1) if key in relevant)
        ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(relevant), k) + 1))
        ndcgs.append(dcg / ideal)
    n = len(QUERIES)
    return sum(hits) / n, sum(rrs) / n, sum(ndcgs) / n


def direct_scores(
    store: vectorport.VectorStore, mode: str, k: int, weight: float = 0.5
) -> tuple[list[float], list[float]]:
    """The scores of the relevant and of the other results, computed here: in vector and hybrid
    modes the cosine similarity of the query and passage embeddings (what ``min_score``
    compares), in text mode the store's own text score."""
    keys = list(PASSAGES)
    passages = dict(zip(keys, EMBEDDER.embed_documents([PASSAGES[k] for k in keys]), strict=True))
    relevant_scores: list[float] = []
    other_scores: list[float] = []
    for text, relevant in QUERIES:
        vector = np.asarray(EMBEDDER.embed_query(text), np.float64)
        if mode == "text":
            found = [(m.key, m.score) for m in store.text_query(text, k)]  # type: ignore[attr-defined]
        else:
            if mode == "vector":
                hits = [m.key for m in store.query(vector, k)]
            else:
                hits = [m.key for m in store.hybrid_query(vector, text, k, weight=weight)]  # type: ignore[attr-defined]
            found = []
            for key in hits:
                p = np.asarray(passages[key], np.float64)
                found.append((key, float(vector @ p / (np.linalg.norm(vector) * np.linalg.norm(p)))))
        for key, score in found:
            (relevant_scores if key in relevant else other_scores).append(score)
    return relevant_scores, other_scores


def direct_threshold(relevant: list[float], other: list[float], keep: float) -> tuple[float, float, float]:
    """(threshold, share of relevant kept, share of others dropped) by brute force: the largest
    relevant score whose ``>=`` keeps at least ``keep`` of the relevant scores."""
    n = len(relevant)
    threshold = max(t for t in relevant if sum(s >= t for s in relevant) >= keep * n - 1e-9)
    kept = sum(s >= threshold for s in relevant) / n
    dropped = sum(s < threshold for s in other) / len(other) if other else math.nan
    return threshold, kept, dropped
