"""QueryVectors: vector, full-text and hybrid search, and the paging of long result lists."""

from __future__ import annotations

import secrets
import time
from typing import Any

import numpy as np
import numpy.typing as npt

from ._core import Index, ServiceCore
from ._errors import ValidationException
from ._filter import FilterNode, parse_filter
from ._table import VectorTable
from ._text import bm25_scores, rrf
from ._vectors import parse_vector

__all__ = ["QueryOperations"]

_QUERY_TOKEN_SECONDS = 900.0
"""How long a QueryVectors page token stays valid after its query."""
_MAX_QUERY_RESULT_SETS = 256
"""Query result sets kept for their later pages (the oldest is dropped beyond this)."""


class QueryOperations(ServiceCore):
    """QueryVectors and its result pages."""

    def QueryVectors(self, inp: dict[str, Any]) -> dict[str, Any]:
        index = self._index(inp)
        token = inp.get("nextToken")
        if token is not None:
            return self._query_page(token, index)
        texts: list[dict[str, str]] = inp.get("queryTexts") or []
        if inp.get("queryVector") is None and not texts:
            raise ValidationException("A request must include queryVector, queryTexts, or both")
        top_k = inp["topK"]
        if top_k > self.limits.max_top_k:
            raise ValidationException(f"topK must be between 1 and {self.limits.max_top_k}, got {top_k}")
        query = (
            None
            if inp.get("queryVector") is None
            else parse_vector(inp["queryVector"], index, "Invalid query vector")
        )
        if texts:
            self._check_query_texts(index, texts)
        doc = inp.get("filter")
        mode = self._mode(index)
        query_mode = inp.get("queryMode")
        if query_mode == "CLASSIC" and mode == "ENHANCED":
            raise ValidationException("You can't specify queryMode CLASSIC for an ENHANCED index")
        node = (
            None
            if doc is None
            else parse_filter(
                doc,
                index.non_filterable,
                enhanced="ENHANCED" in (mode, query_mode),
                max_constraints=self.limits.max_filter_constraints if mode == "ENHANCED" else None,
            )
        )
        want_meta, want_dist = bool(inp.get("returnMetadata")), bool(inp.get("returnDistance"))
        # "This setting doesn't add scores to vector-only requests."
        want_scores = bool(inp.get("returnScores")) and bool(texts)
        table = index.table
        with table.lock:
            if texts:
                hits = _text_search(table, query, texts, top_k, node)
            else:
                assert query is not None
                hits = [(row, dist, {}) for row, dist in table.search(query, top_k, node)]
            results: list[dict[str, Any]] = []
            for row, dist, scores in hits:
                rec: dict[str, Any] = {"key": table.keys[row]}
                if want_meta:
                    rec["metadata"] = table.metadatas[row]
                if want_dist and dist is not None:
                    rec["distance"] = dist
                if want_scores:
                    rec["scores"] = scores
                results.append(rec)
        if len(results) <= self.limits.query_page_size:
            return {"vectors": results, "distanceMetric": index.metric}
        return self._query_result_page(self._remember_query(results, index.arn), 0, index)

    def _check_query_texts(self, index: Index, texts: list[dict[str, str]]) -> None:
        if self._mode(index) != "ENHANCED":
            raise ValidationException(
                f"Full-text and hybrid searches require a vector index in ENHANCED mode; {index.name} "
                "is CLASSIC (UpdateIndexMode)"
            )
        searchable = {c["metadataKey"] for c in index.text_search}
        seen: set[str] = set()
        for text in texts:
            key = text["metadataKey"]
            if key in seen:
                raise ValidationException(f"queryTexts targets metadata key {key} more than once")
            seen.add(key)
            if key not in searchable:
                raise ValidationException(
                    f"Metadata key {key} is not full-text searchable on the vector index {index.name}; "
                    "add it with UpdateMetadataConfiguration"
                )

    def _remember_query(self, results: list[dict[str, Any]], arn: str) -> str:
        """Keep a query's ranked results for their later pages; returns the result set's id.

        A page token names the result set and an offset, and stays valid until the set
        expires, so a token can be sent again: botocore's paginator resumes a
        ``MaxItems``-truncated run (``StartingToken``, the CLI's ``--starting-token``) by
        re-sending the token of the page it cut, and a retried request re-sends its token.
        """
        ident = secrets.token_urlsafe(18)
        with self.lock:
            now = time.monotonic()
            for old in [i for i, (exp, _, _) in self._query_pages.items() if exp < now]:
                del self._query_pages[old]
            while len(self._query_pages) >= _MAX_QUERY_RESULT_SETS:
                del self._query_pages[next(iter(self._query_pages))]  # the oldest
            self._query_pages[ident] = (now + _QUERY_TOKEN_SECONDS, results, arn)
        return ident

    def _query_result_page(self, ident: str, offset: int, index: Index) -> dict[str, Any]:
        with self.lock:
            state = self._query_pages.get(ident)
        if state is None or state[2] != index.arn or state[0] < time.monotonic() or offset > len(state[1]):
            raise ValidationException("The nextToken is invalid or has expired; re-issue the query")
        results = state[1]
        page = self.limits.query_page_size
        out: dict[str, Any] = {"vectors": results[offset : offset + page], "distanceMetric": index.metric}
        if offset + page < len(results):
            out["nextToken"] = f"{ident}.{offset + page}"
        return out

    def _query_page(self, token: str, index: Index) -> dict[str, Any]:
        ident, _, raw = token.rpartition(".")
        if not ident or not raw.isdigit():
            raise ValidationException("The nextToken is invalid or has expired; re-issue the query")
        return self._query_result_page(ident, int(raw), index)


def _text_search(
    table: VectorTable,
    query: np.ndarray[Any, Any] | None,
    texts: list[dict[str, str]],
    top_k: int,
    node: FilterNode | None,
) -> list[tuple[int, float | None, dict[str, Any]]]:
    """Full-text-only (``query`` None) or hybrid ranking: ``(row, distance, scores)`` best
    first. The filter applies to every ranking (see :mod:`._text`)."""
    n = len(table)
    if n == 0:
        return []
    mask = table.mask(node)
    bm25: list[tuple[str, npt.NDArray[np.float64]]] = []
    for text in texts:
        scores = bm25_scores(table.text_field(text["metadataKey"]), text["text"], n)
        if mask is not None:
            scores[~mask[:n]] = 0.0
        bm25.append((text["metadataKey"], scores))
    names = np.asarray(table.keys, dtype=object)
    distances: dict[int, float] = {}
    if query is None:
        rank = np.sum([s for _, s in bm25], axis=0)
    else:
        vector_hits = table.search(query, top_k, node)
        distances = dict(vector_hits)
        rankings = [[row for row, _ in vector_hits]]
        for _, scores in bm25:
            hit = np.flatnonzero(scores > 0)
            rankings.append(hit[np.lexsort((names[hit], -scores[hit]))][:top_k].tolist())
        rank = rrf(rankings, n)
    rows = np.flatnonzero(rank > 0)
    rows = rows[np.lexsort((names[rows], -rank[rows]))][:top_k]
    out: list[tuple[int, float | None, dict[str, Any]]] = []
    for row in (int(r) for r in rows):
        detail: dict[str, Any] = {}
        if query is not None:
            detail["fused"] = float(rank[row])
        detail["bm25Scores"] = [
            {"metadataKey": key, "score": float(scores[row])} for key, scores in bm25 if scores[row] > 0
        ]
        if row in distances:
            detail["vectorDistance"] = distances[row]
        out.append((row, distances.get(row), detail))
    return out
