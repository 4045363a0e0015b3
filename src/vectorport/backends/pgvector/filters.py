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
``$is v``      ``m @> {f: v}`` — the scalar alone: jsonb containment unwraps no array below the
               top level, so ``{f: [v]}`` does not contain ``{f: v}``. ``$is_not``: its ``NOT``.
               Two or more on one field under ``$or`` (``$is_not`` under ``$and``: LlamaIndex's
               ``IN``/``NIN``): ``COALESCE((m -> f) IN (SELECT jsonb_array_elements(values)),
               FALSE)``, hashed once per query (jsonb never equals an array to a scalar).
``$in``        one value: as ``$eq``. Up to :data:`LONG_LIST` values: ``m @? '$ ? (@."f" == v1 ||
               @."f" == v2 …)'``, one jsonpath parameter. More: hashed membership (below).
               ``$nin`` is the negation, hashed from two values on.
``$or``        its ``$eq``/``$in`` children (any fields) merged into one such test; an
               ``$and``'s ``$ne``/``$nin`` children likewise, negated (De Morgan).
``$gt`` …      ``jsonb_typeof(m -> f) = 'number' AND (m -> f) > v`` (jsonb compares numbers
               numerically; the type guard keeps booleans and strings out), ``COALESCE``-d
               to false when ``f`` is missing.
``$exists``    ``m ? f`` (or its negation).
``$not``       ``NOT (child)``.
=============  =============================================================================

Why membership is not one containment test per value: every test on ``m`` detoasts the row's
whole metadata again, into memory freed only after the row, so ``n`` tests cost ``n`` times the
metadata size per row (a 10,000-value ``$in`` over 1 MB rows took one backend to 21.5 GB).

* The jsonpath reads the row once, and the ``jsonb_path_ops`` GIN index serves ``@?`` as it
  serves ``@>``. It has the oracle's semantics: in lax mode ``@."f"`` unwraps one array level
  (an array matches when an element equals), ``==`` is type-strict (comparing different types
  is *unknown*, i.e. no match) and numeric; a missing key is an empty sequence; no error can
  arise, so ``@?`` is never ``NULL``. The ``||`` tree is balanced, so neither the jsonpath
  parser nor its evaluator recurses once per value. But it compares a row with every value in
  turn (~50 ns each) while the planner costs it as one operator: on 20k rows it chose a
  sequential scan over the GIN index for 1,000 values (~1 s) and not for 500.
* Hashed membership — ``CASE jsonb_typeof(m -> f) WHEN 'array' THEN EXISTS (an element IN
  (SELECT jsonb_array_elements(values))) ELSE (m -> f) IN (…) END`` — costs the same per row
  whatever the list's length (the ``IN`` subplans hash the values once per query; jsonb
  equality and hashing are type-strict and numeric) and reads ``m`` twice, but no index serves
  it. No index serves a negation either, so in a negated group (``$nin``, the ``$ne``/``$nin``
  tests under one ``$and``) a field with two values or more is hashed.

The predicate is built as SQL *text* from those fixed fragments (the column is rendered once),
not as a :mod:`psycopg.sql` tree: the text doubles as the filter's shape, which the store uses
to cache the statement around it, and building it costs a few string joins per query.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from psycopg import sql
from psycopg.types.json import Jsonb

from ...exceptions import UnsupportedFilterError
from ...filters import And, Compare, Exists, FilterCompiler, FilterNode, In, Not, Or, Scalar
from ._codec import dumps_json
from ._quote import Identifier

__all__ = ["LONG_LIST", "MAX_FILTER_PARAMS", "PgFilterCompiler", "Predicate"]

# PostgreSQL's wire protocol counts bind parameters in an int16 (65,535 at most per statement);
# the statements around a filter use fewer than 16 of their own (vector, k, query text …).
_PROTOCOL_MAX_PARAMS = 65_535
MAX_FILTER_PARAMS = _PROTOCOL_MAX_PARAMS - 16
LONG_LIST = 200
"""Above this many values for one field, ``$in`` is hashed rather than one jsonpath (which keeps
the GIN plan on 20k rows up to 500 values, and costs ~10 µs per row at 200 if scanned)."""


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

Pair = tuple[str, Scalar]


def _jsonb(value: Any) -> Jsonb:
    return Jsonb(value, dumps=dumps_json)


def _balanced(terms: Sequence[str], op: str) -> str:
    if len(terms) == 1:
        return terms[0]
    mid = len(terms) // 2
    return f"({_balanced(terms[:mid], op)} {op} {_balanced(terms[mid:], op)})"


def _any_equal_path(pairs: Iterable[Pair]) -> str:
    """A jsonpath selecting the metadata when any ``field == value`` pair holds."""
    terms = [f"@.{json.dumps(f, ensure_ascii=False)} == {dumps_json(v)}" for f, v in pairs]
    return f"$ ? ({_balanced(terms, '||')})"


def _pairs(node: FilterNode, negated: bool) -> list[Pair] | None:
    """The ``(field, value)`` pairs of an equality/membership leaf of that polarity
    (``$eq``/``$in``, or ``$ne``/``$nin`` when ``negated``); ``None`` for any other node."""
    if isinstance(node, In) and node.negated is negated:
        return [(node.field, v) for v in node.values]
    if isinstance(node, Compare) and node.op == ("$ne" if negated else "$eq"):
        return [(node.field, node.value)]
    return None


class PgFilterCompiler(FilterCompiler[Predicate]):
    """Compile a filter tree against a jsonb column (``metadata`` unless told otherwise)."""

    backend: ClassVar[str] = "pgvector"

    def __init__(self, column: sql.Composable | None = None) -> None:
        self.column = column if column is not None else Identifier("metadata")
        # Identifiers quote the same way with or without a connection (double quotes doubled).
        self._m = _METADATA if column is None else column.as_string(None)
        self._count = 0
        self._depth = 0

    def _param(self, params: dict[str, Any], value: Any) -> str:
        name = f"f{self._count}"
        self._count += 1
        params[name] = value
        return f"%({name})s"

    def where(self, node: FilterNode | None) -> Predicate:
        """The predicate for ``node``; ``TRUE`` when there is no filter."""
        return TRUE if node is None else self.compile(node)

    def compile(self, node: FilterNode) -> Predicate:
        """Compile ``node``; a filter needing more bind parameters than a PostgreSQL statement
        can carry raises :class:`~vectorport.exceptions.UnsupportedFilterError`."""
        self._depth += 1
        try:
            pred = super().compile(node)
        finally:
            self._depth -= 1
        if self._depth == 0 and len(pred.params) > MAX_FILTER_PARAMS:
            raise UnsupportedFilterError(
                f"pgvector cannot send this filter: it needs {len(pred.params):,} bind parameters "
                f"and a PostgreSQL statement carries at most {_PROTOCOL_MAX_PARAMS:,} (of which "
                f"{MAX_FILTER_PARAMS:,} for the filter). An $in/$nin list needs one or two whatever "
                "its length, as do the $eq/$in tests under one $or and the $ne/$nin tests under "
                "one $and; any other comparison needs two, $exists one. Split the filter into "
                "several queries or test fewer values."
            )
        return pred

    # ------------------------------------------------------------------ leaves
    def _eq(self, field: str, value: Scalar) -> Predicate:
        params: dict[str, Any] = {}
        scalar = self._param(params, _jsonb({field: value}))
        array = self._param(params, _jsonb({field: [value]}))
        m = self._m
        return Predicate(f"({m} @> {scalar} OR {m} @> {array})", params)

    def _any_equal(self, pairs: list[Pair], long_list: int | None = None) -> Predicate:
        """Does any ``field == value`` pair hold (``$eq`` semantics)? A bounded number of reads
        of the row: one ``@?`` for the fields with at most ``long_list`` (:data:`LONG_LIST`)
        values, two per other field."""
        long_list = LONG_LIST if long_list is None else long_list
        if len(pairs) == 1:
            return self._eq(*pairs[0])
        by_field: dict[str, list[Scalar]] = {}
        for field, value in pairs:
            by_field.setdefault(field, []).append(value)
        long = [f for f, values in by_field.items() if len(values) > long_list]
        short = [(f, v) for f, v in pairs if f not in long]
        preds = [self._member(f, by_field[f]) for f in long]
        if len(short) == 1:
            preds.append(self._eq(*short[0]))
        elif short:
            params: dict[str, Any] = {}
            path = self._param(params, _any_equal_path(short))
            preds.append(Predicate(f"({self._m} @? {path}::jsonpath)", params))
        return self._join(preds, " OR ")

    def _none_equal(self, pairs: list[Pair]) -> Predicate:
        return self._negate(self._any_equal(pairs, long_list=1))

    def _member(self, field: str, values: list[Scalar]) -> Predicate:
        """``field`` (or an element of it) is one of ``values``: hashed membership."""
        params: dict[str, Any] = {}
        f = self._param(params, field)
        v = self._param(params, _jsonb(values))
        x = f"({self._m} -> {f}::text)"
        # COALESCE keeps each IN a (hashed, built once) subplan rather than a join per row
        one_of = f"IN (SELECT jsonb_array_elements({v}::jsonb))"
        return Predicate(
            f"(CASE jsonb_typeof({x}) WHEN 'array' THEN EXISTS (SELECT FROM jsonb_array_elements({x}) "
            f"AS _vp_elements(_vp_value) WHERE COALESCE(_vp_elements._vp_value {one_of}, FALSE)) "
            f"ELSE COALESCE({x} {one_of}, FALSE) END)",
            params,
        )

    def _negate(self, pred: Predicate) -> Predicate:
        return Predicate(f"(NOT {pred.text})", pred.params)

    def _join(self, preds: list[Predicate], op: str) -> Predicate:
        if len(preds) == 1:
            return preds[0]
        body = op.join(p.text for p in preds)
        return Predicate(f"({body})", {k: v for p in preds for k, v in p.params.items()})

    def _connective(self, children: Sequence[FilterNode], op: str) -> Predicate:
        """``children`` joined by ``op``, the equality tests among them as one membership test.

        Under ``OR`` the ``$eq``/``$in`` children merge (any of their pairs holds); under ``AND``
        the ``$ne``/``$nin`` ones (none of their pairs holds: ``NOT`` any holds).
        """
        negated = op == " AND "
        wholes, children = self._whole_members(children, negated)
        merged: list[Pair] = []
        rest: list[FilterNode] = []
        for child in children:
            pairs = _pairs(child, negated)
            if pairs is None:
                rest.append(child)
            else:
                merged.extend(pairs)
        if len(merged) < 2:  # nothing to merge: each child as it compiles alone
            return self._join([*wholes, *(self.compile(c) for c in children)], op)
        test = self._none_equal(merged) if negated else self._any_equal(merged)
        return self._join([*wholes, test, *map(self.compile, rest)], op)

    def _whole_members(
        self, children: Sequence[FilterNode], negated: bool
    ) -> tuple[list[Predicate], list[FilterNode]]:
        """The ``$is`` children (``$is_not`` when ``negated``) of a field tested for two values
        or more, as one hashed membership of the whole value per field; the other children."""
        name = "$is_not" if negated else "$is"
        by_field: dict[str, list[Scalar]] = {}
        for child in children:
            if isinstance(child, Compare) and child.op == name:
                by_field.setdefault(child.field, []).append(child.value)
        many = {f: values for f, values in by_field.items() if len(values) > 1}
        tests = []
        for field, values in many.items():
            params: dict[str, Any] = {}
            f = self._param(params, field)
            v = self._param(params, _jsonb(values))
            test = Predicate(
                f"COALESCE(({self._m} -> {f}::text) IN (SELECT jsonb_array_elements({v}::jsonb)), FALSE)",
                params,
            )
            tests.append(self._negate(test) if negated else test)
        rest = [c for c in children if not (isinstance(c, Compare) and c.op == name and c.field in many)]
        return tests, rest

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

    def visit_is(self, node: Compare) -> Predicate:
        params: dict[str, Any] = {}
        scalar = self._param(params, _jsonb({node.field: node.value}))
        return Predicate(f"({self._m} @> {scalar})", params)

    def visit_is_not(self, node: Compare) -> Predicate:
        return self._negate(self.visit_is(node))

    # the four orderings are one comparison of numbers (_RANGE_SQL names the operator)
    visit_gt = visit_gte = visit_lt = visit_lte = _range

    def visit_in(self, node: In) -> Predicate:
        return self._any_equal([(node.field, v) for v in node.values])

    def visit_nin(self, node: In) -> Predicate:
        return self._none_equal([(node.field, v) for v in node.values])

    def visit_exists(self, node: Exists) -> Predicate:
        params: dict[str, Any] = {}
        f = self._param(params, node.field)
        pred = Predicate(f"({self._m} ? {f}::text)", params)
        return pred if node.exists else self._negate(pred)

    def visit_and(self, node: And) -> Predicate:
        return self._connective(node.children, " AND ")

    def visit_or(self, node: Or) -> Predicate:
        return self._connective(node.children, " OR ")

    def visit_not(self, node: Not) -> Predicate:
        return self._negate(self.compile(node.child))
