"""Portable filters compiled to Chroma ``where`` clauses, exactly or not at all.

Chroma's operators differ from the portable semantics (``vectorport.filters.evaluate``) in
ways measured on chromadb 1.5 (``tests/chroma/test_chroma.py`` and ``tests/chroma/test_filters.py``
check every operator against the oracle on a real collection):

* ``$eq``/``$ne``/``$in``/``$nin`` only look at scalar values; an array field is matched by
  ``$contains``/``$not_contains``, which in turn never match a scalar. The same field may be
  an array on one record and a scalar on another, so every equality compiles to both forms:
  ``$eq v`` → ``$or[$eq v, $contains v]`` and ``$ne v`` → ``$and[$ne v, $not_contains v]``.
  ``$is``/``$is_not`` (the scalar alone, never an array) are Chroma's own ``$eq``/``$ne``.
* Scalar comparisons are numeric across int and float (``1`` matches ``1.0``), but
  ``$contains`` is type-strict (``$contains 1`` misses ``[1.0]``), so an integral number is
  looked for in arrays both as an int and as a float.
* ``$in``/``$nin`` lists must hold one type: mixed lists are split per type.
* ``$ne``, ``$nin`` and ``$not_contains`` match records without the field (as the oracle's
  ``$ne``/``$nin`` do); range operators match numeric scalars only (not bool, not arrays),
  as the oracle's do.
* A fractional operand is truncated when compared with integer values (``$lt 1.5`` misses
  ``1``, ``$eq 0.5`` matches ``0``), so ranges with one add the exact integral bound
  (``$or[$lt 1.5, $lte 1]``) and equalities rule out the neighbouring integers
  (``$and[$eq 0.5, $ne 0, $ne 1]``).
* Scalar comparisons with a number go through float64, so an integer filter value that a
  double cannot hold (beyond 2**53 and not a multiple of its spacing) is refused.

``$exists`` and ``$not`` over a range operator have no exact Chroma form and are refused;
other ``$not`` are rewritten with :func:`~vectorport.filters.push_not_down`.

Size: local Chroma (embedded and ``chroma run``) turns a ``where`` into one SQLite statement.
SQLite nests ``a OR b OR c …`` one level per item and stops at a depth of 1,000, so long
``$and``/``$or`` lists (a ``$in`` of 500 values needs 500 ``$contains``) are built as trees of
at most 32 children. A statement binds at most 32,766 parameters (:func:`where_params` counts
them): a filter over that budget is refused before any I/O.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from ...exceptions import UnsupportedFilterError
from ...filters import And, Compare, FilterCompiler, FilterNode, In, Or, Scalar, push_not_down

__all__ = ["SQLITE_MAX_PARAMS", "ChromaFilterCompiler", "Where", "where_params"]

Where = dict[str, Any]

_I64 = 2**63 - 1
_FANOUT = 32  # children per $and/$or node: keeps SQLite's expression depth (max 1,000) low
SQLITE_MAX_PARAMS = 32_766  # SQLITE_MAX_VARIABLE_NUMBER of the SQLite Chroma bundles


def where_params(where: Where) -> int:
    """SQLite parameters local Chroma binds for ``where``, the statement's own included.

    Measured on chromadb 1.5 (``tests/chroma/test_filters.py`` checks the budget's edge): 3 per
    statement, 1 per ``$and``/``$or`` node, 2 per ``$contains``/``$not_contains``, and for the
    other operators one per operand plus one, doubled when the operands are numbers (Chroma
    compares them with its int and its float column).

    >>> where_params({"$or": [{"a": {"$eq": "x"}}, {"a": {"$in": [1, 2, 3]}}]})
    14
    """

    def cost(node: Where) -> int:
        total = 0
        for key, value in node.items():
            if key in ("$and", "$or"):
                total += 1 + sum(cost(child) for child in value)
                continue
            ((op, operand),) = value.items()
            if op in ("$contains", "$not_contains"):
                total += 2
                continue
            values = operand if op in ("$in", "$nin") else [operand]
            numeric = any(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
            total += (1 + len(values)) * (2 if numeric else 1)
        return total

    return 3 + cost(where)


def _type_key(value: Scalar) -> str:
    return type(value).__name__


class ChromaFilterCompiler(FilterCompiler[Where]):
    """Compile a filter tree to a Chroma ``where`` dict.

    >>> from vectorport.filters import parse_filter
    >>> ChromaFilterCompiler().where(parse_filter({"lang": "en"}))
    {'$or': [{'lang': {'$eq': 'en'}}, {'lang': {'$contains': 'en'}}]}
    """

    backend: ClassVar[str] = "chroma"

    def where(self, node: FilterNode) -> Where:
        """The ``where`` for ``node`` (``$not`` pushed down first).

        Raises ``UnsupportedFilterError`` when the ``where`` would bind more parameters than
        Chroma's SQLite allows (see the module docstring).
        """
        where = self.compile(push_not_down(node))
        params = where_params(where)
        if params > SQLITE_MAX_PARAMS:
            # Not self.unsupported(): that message quotes the whole filter, here thousands of values.
            raise UnsupportedFilterError(
                f"{self.backend} cannot apply this filter: it compiles to a Chroma where that binds "
                f"{params:,} SQLite parameters, over Chroma's limit of {SQLITE_MAX_PARAMS:,} (each "
                "$in/$nin value is also looked for in list fields: about 3 parameters per string "
                "or bool and 6 per number). Split the values over several queries and merge the "
                "results by distance, or filter on a coarser field."
            )
        return where

    # ------------------------------------------------------------------ helpers
    def _field(self, node: FilterNode, field: str) -> str:
        if field.startswith(("#", "$")):
            self.unsupported(node, f"Chroma reserves field names starting with {field[0]!r}")
        return field

    def _number(self, node: FilterNode, value: Scalar) -> None:
        if isinstance(value, float) and abs(value) > _I64:
            self.unsupported(node, f"{value} is beyond Chroma's 64-bit integers, which it is compared with")
        if isinstance(value, int) and not isinstance(value, bool):
            if abs(value) > _I64:
                self.unsupported(node, f"{value} does not fit Chroma's 64-bit integers")
            if float(value) != value:
                self.unsupported(
                    node, f"Chroma compares numbers as doubles, and {value} is not exactly a double"
                )

    def _variants(self, node: FilterNode, value: Scalar) -> list[Scalar]:
        """The typed values an array element equal to ``value`` may be stored as."""
        self._number(node, value)
        if isinstance(value, bool | str):
            return [value]
        if isinstance(value, int):
            return [value, float(value)]
        if value.is_integer() and abs(value) <= _I64:
            return [value, int(value)]
        return [value]

    @staticmethod
    def _join(op: str, clauses: list[Where]) -> Where:
        # Chroma's $and/$or need at least two items. SQLite nests a flat list one level per
        # item (max depth 1,000): long lists become a tree of at most _FANOUT children.
        while len(clauses) > _FANOUT:
            clauses = [
                part[0] if len(part) == 1 else {op: part}
                for part in (clauses[i : i + _FANOUT] for i in range(0, len(clauses), _FANOUT))
            ]
        return clauses[0] if len(clauses) == 1 else {op: clauses}

    def _groups(self, node: In) -> list[list[Scalar]]:
        """Values by type (Chroma's lists hold one type); fractional floats are left out and
        compiled one by one (see ``_scalar_eq``)."""
        groups: dict[str, dict[Scalar, None]] = {}
        for value in node.values:
            self._number(node, value)
            if not self._fractional(value):
                # Per-type buckets de-duplicate: a plain set would merge True with 1 and 1.0.
                groups.setdefault(_type_key(value), {}).setdefault(value, None)
        return [list(group) for group in groups.values()]

    def _elements(self, node: FilterNode, values: tuple[Scalar, ...]) -> list[Scalar]:
        out: dict[tuple[str, Scalar], Scalar] = {}
        for value in values:
            for v in self._variants(node, value):
                out.setdefault((_type_key(v), v), v)
        return list(out.values())

    # ------------------------------------------------------------------ operators
    @staticmethod
    def _fractional(value: Scalar) -> bool:
        return isinstance(value, float) and not value.is_integer()

    @staticmethod
    def _scalar_eq(f: str, value: Scalar) -> Where:
        if isinstance(value, float) and not value.is_integer():
            # Chroma truncates a fractional operand against integer values ($eq 0.5 matches
            # 0): rule out the integers next to it, which can never equal it.
            near = sorted({math.floor(value), math.ceil(value)})
            return {"$and": [{f: {"$eq": value}}, *({f: {"$ne": n}} for n in near)]}
        return {f: {"$eq": value}}

    @staticmethod
    def _scalar_ne(f: str, value: Scalar) -> Where:
        if isinstance(value, float) and not value.is_integer():
            near = sorted({math.floor(value), math.ceil(value)})
            return {"$or": [{f: {"$ne": value}}, *({f: {"$eq": n}} for n in near)]}
        return {f: {"$ne": value}}

    def visit_eq(self, node: Compare) -> Where:
        f = self._field(node, node.field)
        clauses: list[Where] = [self._scalar_eq(f, node.value)]
        clauses += [{f: {"$contains": v}} for v in self._variants(node, node.value)]
        return self._join("$or", clauses)

    def visit_ne(self, node: Compare) -> Where:
        f = self._field(node, node.field)
        clauses: list[Where] = [self._scalar_ne(f, node.value)]
        clauses += [{f: {"$not_contains": v}} for v in self._variants(node, node.value)]
        return self._join("$and", clauses)

    def visit_is(self, node: Compare) -> Where:
        self._number(node, node.value)
        return self._scalar_eq(self._field(node, node.field), node.value)

    def visit_is_not(self, node: Compare) -> Where:
        self._number(node, node.value)
        return self._scalar_ne(self._field(node, node.field), node.value)

    def _range(self, node: Compare) -> Where:
        f = self._field(node, node.field)
        value = node.value
        self._number(node, value)
        clause: Where = {f: {node.op: value}}
        if isinstance(value, float) and not value.is_integer():
            # Chroma truncates a fractional operand toward zero when comparing integer values:
            # against integers, `$lt 1.5` acts as `$lt 1` (misses 1) and `$lte -1.5` as
            # `$lte -1` (wrongly matches -1). The two only differ at the truncated value t, so
            # drop t from the clause and add the exact integral bound back.
            if node.op in ("$gt", "$gte"):
                bound: Where = {f: {"$gte": math.ceil(value)}}
            else:
                bound = {f: {"$lte": math.floor(value)}}
            return {"$or": [{"$and": [clause, {f: {"$ne": int(value)}}]}, bound]}
        return clause

    visit_gt = visit_gte = visit_lt = visit_lte = _range

    def visit_in(self, node: In) -> Where:
        f = self._field(node, node.field)
        clauses: list[Where] = [{f: {"$in": group}} for group in self._groups(node)]
        clauses += [self._scalar_eq(f, v) for v in dict.fromkeys(node.values) if self._fractional(v)]
        clauses += [{f: {"$contains": v}} for v in self._elements(node, node.values)]
        return self._join("$or", clauses)

    def visit_nin(self, node: In) -> Where:
        f = self._field(node, node.field)
        clauses: list[Where] = [{f: {"$nin": group}} for group in self._groups(node)]
        clauses += [self._scalar_ne(f, v) for v in dict.fromkeys(node.values) if self._fractional(v)]
        clauses += [{f: {"$not_contains": v}} for v in self._elements(node, node.values)]
        return self._join("$and", clauses)

    def visit_and(self, node: And) -> Where:
        return self._join("$and", [self.compile(c) for c in node.children])

    def visit_or(self, node: Or) -> Where:
        return self._join("$or", [self.compile(c) for c in node.children])
