"""How a table's columns make a record: which column (or SQL expression) is the chunk key, where
the vector, metadata and text are, which rows are the collection's, and how a record is written.

vectorport's own tables are the identity mapping (``key, embedding, metadata, text``). A table
made elsewhere maps each role to its own columns (:mod:`._layouts` finds them): a key column of
any type or an expression over columns, metadata from a ``json``/``jsonb`` column and/or plain
columns, an optional text column, a row scope (LangChain's shared table holds every collection).

Every expression here reads the row as the table alias ``t`` does (or unqualified), so the
statements of :mod:`._read`, :mod:`._write` and :mod:`._search` stay the same for every table.
"""

from __future__ import annotations

import re
import string
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from psycopg import sql
from psycopg.types.json import Jsonb

from ...exceptions import ConfigurationError, UnsupportedFeatureError
from ._quote import Identifier, Literal

__all__ = [
    "DEFAULT_COLUMNS",
    "KEEP_KEY",
    "KEY_NAMESPACE",
    "KEY_PARTS",
    "NO_TEXT",
    "Columns",
    "KeyTemplate",
    "default_template",
    "row_id",
    "sql_name",
]

KEEP_KEY = "vectorport_key"
"""Metadata key keeping a chunk key that is not a uuid, in a table keyed by uuid: the row id is
``uuid5(KEY_NAMESPACE, key)``, and reading the row restores the key from here."""
KEY_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://vectorport.dev/keys")
NO_TEXT = "vectorport:no_text"
"""Metadata flag of a record without text in a table whose text column is ``NOT NULL`` (it
holds ``''`` there); the same marker vectorport's Chroma layout uses."""

KEY_PARTS = "vectorport:key_parts"
"""Staged-metadata key carrying the columns a key template splits a key into (never stored)."""

_PLAIN_NAMES = frozenset({"embedding", "fts", "hits", "key", "metadata", "t", "text", "updated_at"})
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_ANY_UUID = re.compile(
    r"^(?:[0-9a-fA-F]{32}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$"
)
_INTEGER = re.compile(r"^-?[0-9]{1,19}$")
_MAX_BUILD_ARGS = 50  # jsonb_build_object takes at most 100 arguments (FUNC_MAX_ARGS)
_TIMESTAMP = re.compile(r"^timestamp(\(\d\))? with(out)? time zone$")
_ISO_FORMAT = 'YYYY-MM-DD"T"HH24:MI:SS.US'


def sql_name(*parts: str) -> sql.Composable:
    """An identifier; vectorport's own column names and aliases print unquoted (they need no
    quotes), so the SQL ``vectorport pgvector schema`` prints reads like hand-written SQL."""
    if all(p in _PLAIN_NAMES for p in parts):
        return sql.SQL(".".join(parts))
    return Identifier(*parts)


def plain_value(column: sql.Composable, kind: str) -> sql.Composable:
    """A plain column's value for the metadata; a timestamp as Python's ``isoformat()`` gives it
    (a ``timestamptz`` in UTC). PostgreSQL's JSON prints the session's TimeZone offset and trims
    the fraction (``.1234``), so the same row would read differently through another session."""
    found = _TIMESTAMP.match(kind)
    if not found:
        return column
    utc = found.group(2) is None
    moment = sql.SQL("({} AT TIME ZONE 'UTC')").format(column) if utc else column
    iso = sql.SQL("regexp_replace(to_char({}, {}), {}, '')").format(
        moment, Literal(_ISO_FORMAT), Literal(r"\.000000$")
    )
    if utc:
        iso = sql.SQL("{} || '+00:00'").format(iso)
    return sql.SQL("CASE WHEN isfinite({}) THEN {} ELSE {}::text END").format(column, iso, column)


def row_id(kind: str, key: str) -> str | None:
    """The id column's value for a chunk key (``None``: no row can have that key).

    A uuid column holds a key that is a uuid as itself and any other key as its uuid5; an
    integer column holds only keys that are integers."""
    if kind == "uuid":
        if _UUID.match(key):
            return key
        if _ANY_UUID.match(key):
            # the same uuid written otherwise (32 hex digits, as LangChain's AmazonS3Vectors and
            # uuid4().hex make them, or in capitals) is that uuid, not a name to hash
            return str(uuid.UUID(key))
        return str(uuid.uuid5(KEY_NAMESPACE, key))
    if kind == "integer":
        return key if _INTEGER.match(key) and str(int(key)) == key else None
    return key


_FIELD_PATTERN = {"integer": r"-?[0-9]+", "uuid": r"[0-9a-fA-F-]{36}", "text": r".*"}


@dataclass(frozen=True)
class KeyTemplate:
    """How a key is made from several columns: ``{file_path}#chunk{chunk_index}`` makes
    ``docs/a.md#chunk3`` from ``('docs/a.md', 3)``; a key is split back with the same template
    (a text field takes as much as it can), and a key that does not come out the same when the
    parts are put back (``docs/a.md#chunk03``, ``docs/a.md``) does not fit it."""

    text: str
    fields: tuple[str, ...]
    literals: tuple[str, ...]
    """The text before each field, and after the last one (``len(fields) + 1`` items)."""

    @classmethod
    def parse(cls, text: str) -> KeyTemplate:
        literals: list[str] = []
        fields: list[str] = []
        try:
            parsed = list(string.Formatter().parse(text))
        except ValueError as exc:
            raise ConfigurationError(f"key_template {text!r} is not a template: {exc}") from None
        pending = ""
        for literal, name, spec, conversion in parsed:
            pending += literal
            if name is None:
                continue
            if not name.isidentifier() or spec or conversion:
                raise ConfigurationError(
                    f"key_template {text!r}: {{{name}}} must name a column, without a format or "
                    "conversion, e.g. {file_path}#chunk{chunk_index}"
                )
            if fields and not pending:
                raise ConfigurationError(
                    f"key_template {text!r}: separate {{{fields[-1]}}} and {{{name}}} with some text, "
                    "or a key could not be split back into them"
                )
            if name in fields:
                raise ConfigurationError(f"key_template {text!r} names {{{name}}} twice")
            literals.append(pending)
            fields.append(name)
            pending = ""
        literals.append(pending)
        if not fields:
            raise ConfigurationError(f"key_template {text!r} names no column, e.g. {{file_path}}#chunk{{n}}")
        return cls(text, tuple(fields), tuple(literals))

    def split(self, key: str, kinds: Sequence[str]) -> list[str] | None:
        """The column values (as text) of ``key``, ``None`` when it does not fit."""
        pattern = "".join(
            re.escape(lit) + f"({_FIELD_PATTERN[kind]})"
            for lit, kind in zip(self.literals, kinds, strict=False)
        )
        found = re.fullmatch(pattern + re.escape(self.literals[-1]), key, re.DOTALL)
        if found is None:
            return None
        parts = list(found.groups())
        for value, kind in zip(parts, kinds, strict=True):
            if kind == "integer" and (str(int(value)) != value or not -(2**63) <= int(value) < 2**63):
                return None
            if kind == "uuid" and (not _UUID.match(value) or str(uuid.UUID(value)) != value):
                return None
        return parts if self.join(parts) == key else None

    def join(self, parts: Sequence[str]) -> str:
        return (
            "".join(lit + part for lit, part in zip(self.literals, parts, strict=False)) + self.literals[-1]
        )

    def sql(self) -> str:
        """The key as an SQL expression over the row's columns (``text`` of each, joined)."""
        pieces: list[str] = []
        for lit, name in zip(self.literals, self.fields, strict=False):
            if lit:
                pieces.append(_quote(lit))
            pieces.append(f"{Identifier(name).as_string(None)}::text")
        if self.literals[-1]:
            pieces.append(_quote(self.literals[-1]))
        return " || ".join(pieces)


def default_template(parts: Sequence[tuple[str, str]]) -> str:
    """The key template of a natural key ``(column, kind)``: ``{a}#chunk{b}`` for a text column
    and an integer one (vectorport's chunk keys, ``docs/a.md#chunk3``), else the fields joined
    by ``#``."""
    if [kind for _, kind in parts] == ["text", "integer"]:
        return f"{{{parts[0][0]}}}#chunk{{{parts[1][0]}}}"
    return "#".join(f"{{{name}}}" for name, _ in parts)


def _quote(text: str) -> str:
    # standard_conforming_strings is on (PostgreSQL's default since 9.1): only ' is doubled
    return "'" + text.replace("'", "''") + "'"


@dataclass(frozen=True)
class Columns:
    """The columns of a collection's table and how they make a record.

    A table vectorport creates has the default names, a generated ``fts`` column and
    ``updated_at``; a table made elsewhere may name its data columns otherwise, lack the
    optional ones, and use the fields below ``embedding_nullable``.
    """

    key: str = "key"
    """The key column: the chunk key itself (``text``), or the row id (``uuid``, ``integer``),
    or, for ``key_kind == "expression"``, a unique column to scan in order ("" when none)."""
    embedding: str = "embedding"
    metadata: str | None = "metadata"
    """The ``jsonb`` (or ``json``) metadata column (``None``: none)."""
    text: str | None = "text"
    fts: str | None = "fts"
    fts_index: str | None = None
    """No ``tsvector`` column, but a GIN index on ``to_tsvector(fts_index, <text column>)``
    (Haystack's keyword index): text and hybrid search use that expression in place of
    :attr:`fts`, so the index serves them."""
    """The ``tsvector`` column full-text and hybrid search use (``None``: none)."""
    updated_at: str | None = "updated_at"
    """A ``timestamptz`` column set to ``now()`` on every upsert (``None``: none)."""
    metadata_nullable: bool = False
    """The metadata column admits SQL NULL (read as ``{}``; filters coalesce it)."""
    embedding_nullable: bool = False
    """The embedding column admits SQL NULL (such rows are left out of searches)."""
    key_kind: str = "text"
    """``text`` (the column is the key), ``uuid`` or ``integer`` (a row id whose text is the
    key), ``expression`` (:attr:`key_expression` is)."""
    key_expression: str | None = None
    """SQL over the row's columns giving the key (``file_path || '#' || chunk_index``)."""
    key_field: str | None = None
    """``key_kind == "field"``: the metadata field holding the key (a table whose rows the
    database numbers, with no natural key); hidden from the record's metadata."""
    key_template: KeyTemplate | None = None
    """The key made from several columns (:attr:`key_parts`); :attr:`key_expression` is its SQL."""
    key_parts: tuple[tuple[str, str, str], ...] = ()
    """The template's columns: ``(column, kind, format_type)``, kind ``text``/``integer``/``uuid``."""
    key_unique: bool = True
    """The key column has a unique index (upserts use ``ON CONFLICT``, scans walk it)."""
    order: str | None = None
    """A unique column scans walk when the key has no unique index (LlamaIndex's ``id``)."""
    order_kind: str = "text"
    metadata_json: bool = False
    """The metadata column is ``json``, not ``jsonb``."""
    metadata_columns: tuple[tuple[str, str], ...] = ()
    """Plain columns read into the metadata under their names: ``(column, format_type)``."""
    column_defaults: tuple[tuple[str, str], ...] = ()
    """Those of :attr:`metadata_columns` with a default, and its SQL (``created_at``,
    ``now()``): a record that does not carry the field gets the default, not NULL."""
    default_values: tuple[tuple[str, str], ...] = ()
    """Those of :attr:`column_defaults` that are constants, with the JSON text a read gives the
    value (``("source", '"import"')``): the collection's capabilities declare them, so a
    migration's plan says which records get them and its verification expects them."""
    required_columns: tuple[str, ...] = ()
    """Those of :attr:`metadata_columns` that are ``NOT NULL`` without a default: a record must
    carry the field (a migration's plan names each record that does not)."""
    halfvec: bool = False
    """The embedding column is ``halfvec`` (read as float32)."""
    scope: str | None = None
    """SQL selecting the collection's rows (``None``: all), with ``%(name)s`` placeholders."""
    scope_params: tuple[tuple[str, Any], ...] = ()
    fixed: tuple[tuple[str, str], ...] = ()
    """Columns every written row gets, from a scope parameter: ``(column, parameter)``."""
    keep_key: bool = False
    """Keys that are not uuids are kept in the metadata under :data:`KEEP_KEY` (uuid ids), or
    that are not integers (a serial id: :attr:`key_default` numbers their rows)."""
    key_default: str | None = None
    """A serial or identity integer key's default (``nextval(…)``): a row whose key is not an
    integer gets its id from the sequence, as the application's own INSERT does (the Supabase
    hybrid search template's ``id bigserial``), its key kept under :data:`KEEP_KEY`."""
    overriding: bool = False
    """The key is ``GENERATED ALWAYS AS IDENTITY``: INSERTs say ``OVERRIDING SYSTEM VALUE``."""
    node_metadata: bool = False
    """The metadata holds LlamaIndex's node bookkeeping (``_node_content`` …)."""
    text_key: str | None = None
    """No text column: the text is kept in the metadata under this key."""
    text_required: bool = False
    """The text column is ``NOT NULL``: a record without text is written as ``''`` and flagged."""
    skip_null_vectors: bool = False
    """Rows whose vector is NULL are left out (``null_vectors=skip``)."""
    left_out: tuple[str, ...] = ()
    """Columns no record carries (``name (type)``: a ``bytea`` blob, Haystack's blob mime
    type): not read, named by ``info`` and the migration plan."""
    surrogate: str | None = None
    """The serial id a natural key was preferred over (:attr:`key_reason`): read as a metadata
    field, given by its sequence when a record carries none, never changed by an upsert."""
    key_reason: str | None = None
    """Why the key is what it is, where vectorport chose among the table's keys (``info``)."""
    filled: tuple[str, ...] = ()
    """Columns the table fills itself (a computed default: ``created_at DEFAULT now()``, as a
    SQLAlchemy ``server_default=func.now()`` makes it), ``name (DEFAULT expr)``: not read as
    metadata (vectorport's own ``updated_at`` is not either) and left out of every INSERT, so
    the default fills them as the application's own INSERT does; named by ``info``."""
    fts_written: bool = False
    """The ``tsvector`` column is a plain column nothing maintains (no generation, no trigger),
    as LangChain's PGVectorStore makes it for hybrid search (``content_tsv TSVECTOR NOT NULL``,
    filled by its INSERT): vectorport writes ``to_tsvector(language, text)`` into it too."""
    own: bool = True
    """vectorport's own layout: it records the table in its catalog and manages its index."""
    read_only: str | None = None
    """Why rows cannot be written here (``None``: they can)."""

    # ------------------------------------------------------------ columns
    def ident(self, name: str, prefix: str | None = None) -> sql.Composable:
        """One of the columns by role (``key``, ``embedding``, ``metadata``, ``text``, ``fts``),
        optionally qualified by a table alias."""
        if name == "fts" and self.fts is None and self.fts_index is not None and self.text:
            text = sql_name(prefix, self.text) if prefix else sql_name(self.text)
            return sql.SQL("to_tsvector({}::regconfig, {})").format(Literal(self.fts_index), text)
        column = getattr(self, name)
        if not isinstance(column, str) or not column:
            raise UnsupportedFeatureError(f"this table has no {name} column")
        return sql_name(prefix, column) if prefix else sql_name(column)

    def _raw_metadata(self, prefix: str | None) -> sql.Composable | None:
        if self.metadata is None:
            return None
        column = self.ident("metadata", prefix)
        if self.metadata_json:
            column = sql.SQL("{}::jsonb").format(column)
        if not self.metadata_nullable:
            return column
        return sql.SQL("coalesce({}, '{{}}'::jsonb)").format(column)

    def metadata_expr(self, prefix: str | None = None) -> sql.Composable:
        """The metadata as a jsonb that is never SQL NULL (filters rely on two-valued leaves)."""
        parts: list[sql.Composable] = []
        raw = self._raw_metadata(prefix)
        if raw is not None:
            hidden = [
                k
                for k in (
                    KEEP_KEY if self.keep_key else None,
                    self.key_field,
                    self.text_key,
                    NO_TEXT if self.text_required else None,
                )
                if k
            ]
            if hidden:
                raw = sql.SQL("({} - {}::text[])").format(raw, Literal(hidden))
            parts.append(raw)
        for start in range(0, len(self.metadata_columns), _MAX_BUILD_ARGS):
            chunk = self.metadata_columns[start : start + _MAX_BUILD_ARGS]
            pairs = sql.SQL(", ").join(
                sql.SQL("{}, {}").format(
                    Literal(name),
                    plain_value(sql_name(prefix, name) if prefix else sql_name(name), kind),
                )
                for name, kind in chunk
            )
            # a NULL column is a missing key, as a record without that metadata has none
            parts.append(sql.SQL("jsonb_strip_nulls(jsonb_build_object({}))").format(pairs))
        if not parts:
            return sql.SQL("'{}'::jsonb")
        return parts[0] if len(parts) == 1 else sql.SQL("({})").format(sql.SQL(" || ").join(parts))

    def text_expr(self, prefix: str | None = None) -> sql.Composable:
        raw = self._raw_metadata(prefix)
        if self.text and self.text_required and raw is not None:
            return sql.SQL("CASE WHEN {} ? {} THEN NULL ELSE {} END").format(
                raw, Literal(NO_TEXT), self.ident("text", prefix)
            )
        if self.text:
            return self.ident("text", prefix)
        if self.text_key and raw is not None:
            return sql.SQL("({} ->> {})").format(raw, Literal(self.text_key))
        return sql.SQL("NULL::text")

    def embedding_expr(self, prefix: str | None = None) -> sql.Composable:
        """The vector as float32 ``vector`` (a ``halfvec`` column is cast)."""
        column = self.ident("embedding", prefix)
        return sql.SQL("{}::vector").format(column) if self.halfvec else column

    # ------------------------------------------------------------ keys
    def key_expr(self, prefix: str | None = None) -> sql.Composable:
        """The chunk key as text."""
        if self.key_kind == "field":
            raw = self._raw_metadata(prefix)
            assert raw is not None and self.key_field is not None
            return sql.SQL("({} ->> {})").format(raw, Literal(self.key_field))
        if self.key_kind == "expression":
            assert self.key_expression is not None
            return sql.SQL("({})::text").format(sql.SQL(self.key_expression.replace("%", "%%")))
        column = self.ident("key", prefix)
        if self.key_kind == "text":
            return column
        as_text = sql.SQL("{}::text").format(column)
        raw = self._raw_metadata(prefix)
        if self.keep_key and raw is not None:
            return sql.SQL("coalesce({} ->> {}, {})").format(raw, Literal(KEEP_KEY), as_text)
        return as_text

    @property
    def text_searchable(self) -> bool:
        """Text and hybrid search have a ``tsvector``: a column, or a keyword index's expression."""
        return self.fts is not None or (self.fts_index is not None and self.text is not None)

    @property
    def numbered(self) -> bool:
        """Rows whose key is not an integer are numbered by the key's sequence (:attr:`key_default`)."""
        return self.key_kind == "integer" and self.keep_key

    @property
    def plain_key(self) -> bool:
        """The key is the key column's own value (lookups and scans use its index)."""
        return self.key_kind == "text"

    def order_expr(self, prefix: str | None = None) -> sql.Composable:
        """What scans walk in order: a unique column when there is one, else the key."""
        if self.order:
            return sql_name(prefix, self.order) if prefix else sql_name(self.order)
        if self.key_kind not in ("expression", "field") and self.key_unique:
            return self.ident("key", prefix)
        return self.key_expr(prefix)

    @property
    def order_cast(self) -> str:
        """The SQL type a scan position (kept as text) is cast to before comparing."""
        kind = self.order_kind if self.order else self.key_kind
        if self.key_kind in ("expression", "field") and not self.order:
            return "text"
        return {"uuid": "uuid", "integer": "bigint"}.get(kind, "text")

    @property
    def ordered_by_key(self) -> bool:
        """Scans walk the key itself (so keys must be unique and not NULL for them to be exact)."""
        return not self.order and (self.key_kind in ("expression", "field") or not self.key_unique)

    def lookup(self, keys: Sequence[str], prefix: str | None = None) -> tuple[sql.Composable, Any]:
        """A condition selecting the rows of ``keys`` (``%(keys)s`` holds the list) and the list."""
        if self.key_template is not None:
            return self._template_lookup(keys, prefix)
        if (
            self.key_kind in ("expression", "field")
            or (self.key_kind == "text" and not self.key_unique)
            or self.numbered  # a key kept in the metadata names its row, not its id
        ):
            return sql.SQL("{} = ANY(%(keys)s)").format(self.key_expr(prefix)), list(keys)
        ids = [i for i in (row_id(self.key_kind, k) for k in keys) if i is not None]
        cast = {"uuid": "::uuid[]", "integer": "::bigint[]"}.get(self.key_kind, "")
        return sql.SQL("{} = ANY(%(keys)s{})").format(self.ident("key", prefix), sql.SQL(cast)), ids

    def _template_lookup(self, keys: Sequence[str], prefix: str | None) -> tuple[sql.Composable, Any]:
        """Keys split by the template, matched on the template's columns (their unique index
        serves it); a key that does not fit has no row."""
        assert self.key_template is not None
        kinds = [kind for _, kind, _ in self.key_parts]
        rows = [p for p in (self.key_template.split(k, kinds) for k in keys) if p is not None]
        columns = sql.SQL(", ").join(
            sql_name(prefix, name) if prefix else sql_name(name) for name, _, _ in self.key_parts
        )
        picks = sql.SQL(", ").join(
            sql.SQL("(e ->> {})::{}").format(Literal(i), sql.SQL(kind))
            for i, (_, _, kind) in enumerate(self.key_parts)
        )
        condition = sql.SQL("({}) IN (SELECT {} FROM jsonb_array_elements(%(keys)s::jsonb) AS e)").format(
            columns, picks
        )
        return condition, Jsonb(rows)

    # ------------------------------------------------------------ scope
    def scope_sql(self, *, with_null_vectors: bool = False) -> str:
        """The scope as SQL text (``TRUE`` when the table is the collection); rows without a
        vector are out of it with ``null_vectors=skip`` unless ``with_null_vectors``."""
        parts = [f"({self.scope})"] if self.scope else []
        if self.skip_null_vectors and not with_null_vectors:
            parts.append(f"{self.ident('embedding').as_string(None)} IS NOT NULL")
        return " AND ".join(parts) or "TRUE"

    @property
    def scope_values(self) -> dict[str, Any]:
        return dict(self.scope_params)


DEFAULT_COLUMNS = Columns()
