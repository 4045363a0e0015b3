"""What an existing table looks like (columns, unique keys, vector indexes), read from the
system catalogs, and whether vectorport can use it: every table is checked on open, whether
vectorport created it or not, so a column renamed or retyped behind its back is named in a
clear error instead of failing later inside a statement.

Only reads: opening a collection writes nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import psycopg

from ..._models import Metric
from ...exceptions import ConfigurationError
from ._schema import OPCLASS_METRIC, Columns

__all__ = ["COLUMN_OPTIONS", "ROLE_OPTION", "TableFacts", "VectorIndex", "resolve_columns"]

ROLE_OPTION = {
    "key": "key_column",
    "embedding": "embedding_column",
    "metadata": "metadata_column",
    "text": "text_column",
}
"""The connect()/URL option that names each data column of a table vectorport did not create."""
COLUMN_OPTIONS = tuple(ROLE_OPTION.values())

_TEXT_TYPES = re.compile(r"^(text|character varying(\(\d+\))?)$")
_VECTOR = re.compile(r"^vector\((\d+)\)$")
_ROLE_WHAT = {
    "key": "the record keys: a text or varchar column with a PRIMARY KEY or UNIQUE constraint",
    "embedding": "the vectors: a vector(n) column",
    "metadata": "the metadata: a jsonb column",
    "text": "the chunk text: a text or varchar column",
}


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    """``format_type`` of the column: ``text``, ``vector(384)``, ``character varying(64)`` …"""
    notnull: bool
    generated: str | None
    """The expression of a generated column (``None`` for a plain one)."""


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


@dataclass(frozen=True)
class TableFacts:
    """A table's columns (in order), single-column unique keys and pgvector indexes."""

    columns: dict[str, Column]
    unique: frozenset[str]
    vector_indexes: tuple[VectorIndex, ...]

    @classmethod
    def read(cls, conn: psycopg.Connection[Any], qualified: str) -> TableFacts:
        cols = conn.execute(
            "SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, "
            "CASE WHEN a.attgenerated <> '' THEN pg_get_expr(d.adbin, d.adrelid) END "
            "FROM pg_attribute AS a LEFT JOIN pg_attrdef AS d "
            "ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
            "WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
            (qualified,),
        ).fetchall()
        unique = conn.execute(
            "SELECT a.attname FROM pg_index AS i JOIN pg_attribute AS a "
            "ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0] "
            "WHERE i.indrelid = %s::regclass AND i.indisunique AND i.indisvalid AND i.indnkeyatts = 1 "
            "AND i.indpred IS NULL AND i.indexprs IS NULL",
            (qualified,),
        ).fetchall()
        indexes = conn.execute(
            "SELECT c.relname, am.amname, opc.opcname, c.reloptions, i.indisvalid, "
            "pg_get_indexdef(i.indexrelid, 1, false) "
            "FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid "
            "JOIN pg_am AS am ON am.oid = c.relam JOIN pg_opclass AS opc ON opc.oid = i.indclass[0] "
            "WHERE i.indrelid = %s::regclass AND am.amname IN ('hnsw', 'ivfflat') ORDER BY c.relname",
            (qualified,),
        ).fetchall()
        return cls(
            {str(n): Column(str(n), str(t), bool(nn), None if g is None else str(g)) for n, t, nn, g in cols},
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


def _problem(facts: TableFacts, role: str, name: str, explicit: bool) -> str | None:
    option = ROLE_OPTION[role]
    col = facts.columns.get(name)
    if col is None:
        how = f"check {option}={name}" if explicit else f"pass {option}=NAME to use another column"
        return f"no column {name!r} for {_ROLE_WHAT[role]} ({how})"
    kind = col.type
    if role in ("key", "text") and not _TEXT_TYPES.match(kind):
        return f"column {name!r} ({role}) is {kind}, not text or varchar" + (
            "; vectorport keys are strings: copy the rows into a vectorport table "
            "(docs/backends/pgvector.md, 'Tables made elsewhere')"
            if role == "key"
            else f"; pass {option}=NAME to use another column"
        )
    if role == "key" and name not in facts.unique:
        return (
            f"column {name!r} (key) has no PRIMARY KEY or UNIQUE constraint, which upserts by key "
            f"need: ALTER TABLE … ADD PRIMARY KEY ({name})"
        )
    if role == "metadata" and kind != "jsonb":
        fix = f"ALTER TABLE … ALTER COLUMN {name} TYPE jsonb" if kind == "json" else f"pass {option}=NAME"
        return f"column {name!r} (metadata) is {kind}, not jsonb: {fix}"
    if role == "embedding" and not _VECTOR.match(kind):
        if kind == "vector":
            fix = f"give it one: ALTER TABLE … ALTER COLUMN {name} TYPE vector(N)"
            return f"column {name!r} (embedding) is a vector with no dimension; {fix}"
        return f"column {name!r} (embedding) is {kind}, not vector(n); pass {option}=NAME"
    return None


def resolve_columns(facts: TableFacts, names: dict[str, str], explicit: set[str], where: str) -> Columns:
    """The :class:`Columns` of a table, or a :class:`ConfigurationError` naming every column
    that is missing or of the wrong type and what to pass or change.

    ``names`` maps the roles ``key``, ``embedding``, ``metadata``, ``text`` to column names;
    ``explicit`` holds the roles the caller named with an option.
    """
    problems = [p for role in ROLE_OPTION if (p := _problem(facts, role, names[role], role in explicit))]
    if problems:
        raise ConfigurationError(
            f"{where} cannot be used as a vectorport collection: "
            + "; ".join(problems)
            + f". Its columns: {facts.describe()}"
        )
    fts = facts.columns.get("fts")
    updated = facts.columns.get("updated_at")
    return Columns(
        key=names["key"],
        embedding=names["embedding"],
        metadata=names["metadata"],
        text=names["text"],
        fts="fts" if fts is not None and fts.type == "tsvector" and fts.generated else None,
        updated_at=(
            "updated_at" if updated is not None and updated.type == "timestamp with time zone" else None
        ),
        metadata_nullable=not facts.columns[names["metadata"]].notnull,
        embedding_nullable=not facts.columns[names["embedding"]].notnull,
    )


def fts_language(facts: TableFacts, columns: Columns) -> str | None:
    """The text search configuration of a generated ``fts`` column."""
    col = facts.columns.get(columns.fts) if columns.fts else None
    found = re.search(r"to_tsvector\('([^']+)'::regconfig", col.generated or "") if col else None
    return found.group(1) if found else None
