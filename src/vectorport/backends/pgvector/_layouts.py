"""Which columns of a table make a record: vectorport's own layout, the layouts of the
frameworks that create pgvector tables (presets), or a mapping the user gives.

``layout=`` names a preset of :mod:`vectorport.conventions` (its :class:`TableShape`: the
column of each role, how its tables are found and named): ``vectorport`` (``key text PK,
embedding vector(n), metadata jsonb, text, fts, updated_at``), ``langchain`` (langchain-postgres
``PGVector``'s shared ``langchain_pg_embedding``; ``collection=NAME`` picks one collection),
``langchain-v2`` (``PGVectorStore``), ``llamaindex`` (``data_<name>``, keyed by ``node_id``),
``vecs`` (schema ``vecs``, no text), ``supabase`` (the ``documents`` template), ``haystack``
(``PgvectorDocumentStore``'s ``haystack_documents``).

Without ``layout=`` the layout is detected from the columns; options (``key_column``,
``key_expression``, ``embedding_column``, ``metadata_column``, ``metadata_columns``,
``text_column``, ``text_key``, ``where``) override a preset's roles or map any other table.
Columns no role uses become metadata (typed: timestamps as ISO strings in UTC, numerics as numbers),
so nothing of the row is silently left behind; ``metadata_columns=`` (empty) opts out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from ...conventions import TableShape, presets
from ...conventions import preset as convention
from ...conventions.langchain import COLLECTIONS_TABLE, SHARED_TABLE
from ...exceptions import ConfigurationError
from ._inspect import Column, TableFacts
from ._mapping import Columns, KeyTemplate, default_template
from ._schema import check_identifier

__all__ = [
    "LAYOUTS",
    "MAPPING_OPTIONS",
    "ROLE_OPTION",
    "MappingOptions",
    "detect",
    "relation",
    "resolve",
]

LAYOUTS = tuple(p.name for p in presets() if p.pgvector is not None)
"""The ``layout=`` names: the conventions' pgvector presets, detection order."""
ROLE_OPTION = {
    "key": "key_column",
    "embedding": "embedding_column",
    "metadata": "metadata_column",
    "text": "text_column",
}
"""The connect()/URL option that names each data column of a table vectorport did not create."""
MAPPING_OPTIONS = (
    *ROLE_OPTION.values(),
    "key_expression",
    "key_field",
    "key_template",
    "layout",
    "metadata_columns",
    "null_vectors",
    "text_key",
    "where",
)
NULL_VECTORS = ("error", "skip")

_TEXT = re.compile(r"^(text|character varying(\(\d+\))?|character(\(\d+\))?|citext)$")
_INTEGER = re.compile(r"^(bigint|integer|smallint)$")
_VECTOR = re.compile(r"^(vector|halfvec)(\((\d+)\))?$")
_JSON = ("json", "jsonb")
_UNHELD = frozenset({"bytea"})


def _filled(column: Column) -> bool:
    """The table fills ``column`` itself: a computed default (``created_at DEFAULT now()``)."""
    return column.default is not None and not column.constant


"""Column types no role can hold (metadata is JSON, the text is text): such columns are left out
of the records, and ``info`` and the migration plan name them."""
_TEXT_NAMES = ("text", "content", "document", "chunk_text", "chunk", "page_content", "body")

LANGCHAIN_TABLE = SHARED_TABLE
LANGCHAIN_COLLECTIONS = COLLECTIONS_TABLE


def shape(layout: str | None) -> TableShape | None:
    """The table shape of a preset (``None``: not a preset, e.g. ``custom``)."""
    found = convention(layout) if layout else None
    return found.pgvector if found is not None else None


@dataclass(frozen=True)
class MappingOptions:
    """What the user said about the table (URL parameters / ``connect()`` keywords)."""

    layout: str | None = None
    columns: tuple[tuple[str, str], ...] = ()
    """``(role, column)`` named with ``key_column=`` … options."""
    key_expression: str | None = None
    metadata_columns: tuple[str, ...] | None = None
    """``None``: every column no role uses; ``()``: none."""
    text_key: str | None = None
    where: str | None = None
    null_vectors: str = "error"
    """``error``: a row without a vector stops the first scan, named; ``skip``: left out."""
    key_template: KeyTemplate | None = None
    """The key made from several columns (``{file_path}#chunk{chunk_index}``): writable."""
    key_field: str | None = None
    """The metadata field holding the key, in a table keyed by an id the database assigns."""

    @classmethod
    def parse(cls, opts: Mapping[str, Any]) -> MappingOptions:
        layout = opts.get("layout")
        if layout is not None:
            layout = str(layout).strip().lower()
            if layout not in LAYOUTS:
                raise ConfigurationError(
                    f"pgvector option layout must be one of {', '.join(LAYOUTS)}, got {layout!r}"
                )
        named = tuple(
            (role, check_identifier(option, str(opts[option])))
            for role, option in ROLE_OPTION.items()
            if opts.get(option)
        )
        listed = opts.get("metadata_columns")
        metadata_columns: tuple[str, ...] | None = None
        if listed is not None:
            items = listed.split(",") if isinstance(listed, str) else list(listed)
            metadata_columns = tuple(
                check_identifier("metadata_columns", str(c).strip()) for c in items if str(c).strip()
            )
        expression = opts.get("key_expression")
        where = opts.get("where")
        text_key = opts.get("text_key")
        for name, value in (("key_expression", expression), ("where", where)):
            if value is not None and (not isinstance(value, str) or not value.strip() or ";" in value):
                raise ConfigurationError(
                    f"pgvector option {name} must be one SQL expression over the table's columns "
                    f"(no ';'), got {value!r}"
                )
        null_vectors = str(opts.get("null_vectors") or "error").strip().lower()
        if null_vectors not in NULL_VECTORS:
            raise ConfigurationError(
                f"pgvector option null_vectors must be error or skip, got {opts.get('null_vectors')!r}"
            )
        template = KeyTemplate.parse(str(opts["key_template"])) if opts.get("key_template") else None
        field = str(opts["key_field"]).strip() if opts.get("key_field") else None
        if sum(x is not None for x in (template, expression, field, opts.get("key_column"))) > 1:
            raise ConfigurationError(
                "give one of key_column=, key_template= (the key made from several columns), "
                "key_field= (a metadata field holding the key) and key_expression= (any SQL, read-only)"
            )
        return cls(
            layout,
            named,
            expression.strip() if expression else None,
            metadata_columns,
            str(text_key) if text_key else None,
            where.strip() if where else None,
            null_vectors,
            template,
            field,
        )

    @property
    def mapped(self) -> bool:
        """The user named a layout or mapped a role."""
        return bool(
            self.layout
            or self.columns
            or self.key_expression
            or self.key_template
            or self.key_field
            or self.metadata_columns is not None
            or self.text_key
            or self.where
        )


def relation(options: MappingOptions, name: str, schema: str | None) -> tuple[str, str]:
    """``(schema, table)`` holding collection ``name`` in the layout the options name."""
    found = shape(options.layout)
    if found is None:
        return schema or "public", name
    schema = schema or found.schema or "public"
    if found.shared_table is not None:
        return schema, found.shared_table
    if found.table_prefix and not name.startswith(found.table_prefix):
        return schema, found.table_prefix + name
    return schema, name


def detect(facts: TableFacts, table: str) -> str | None:
    """The preset whose columns the table has (``None``: none)."""
    names = frozenset(facts.columns)
    unique = frozenset(facts.unique)
    for found in presets():
        if found.pgvector is not None and found.pgvector.matches(names, unique, table):
            return found.name
    return None


def _kind(column: Column) -> str | None:
    """The key kind a column's type gives (``None``: not usable as a key)."""
    if _TEXT.match(column.type):
        return "text"
    if column.type == "uuid":
        return "uuid"
    if _INTEGER.match(column.type):
        return "integer"
    return None


def _guess(facts: TableFacts) -> dict[str, str]:
    """Roles of a table no preset describes: the single-column primary/unique key, the only
    vector column, the only json(b) column, a text column with a usual name."""
    cols = facts.columns.values()
    vectors = [c.name for c in cols if _VECTOR.match(c.type)]
    jsons = [c.name for c in cols if c.type in _JSON]
    keys = [c.name for c in cols if c.name in facts.unique and _kind(c)]
    texts = [n for n in _TEXT_NAMES if n in facts.columns and _TEXT.match(facts.columns[n].type)]
    if not texts:
        # a usual word inside the name (body_text, chunk_content, page_text): taken when only one
        # text column has one
        named = [
            c.name
            for c in cols
            if _TEXT.match(c.type) and set(re.split(r"[_\W]+", c.name.lower())) & set(_TEXT_NAMES)
        ]
        texts = named if len(named) == 1 else []
    return {
        "key": keys[0] if len(keys) == 1 else "",
        "embedding": vectors[0] if len(vectors) == 1 else "",
        "metadata": jsons[0] if len(jsons) == 1 else "",
        "text": texts[0] if texts else "",
    }


def _options_hint() -> str:
    return (
        "map it with key_column= (or key_expression=), embedding_column=, metadata_column=, "
        f"metadata_columns=, text_column=, or name a layout ({', '.join(LAYOUTS[1:])})"
    )


@dataclass
class _Picked:
    """The columns a table gives each role, how its key is made, and what is wrong."""

    key: Column | None
    embedding: Column | None
    metadata: Column | None
    text: Column | None
    kind: str | None
    """``text``, ``uuid``, ``integer`` (the key column's), ``expression`` or ``field``."""
    problems: list[str]


def _pick(facts: TableFacts, layout: str, options: MappingOptions) -> _Picked:
    """The role columns of a table (the preset's or guessed, then the options'), with the
    problems of each missing column and of the key."""
    preset_shape = shape(layout)
    roles = preset_shape.roles() if preset_shape is not None else _guess(facts)
    roles.update(dict(options.columns))
    explicit = {role for role, _ in options.columns}
    if (options.key_expression or options.key_template or options.key_field) and "key" not in explicit:
        roles["key"] = ""  # the expression is the key; the columns it reads stay metadata
    problems: list[str] = []

    def column(role: str) -> Column | None:
        name = roles.get(role, "")
        if not name:
            return None
        found = facts.columns.get(name)
        if found is None:
            how = (
                f"check {ROLE_OPTION[role]}={name}" if role in explicit else f"pass {ROLE_OPTION[role]}=NAME"
            )
            problems.append(f"no column {name!r} for the {role} ({how})")
        return found

    key, emb, meta, text = (column(r) for r in ("key", "embedding", "metadata", "text"))
    template = options.key_template
    expression = options.key_expression or (template.sql() if template else None)
    if template is not None:
        problems += _template_problems(facts, template)
    if options.key_field and (meta is None or meta.type not in _JSON) and not problems:
        problems.append(f"key_field={options.key_field} needs a json or jsonb metadata column")
    if key is None and expression is None and not options.key_field and not problems:
        problems.append(
            "no column for the key: pass key_column=NAME (a text, uuid or integer column), or "
            "key_expression=SQL (e.g. file_path || '#' || chunk_index)"
        )
    kind = "field" if options.key_field else "expression" if expression else _kind(key) if key else None
    if key is not None and expression is None and kind is None:
        problems.append(
            f"column {key.name!r} (key) is {key.type}: a key column is text, varchar, uuid or an "
            "integer; pass key_expression=SQL to make the key from it (e.g. {key.name}::text)"
        )
    picked = _Picked(key, emb, meta, text, kind, problems)
    problems += _type_problems(facts, picked, bool(roles.get("embedding")))
    return picked


def _type_problems(facts: TableFacts, picked: _Picked, embedding_named: bool) -> list[str]:
    """What is wrong with the types of the embedding, metadata and text columns."""
    emb, meta, text = picked.embedding, picked.metadata, picked.text
    problems: list[str] = []
    if emb is None and not embedding_named:
        vectors = [c.name for c in facts.columns.values() if _VECTOR.match(c.type)]
        problems.append(
            f"{len(vectors)} vector columns ({', '.join(vectors)}): pass embedding_column=NAME"
            if vectors
            else "no vector or halfvec column: pass embedding_column=NAME"
        )
    elif emb is not None and not _VECTOR.match(emb.type):
        problems.append(
            f"column {emb.name!r} (embedding) is {emb.type}, not vector or halfvec; "
            "pass embedding_column=NAME"
        )
    if meta is not None and meta.type not in _JSON:
        problems.append(
            f"column {meta.name!r} (metadata) is {meta.type}, not json or jsonb; pass metadata_column=NAME, "
            "or metadata_columns=a,b to read plain columns"
        )
    if text is not None and not _TEXT.match(text.type):
        problems.append(
            f"column {text.name!r} (text) is {text.type}, not text or varchar; pass text_column=NAME"
        )
    return problems


def _is_own(facts: TableFacts, layout: str, picked: _Picked, options: MappingOptions, used: set[str]) -> bool:
    """A table of vectorport's shape (whatever its column names) is adopted as vectorport's own:
    recorded in its catalog at the first write, its index managed. Anything more (other
    columns, other key types, a scope) is mapped and left as its owner made it."""
    key, emb, meta, text = picked.key, picked.embedding, picked.metadata, picked.text
    extra = [
        c.name
        for c in facts.columns.values()
        if c.name not in used and c.generated is None and c.name not in ("fts", "updated_at")
    ]
    return (
        layout in ("vectorport", "custom")
        and not extra
        and not options.key_expression
        and not options.where
        and options.metadata_columns is None
        and picked.kind == "text"
        and key is not None
        and key.name in facts.unique
        and meta is not None
        and meta.type == "jsonb"
        and text is not None
        and emb is not None
        and emb.type.startswith("vector(")
        and facts.kind in ("r", "p")
    )


def resolve(facts: TableFacts, table: str, options: MappingOptions, where: str) -> tuple[str, Columns]:
    """``(layout name, Columns)`` of a table, or a :class:`ConfigurationError` naming every
    column that is missing or of the wrong type and the option to pass."""
    layout = options.layout or detect(facts, table) or "custom"
    picked = _pick(facts, layout, options)
    surrogate = picked.key
    natural = _natural_key(facts, picked, options)
    if natural is not None and surrogate is not None:
        # a detected preset (Supabase's documents: a bigserial id) is not this table's shape
        options = replace(options, key_template=natural)
        layout = options.layout or "custom"
        picked = _pick(facts, layout, options)
    if picked.problems:
        raise ConfigurationError(
            f"{where} cannot be used as a collection: " + "; ".join(picked.problems) + f". Its columns: "
            f"{facts.describe()}. " + _options_hint()[0].upper() + _options_hint()[1:]
        )
    key, emb, meta, text = picked.key, picked.embedding, picked.metadata, picked.text
    assert emb is not None
    template = options.key_template
    used = {c.name for c in (key, emb, meta, text) if c is not None} | set(
        template.fields if template else ()
    )
    own = _is_own(facts, layout, picked, options, used)
    fts = facts.columns.get("fts")
    updated = facts.columns.get("updated_at")
    base = Columns(
        key=key.name if key is not None else "",
        embedding=emb.name,
        metadata=meta.name if meta is not None else None,
        text=text.name if text is not None else None,
        fts=_fts(facts),
        fts_index=next((c for c, col in facts.text_indexes if text is not None and col == text.name), None),
        updated_at="updated_at"
        if own and updated is not None and updated.type == "timestamp with time zone"
        else None,
        metadata_nullable=meta is not None and not meta.notnull,
        embedding_nullable=not emb.notnull,
    )
    if own:
        if fts is None or fts.generated is None:
            base = replace(base, fts=None)
        return layout, _skip_null_vectors(base, options)
    columns = _foreign(facts, layout, base, key, picked.kind or "text", options, used)
    if natural is not None and surrogate is not None:
        columns = _carrying(columns, surrogate, natural)
    return layout, _skip_null_vectors(columns, options)


def _natural_key(facts: TableFacts, picked: _Picked, options: MappingOptions) -> KeyTemplate | None:
    """The unique key a table declares over its own columns (``UNIQUE(file_path,
    chunk_index)``), preferred over a serial id the database assigns when no option names the
    key: the id says nothing of the chunk, and a copy elsewhere could not keep it."""
    key = picked.key
    named = any(role == "key" for role, _ in options.columns)
    if picked.problems or picked.kind != "integer" or key is None or not _filled(key) or named:
        return None
    for columns in facts.composite_unique:
        kinds = [_kind(facts.columns[name]) for name in columns]
        if key.name not in columns and all(kinds):
            return KeyTemplate.parse(
                default_template([(n, k or "") for n, k in zip(columns, kinds, strict=True)])
            )
    return None


def _carrying(columns: Columns, surrogate: Column, natural: KeyTemplate) -> Columns:
    """``columns`` keyed by the natural key, the serial id carried as a metadata field."""
    reason = (
        f"the unique key ({', '.join(natural.fields)}) the table declares, preferred over the serial "
        f"{surrogate.name!r} the database assigns; {surrogate.name!r} is carried in the metadata"
    )
    return replace(
        columns,
        metadata_columns=(*columns.metadata_columns, (surrogate.name, surrogate.type)),
        column_defaults=(*columns.column_defaults, (surrogate.name, surrogate.default or "DEFAULT")),
        filled=tuple(f for f in columns.filled if not f.startswith(f"{surrogate.name} (")),
        surrogate=surrogate.name,
        key_reason=reason,
    )


def _skip_null_vectors(columns: Columns, options: MappingOptions) -> Columns:
    if options.null_vectors != "skip" or not columns.embedding_nullable:
        return columns
    return replace(columns, skip_null_vectors=True)


def _template_problems(facts: TableFacts, template: KeyTemplate) -> list[str]:
    out = []
    for name in template.fields:
        column = facts.columns.get(name)
        if column is None:
            out.append(f"key_template names {{{name}}}, which is not a column")
        elif _kind(column) is None:
            out.append(
                f"key_template field {{{name}}} is {column.type}: a key template field is a text, "
                "integer or uuid column"
            )
    return out


def _template_unique(facts: TableFacts, template: KeyTemplate) -> bool:
    """A unique constraint (or index) on exactly the template's columns (``ON CONFLICT``'s)."""
    fields = set(template.fields)
    if len(fields) == 1:
        return template.fields[0] in facts.unique
    return any(set(cols) == fields for cols in facts.composite_unique)


def _fts(facts: TableFacts) -> str | None:
    """The table's ``tsvector`` column: ``fts``, else its only one."""
    found = [c.name for c in facts.columns.values() if c.type == "tsvector"]
    if "fts" in found:
        return "fts"
    return found[0] if len(found) == 1 else None


def _foreign(
    facts: TableFacts,
    layout: str,
    base: Columns,
    key: Column | None,
    kind: str,
    options: MappingOptions,
    used: set[str],
) -> Columns:
    unique = kind != "expression" and key is not None and key.name in facts.unique
    # a serial id: rows whose key is not an integer get theirs from its sequence
    serial = key.default if kind == "integer" and key is not None and _filled(key) else None
    order = None
    order_kind = "text"
    if not unique or kind == "expression":
        # scans walk a unique column when there is one (LlamaIndex's bigserial id)
        others = [c for c in facts.columns.values() if c.name in facts.unique and _kind(c)]
        if others:
            order, order_kind = others[0].name, _kind(others[0]) or "text"
    skip = set(used) | {order or ""}
    found = shape(layout)
    skip.update(found.ignored_columns if found is not None else ())
    listed = _metadata_columns(facts, layout, options, skip)
    template = options.key_template
    # user SQL goes into statements with psycopg placeholders: a literal % is %%
    scope = options.where.replace("%", "%%") if options.where else None
    fts = facts.columns.get(base.fts) if base.fts else None
    fts_written = fts is not None and fts.generated is None and not facts.trigger_source
    return replace(
        base,
        fts_written=fts_written and base.text is not None,
        key_kind=kind,
        key_expression=options.key_expression or (template.sql() if template else None),
        key_template=template,
        key_field=options.key_field,
        key_parts=tuple(
            (f, _kind(facts.columns[f]) or "text", facts.columns[f].type)
            for f in (template.fields if template else ())
        ),
        key_unique=unique,
        order=order,
        order_kind=order_kind,
        metadata_json=base.metadata is not None and facts.columns[base.metadata].type == "json",
        **_plain_columns(facts, listed, used, skip, found.left_out_columns if found is not None else ()),
        halfvec=facts.columns[base.embedding].type.startswith("halfvec"),
        scope=scope,
        keep_key=base.metadata is not None and (kind == "uuid" or serial is not None),
        key_default=serial,
        overriding=serial is not None and key is not None and key.always,
        node_metadata=layout == "llamaindex",
        text_key=options.text_key if base.text is None else None,
        text_required=base.text is not None and facts.columns[base.text].notnull,
        own=False,
        read_only="; ".join(_read_only_reasons(facts, base, kind, options, listed)) or None,
    )


def _plain_columns(
    facts: TableFacts, listed: tuple[str, ...], used: set[str], skip: set[str], data: tuple[str, ...]
) -> dict[str, Any]:
    """The :class:`Columns` fields of the columns no role takes: those read as metadata (with
    their defaults, and those a record must give), those no record carries (a type no record
    field can hold, or ``data``: the convention's own data beside the chunk, such as Haystack's
    blob with its mime type), and those the table fills itself."""
    cols = facts.columns
    return {
        "metadata_columns": tuple((c, cols[c].type) for c in listed),
        "column_defaults": tuple((c, d) for c in listed if (d := cols[c].default) is not None),
        "default_values": tuple((c, v) for c in listed if (v := cols[c].default_value) is not None),
        "required_columns": tuple(c for c in listed if cols[c].notnull and cols[c].default is None),
        "left_out": tuple(
            f"{c.name} ({c.type})"
            for c in cols.values()
            if (c.type in _UNHELD or c.name in data) and c.name not in used and c.name not in listed
        ),
        "filled": tuple(
            f"{c.name} (DEFAULT {c.default})"
            for c in cols.values()
            if _filled(c) and c.name not in skip and c.name not in listed
        ),
    }


def _metadata_columns(
    facts: TableFacts, layout: str, options: MappingOptions, skip: set[str]
) -> tuple[str, ...]:
    """The plain columns read as metadata fields: ``metadata_columns=``, else every column no
    role, bookkeeping or generated value takes (none for LlamaIndex's and LangChain's tables)."""
    listed = options.metadata_columns
    if listed is None:
        listed = tuple(
            c.name
            for c in facts.columns.values()
            if c.name not in skip
            and c.generated is None
            and c.type != "tsvector"
            and c.type not in _UNHELD
            and not _filled(c)
            and not _VECTOR.match(c.type)
            and not (
                layout in ("llamaindex", "langchain") or (layout == "vectorport" and c.name == "updated_at")
            )
        )
    missing = [c for c in listed if c not in facts.columns]
    if missing:
        raise ConfigurationError(
            f"metadata_columns names {', '.join(map(repr, missing))}, which the table does not have; "
            f"its columns: {facts.describe()}"
        )
    return listed


def _read_only_reasons(
    facts: TableFacts, base: Columns, kind: str, options: MappingOptions, listed: tuple[str, ...]
) -> list[str]:
    """Why vectorport cannot write a mapped table (none: it can)."""
    reasons = []
    template = options.key_template
    if template is not None and not _template_unique(facts, template):
        reasons.append(
            f"no unique constraint on ({', '.join(template.fields)}), the columns of key_template=, "
            "for INSERT … ON CONFLICT: add one"
        )
    elif kind == "expression" and template is None:
        reasons.append("its key is an expression over columns")
    elif kind == "integer" and (base.metadata is None or not _filled(facts.columns[base.key])):
        natural = next((c for c in facts.composite_unique if all(_kind(facts.columns[n]) for n in c)), None)
        offer = (
            f" (its unique key ({', '.join(natural)}) can be the key: pass key_template="
            + "#".join("{" + n + "}" for n in natural)
            + ")"
            if natural
            else ""
        )
        reasons.append(
            f"it is keyed by the integer column {base.key!r}, which vectorport cannot choose{offer}"
        )
    if base.embedding and facts.columns[base.embedding].type.startswith("halfvec"):
        reasons.append("its vectors are halfvec (writing float32 vectors there would round them)")
    if options.where:
        reasons.append("where= selects its rows")
    if facts.kind not in ("r", "p"):
        reasons.append("it is a view")
    if any(facts.columns[c].type.endswith("[]") for c in listed):
        reasons.append("a metadata column is an SQL array")
    return reasons
