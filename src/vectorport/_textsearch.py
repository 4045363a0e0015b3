"""The reference for text and hybrid search: a documented tokenizer, exact BM25 and the
reciprocal rank fusion every store's ``hybrid_query`` is held to.

**Tokenizer** (:func:`analyze`): Unicode word characters (``\\w``) make a token; an apostrophe
or a dot between two word characters keeps a word whole (``don't``, ``v1.2``); every Han
ideograph and Hiragana character is a token of its own (as Lucene's standard tokenizer does);
tokens are lowercased. No stemming, no stop words. PostgreSQL's ``simple`` text search
configuration agrees with it on plain words (lowercase, no stemming, no stop words); its
parser differs on e-mail addresses, URLs, paths, hyphenated words and numbers.

**BM25** (:class:`TextIndex`): ``k1 = 1.2``, ``b = 0.75``, ``idf = ln(1 + (N - n + 0.5) /
(n + 0.5))`` with ``N`` the records that have text and ``n`` those holding the term; a query
term counted once however often it is repeated. A record matches when it holds at least one
query term (score > 0). Statistics are over the whole collection; a filter selects among the
scored records, it does not change their scores.

**Fusion** (:func:`fuse`): each side contributes its ``HYBRID_DEPTH * k`` best records among
those matching the filter (the filter is inside both rankings); a record's fused score is
``weight / (rrf_k + vector_rank) + (1 - weight) / (rrf_k + text_rank)`` with 1-based ranks, a
side the record is missing from adding 0; the order is by fused score, ties by key.

>>> analyze("Don't panic: v1.2 of the Guide")
["don't", 'panic', 'v1.2', 'of', 'the', 'guide']
>>> [(f.key, f.vector_rank, f.text_rank) for f in fuse(["a", "b"], ["b", "c"], weight=0.5, rrf_k=60)]
[('b', 2, 1), ('a', 1, None), ('c', None, 2)]
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ._models import JSON, Match
from .exceptions import ConfigurationError

__all__ = [
    "HYBRID_DEPTH",
    "K1",
    "RRF_K",
    "B",
    "Fused",
    "TextIndex",
    "analyze",
    "canonical_language",
    "check_fusion",
    "check_query_text",
    "fuse",
    "ranked",
    "text_match",
]

K1 = 1.2
B = 0.75
RRF_K = 60
HYBRID_DEPTH = 2
"""Each ranking of a hybrid search contributes its ``HYBRID_DEPTH * k`` best candidates."""

_WORD = re.compile("\\w+(?:['\\u2019.]\\w+)*")
_SINGLE = re.compile("([\u3040-\u309f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f])")


ANALYZER_LANGUAGES: dict[str, str] = {
    "da": "danish",
    "de": "german",
    "en": "english",
    "es": "spanish",
    "fi": "finnish",
    "fr": "french",
    "hu": "hungarian",
    "it": "italian",
    "nl": "dutch",
    "no": "norwegian",
    "pt": "portuguese",
    "ro": "romanian",
    "ru": "russian",
    "sv": "swedish",
    "tr": "turkish",
}
"""A language's ISO 639-1 code (a bucket index's text analyzer, ``textSearchConfigurations``'
``language``) → the PostgreSQL text search configuration that stems it."""


def canonical_language(name: str | None) -> str | None:
    """One name per text search language, so stores that spell it differently compare equal:
    PostgreSQL's configuration name (``pg_catalog.spanish`` and a bucket analyzer's ``es`` are
    ``spanish``); the standard analyzer (no language, no stemming) is PostgreSQL's ``simple``; a
    code PostgreSQL has no configuration for (``ja``) stays as it is.

    >>> canonical_language("pg_catalog.Spanish"), canonical_language("es"), canonical_language("")
    ('spanish', 'spanish', 'simple')
    """
    if name is None:
        return None
    text = name.strip().strip('"').lower().removeprefix("pg_catalog.")
    if not text:
        return "simple"
    return ANALYZER_LANGUAGES.get(text, text)


def analyze(text: str) -> list[str]:
    """The terms of ``text`` (see the module docstring for the rules)."""
    spaced = _SINGLE.sub(r" \1 ", text)
    return [m.group(0).lower() for m in _WORD.finditer(spaced)]


@dataclass
class TextIndex:
    """An inverted index over a sequence of texts (row ``i`` is ``texts[i]``; ``None``: no text)."""

    postings: dict[str, tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]]
    """term → (rows, term frequencies)."""
    lengths: npt.NDArray[np.float64]
    """Terms per row (0 where the row has no text)."""
    docs: int
    """Rows that have text."""

    @classmethod
    def build(cls, texts: Sequence[str | None]) -> TextIndex:
        lengths = np.zeros(len(texts), np.float64)
        rows: dict[str, list[int]] = {}
        freqs: dict[str, list[int]] = {}
        docs = 0
        for row, text in enumerate(texts):
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

    def scores(self, query: str, size: int | None = None) -> npt.NDArray[np.float64]:
        """BM25 score of every row (0 where no query term occurs)."""
        n = len(self.lengths) if size is None else size
        out = np.zeros(n, np.float64)
        if self.docs == 0:
            return out
        avgdl = float(self.lengths[:n].sum()) / self.docs or 1.0
        for term in dict.fromkeys(analyze(query)):
            hit = self.postings.get(term)
            if hit is None:
                continue
            rows, tf = hit
            idf = math.log(1.0 + (self.docs - rows.size + 0.5) / (rows.size + 0.5))
            norm = tf + K1 * (1.0 - B + B * self.lengths[rows] / avgdl)
            np.add.at(out, rows, idf * tf * (K1 + 1.0) / norm)
        return out


def ranked(
    scores: npt.NDArray[np.float64], keys: Sequence[str], rows: npt.NDArray[np.int64] | None = None
) -> npt.NDArray[np.int64]:
    """Rows with a positive score (among ``rows``, default all), best first, ties by key."""
    pool = np.arange(len(scores), dtype=np.int64) if rows is None else rows
    hit = pool[scores[pool] > 0]
    names = np.asarray([keys[int(r)] for r in hit], dtype=object)
    return hit[np.lexsort((names, -scores[hit]))] if hit.size else hit


@dataclass(frozen=True)
class Fused:
    """One record of a fused ranking."""

    key: str
    rrf_score: float
    vector_rank: int | None
    text_rank: int | None


def fuse(
    vector_ranking: Sequence[str], text_ranking: Sequence[str], *, weight: float, rrf_k: int
) -> list[Fused]:
    """Reciprocal rank fusion of two rankings (keys, best first); see the module docstring."""
    vrank = {key: r for r, key in enumerate(vector_ranking, start=1)}
    trank = {key: r for r, key in enumerate(text_ranking, start=1)}
    out = []
    for key in vrank.keys() | trank.keys():
        v, t = vrank.get(key), trank.get(key)
        score = (0.0 if v is None else weight / (rrf_k + v)) + (
            0.0 if t is None else (1.0 - weight) / (rrf_k + t)
        )
        out.append(Fused(key, score, v, t))
    out.sort(key=lambda f: (-f.rrf_score, f.key))
    return out


def check_fusion(weight: Any, rrf_k: Any) -> tuple[float, int]:
    """``weight`` in [0, 1] and ``rrf_k`` a positive integer, or a ConfigurationError."""
    try:
        w = float(weight)
    except (TypeError, ValueError):
        w = math.nan
    if isinstance(weight, bool) or not 0.0 <= w <= 1.0:
        raise ConfigurationError(
            f"the fusion weight must be a number from 0 (text only) to 1 (vector only), got {weight!r}"
        )
    if isinstance(rrf_k, bool) or not isinstance(rrf_k, int | np.integer) or not 1 <= rrf_k <= 1_000_000:
        raise ConfigurationError(f"rrf_k must be an integer from 1 to 1,000,000, got {rrf_k!r}")
    return w, int(rrf_k)


def check_query_text(text: Any, what: str) -> str:
    """``text`` when it is a string holding at least one non-space character."""
    if not isinstance(text, str) or not text.strip():
        raise ConfigurationError(f"{what} needs a non-empty query text, got {text!r}")
    return text


def text_match(
    key: str,
    score: float,
    rank: int,
    metadata: dict[str, JSON] | None,
    text: str | None,
    vector: Any = None,
) -> Match:
    """One full-text hit as every store returns it: ``score`` = the text score, ``distance`` =
    its negation (there is no vector distance), ``extra = {"text_rank", "text_score"}``."""
    return Match(key, -score, score, metadata, text, vector, {"text_rank": rank, "text_score": score})
