"""What an existing table looks like (columns, unique keys, vector indexes), read from the
system catalogs, and whether vectorport can use it: every table is checked on open, whether
vectorport created it or not, so a column renamed or retyped behind its back is named in a
clear error instead of failing later inside a statement.

Only reads: opening a collection writes nothing.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any

import psycopg
from psycopg import sql

from ..._models import Metric
from ._mapping import plain_value
from ._quote import Literal
from ._schema import OPCLASS_METRIC, Columns

__all__ = ["Column", "TableFacts", "VectorIndex", "fts_language"]

_VECTOR = re.compile(r"^(?:vector|halfvec)\((\d+)\)$")


_COMPOSITE_KEYS = (
    "SELECT array_agg(a.attname ORDER BY k.n) FROM pg_index AS i "
    "CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n) "
    "JOIN pg_attribute AS a ON a.attrelid = i.indrelid AND a.attnum = k.attnum "
    "WHERE i.indrelid = %s::regclass AND i.indisunique AND i.indisvalid AND i.indnkeyatts > 1 "
    "AND i.indpred IS NULL AND i.indexprs IS NULL GROUP BY i.indexrelid ORDER BY i.indexrelid"
)
"""The columns of each unique index over several columns (a composite key)."""
_VECTOR_INDEXES = (
    "SELECT c.relname, am.amname, opc.opcname, c.reloptions, i.indisvalid, "
    "pg_get_indexdef(i.indexrelid, 1, false) "
    "FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid "
    "JOIN pg_am AS am ON am.oid = c.relam JOIN pg_opclass AS opc ON opc.oid = i.indclass[0] "
    "WHERE i.indrelid = %s::regclass AND am.amname IN ('hnsw', 'ivfflat') ORDER BY c.relname"
)
"""The table's HNSW and IVFFlat indexes."""
_TEXT_INDEXES = (
    "SELECT pg_get_indexdef(i.indexrelid, 1, false) FROM pg_index AS i "
    "JOIN pg_class AS c ON c.oid = i.indexrelid JOIN pg_am AS am ON am.oid = c.relam "
    "WHERE i.indrelid = %s::regclass AND am.amname = 'gin' AND i.indexprs IS NOT NULL "
    "AND i.indpred IS NULL AND i.indisvalid ORDER BY c.relname"
)
"""The expressions of the table's GIN expression indexes (a keyword index such as Haystack's
``to_tsvector('english', content)``)."""
_TO_TSVECTOR = re.compile(r"""^to_tsvector\('([A-Za-z_][\w.]*)'::regconfig, "?([^"]+)"?\)$""")


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    """``format_type`` of the column: ``text``, ``vector(384)``, ``character varying(64)`` …"""
    notnull: bool
    generated: str | None
    """The expression of a generated column (``None`` for a plain one)."""
    default: str | None = None
    """The column's default expression (``now()``, ``nextval(…)``; identity columns too)."""
    always: bool = False
    """``GENERATED ALWAYS AS IDENTITY``: an INSERT giving it a value says ``OVERRIDING SYSTEM VALUE``."""
    default_value: str | None = None
    """A constant default (:attr:`constant`) as the JSON text a metadata read gives it
    (``"import"``); ``None`` for any other default, and for ``NULL``."""

    @property
    def constant(self) -> bool:
        """The default is a constant (``'en'::text``, ``0``), not the table's own bookkeeping
        (``now()``, ``nextval(…)``, ``gen_random_uuid()``)."""
        return self.default is not None and _CONSTANT.match(self.default) is not None


_CONSTANT = re.compile(r"^(?:'(?:[^']|'')*'(?:::[\w .\"]+(?:\[\])?)?|-?\d+(?:\.\d+)?|true|false|NULL)$")


@dataclass(frozen=True)
class VectorIndex:
    name: str
    method: str
    """``hnsw`` or ``ivfflat``."""
    opclass: str
    options: dict[str, str]
    valid: bool
    definition: str
    """The first key column or expression, as ``pg_get_indexdef`` prints it."""

    @property
    def metric(self) -> Metric | None:
        return OPCLASS_METRIC.get(self.opclass)


_COLUMNS = (
    "SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, "
    "CASE WHEN a.attgenerated <> '' THEN pg_get_expr(d.adbin, d.adrelid) END, "
    "CASE WHEN a.attidentity <> '' THEN 'nextval(' || quote_literal(pg_get_serial_sequence("
    "a.attrelid::regclass::text, a.attname)) || '::regclass)' WHEN a.attgenerated = '' "
    "THEN pg_get_expr(d.adbin, d.adrelid) END, a.attidentity = 'a' "
    "FROM pg_attribute AS a LEFT JOIN pg_attrdef AS d "
    "ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
    "WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum"
)
"""Each column: name, type, NOT NULL, generation expression, default (a sequence's for identity
columns), and whether it is always generated."""

_UNIQUE_COLUMNS = (
    "SELECT a.attname FROM pg_index AS i JOIN pg_attribute AS a "
    "ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0] "
    "WHERE i.indrelid = %s::regclass AND i.indisunique AND i.indisvalid AND i.indnkeyatts = 1 "
    "AND i.indpred IS NULL AND i.indexprs IS NULL"
)
"""Columns a plain, valid, whole-table unique index covers alone."""


@dataclass(frozen=True)
class TableFacts:
    """A table's columns (in order), single-column unique keys and pgvector indexes."""

    columns: dict[str, Column]
    unique: frozenset[str]
    vector_indexes: tuple[VectorIndex, ...]
    kind: str = "r"
    """``pg_class.relkind``: ``r`` table, ``p`` partitioned, ``v`` view, ``m`` materialized view."""
    composite_unique: tuple[tuple[str, ...], ...] = ()
    """Unique keys over several columns (a natural key such as ``(file_path, chunk_index)``)."""
    trigger_source: str = ""
    """The source of the functions the table's row triggers run (a ``tsvector`` kept by one)."""
    text_indexes: tuple[tuple[str, str], ...] = ()
    """``(configuration, column)`` of each GIN index on ``to_tsvector(configuration, column)``."""

    @classmethod
    def read(cls, conn: psycopg.Connection[Any], qualified: str) -> TableFacts:
        cols = conn.execute(_COLUMNS, (qualified,)).fetchall()
        unique = conn.execute(_UNIQUE_COLUMNS, (qualified,)).fetchall()
        composite = conn.execute(_COMPOSITE_KEYS, (qualified,)).fetchall()
        kind = conn.execute(
            "SELECT relkind::text FROM pg_class WHERE oid = %s::regclass", (qualified,)
        ).fetchone()
        triggers = conn.execute(
            # the function's source (a plpgsql to_tsvector) and the trigger's own definition
            # (tsvector_update_trigger(col, 'pg_catalog.spanish', …) names its config there)
            "SELECT coalesce(string_agg(p.prosrc || E'\\n' || pg_get_triggerdef(g.oid), E'\\n'), '') "
            "FROM pg_trigger AS g "
            "JOIN pg_proc AS p ON p.oid = g.tgfoid WHERE g.tgrelid = %s::regclass AND NOT g.tgisinternal",
            (qualified,),
        ).fetchone()
        indexes = conn.execute(_VECTOR_INDEXES, (qualified,)).fetchall()
        text_indexes = [_TO_TSVECTOR.match(str(r[0])) for r in conn.execute(_TEXT_INDEXES, (qualified,))]
        columns = {
            str(n): Column(
                str(n),
                str(t),
                bool(nn),
                None if g is None else str(g),
                None if d is None else str(d),
                bool(a),
            )
            for n, t, nn, g, d, a in cols
        }
        return cls(
            _with_default_values(conn, columns),
            frozenset(str(r[0]) for r in unique),
            tuple(
                VectorIndex(
                    str(name),
                    str(method),
                    str(opclass),
                    dict(str(o).split("=", 1) for o in (options or [])),
                    bool(valid),
                    str(definition),
                )
                for name, method, opclass, options, valid, definition in indexes
            ),
            str(kind[0]) if kind else "r",
            tuple(tuple(str(c) for c in row[0]) for row in composite),
            str(triggers[0]) if triggers else "",
            tuple((found.group(1), found.group(2)) for found in text_indexes if found),
        )

    def dimension(self, column: str) -> int | None:
        """n of a ``vector(n)`` column."""
        found = _VECTOR.match(self.columns[column].type) if column in self.columns else None
        return int(found.group(1)) if found else None

    def indexes_on(self, column: str) -> list[VectorIndex]:
        """pgvector indexes on ``column`` (plain, or a cast of it such as ``embedding::halfvec``)."""
        name = re.escape(column)
        pattern = re.compile(rf'(^|[^\w"])("{name}"|{name})([^\w"]|$)')
        return [ix for ix in self.vector_indexes if pattern.search(ix.definition.replace('""', '"'))]

    def describe(self) -> str:
        return ", ".join(f"{c.name} {c.type}" for c in self.columns.values()) or "none"


def fts_language(facts: TableFacts, columns: Columns) -> str | None:
    """The text search configuration of a generated ``fts`` column."""
    col = facts.columns.get(columns.fts) if columns.fts else None
    found = re.search(r"to_tsvector\('([^']+)'::regconfig", col.generated or "") if col else None
    return found.group(1) if found else None


def _with_default_values(conn: psycopg.Connection[Any], columns: dict[str, Column]) -> dict[str, Column]:
    """``columns`` with each constant default's value as a metadata read gives it (one query,
    only for a table with such defaults): a record without the field reads back with it."""
    constant = [c for c in columns.values() if c.constant and c.default != "NULL"]
    if not constant:
        return columns
    values = sql.SQL(", ").join(
        sql.SQL("{}, {}").format(
            Literal(c.name),
            plain_value(sql.SQL("({})::{}").format(sql.SQL(str(c.default)), sql.SQL(c.type)), c.type),
        )
        for c in constant
    )
    # the defaults are the catalog's own SQL (pg_get_expr); sent without parameters, so a % in
    # one is no placeholder
    row = conn.execute(sql.SQL("SELECT jsonb_build_object({})::text").format(values)).fetchone()
    found = json.loads(str(row[0])) if row else {}
    return {
        name: replace(c, default_value=None if found.get(name) is None else json.dumps(found[name]))
        if name in found
        else c
        for name, c in columns.items()
    }
