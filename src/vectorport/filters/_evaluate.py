"""The pure-Python evaluator: the definition of what a filter means, and the test oracle.

Semantics (see ``docs/filters.md`` for the truth table):

* ``$eq v`` matches a scalar field equal to ``v`` or an array field with an element equal to
  ``v``. Equality is type-strict: ``true`` never equals ``1``, ``"1"`` never equals ``1``;
  ``1`` equals ``1.0``.
* ``$is v`` matches a scalar field equal to ``v`` (same type-strict equality), never an array:
  the whole value is compared (LlamaIndex's ``EQ``). ``$is_not`` is exactly ``not $is``.
* ``$ne`` is exactly ``not $eq`` and ``$nin`` exactly ``not $in``: both match a missing field.
* ``$gt/$gte/$lt/$lte`` match only a numeric scalar field (not bool, not an array).
* ``$in`` matches when ``$eq`` matches any of its values.
* ``$exists true`` matches when the key is present, whatever its value (null included).
* ``$not`` is plain logical negation, so it matches records where the field is missing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ._ast import And, Compare, Exists, FilterNode, In, Not, Or, Scalar

__all__ = ["evaluate", "evaluate_many"]

_MISSING = object()


def _scalar_eq(stored: Any, wanted: Scalar) -> bool:
    if isinstance(wanted, bool):
        return isinstance(stored, bool) and stored is wanted
    if isinstance(wanted, str):
        return isinstance(stored, str) and stored == wanted
    return isinstance(stored, int | float) and not isinstance(stored, bool) and stored == wanted


def _eq(stored: Any, wanted: Scalar) -> bool:
    if isinstance(stored, list):
        return any(_scalar_eq(item, wanted) for item in stored)
    return _scalar_eq(stored, wanted)


_RANGE: dict[str, Callable[[float, float], bool]] = {
    "$gt": lambda a, b: a > b,
    "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b,
}


def evaluate(node: FilterNode | None, metadata: Mapping[str, Any] | None) -> bool:
    """Does a record with this metadata match the filter? ``None`` filter matches everything.

    >>> from vectorport.filters import parse_filter
    >>> evaluate(parse_filter({"tags": "a"}), {"tags": ["a", "b"]})
    True
    >>> evaluate(parse_filter({"lang": {"$ne": "en"}}), {})
    True
    """
    if node is None:
        return True
    meta = metadata or {}
    if isinstance(node, Compare):
        stored = meta.get(node.field, _MISSING)
        if node.op == "$eq":
            return stored is not _MISSING and _eq(stored, node.value)
        if node.op == "$ne":
            return stored is _MISSING or not _eq(stored, node.value)
        if node.op in ("$is", "$is_not"):
            return _scalar_eq(stored, node.value) is (node.op == "$is")
        if stored is _MISSING or isinstance(stored, bool) or not isinstance(stored, int | float):
            return False
        return _RANGE[node.op](stored, node.value)  # type: ignore[arg-type]
    if isinstance(node, In):
        stored = meta.get(node.field, _MISSING)
        hit = stored is not _MISSING and any(_eq(stored, v) for v in node.values)
        return not hit if node.negated else hit
    if isinstance(node, Exists):
        return (node.field in meta) is node.exists
    if isinstance(node, And):
        return all(evaluate(c, meta) for c in node.children)
    if isinstance(node, Or):
        return any(evaluate(c, meta) for c in node.children)
    if isinstance(node, Not):
        return not evaluate(node.child, meta)
    raise TypeError(f"not a filter node: {node!r}")


def evaluate_many(
    node: FilterNode | None, metadatas: Sequence[Mapping[str, Any] | None]
) -> npt.NDArray[np.bool_]:
    """A boolean mask: which of these metadata dicts match."""
    if node is None:
        return np.ones(len(metadatas), dtype=bool)
    return np.fromiter((evaluate(node, m) for m in metadatas), dtype=bool, count=len(metadatas))
