"""The S3 Vectors metadata filter: validation and vectorised evaluation.

Grammar (AWS "Metadata filtering" guide): a filter is a JSON object with exactly one key,
either ``$and``/``$or`` (a non-empty array of filters) or a metadata key. A metadata key maps
to a primitive (implicit ``$eq``) or to an object of one or more operators, which all must hold
(``{"price": {"$gte": 10, "$lte": 50}}``). Operators: ``$eq $ne`` (string, number, boolean),
``$gt $gte $lt $lte`` (number), ``$in $nin`` (non-empty array of primitives), ``$exists``
(boolean), and ``$startsWith`` (string prefix) which needs ENHANCED query behaviour (an
ENHANCED index, or ``queryMode=ENHANCED``). ``{}`` is invalid, and so is filtering on a
non-filterable key. On an ENHANCED index a filter may use at most 100 constraints, each value
it evaluates counting as one (``$in`` with 3 values: 3; ``$and``/``$or`` themselves: 0).

Semantics. AWS documents that ``$eq`` on an array value matches when any element equals. For
what AWS leaves undocumented this server follows vectorport's oracle
(:func:`vectorport.filters.evaluate`): ``$ne`` is exactly ``not $eq`` and ``$nin`` exactly
``not $in``, so both match a vector without the key; range operators match only a numeric
scalar (never a bool, string or array); equality is type-strict (``true`` never equals ``1``);
``$exists`` tests presence; ``$startsWith`` matches a string value, or a list with a string
element, starting with the prefix.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ._errors import ValidationException

__all__ = ["Columns", "FilterNode", "evaluate", "parse_filter"]

Mask = npt.NDArray[np.bool_]
_COMPARE = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists", "$startsWith")
_RANGE: dict[str, Callable[[Any, Any], Any]] = {
    "$gt": operator.gt,
    "$gte": operator.ge,
    "$lt": operator.lt,
    "$lte": operator.le,
}


@dataclass(frozen=True)
class FilterNode:
    """``op`` is ``$and``/``$or`` (with ``children``) or a comparison on ``key``."""

    op: str
    key: str = ""
    value: Any = None
    children: tuple[FilterNode, ...] = ()

    def keys(self) -> set[str]:
        if self.children:
            return set().union(*(c.keys() for c in self.children))
        return {self.key}

    def leaves(self) -> list[FilterNode]:
        """The comparisons under this node."""
        if self.op in ("$and", "$or"):
            return [leaf for c in self.children for leaf in c.leaves()]
        return [self]

    def constraints(self) -> int:
        """AWS's count: each value the filter evaluates is one constraint."""
        return sum(len(n.value) if n.op in ("$in", "$nin") else 1 for n in self.leaves())


def _invalid(why: str) -> ValidationException:
    return ValidationException(f"Invalid query filter: {why}")


def _is_number(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and (not isinstance(value, float) or math.isfinite(value))
    )


def _is_primitive(value: Any) -> bool:
    return isinstance(value, str | bool) or _is_number(value)


def parse_filter(
    doc: Any,
    non_filterable: Sequence[str] = (),
    *,
    enhanced: bool = True,
    max_constraints: int | None = None,
) -> FilterNode:
    """Validate a filter document; raise ``ValidationException`` saying what is wrong.

    ``enhanced``: the query runs with ENHANCED behaviour (``$startsWith`` allowed);
    ``max_constraints``: the constraint limit of an ENHANCED index (``None``: no limit).
    """
    node = _parse(doc, "filter")
    blocked = sorted(node.keys() & set(non_filterable))
    if blocked:
        raise ValidationException(
            f"Invalid query filter: cannot filter on non-filterable metadata key(s) {', '.join(blocked)}"
        )
    if not enhanced and any(leaf.op == "$startsWith" for leaf in node.leaves()):
        raise _invalid(
            "$startsWith requires ENHANCED query behavior: an ENHANCED index, or queryMode ENHANCED"
        )
    if max_constraints is not None and (count := node.constraints()) > max_constraints:
        raise _invalid(
            f"the filter uses {count} filter constraints; an ENHANCED index allows at most "
            f"{max_constraints} (each value the filter evaluates counts as one)"
        )
    return node


def _parse(doc: Any, where: str) -> FilterNode:
    if not isinstance(doc, dict):
        raise _invalid(f"{where} must be a JSON object")
    if len(doc) != 1:
        raise _invalid(f"{where} must have exactly one key, got {len(doc)}")
    ((key, value),) = doc.items()
    if key in ("$and", "$or"):
        if not isinstance(value, list) or not value:
            raise _invalid(f"{where}.{key} must be a non-empty array of filters")
        return FilterNode(key, children=tuple(_parse(c, f"{where}.{key}[{i}]") for i, c in enumerate(value)))
    if key.startswith("$"):
        raise _invalid(f"unknown or misplaced operator {key} in {where}")
    if not key:
        raise _invalid(f"{where} has an empty metadata key")
    if isinstance(value, dict):
        if not value:
            raise _invalid(f"{where}.{key} has no operator")
        parts = [_compare(key, op, operand, f"{where}.{key}") for op, operand in value.items()]
        return parts[0] if len(parts) == 1 else FilterNode("$and", children=tuple(parts))
    if _is_primitive(value):
        return FilterNode("$eq", key, value)
    raise _invalid(f"{where}.{key} must be a string, number, boolean or an operator object")


def _compare(key: str, op: str, operand: Any, where: str) -> FilterNode:
    if op not in _COMPARE:
        raise _invalid(f"unsupported operator {op} at {where}")
    if op in ("$eq", "$ne"):
        if not _is_primitive(operand):
            raise _invalid(f"{where}.{op} takes a string, number or boolean")
    elif op in _RANGE:
        if not _is_number(operand):
            raise _invalid(f"{where}.{op} takes a number")
    elif op == "$startsWith":
        if not isinstance(operand, str):
            raise _invalid(f"{where}.{op} takes a string")
    elif op in ("$in", "$nin"):
        if not isinstance(operand, list) or not operand or not all(_is_primitive(v) for v in operand):
            raise _invalid(f"{where}.{op} takes a non-empty array of strings, numbers or booleans")
        operand = tuple(operand)
    elif not isinstance(operand, bool):
        raise _invalid(f"{where}.$exists takes a boolean")
    return FilterNode(op, key, operand)


# ---------------------------------------------------------------------- evaluation
@dataclass
class Column:
    """One metadata key over every row, typed for vectorised comparisons."""

    present: Mask
    num: npt.NDArray[np.float64]
    """Numeric scalars (NaN elsewhere)."""
    text: npt.NDArray[np.object_]
    """String scalars (None elsewhere)."""
    flag: npt.NDArray[np.int8]
    """Boolean scalars as 0/1 (-1 elsewhere)."""
    list_rows: npt.NDArray[np.int64] = field(default_factory=lambda: np.empty(0, np.int64))
    list_num: npt.NDArray[np.float64] = field(default_factory=lambda: np.empty(0, np.float64))
    list_text: npt.NDArray[np.object_] = field(default_factory=lambda: np.empty(0, object))
    list_flag: npt.NDArray[np.int8] = field(default_factory=lambda: np.empty(0, np.int8))

    @classmethod
    def build(cls, values: Sequence[Any], missing: Any) -> Column:
        n = len(values)
        col = cls(
            present=np.zeros(n, bool),
            num=np.full(n, np.nan),
            text=np.full(n, None, dtype=object),
            flag=np.full(n, -1, np.int8),
        )
        lrows: list[int] = []
        lnum: list[float] = []
        ltext: list[Any] = []
        lflag: list[int] = []
        for row, value in enumerate(values):
            if value is missing:
                continue
            col.present[row] = True
            if isinstance(value, bool):
                col.flag[row] = int(value)
            elif isinstance(value, str):
                col.text[row] = value
            elif isinstance(value, int | float):
                col.num[row] = value
            elif isinstance(value, list):
                for item in value:
                    lrows.append(row)
                    lnum.append(float(item) if _is_number(item) else math.nan)
                    ltext.append(item if isinstance(item, str) else None)
                    lflag.append(int(item) if isinstance(item, bool) else -1)
        if lrows:
            col.list_rows = np.asarray(lrows, np.int64)
            col.list_num = np.asarray(lnum, np.float64)
            col.list_text = np.asarray(ltext, dtype=object)
            col.list_flag = np.asarray(lflag, np.int8)
        return col

    def equal(self, value: Any) -> Mask:
        if isinstance(value, bool):
            hit = self.flag == int(value)
            elems = self.list_flag == int(value)
        elif isinstance(value, str):
            hit = np.asarray(self.text == value, dtype=bool)
            elems = np.asarray(self.list_text == value, dtype=bool)
        else:
            hit = self.num == float(value)
            elems = self.list_num == float(value)
        out: Mask = np.array(hit, dtype=bool)
        if self.list_rows.size:
            out[self.list_rows[elems]] = True
        return out

    def starts_with(self, prefix: str) -> Mask:
        out: Mask = np.fromiter(
            (isinstance(t, str) and t.startswith(prefix) for t in self.text), bool, self.text.shape[0]
        )
        if self.list_rows.size:
            elems = np.fromiter(
                (isinstance(t, str) and t.startswith(prefix) for t in self.list_text),
                bool,
                self.list_text.shape[0],
            )
            out[self.list_rows[elems]] = True
        return out


class Columns:
    """Typed columns built on demand from row metadata (cached by the caller until a write)."""

    _MISSING = object()

    def __init__(self, metadatas: Sequence[dict[str, Any]]) -> None:
        self.metadatas = metadatas
        self.cache: dict[str, Column] = {}

    def column(self, key: str) -> Column:
        col = self.cache.get(key)
        if col is None:
            missing = self._MISSING
            col = Column.build([m.get(key, missing) for m in self.metadatas], missing)
            self.cache[key] = col
        return col


def evaluate(node: FilterNode, columns: Columns) -> Mask:
    """Which rows match ``node``: a boolean mask over all rows."""
    if node.op == "$and":
        out = evaluate(node.children[0], columns)
        for child in node.children[1:]:
            out = out & evaluate(child, columns)
        return out
    if node.op == "$or":
        out = evaluate(node.children[0], columns)
        for child in node.children[1:]:
            out = out | evaluate(child, columns)
        return out
    col = columns.column(node.key)
    if node.op == "$exists":
        return col.present.copy() if node.value else ~col.present
    if node.op == "$eq":
        return col.equal(node.value)
    if node.op == "$ne":
        return ~col.equal(node.value)
    if node.op == "$startsWith":
        return col.starts_with(node.value)
    if node.op in ("$in", "$nin"):
        hit = np.zeros(col.present.shape[0], bool)
        for value in node.value:
            hit |= col.equal(value)
        return ~hit if node.op == "$nin" else hit
    with np.errstate(invalid="ignore"):
        return np.asarray(_RANGE[node.op](col.num, float(node.value)), dtype=bool)
