"""Portable filters → parameterized, type-guarded JSONB predicates.

Field names and values only ever travel as bind parameters (named placeholders
``%(f0)s``, ``%(f1)s`` …, so one predicate can appear twice in a statement); the SQL text is built
from fixed fragments. Every leaf is two-valued (never SQL ``NULL``), so ``NOT``/``AND``/``OR``
mean exactly what the oracle :func:`vectorport.filters.evaluate` means:

=============  =============================================================================
operator       predicate (``m`` is the ``metadata jsonb NOT NULL`` column)
=============  =============================================================================
``$eq v``      ``m @> {f: v} OR m @> {f: [v]}`` — scalar equal, or an array holding ``v``.
               jsonb equality is type-strict (``true`` ≠ ``1``, ``"1"`` ≠ ``1``) and numeric
               (``1`` = ``1.0``); containment is what the GIN index on ``m`` serves.
``$ne v``      ``NOT ($eq v)`` — so a missing field matches.
``$in``        ``$eq v1 OR $eq v2 …``; ``$nin`` is its negation.
``$gt`` …      ``jsonb_typeof(m -> f) = 'number' AND (m -> f) > v`` (jsonb compares numbers
               numerically; the type guard keeps booleans and strings out), ``COALESCE``-d
               to false when ``f`` is missing.
``$exists``    ``m ? f`` (or its negation).
``$not``       ``NOT (child)``.
=============  =============================================================================

The predicate is built as SQL *text* from those fixed fragments (the column is rendered once),
not as a :mod:`psycopg.sql` tree: the text doubles as the filter's shape, which the store uses
to cache the statement around it, and building it costs a few string joins per query.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from psycopg import sql
from psycopg.types.json import Jsonb

from ...filters import And, Compare, Exists, FilterCompiler, FilterNode, In, Not, Or, Scalar
from ._codec import dumps_json

__all__ = ["PgFilterCompiler", "Predicate"]


@dataclass(frozen=True)
class Predicate:
    """A SQL boolean expression with named placeholders and the parameters that fill them.

    ``text`` holds only fixed fragments, the quoted column and ``%(fN)s`` placeholders, so
    equal texts are equal statements whatever the parameter values.
    """

    text: str
    params: dict[str, Any]

    @property
    def sql(self) -> sql.SQL:
        """The expression as a composable, for :meth:`psycopg.sql.SQL.format`."""
        return sql.SQL(self.text)


TRUE = Predicate("TRUE", {})

_RANGE_SQL: dict[str, str] = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
_METADATA = '"metadata"'


def _jsonb(value: Any) -> Jsonb:
    return Jsonb(value, dumps=dumps_json)


class PgFilterCompiler(FilterCompiler[Predicate]):
    """Compile a filter tree against a jsonb column (``metadata`` unless told otherwise)."""

    backend: ClassVar[str] = "pgvector"

    def __init__(self, column: sql.Composable | None = None) -> None:
        self.column = column if column is not None else sql.Identifier("metadata")
        # Identifiers quote the same way with or without a connection (double quotes doubled).
        self._m = _METADATA if column is None else column.as_string(None)
        self._count = 0

    def _param(self, params: dict[str, Any], value: Any) -> str:
        name = f"f{self._count}"
        self._count += 1
        params[name] = value
        return f"%({name})s"

    def where(self, node: FilterNode | None) -> Predicate:
        """The predicate for ``node``; ``TRUE`` when there is no filter."""
        return TRUE if node is None else self.compile(node)

    # ------------------------------------------------------------------ leaves
    def _eq(self, field: str, value: Scalar) -> Predicate:
        params: dict[str, Any] = {}
        scalar = self._param(params, _jsonb({field: value}))
        array = self._param(params, _jsonb({field: [value]}))
        m = self._m
        return Predicate(f"({m} @> {scalar} OR {m} @> {array})", params)

    def _negate(self, pred: Predicate) -> Predicate:
        return Predicate(f"(NOT {pred.text})", pred.params)

    def _join(self, preds: list[Predicate], op: str) -> Predicate:
        if len(preds) == 1:
            return preds[0]
        body = op.join(p.text for p in preds)
        return Predicate(f"({body})", {k: v for p in preds for k, v in p.params.items()})

    def _range(self, node: Compare) -> Predicate:
        params: dict[str, Any] = {}
        f = self._param(params, node.field)
        v = self._param(params, _jsonb(node.value))
        m = self._m
        return Predicate(
            f"COALESCE(jsonb_typeof({m} -> {f}::text) = 'number' AND ({m} -> {f}::text) "
            f"{_RANGE_SQL[node.op]} {v}, FALSE)",
            params,
        )

    # ------------------------------------------------------------------ visitors
    def visit_eq(self, node: Compare) -> Predicate:
        return self._eq(node.field, node.value)

    def visit_ne(self, node: Compare) -> Predicate:
        return self._negate(self._eq(node.field, node.value))

    def visit_gt(self, node: Compare) -> Predicate:
        return self._range(node)

    def visit_gte(self, node: Compare) -> Predicate:
        return self._range(node)

    def visit_lt(self, node: Compare) -> Predicate:
        return self._range(node)

    def visit_lte(self, node: Compare) -> Predicate:
        return self._range(node)

    def visit_in(self, node: In) -> Predicate:
        return self._join([self._eq(node.field, v) for v in node.values], " OR ")

    def visit_nin(self, node: In) -> Predicate:
        return self._negate(self._join([self._eq(node.field, v) for v in node.values], " OR "))

    def visit_exists(self, node: Exists) -> Predicate:
        params: dict[str, Any] = {}
        f = self._param(params, node.field)
        pred = Predicate(f"({self._m} ? {f}::text)", params)
        return pred if node.exists else self._negate(pred)

    def visit_and(self, node: And) -> Predicate:
        return self._join([self.compile(c) for c in node.children], " AND ")

    def visit_or(self, node: Or) -> Predicate:
        return self._join([self.compile(c) for c in node.children], " OR ")

    def visit_not(self, node: Not) -> Predicate:
        return self._negate(self.compile(node.child))
