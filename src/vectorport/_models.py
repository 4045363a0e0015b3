"""Records, collection specs, matches and the canonical distance/score convention."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from .exceptions import ConfigurationError

__all__ = [
    "JSON",
    "CollectionSpec",
    "Include",
    "Match",
    "Metric",
    "QueryResult",
    "Record",
    "ScanPage",
    "Vector",
    "canonical_distances",
    "score_from_distance",
]

JSON: TypeAlias = Any
"""A JSON value: None, bool, int, float, str, list of JSON, dict of str to JSON."""

Vector: TypeAlias = npt.NDArray[np.float32]


class Metric(StrEnum):
    """Distance metric of a collection.

    ===========  ====================  ==========================
    metric       canonical distance    score (higher is better)
    ===========  ====================  ==========================
    cosine       ``1 - cos(q, x)``     ``1 - distance`` (= cos)
    euclidean    ``||q - x||`` (L2)    ``-distance``
    dot          ``-dot(q, x)``        ``-distance`` (= dot)
    ===========  ====================  ==========================
    """

    COSINE = "cosine"
    EUCLIDEAN = "euclidean"
    DOT = "dot"

    @classmethod
    def parse(cls, value: str | Metric) -> Metric:
        """Accept the canonical names and common aliases (``l2``, ``ip``, ``inner_product``)."""
        if isinstance(value, Metric):
            return value
        name = str(value).strip().lower()
        alias = _METRIC_ALIASES.get(name, name)
        try:
            return cls(alias)
        except ValueError:
            choices = ", ".join(m.value for m in cls)
            raise ConfigurationError(f"unknown metric {value!r}; choose one of {choices}") from None


_METRIC_ALIASES = {
    "cos": "cosine",
    "dotproduct": "dot",
    "dot_product": "dot",
    "inner_product": "dot",
    "ip": "dot",
    "l2": "euclidean",
}


def score_from_distance(metric: Metric, distance: float) -> float:
    """The published score for a canonical distance: ``1 - d`` for cosine, ``-d`` otherwise."""
    return 1.0 - distance if metric is Metric.COSINE else 0.0 - distance


def canonical_distances(metric: Metric, query: Vector, matrix: Vector) -> npt.NDArray[np.float64]:
    """Exact canonical distances from ``query`` to every row of ``matrix`` (float64 maths).

    A row or query without a distance (non-finite components; all zeros under cosine) gets a
    NaN or infinite one, silently: callers drop it (:mod:`vectorport._exact`)."""
    q = query.astype(np.float64, copy=False)
    m = matrix.astype(np.float64, copy=False)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if metric is Metric.COSINE:
            norms = np.linalg.norm(m, axis=1) * np.linalg.norm(q)
            cos = (m @ q) / norms
            # Rounding puts cos a hair outside [-1, 1] (a vector against itself gave -2e-16
            # about a third of the time); a distance is never negative.
            return np.asarray(np.clip(1.0 - cos, 0.0, 2.0), dtype=np.float64)
        if metric is Metric.EUCLIDEAN:
            diff = m - q
            return np.asarray(np.sqrt(np.einsum("ij,ij->i", diff, diff)), dtype=np.float64)
        return np.asarray(-(m @ q), dtype=np.float64)


@dataclass(frozen=True)
class CollectionSpec:
    """What a collection is: its name, vector dimension, metric and (optionally) embedding model."""

    name: str
    dimension: int
    metric: Metric = Metric.COSINE
    embedding_model: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "metric", Metric.parse(self.metric))
        if isinstance(self.dimension, bool) or not isinstance(self.dimension, int):
            raise ConfigurationError(f"dimension must be an integer, got {self.dimension!r}")
        if self.dimension < 1:
            raise ConfigurationError(f"dimension must be at least 1, got {self.dimension}")
        if not self.name:
            raise ConfigurationError("a collection needs a non-empty name")

    def to_dict(self) -> dict[str, JSON]:
        """A JSON-ready dict."""
        return {
            "name": self.name,
            "dimension": self.dimension,
            "metric": self.metric.value,
            "embedding_model": self.embedding_model,
        }


class Include(StrEnum):
    """Optional parts of a record a read returns."""

    VECTOR = "vector"
    METADATA = "metadata"
    TEXT = "text"

    @classmethod
    def parse(cls, value: Iterable[str | Include] | None, default: frozenset[Include]) -> frozenset[Include]:
        """Normalise an ``include=`` argument; ``None`` means ``default``."""
        if value is None:
            return default
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, Iterable) or isinstance(value, bytes | Mapping):
            raise ConfigurationError(
                f"include must be a list of names ({', '.join(i.value for i in cls)}), "
                f"got {type(value).__name__}"
            )
        out = set()
        for item in value:
            try:
                out.add(cls(item))
            except ValueError:
                choices = ", ".join(i.value for i in cls)
                raise ConfigurationError(f"unknown include {item!r}; choose from {choices}") from None
        return frozenset(out)


ALL_INCLUDES = frozenset(Include)
QUERY_INCLUDES = frozenset({Include.METADATA, Include.TEXT})


@dataclass(eq=False)
class Record:
    """One chunk: a key such as ``docs/intro.md#chunk3``, its vector, JSON metadata and text.

    ``vector`` may be given as any sequence of numbers; validation turns it into float32.
    Records read back without a vector (``include`` without ``"vector"``) have ``vector=None``.

    >>> Record("a#0", [1.0, 0.0], {"lang": "en"}, "hello").key
    'a#0'
    """

    key: str
    vector: Vector | Sequence[float] | None
    metadata: dict[str, JSON] = field(default_factory=dict)
    text: str | None = None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Record):
            return NotImplemented
        if (self.key, self.metadata, self.text) != (other.key, other.metadata, other.text):
            return False
        if self.vector is None or other.vector is None:
            return self.vector is None and other.vector is None
        return bool(np.array_equal(np.asarray(self.vector), np.asarray(other.vector)))

    __hash__ = None  # type: ignore[assignment]

    def to_dict(self) -> dict[str, JSON]:
        """A JSON-ready dict (vector as a list of floats)."""
        vec = None if self.vector is None else [float(x) for x in np.asarray(self.vector).ravel()]
        return {"key": self.key, "vector": vec, "metadata": self.metadata, "text": self.text}


@dataclass(frozen=True)
class Match:
    """One query hit. ``distance`` is canonical (see :class:`Metric`), ``score`` derives from it.

    ``extra`` carries backend-specific facts, e.g. ``vector_rank`` and ``text_rank`` in hybrid
    search.
    """

    key: str
    distance: float
    score: float
    metadata: dict[str, JSON] | None = None
    text: str | None = None
    vector: Vector | None = None
    extra: Mapping[str, JSON] = field(default_factory=dict)

    def to_dict(self) -> dict[str, JSON]:
        """A JSON-ready dict."""
        out: dict[str, JSON] = {
            "key": self.key,
            "distance": self.distance,
            "score": self.score,
            "metadata": self.metadata,
            "text": self.text,
        }
        if self.vector is not None:
            out["vector"] = [float(x) for x in self.vector]
        if self.extra:
            out.update(self.extra)
        return out


@dataclass(frozen=True)
class QueryResult(Sequence[Match]):
    """The matches of one query, best first, and how many were asked for.

    ``k_returned < k_requested`` means the store had fewer matching records, or under-filled.
    """

    matches: tuple[Match, ...]
    k_requested: int

    @property
    def k_returned(self) -> int:
        """How many matches came back."""
        return len(self.matches)

    @property
    def keys(self) -> list[str]:
        """The keys of the matches, best first."""
        return [m.key for m in self.matches]

    def __len__(self) -> int:
        return len(self.matches)

    def __getitem__(self, index: Any) -> Any:
        return self.matches[index]

    def __iter__(self) -> Iterator[Match]:
        return iter(self.matches)

    def to_dict(self) -> dict[str, JSON]:
        """A JSON-ready dict."""
        return {
            "k_requested": self.k_requested,
            "k_returned": self.k_returned,
            "matches": [m.to_dict() for m in self.matches],
        }


@dataclass(frozen=True)
class ScanPage(Sequence[Record]):
    """One page of a scan. ``cursor`` resumes the scan just after this page (``None``: done)."""

    records: tuple[Record, ...]
    cursor: str | None

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, index: Any) -> Any:
        return self.records[index]

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records)


def is_finite_number(value: object) -> bool:
    """True for int/float (not bool) values that are finite."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return not isinstance(value, float) or math.isfinite(value)
