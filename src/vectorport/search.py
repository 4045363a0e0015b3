"""Search over a collection by a question: by vector (the collection's own embedding model),
by full text, or hybrid (both fused by reciprocal rank fusion); ``vectorport search`` runs it.
(The exact vector search itself is :mod:`vectorport._exact`; the text ranking and fusion,
:mod:`vectorport._textsearch`.)"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._embedder import Embedder
from ._features import hybrid_search_of, text_search_of
from ._models import Match, QueryResult
from ._protocol import VectorStore
from .alias._embedding import EmbedsText
from .exceptions import ConfigurationError
from .ingest.compat import check_embedder

__all__ = ["SEARCH_MODES", "SearchResult", "search", "source_of"]

SEARCH_MODES = ("vector", "text", "hybrid")


def source_of(match: Match) -> str:
    """The document a chunk belongs to: its ``source`` metadata, else the key before ``#chunk``."""
    source = (match.metadata or {}).get("source")
    return source if isinstance(source, str) else match.key.split("#chunk", 1)[0]


@dataclass(frozen=True)
class SearchResult:
    """Matches best first; ``collapsed`` maps a shown key to how many chunks of its source hit."""

    query: str
    model_id: str
    matches: tuple[Match, ...]
    k_requested: int
    collapsed: Mapping[str, int]
    mode: str = "vector"
    weight: float | None = None
    """The fusion weight of a hybrid search (1: vector only, 0: text only)."""

    @property
    def k_returned(self) -> int:
        return len(self.matches)

    @property
    def keys(self) -> list[str]:
        return [m.key for m in self.matches]

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "mode": self.mode,
            "weight": self.weight,
            "embedding_model": self.model_id,
            "k_requested": self.k_requested,
            "k_returned": self.k_returned,
            "matches": [
                {**m.to_dict(), "source": source_of(m), "chunks_hit": self.collapsed.get(m.key, 1)}
                for m in self.matches
            ],
        }


def _check_request(mode: str, k: int, text: str) -> None:
    """Refuse a search that cannot mean anything, before any I/O."""
    if mode not in SEARCH_MODES:
        raise ConfigurationError(f"search mode must be one of {', '.join(SEARCH_MODES)}, got {mode!r}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ConfigurationError(f"k (results to return) must be at least 1, got {k!r}")
    if not text.strip():
        raise ConfigurationError("the query text is empty: give the words to search for")


def search(
    store: VectorStore,
    embedder: Embedder | None,
    text: str,
    *,
    k: int = 10,
    filter: Mapping[str, Any] | None = None,
    min_score: float | None = None,
    collapse: bool = False,
    overfetch: int = 4,
    mode: str = "vector",
    weight: float = 0.5,
) -> SearchResult:
    """The ``k`` best chunks for ``text`` (``collapse``: the best chunk of ``k`` sources).

    ``mode``: ``vector`` (embed ``text`` and search by vector), ``text`` (the store's full-text
    search; no embedder needed) or ``hybrid`` (both, fused with ``weight`` on the vector
    ranking). ``text`` and ``hybrid`` raise
    :class:`~vectorport.exceptions.UnsupportedFeatureError` before any I/O on a store without
    them. ``min_score`` compares each match's ``score``: the vector score in ``vector`` and
    ``hybrid`` modes, the text score (BM25, ``ts_rank_cd``) in ``text`` mode.

    Raises :class:`~vectorport.ingest.ModelMismatchError` when ``embedder`` is not the model the
    collection was embedded with. With ``collapse`` the store is asked for ``k * overfetch``
    chunks (capped by its top-k limit), so fewer than ``k`` sources can come back.

    >>> import vectorport
    >>> from vectorport.ingest import HashEmbedder
    >>> e = HashEmbedder(32)
    >>> s = vectorport.connect("memory://doctest-search", dimension=32, embedding_model=e.model_id)
    >>> vec = e.embed_documents(["red apples"])[0]
    >>> _ = s.upsert([vectorport.Record("a.md#chunk0", vec, {"source": "a.md"}, "red apples")])
    >>> search(s, e, "apples", k=1).keys
    ['a.md#chunk0']
    >>> s.drop()
    """
    _check_request(mode, k, text)
    fetch = _fetch_size(store, k * overfetch if collapse else k, mode)
    result, model = _ranked(store, embedder, text, fetch, mode=mode, filter=filter, weight=weight)
    kept, hits = _kept(result, k, min_score=min_score, collapse=collapse)
    return SearchResult(text, model, tuple(kept), k, hits, mode, weight if mode == "hybrid" else None)


def _fetch_size(store: VectorStore, wanted: int, mode: str) -> int:
    """How many chunks to ask the store for: ``wanted``, capped by its top-k limit (halved for
    hybrid, which asks each ranking for that many), and at least one."""
    cap = store.capabilities.max_top_k
    if cap is not None:
        wanted = min(wanted, cap // 2 if mode == "hybrid" else cap)
    return max(wanted, 1)


def _ranked(
    store: VectorStore,
    embedder: Embedder | None,
    text: str,
    fetch: int,
    *,
    mode: str,
    filter: Mapping[str, Any] | None,
    weight: float,
) -> tuple[QueryResult, str]:
    """The store's ranking for ``text`` in ``mode`` and the embedding model it was searched with
    (empty for a text search)."""
    include = ["metadata", "text"]
    if mode == "text":
        return text_search_of(store).text_query(text, fetch, filter=filter, include=include), ""
    fused = hybrid_search_of(store) if mode == "hybrid" else None
    if fused is None and isinstance(store, EmbedsText) and store.text_model:
        return store.query_text(text, fetch, filter=filter), store.text_model
    if embedder is None:
        raise ConfigurationError(f"{mode} search needs an embedder")
    model = check_embedder(store, embedder) or embedder.model_id
    vector = embedder.embed_query(text)
    if fused is None:
        return store.query(vector, fetch, filter=filter, include=include), model
    return fused.hybrid_query(vector, text, fetch, filter=filter, weight=weight, include=include), model


def _kept(
    result: QueryResult, k: int, *, min_score: float | None, collapse: bool
) -> tuple[list[Match], dict[str, int]]:
    """The first ``k`` matches at or above ``min_score`` (``collapse``: the best of each source)
    and, per shown key, how many chunks of its source hit."""
    kept: list[Match] = []
    hits: dict[str, int] = {}
    shown_for: dict[str, str] = {}
    for match in result:
        if min_score is not None and match.score < min_score:
            continue
        if collapse:
            source = source_of(match)
            if source in shown_for:
                hits[shown_for[source]] += 1
                continue
            if len(kept) >= k:
                continue
            shown_for[source] = match.key
            hits[match.key] = 1
        kept.append(match)
        if not collapse and len(kept) >= k:
            break
    return kept, hits
