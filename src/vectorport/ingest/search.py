"""Text search over an ingested collection, with the collection's own embedding model."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._embedder import Embedder
from .._models import Match
from .._protocol import VectorStore
from .compat import check_embedder

__all__ = ["SearchResult", "search", "source_of"]


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

    @property
    def k_returned(self) -> int:
        return len(self.matches)

    @property
    def keys(self) -> list[str]:
        return [m.key for m in self.matches]

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "embedding_model": self.model_id,
            "k_requested": self.k_requested,
            "k_returned": self.k_returned,
            "matches": [
                {**m.to_dict(), "source": source_of(m), "chunks_hit": self.collapsed.get(m.key, 1)}
                for m in self.matches
            ],
        }


def search(
    store: VectorStore,
    embedder: Embedder,
    text: str,
    *,
    k: int = 10,
    filter: Mapping[str, Any] | None = None,
    min_score: float | None = None,
    collapse: bool = False,
    overfetch: int = 4,
) -> SearchResult:
    """The ``k`` best chunks for ``text`` (``collapse``: the best chunk of ``k`` sources).

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
    model = check_embedder(store, embedder) or embedder.model_id
    vector = embedder.embed_query(text)
    fetch = k * overfetch if collapse else k
    cap = store.capabilities.max_top_k
    if cap is not None:
        fetch = min(fetch, cap)
    result = store.query(vector, max(fetch, 1), filter=filter, include=["metadata", "text"])
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
    return SearchResult(text, model, tuple(kept), k, hits)
