"""Full-text search over searchable metadata keys: the analyzer, BM25 and Reciprocal Rank
Fusion behind ``QueryVectors``' ``queryTexts``.

What AWS documents (User Guide "Hybrid search with Amazon S3 Vectors", "Configuring full-text
search", "Querying with full-text and vector search", and the botocore model): a metadata key
listed in the index's ``textSearchConfigurations`` is indexed for BM25 scoring with a text
analyzer (the standard analyzer, or the configured language's); ``queryTexts`` without
``queryVector`` runs a full-text-only search ranked by BM25; with a ``queryVector`` it runs a
full-text search per query text field and a vector search, fuses the rankings with Reciprocal
Rank Fusion and returns one ranked list of the top K. ``returnScores`` adds ``bm25Scores``
(the keys the result matched), and for hybrid results ``fused`` and — when the result matched
the vector search — ``vectorDistance``. The metadata filter applies to every ranking.

What AWS does not publish, chosen here the way Lucene/OpenSearch do by default: the standard
analyzer splits on Unicode word boundaries and lowercases (each Han ideograph and Hiragana
character is a token of its own); BM25 uses ``k1 = 1.2``, ``b = 0.75`` and
``idf = ln(1 + (N - n + 0.5) / (n + 0.5))`` over the vectors that have the key; a text field
that holds a list of strings is indexed as their concatenation; RRF uses ``k = 60`` and fuses
the top-K window of each ranking. The language analyzers are approximated by the standard
analyzer (no stemming or stop words), so rankings and scores are close to, not identical with,
the service's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["TextField", "analyze", "bm25_scores", "rrf"]

K1 = 1.2
B = 0.75
RRF_K = 60

_WORD = re.compile("\\w+(?:['\\u2019.]\\w+)*")  # an apostrophe or dot inside a word keeps it whole
# Han ideographs and Hiragana: one token per character (Lucene's StandardTokenizer).
_SINGLE = re.compile("([\u3040-\u309f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f])")


def analyze(text: str) -> list[str]:
    """The terms of ``text``: Unicode words, lowercased."""
    spaced = _SINGLE.sub(r" \1 ", text)
    return [m.group(0).lower() for m in _WORD.finditer(spaced)]


def _field_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = [v for v in value if isinstance(v, str)]
        return " ".join(parts) if parts else None
    return None


@dataclass
class TextField:
    """The inverted index of one searchable key over every row of a table."""

    postings: dict[str, tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]]
    """term → (rows, term frequencies)."""
    lengths: npt.NDArray[np.float64]
    """Terms per row (0 where the row has no text under the key)."""
    docs: int
    """Rows that have text under the key."""

    @classmethod
    def build(cls, metadatas: Sequence[dict[str, Any]], key: str) -> TextField:
        lengths = np.zeros(len(metadatas), np.float64)
        rows: dict[str, list[int]] = {}
        freqs: dict[str, list[int]] = {}
        docs = 0
        for row, meta in enumerate(metadatas):
            text = _field_text(meta.get(key))
            if text is None:
                continue
            docs += 1
            terms = analyze(text)
            lengths[row] = len(terms)
            counts: dict[str, int] = {}
            for term in terms:
                counts[term] = counts.get(term, 0) + 1
            for term, count in counts.items():
                rows.setdefault(term, []).append(row)
                freqs.setdefault(term, []).append(count)
        postings = {
            term: (np.asarray(rows[term], np.int64), np.asarray(freqs[term], np.float64)) for term in rows
        }
        return cls(postings, lengths, docs)


def bm25_scores(field: TextField, text: str, size: int) -> npt.NDArray[np.float64]:
    """BM25 score of every row (0 where nothing matched) for the query ``text``."""
    scores = np.zeros(size, np.float64)
    if field.docs == 0:
        return scores
    avgdl = float(field.lengths[:size].sum()) / field.docs or 1.0
    for term in dict.fromkeys(analyze(text)):
        hit = field.postings.get(term)
        if hit is None:
            continue
        rows, tf = hit
        idf = math.log(1.0 + (field.docs - rows.size + 0.5) / (rows.size + 0.5))
        norm = tf + K1 * (1.0 - B + B * field.lengths[rows] / avgdl)
        np.add.at(scores, rows, idf * tf * (K1 + 1.0) / norm)
    return scores


def rrf(rankings: Sequence[Sequence[int]], size: int) -> npt.NDArray[np.float64]:
    """Reciprocal Rank Fusion of ranked row lists (best first): Σ 1 / (k + rank), rank from 1."""
    fused = np.zeros(size, np.float64)
    for ranking in rankings:
        for rank, row in enumerate(ranking, start=1):
            fused[row] += 1.0 / (RRF_K + rank)
    return fused
