"""The query set: vectors or texts, optional filter, optional relevance labels.

Queries come from code (:class:`Query`, arrays, dicts), from a JSONL file
(:func:`load_queries`), or are drawn from the data (:func:`sample_queries`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from .._embedder import Embedder
from .._models import JSON
from .._validate import vector_type_problem
from ..exceptions import ConfigurationError, FilterError
from ..filters import FilterNode, parse_filter, to_dict

__all__ = [
    "Embedder",
    "Query",
    "QueryEmbedder",
    "QueryLike",
    "embed_queries",
    "filter_label",
    "load_queries",
    "normalize_queries",
    "sample_queries",
]

QueryEmbedder: TypeAlias = "Embedder | Callable[[list[str]], Any]"
"""What embeds text queries: a :class:`vectorport.Embedder` (its ``embed_queries``), or any
callable turning a list of texts into a (texts, dimension) array of vectors."""

QueryLike: TypeAlias = "Query | Mapping[str, Any] | Sequence[float] | npt.NDArray[Any]"


@dataclass(frozen=True)
class Query:
    """One query of a comparison.

    Parameters
    ----------
    vector
        The query vector (float32). ``None`` when ``text`` is given and an embedder will make it.
    text
        The query text, embedded once before any store is queried.
    filter
        A portable filter (dict or parsed tree), applied inside every store.
    relevant
        Relevance labels: keys that answer the query (binary gain) or key → graded gain. They
        enable nDCG@k, MRR and hit@k.
    id
        A name for the query in reports (default: its position).

    >>> Query([1.0, 0.0], filter={"lang": "en"}, relevant=["a#0"]).filter_label
    '{"lang": "en"}'
    """

    vector: npt.NDArray[np.float32] | Sequence[float] | None = None
    text: str | None = None
    filter: Mapping[str, Any] | FilterNode | None = None
    relevant: Sequence[str] | Mapping[str, float] = ()
    id: str | None = None
    origin: str | None = field(default=None, repr=False, compare=False)
    """Where the query came from (``FILE:LINE`` for JSONL), named in error messages."""
    where: FilterNode | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.vector is None and self.text is None:
            named = f" (query {self.id!r})" if self.id is not None else ""
            raise ConfigurationError(f"a query needs a vector or a text{named}")
        if self.vector is not None:
            named = f"query {self.id!r}" + (f" ({self.origin})" if self.origin else "")
            raw = self.vector
            why = vector_type_problem(raw)
            if why:
                raise ConfigurationError(f"{named}: {why}")
            try:
                arr = np.asarray(raw)
                if arr.dtype.kind not in "iuf":
                    raise ValueError(arr.dtype.name)
                vec = arr.astype(np.float32).ravel()
            except (TypeError, ValueError, OverflowError):
                raise ConfigurationError(f"{named}: the vector must be a list of numbers") from None
            if vec.size == 0 or not np.all(np.isfinite(vec)):
                raise ConfigurationError(f"{named}: the vector is empty or not finite")
            object.__setattr__(self, "vector", vec)
        object.__setattr__(self, "where", parse_filter(self.filter))
        if isinstance(self.relevant, str):
            raise ConfigurationError(f"query {self.id!r}: relevant must be a list of keys, not a string")
        if isinstance(self.relevant, Mapping):
            gains = {str(k): float(v) for k, v in self.relevant.items()}
            if any(not math.isfinite(g) or g < 0 for g in gains.values()):
                raise ConfigurationError(f"query {self.id!r}: relevance gains must be finite and >= 0")
            object.__setattr__(self, "relevant", gains)
        else:
            object.__setattr__(self, "relevant", tuple(str(k) for k in self.relevant))

    @property
    def gains(self) -> dict[str, float]:
        """Relevance gain per key (1.0 for plain relevant keys)."""
        if isinstance(self.relevant, Mapping):
            return {k: v for k, v in self.relevant.items() if v > 0}
        return dict.fromkeys(self.relevant, 1.0)

    @property
    def filter_label(self) -> str:
        """The canonical JSON of the filter (``"none"`` without one): the per-filter group name."""
        return filter_label(self.where)

    def describe(self, index: int) -> str:
        """How error messages name this query: its origin (or position) and its id."""
        name = self.origin or f"query #{index}"
        return f"{name} ({self.id})" if self.id is not None else name

    def with_vector(self, vector: npt.ArrayLike) -> Query:
        """A copy with ``vector`` set (after embedding)."""
        vec = np.asarray(vector, dtype=np.float32)
        return Query(vec, self.text, self.where, self.relevant, self.id, self.origin)

    def to_dict(self) -> dict[str, JSON]:
        """A JSON-ready dict (the JSONL line format)."""
        out: dict[str, JSON] = {}
        if self.id is not None:
            out["id"] = self.id
        if self.vector is not None:
            out["vector"] = [float(x) for x in np.asarray(self.vector)]
        if self.text is not None:
            out["text"] = self.text
        if self.where is not None:
            out["filter"] = to_dict(self.where)
        if self.relevant:
            out["relevant"] = (
                dict(self.relevant) if isinstance(self.relevant, Mapping) else list(self.relevant)
            )
        return out


def filter_label(where: FilterNode | None) -> str:
    """A stable, readable name for a filter (``"none"`` without one): compact JSON that parses
    back to the same tree, so distinct filters never share a label.

    >>> from vectorport.filters import parse_filter
    >>> filter_label(parse_filter({"cluster": {"$eq": 3}, "stars": {"$lt": 5}}))
    '{"cluster": 3, "stars": {"$lt": 5}}'
    """
    return "none" if where is None else json.dumps(_compact(to_dict(where)))


def _compact(node: dict[str, Any]) -> dict[str, Any]:
    """``{f: {"$eq": v}}`` as ``{f: v}``; an ``$and`` of single-field parts on distinct fields as
    one object (both parse to the same tree)."""
    if set(node) == {"$and"}:
        parts = [_compact(c) for c in node["$and"]]
        fields = [next(iter(p)) for p in parts if len(p) == 1]
        if (
            len(parts) > 1
            and len(fields) == len(parts)
            and len(set(fields)) == len(fields)
            and not any(f.startswith("$") for f in fields)
        ):
            return {f: p[f] for f, p in zip(fields, parts, strict=True)}
        return {"$and": parts}
    if set(node) in ({"$or"}, {"$not"}):
        key = next(iter(node))
        value = node[key]
        return {key: [_compact(c) for c in value] if isinstance(value, list) else _compact(value)}
    out: dict[str, Any] = {}
    for field_name, cond in node.items():
        if isinstance(cond, dict) and set(cond) == {"$eq"} and not isinstance(cond["$eq"], dict | list):
            out[field_name] = cond["$eq"]
        else:
            out[field_name] = cond
    return out


_FIELDS = frozenset({"id", "vector", "text", "filter", "relevant"})


def _from_mapping(item: Mapping[str, Any], where: str, origin: str | None = None) -> Query:
    unknown = set(item) - _FIELDS
    if unknown:
        raise ConfigurationError(
            f"{where}: unknown field(s) {', '.join(sorted(unknown))}; a query has "
            f"{', '.join(sorted(_FIELDS))}"
        )
    qid = item.get("id")
    return Query(
        item.get("vector"),
        item.get("text"),
        item.get("filter"),
        item.get("relevant") or (),
        None if qid is None else str(qid),
        origin,
    )


def normalize_queries(queries: Iterable[QueryLike] | npt.NDArray[Any]) -> list[Query]:
    """Turn vectors, dicts (the JSONL format) and :class:`Query` objects into queries."""
    if isinstance(queries, np.ndarray):
        arr = np.asarray(queries, dtype=np.float32)
        if arr.ndim == 1:
            arr = arr[None, :]
        return [Query(row) for row in arr]
    out: list[Query] = []
    for i, item in enumerate(queries):
        if isinstance(item, Query):
            out.append(item)
        elif isinstance(item, Mapping):
            out.append(_from_mapping(item, f"query #{i}"))
        else:
            out.append(Query(np.asarray(item, dtype=np.float32)))
    return out


def load_queries(path: str | Path) -> list[Query]:
    """Read queries from a JSONL file: one JSON object per line with ``vector`` or ``text``, and
    optionally ``filter``, ``relevant`` (keys, or key → gain) and ``id``. Blank lines are skipped.
    """
    source = Path(path)
    try:
        lines = source.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigurationError(f"cannot read queries from {source}: {exc.strerror or exc}") from None
    out: list[Query] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigurationError(f"{where}: not JSON: {exc.msg}") from None
        if not isinstance(item, Mapping):
            raise ConfigurationError(f"{where}: expected a JSON object, got {type(item).__name__}")
        try:
            out.append(_from_mapping(item, where, origin=where))
        except ConfigurationError as exc:
            raise ConfigurationError(f"{where}: {exc}") from None
        except FilterError as exc:
            raise FilterError(f"{exc.reason} (query at {where})", exc.path) from None
    if not out:
        raise ConfigurationError(f"{source} holds no queries")
    return out


def sample_queries(
    vectors: npt.NDArray[np.float32],
    n: int,
    *,
    filters: Sequence[Mapping[str, Any] | FilterNode | None] = (None,),
    seed: int = 0,
    keys: Sequence[str] | None = None,
) -> list[Query]:
    """``n`` query vectors drawn from the data (without replacement when possible) for each filter.

    The same rows are used for every filter, so per-filter figures are comparable.
    """
    if n < 1:
        raise ConfigurationError(f"the sample size must be positive, got {n}")
    total = int(vectors.shape[0])
    if total == 0:
        raise ConfigurationError("cannot sample queries from an empty collection")
    rng = np.random.default_rng(seed)
    rows = rng.choice(total, size=n, replace=n > total)
    out: list[Query] = []
    for spec in filters or (None,):
        for row in rows:
            name = f"sample:{keys[int(row)]}" if keys is not None else f"sample:{int(row)}"
            out.append(Query(vectors[int(row)], filter=spec, id=name))
    return out


def embed_queries(queries: Sequence[Query], embedder: QueryEmbedder | None) -> list[Query]:
    """Give every text-only query a vector, embedding all texts in one call."""
    todo = [i for i, q in enumerate(queries) if q.vector is None]
    if not todo:
        return list(queries)
    if embedder is None:
        raise ConfigurationError(
            f"{len(todo)} quer{'y has' if len(todo) == 1 else 'ies have'} text but no vector; "
            "pass an embedder (embedder=…) or give vectors"
        )
    texts = [str(queries[i].text) for i in todo]
    embed = embedder if callable(embedder) else embedder.embed_queries
    vectors = np.asarray(embed(texts), dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != len(texts):
        raise ConfigurationError(
            f"the embedder returned an array of shape {vectors.shape} for {len(texts)} texts"
        )
    out = list(queries)
    for i, vec in zip(todo, vectors, strict=True):
        out[i] = queries[i].with_vector(vec)
    return out
