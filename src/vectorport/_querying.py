"""A search request checked before any I/O: :func:`prepare_query`, where every search method
of every backend starts (``query``, ``text_query``, ``hybrid_query``, their async forms), so
all refuse the same bad input with the same errors and compile the filter once."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np

from ._models import QUERY_INCLUDES, Include, Vector
from ._protocol import FilterLike
from ._validate import check_vector
from .exceptions import ConfigurationError, Problem, UnsupportedFeatureError, ValidationError
from .filters import parse_filter

if TYPE_CHECKING:
    from ._base import BaseStore

__all__ = ["PreparedQuery", "prepare_query"]

N = TypeVar("N")
"""A backend's native filter: what its compiler makes of a portable filter tree."""


@dataclass(frozen=True)
class PreparedQuery(Generic[N]):
    """A search request checked before any I/O, its filter compiled once to the native form."""

    vector: Vector | None
    """The query vector (float32, checked against the collection); ``None`` for text search."""
    k: int
    where: N | None
    """The compiled filter, or ``None`` for no filter."""
    include: frozenset[Include]
    params: Mapping[str, Any]


def prepare_query(
    store: BaseStore[N],
    vector: Sequence[float] | Any | None,
    k: Any,
    filter: FilterLike,
    include: Iterable[str] | None,
    params: Mapping[str, Any] | None,
    *,
    includes: frozenset[Include] = QUERY_INCLUDES,
    top_k_limit: bool = True,
) -> PreparedQuery[N]:
    """Check a search request of ``store`` before any I/O and compile its filter once.

    ``vector=None`` is a text search (no vector to check); ``includes`` are the fields the
    search may return; ``top_k_limit=False`` lifts the backend's ``max_top_k`` (a search whose
    candidates are read another way).
    """
    vec: Vector | None = None
    if vector is not None:
        spec = store.spec
        vec, why = check_vector(vector, spec.dimension, spec.metric)
        if vec is None:
            raise ValidationError(
                [Problem(None, "query vector", why or "invalid")],
                backend=store.name,
                outcome="the query was not run",
            )
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ConfigurationError(f"k must be a positive integer, got {k!r}")
    k = int(k)
    top = store.capabilities.max_top_k
    if top_k_limit and top is not None and k > top:
        raise UnsupportedFeatureError(f"{store.name} returns at most {top} results per query; k={k}")
    node = parse_filter(filter)
    where = None if node is None else store._compile_filter(node)
    inc = Include.parse(include, includes)
    return PreparedQuery(vec, k, where, inc, params or {})
