"""Portable filter tree → S3 Vectors ``filter`` document.

Exact by construction, or refused (``UnsupportedFilterError``) before any request:

* ``$eq/$gt/$gte/$lt/$lte/$in/$exists/$and/$or`` map one to one. AWS documents that ``$eq``
  on a list value matches any element, as vectorport's oracle does.
* ``$ne`` and ``$nin`` match a missing key in vectorport; AWS does not document what they do
  with one, so they are sent as ``{"$or": [{k: {"$ne": v}}, {k: {"$exists": false}}]}``,
  which is exact whichever way the service decides.
* ``$is``/``$is_not`` (a scalar field equal to ``v``, never a list holding it) have no S3 form:
  its ``$eq`` matches list elements too and no operator tests a value's type. They are refused.
* ``$not`` is pushed down (De Morgan, operator duals); a negated range operator has no exact
  S3 form (it would have to match non-numeric values) and is refused.
* Filtering on a non-filterable key (the layout's text field, or any the index declares) and
  integers beyond ±2**53 (S3 numbers are doubles) are refused.
* Several keys in one portable filter are sent as an explicit ``$and``: the AWS guide's grammar
  has one key per filter object (several operators on one key are fine), and the service
  answers ``Invalid query filter`` to ``{"a": 1, "b": 2}``.
* A compiled filter may use at most 100 filter constraints, AWS's limit on ENHANCED indexes
  (the default for buckets created since 2026-09-30), each value evaluated counting as one:
  larger filters are refused before the request rather than failing on the service.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, ClassVar

from ...filters import And, Compare, Exists, FilterCompiler, FilterNode, In, Not, Or, push_not_down

__all__ = ["S3FilterCompiler"]

_MAX_EXACT_INT = 2**53
MAX_FILTER_CONSTRAINTS = 100
S3Filter = dict[str, Any]


def count_constraints(doc: S3Filter) -> int:
    """AWS's constraint count of a compiled filter: each value evaluated is one."""
    total = 0
    for key, value in doc.items():
        if key in ("$and", "$or"):
            total += sum(count_constraints(child) for child in value)
        elif isinstance(value, dict):
            total += sum(len(v) if op in ("$in", "$nin") else 1 for op, v in value.items())
        else:
            total += 1
    return total


class S3FilterCompiler(FilterCompiler[S3Filter]):
    """Compile to the JSON ``filter`` of ``QueryVectors``."""

    backend: ClassVar[str] = "s3vectors"

    def __init__(self, non_filterable: Collection[str]) -> None:
        self.non_filterable = frozenset(non_filterable)

    def compile_query(self, node: FilterNode) -> S3Filter:
        """The ``filter`` of a ``QueryVectors`` request, within the constraint limit."""
        doc = self.compile(node)
        count = count_constraints(doc)
        if count > MAX_FILTER_CONSTRAINTS:
            self.unsupported(
                node,
                f"it needs {count} filter constraints and S3 Vectors allows {MAX_FILTER_CONSTRAINTS} "
                "on an ENHANCED index (each value evaluated counts as one)",
            )
        return doc

    def _field(self, node: Compare | In | Exists) -> str:
        if node.field in self.non_filterable:
            self.unsupported(
                node, f"{node.field!r} is a non-filterable key of this index (it holds the text)"
            )
        return node.field

    def _value(self, node: FilterNode, value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > _MAX_EXACT_INT:
            self.unsupported(node, f"the integer {value} is beyond ±2**53; S3 numbers are doubles")
        return value

    def _compare(self, node: Compare) -> S3Filter:
        return {self._field(node): {node.op: self._value(node, node.value)}}

    visit_eq = _compare
    visit_gt = _compare
    visit_gte = _compare
    visit_lt = _compare
    visit_lte = _compare

    def visit_ne(self, node: Compare) -> S3Filter:
        field = self._field(node)
        return {"$or": [{field: {"$ne": self._value(node, node.value)}}, {field: {"$exists": False}}]}

    def visit_in(self, node: In) -> S3Filter:
        field = self._field(node)
        values = [self._value(node, v) for v in node.values]
        if not node.negated:
            return {field: {"$in": values}}
        return {"$or": [{field: {"$nin": values}}, {field: {"$exists": False}}]}

    visit_nin = visit_in

    def visit_exists(self, node: Exists) -> S3Filter:
        return {self._field(node): {"$exists": node.exists}}

    def visit_and(self, node: And) -> S3Filter:
        parts = [self.compile(c) for c in node.children]
        return parts[0] if len(parts) == 1 else {"$and": parts}

    def visit_or(self, node: Or) -> S3Filter:
        parts = [self.compile(c) for c in node.children]
        return parts[0] if len(parts) == 1 else {"$or": parts}

    def visit_not(self, node: Not) -> S3Filter:
        rewritten = push_not_down(node)
        if isinstance(rewritten, Not):
            self.unsupported(node, "a negated range comparison has no exact S3 Vectors equivalent")
        return self.compile(rewritten)
