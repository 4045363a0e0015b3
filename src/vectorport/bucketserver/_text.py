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
the top-K window of each ranking. The analyzer and BM25 are vectorport's reference
(:mod:`vectorport._textsearch`), shared with the memory store. The language analyzers are
approximated by the standard analyzer (no stemming or stop words), so rankings and scores are
close to, not identical with, the service's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .._textsearch import RRF_K, TextIndex, analyze

__all__ = ["TextField", "analyze", "bm25_scores", "rrf", "text_field"]

TextField = TextIndex
"""The inverted index of one searchable key over every row of a table (vectorport's BM25)."""


def _field_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = [v for v in value if isinstance(v, str)]
        return " ".join(parts) if parts else None
    return None


def text_field(metadatas: Sequence[dict[str, Any]], key: str) -> TextIndex:
    """The index of the text under ``key`` (a list of strings: their concatenation)."""
    return TextIndex.build([_field_text(meta.get(key)) for meta in metadatas])


def bm25_scores(field: TextIndex, text: str, size: int) -> npt.NDArray[np.float64]:
    """BM25 score of every row (0 where nothing matched) for the query ``text``."""
    return field.scores(text, size)


def rrf(rankings: Sequence[Sequence[int]], size: int) -> npt.NDArray[np.float64]:
    """Reciprocal Rank Fusion of ranked row lists (best first): Σ 1 / (k + rank), rank from 1."""
    fused = np.zeros(size, np.float64)
    for ranking in rankings:
        for rank, row in enumerate(ranking, start=1):
            fused[row] += 1.0 / (RRF_K + rank)
    return fused
