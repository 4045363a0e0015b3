"""Text and hybrid search on a bucket index whose text key is full-text searchable (listed in
the index's ``textSearchConfigurations``).

``text_query`` is the service's BM25 ranking of the text key (``QueryVectors`` with
``queryTexts``, the filter applied inside). ``hybrid_query`` does not use the service's own
fusion (equal weights, a top-K window per side): it asks for the vector ranking and the text
ranking separately, each its ``2k`` best among the records matching the filter, and fuses them
client-side with the reference :func:`~vectorport._textsearch.fuse`, so any weight works and
the result is what the memory store computes from the same two rankings. A record found only
by text gets its distance from its stored vector (read with ``GetVectors``).

Against the reference: the local bucket server ranks with :mod:`vectorport._textsearch` itself,
so its text rankings, scores and fused results equal the memory store's on the same records.
Amazon S3 Vectors ranks with its own analyzer (the configured language's stemming and stop
words); what holds there is the filter inside both rankings, the fusion arithmetic and
candidate depth, and ties by key within what the service returns. An index in LlamaIndex's
layout holds the text inside a JSON node, which is not searchable as text: no text search.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..._capabilities import Capabilities
from ..._features import Feature
from ..._models import Include, Match, QueryResult, canonical_distances, score_from_distance
from ..._protocol import FilterLike
from ..._querying import prepare_query
from ..._textsearch import (
    ANALYZER_LANGUAGES,
    HYBRID_DEPTH,
    Fused,
    canonical_language,
    check_fusion,
    check_query_text,
    fuse,
    text_match,
)
from ...exceptions import ConfigurationError, NotFoundError, UnsupportedFeatureError, VectorportError

if TYPE_CHECKING:
    from .store import S3VectorsStore

__all__ = ["TEXT_FEATURES", "TEXT_LANGUAGES", "TextSearch", "searchable_keys", "text_search_option"]

log = logging.getLogger("vectorport")

TEXT_FEATURES = frozenset({Feature.TEXT_SEARCH, Feature.HYBRID})
# The CreateIndex model's TextSearchConfiguration.language values (botocore s3vectors
# 2025-07-15); without one the service uses its standard analyzer.
TEXT_LANGUAGES = ("de", "en", "es", "fr", "it", "ja", "ko", "nl", "pt", "zh")
_ON, _OFF = ("1", "on", "true", "yes"), ("", "0", "false", "no", "off")


def text_search_option(value: Any) -> str | None:
    """The ``text_search=`` option: ``None`` (off), ``""`` (the standard analyzer) or a language.

    ``true``/``false`` (or a bool) turn full-text search on the text key on or off at index
    creation; a language code (``es``) turns it on with that language's analyzer.
    """
    if value is None or value is False:
        return None
    if value is True:
        return ""
    text = str(value).strip().lower()
    if text in _OFF:
        return None
    if text in _ON:
        return ""
    if text in TEXT_LANGUAGES:
        return text
    raise ConfigurationError(
        f"s3vectors text_search must be true, false or an analyzer language "
        f"({', '.join(TEXT_LANGUAGES)}), got {value!r}"
    )


def searchable_keys(index: Mapping[str, Any]) -> dict[str, str]:
    """The full-text searchable metadata keys of a ``GetIndex`` description, each with its
    analyzer's language (``""``: the standard analyzer)."""
    configs = (index.get("metadataConfiguration") or {}).get("textSearchConfigurations") or []
    return {str(c["metadataKey"]): str(c.get("language") or "") for c in configs}


class TextSearch:
    """``text_query`` and ``hybrid_query`` of an :class:`~.store.S3VectorsStore` (forwarded),
    and the ``text_search=`` option that makes the text key full-text searchable when the index
    is created."""

    def __init__(self, store: S3VectorsStore, option: str | None = None, said: bool = False) -> None:
        self.store = store
        self.option = option
        """``text_search=``: configure the text key full-text searchable when creating the index
        (``None``: no; ``""``: the standard analyzer; else a language code)."""
        self.said = said or option is not None
        """Whether ``text_search=`` was given (``false`` included): a migration then leaves it be."""
        self.searchable: Mapping[str, str] = {}
        """The index's full-text searchable keys and their analyzer languages (known once the
        index is opened)."""
        layout = store.layout
        if option is not None and layout.node:  # refused before any I/O
            raise ConfigurationError(
                f"{store.name}: text_search needs the text in a metadata key of its own; the "
                f"{layout.name} layout keeps it inside a JSON node ({layout.text_key}), which is not "
                "searchable as the text"
            )

    def configurations(self) -> list[dict[str, str]]:
        """``CreateIndex``'s ``textSearchConfigurations`` for ``text_search=`` (empty: none)."""
        if self.option is None:
            return []
        config = {"metadataKey": self.store.layout.text_key}
        if self.option:
            config["language"] = self.option
        return [config]

    def created(self) -> None:
        """After ``CreateIndex``: the text key is searchable when it was configured so."""
        if self.option is not None:
            self.searchable = {self.store.layout.text_key: self.option}

    def opened(self, index: Mapping[str, Any]) -> None:
        """After opening an index (its ``GetIndex`` description): its searchable keys; say when
        ``text_search=`` asked for what the index lacks (it applies at creation only; vectorport
        does not change an existing index)."""
        self.searchable = searchable_keys(index)
        if self.option is not None and not self.available():
            log.warning(
                "%s: text_search applies when vectorport creates the index; this index exists "
                "without full-text search on %r (add it with UpdateMetadataConfiguration, an "
                "ENHANCED index, and reopen the store)",
                self.store.calls.where,
                self.store.layout.text_key,
            )

    def available(self) -> bool:
        """Whether the index can search its text (its text key is full-text searchable)."""
        layout = self.store.layout
        return not layout.node and layout.text_key in self.searchable

    @property
    def text_language(self) -> str | None:
        """The language the index's text search analyzes its text key in, named as PostgreSQL
        names it (:func:`~vectorport._textsearch.canonical_language`: ``es`` is ``spanish``, the
        standard analyzer ``simple``); ``None`` without text search. ``verify`` compares it with
        the source's."""
        if not self.available():
            return None
        return canonical_language(self.searchable.get(self.store.layout.text_key, ""))

    def capabilities(self, caps: Capabilities) -> Capabilities:
        """``caps`` without text and hybrid search when the index cannot search its text."""
        if self.available():
            return caps
        return replace(caps, features=caps.features - TEXT_FEATURES)

    def follow_text_language(self, language: str) -> bool | str:
        """Before the index is created (a migration's target): the source searches its text in
        ``language``, so the index's text key is made full-text searchable too, unless
        ``text_search=`` said otherwise (``false``: off; a language: that one), and its analyzer
        is the service's for ``language`` where it has one, else the standard analyzer (the
        ``CreateIndex`` model's ``textSearchConfigurations``). ``True`` when the index will
        search in ``language``; else what it does instead, for the plan's notes."""
        wanted = canonical_language(language)
        said = self.said
        if self.option is None and not said and not self.store.layout.node:
            mode = self._new_index_mode()
            if mode != "ENHANCED":
                makes = f"makes {mode} indexes" if mode else "does not say which mode its indexes have"
                return (
                    f"the source searches its text in {wanted!r}, but the bucket {self.store.bucket!r} "
                    f"{makes} and full-text search needs an ENHANCED index: the target index is created "
                    "without it (PutVectorBucketDefaultIndexMode ENHANCED, then text_search=true, gives it)"
                )
            self.option = ""
        if self.option is None:
            if not said:
                return False
            return (
                f"the target index is created without full-text search (text_search=false); the "
                f"source searches its text in {wanted!r}"
            )
        if self.option == "":
            code = next((c for c, name in ANALYZER_LANGUAGES.items() if name == wanted), None)
            if code is not None and code in TEXT_LANGUAGES:
                self.option = code
            elif wanted in TEXT_LANGUAGES:
                self.option = wanted
        got = canonical_language(self.option)
        if got == wanted:
            return True
        why = "text_search= names it" if said and self.option else "the service has no analyzer for it"
        return (
            f"the target index analyzes its text in {got!r} ({why}; the service's analyzers: "
            f"{', '.join(TEXT_LANGUAGES)} and the standard one, 'simple'), the source in "
            f"{wanted!r}: text queries rank differently, and verify reports the difference"
        )

    def _new_index_mode(self) -> str | None:
        """The mode of an index created in the bucket now (``GetVectorBucket``'s
        ``defaultIndexMode``); a bucket not made yet is made ENHANCED, the service's default since
        2026-09-30. ``None``: the service does not say (or the bucket cannot be read)."""
        try:
            got = self.store.calls.call("GetVectorBucket", vectorBucketName=self.store.bucket)
        except NotFoundError:
            return "ENHANCED"
        except VectorportError:
            return None
        mode = (got.get("vectorBucket") or {}).get("defaultIndexMode")
        return str(mode) if mode else None

    def _require(self, what: str, params: Mapping[str, Any]) -> None:
        if params:
            raise ConfigurationError(f"s3vectors {what} takes no params, got {sorted(params)}")
        if self.available():
            return
        store = self.store
        layout = store.layout
        why = (
            f"its layout ({layout.name}) keeps the text inside a JSON node"
            if layout.node
            else f"its text key {layout.text_key!r} is not full-text searchable"
        )
        raise UnsupportedFeatureError(
            f"{store.name} index {store.collection!r} has no text search: {why}; configure full-text "
            f"search on the text key (UpdateMetadataConfiguration add textSearchConfigurations "
            f"[{{metadataKey: {layout.text_key}}}], an ENHANCED index) and reopen the store"
        )

    def _ranking(
        self, query: dict[str, Any], depth: int, where: dict[str, Any] | None, metadata: bool
    ) -> list[dict[str, Any]]:
        calls = self.store.calls
        request: dict[str, Any] = {**calls.ids, "topK": depth, "returnMetadata": metadata, **query}
        if where is not None:
            request["filter"] = where
        return calls.retry.call(functools.partial(calls.query, request), f"{self.store.name}: query")

    def _text_ranking(
        self, text: str, depth: int, where: dict[str, Any] | None, metadata: bool
    ) -> list[tuple[dict[str, Any], float]]:
        """``(hit, bm25)`` best first, ties by key."""
        key = self.store.layout.text_key
        hits = self._ranking(
            {"queryTexts": [{"metadataKey": key, "text": text}], "returnScores": True}, depth, where, metadata
        )
        scored = []
        for hit in hits:
            scores = (hit.get("scores") or {}).get("bm25Scores") or []
            scored.append((hit, sum(float(s["score"]) for s in scores if s.get("metadataKey") == key)))
        return sorted(scored, key=lambda h: (-h[1], h[0]["key"]))

    def text_query(
        self,
        text: str,
        k: int = 10,
        *,
        filter: FilterLike = None,
        include: Iterable[str] | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> QueryResult:
        """The service's BM25 ranking of the text key (best first, ties by key), filter inside.

        Matches carry ``score`` = BM25, ``distance`` = its negation and ``extra =
        {"text_rank", "text_score"}``.
        """
        text = check_query_text(text, "text_query")
        prep = prepare_query(self.store, None, k, filter, include, params)
        self._require("text_query", prep.params)
        inc = prep.include
        hits = self._text_ranking(text, prep.k, prep.where, bool(inc))
        out = []
        for rank, (hit, score) in enumerate(hits[: prep.k], start=1):
            meta, body = self.store.mapping.decode(hit.get("metadata"), inc)
            out.append(text_match(hit["key"], score, rank, meta if Include.METADATA in inc else None, body))
        return QueryResult(tuple(out), prep.k)

    def hybrid_query(
        self,
        vector: Sequence[float] | Any,
        text: str,
        k: int = 10,
        *,
        filter: FilterLike = None,
        weight: float = 0.5,
        rrf_k: int = 60,
        include: Iterable[str] | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> QueryResult:
        """The service's vector and text rankings (``2k`` candidates each, filter inside both)
        fused client-side by :func:`~vectorport._textsearch.fuse` (any ``weight``), ties by
        key. Matches carry the canonical vector ``distance`` and ``score`` and ``extra =
        {"rrf_score", "vector_rank", "text_rank"}``.
        """
        text = check_query_text(text, "hybrid_query")
        prep = prepare_query(self.store, vector, k, filter, include, params)
        weight, rrf_k = check_fusion(weight, rrf_k)
        self._require("hybrid_query", prep.params)
        assert prep.vector is not None
        depth = self._hybrid_depth(prep.k)
        inc = prep.include
        nearest = sorted(
            self._ranking(
                {"queryVector": {"float32": prep.vector.tolist()}, "returnDistance": True},
                depth,
                prep.where,
                bool(inc),
            ),
            key=lambda h: (float(h.get("distance", 0.0)), h["key"]),
        )
        by_text = [hit for hit, _ in self._text_ranking(text, depth, prep.where, bool(inc))]
        vector_keys, text_keys = [h["key"] for h in nearest], [h["key"] for h in by_text]
        fused = fuse(vector_keys, text_keys, weight=weight, rrf_k=rrf_k)[: prep.k]
        hits = {h["key"]: h for h in by_text} | {h["key"]: h for h in nearest}
        distance = {h["key"]: float(h.get("distance", 0.0)) for h in nearest}
        distance.update(self._distances([f.key for f in fused if f.key not in distance], prep.vector))
        return QueryResult(tuple(self._fused_matches(fused, hits, distance, inc)), prep.k)

    def _hybrid_depth(self, k: int) -> int:
        """How many candidates each side ranks for ``k`` results; raises when the service's
        top-k limit cannot hold them."""
        depth = HYBRID_DEPTH * k
        limit = self.store.capabilities.max_top_k
        if limit is not None and depth > limit:
            raise ConfigurationError(
                f"s3vectors hybrid_query ranks {HYBRID_DEPTH}k candidates per side and a query "
                f"returns at most {limit}: k can be at most {limit // HYBRID_DEPTH}, got {k}"
            )
        return depth

    def _fused_matches(
        self,
        fused: Sequence[Fused],
        hits: Mapping[str, Mapping[str, Any]],
        distance: Mapping[str, float],
        inc: frozenset[Include],
    ) -> list[Match]:
        """The fused ranking as matches, decoded from the service's ``hits``; a key without a
        ``distance`` (deleted since it was ranked) is left out."""
        metric = self.store.spec.metric
        out = []
        for f in fused:
            if f.key not in distance:
                continue  # deleted since it was ranked
            meta, body = self.store.mapping.decode(hits[f.key].get("metadata"), inc)
            d = distance[f.key]
            out.append(
                Match(
                    f.key,
                    d,
                    score_from_distance(metric, d),
                    meta if Include.METADATA in inc else None,
                    body,
                    None,
                    {"rrf_score": f.rrf_score, "vector_rank": f.vector_rank, "text_rank": f.text_rank},
                )
            )
        return out

    def _distances(self, keys: Sequence[str], query: Any) -> dict[str, float]:
        """Canonical distances from ``query`` to the stored vectors of ``keys``."""
        if not keys:
            return {}
        store, calls = self.store, self.store.calls
        got: dict[str, Any] = {}
        size = store.capabilities.max_read_batch or len(keys)
        for start in range(0, len(keys), size):
            chunk = list(keys[start : start + size])
            resp = calls.retried(f"{store.name}: get", "GetVectors", **calls.ids, keys=chunk, returnData=True)
            for item in resp.get("vectors", []):
                got[item["key"]] = item["data"]["float32"]
        # deleted between the ranking and this read: no vector to measure, so no distance
        found = [key for key in keys if key in got]
        matrix = np.asarray([got[key] for key in found], np.float32).reshape(len(found), -1)
        dists = canonical_distances(store.spec.metric, query, matrix)
        return {key: float(d) for key, d in zip(found, dists, strict=True)}
