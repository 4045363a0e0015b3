"""The constraints of a table made elsewhere that a record would hit, found before any write.

An application's table may refuse rows for reasons no column type tells: a ``CHECK``, a
``UNIQUE`` over columns other than the key. A migration's plan asks, for each record, what the
copy would hit (:meth:`ConstraintCheck.problems`): the row the merge would write is computed
by the merge's own expressions from the record (:meth:`._foreign.ForeignTables.row`) in a
``SELECT`` that writes nothing, each ``CHECK`` evaluated on it, each other unique key looked up
in the table and among the records checked before.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql

from ._quote import Identifier

__all__ = ["Constraint", "ConstraintCheck", "read_constraints"]

_READ = (
    "SELECT c.conname, 'check', pg_get_expr(c.conbin, c.conrelid), "
    "array(SELECT a.attname FROM unnest(c.conkey) AS k(n) JOIN pg_attribute AS a "
    "ON a.attrelid = c.conrelid AND a.attnum = k.n) "
    "FROM pg_constraint AS c WHERE c.conrelid = %(t)s::regclass AND c.contype = 'c' "
    "UNION ALL "
    "SELECT x.relname, 'unique', NULL, array(SELECT a.attname FROM unnest(i.indkey) WITH ORDINALITY "
    "AS k(n, o) JOIN pg_attribute AS a ON a.attrelid = i.indrelid AND a.attnum = k.n ORDER BY k.o) "
    "FROM pg_index AS i JOIN pg_class AS x ON x.oid = i.indexrelid WHERE i.indrelid = %(t)s::regclass "
    "AND i.indisunique AND i.indisvalid AND i.indpred IS NULL AND i.indexprs IS NULL "
    "ORDER BY 2, 1"
)
"""The table's ``CHECK`` constraints (name, expression, columns) and unique indexes (name,
columns in key order; a partial or expression index is left to the write)."""


@dataclass(frozen=True)
class Constraint:
    name: str
    kind: str
    """``check`` or ``unique``."""
    expression: str | None
    """A ``CHECK``'s boolean expression over the row's columns."""
    columns: tuple[str, ...]

    def said(self) -> str:
        if self.kind == "check":
            return f"the CHECK constraint {self.name!r} ({self.expression}) refuses it"
        return f"the unique key {self.name!r} ({', '.join(self.columns)})"


def read_constraints(conn: psycopg.Connection[Any], qualified: str) -> tuple[Constraint, ...]:
    """The ``CHECK`` constraints and unique indexes of the table ``qualified`` (regclass text)."""
    rows = conn.execute(_READ, {"t": qualified}).fetchall()
    return tuple(Constraint(str(n), str(k), None if e is None else str(e), tuple(c)) for n, k, e, c in rows)


@dataclass
class ConstraintCheck:
    """The statement checking one record against the constraints of the table it would be
    written to, built once from the merge's row (``names``, ``values`` over a staged row ``s``,
    the first ``keys`` of them the key's columns)."""

    table: sql.Composable
    names: list[str]
    values: list[sql.Composable]
    keys: int
    constraints: tuple[Constraint, ...]
    _seen: dict[tuple[str, tuple[Any, ...]], str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        written = set(self.names)
        key = tuple(self.names[: self.keys])
        self.checked = [
            c
            for c in self.constraints
            if set(c.columns) <= written and c.columns and (c.kind == "check" or c.columns != key)
        ]
        """The constraints over columns the merge writes (the key's own unique index is the
        merge's conflict target: a key already there is replaced)."""

    def statement(self, vector_type: sql.Composable) -> sql.Composed | None:
        """``SELECT`` of one flag per checked constraint (the row breaks it) and, per unique key,
        the row's values; ``None``: nothing to check."""
        if not self.checked:
            return None
        row = [Identifier("r", name) for name in self.names]
        out: list[sql.Composable] = []
        for c in self.checked:
            if c.kind == "check":
                # the statement runs with parameters: a % of the constraint's SQL is doubled
                out.append(sql.SQL("({}) IS FALSE").format(sql.SQL(str(c.expression).replace("%", "%%"))))
                continue
            cols = sql.SQL(", ").join(Identifier(name) for name in c.columns)
            mine = sql.SQL(", ").join(Identifier("r", name) for name in c.columns)
            other: sql.Composable = sql.SQL("")
            if self.keys:
                other = sql.SQL(" AND ({}) IS DISTINCT FROM ({})").format(
                    sql.SQL(", ").join(Identifier("u", n) for n in self.names[: self.keys]),
                    sql.SQL(", ").join(row[: self.keys]),
                )
            out.append(
                sql.SQL("EXISTS (SELECT 1 FROM {} AS u WHERE ({}) = ({}){})").format(
                    self.table, cols, mine, other
                )
            )
            out.append(sql.SQL("ARRAY[{}]::text[]").format(mine))
        staged = sql.SQL(
            "SELECT %(vp_key)s::text AS key, NULL::{} AS embedding, %(vp_metadata)s::jsonb AS metadata, "
            "%(vp_text)s::text AS text"
        ).format(vector_type)
        return sql.SQL("SELECT {} FROM (SELECT {} FROM ({}) AS s) AS r ({})").format(
            sql.SQL(", ").join(out),
            sql.SQL(", ").join(self.values),
            staged,
            sql.SQL(", ").join(Identifier(name) for name in self.names),
        )

    def problems(self, found: tuple[Any, ...], key: str) -> list[tuple[str, str]]:
        """``(path, message)`` of each constraint the row ``found`` (the statement's result for
        the record ``key``) breaks: a ``CHECK``, a unique key another row of the table or an
        earlier record of this check holds."""
        out: list[tuple[str, str]] = []
        values = iter(found)
        for c in self.checked:
            broken = next(values)
            path = f"constraint {c.name}"
            if c.kind == "check":
                if broken:
                    out.append((path, c.said()))
                continue
            held = tuple(next(values))
            if broken:
                out.append((path, f"{c.said()} holds its values in another row of the table"))
            elif None not in held:
                first = self._seen.setdefault((c.name, held), key)
                if first != key:
                    out.append((path, f"{c.said()} gives it the values of another record of the copy"))
        return out
