"""A SQLAlchemy mapped class (or ``Table``) as a collection: ``vectorport.connect(Chunk,
bind=engine)``. The mapping says the roles, so the application does not restate them:

=============  ==========================================================================
role           taken from
=============  ==========================================================================
key            the primary key when it is one text/uuid column the application sets; else
               a single-column unique constraint; else a multi-column one (or a composite
               primary key): ``key_template``, e.g. ``{file_path}#chunk{chunk_index}``
vector         the one ``pgvector.sqlalchemy`` ``Vector``/``HALFVEC`` column (its dimension
               is the collection's)
text           the one ``Text`` column (among several: ``content``, ``text``, ``document`` …)
metadata       the one ``JSON``/``JSONB`` column; the remaining columns are read into the
               metadata too, as for any table vectorport did not create
=============  ==========================================================================

A model can say what it means in its table's ``info``
(``__table_args__ = {"info": {"vectorport": {"key_template": "…", "text_column": "…"}}}``);
``connect()`` keywords override both. The result is the same options a URL would give
(``key_column=``, ``embedding_column=`` …); the table is introspected as usual when it opens.
"""

from __future__ import annotations

import importlib
from typing import Any

from ...exceptions import ConfigurationError, NotInstalledError
from ._mapping import default_template

__all__ = ["model_options"]

_TEXT_NAMES = ("content", "text", "document", "chunk_text", "chunk", "page_content", "body")


def model_options(model: Any, given: dict[str, Any]) -> dict[str, Any]:
    """``connect()`` options naming the table and its roles as ``model`` maps them; ``given``
    (the caller's keywords) win over what is inferred."""
    try:
        from sqlalchemy import JSON, String, UniqueConstraint
    except ImportError:
        raise NotInstalledError("pgvector", "pgvector", "sqlalchemy") from None
    table = getattr(model, "__table__", model)
    name = getattr(model, "__qualname__", table.fullname)
    declared = dict((table.info or {}).get("vectorport", {}))
    module = getattr(model, "__module__", None)
    out: dict[str, Any] = {"table": table.name, "sqlalchemy_model": f"{module}.{name}" if module else name}
    if table.schema:
        out["schema"] = table.schema
    columns = list(table.columns)
    vectors = [c for c in columns if _vector_dim(c.type) is not False]
    if len(vectors) != 1 and "embedding_column" not in {**declared, **given}:
        raise ConfigurationError(
            f"model {name}: {len(vectors)} pgvector Vector/HALFVEC columns "
            f"({', '.join(c.name for c in vectors) or 'none'}); pass embedding_column=NAME"
        )
    if vectors:
        out["embedding_column"] = vectors[0].name
    key_parts = _key(table, UniqueConstraint, String)
    if len(key_parts) == 1:
        out["key_column"] = key_parts[0]
    elif key_parts:
        out["key_template"] = _default_template(table, key_parts)
    used = set(key_parts) | {c.name for c in vectors}
    texts = [c for c in columns if c.name not in used and isinstance(c.type, String)]
    named = [c for n in _TEXT_NAMES for c in texts if c.name == n]
    if named or len(texts) == 1:
        out["text_column"] = (named or texts)[0].name
    jsons = [c for c in columns if isinstance(c.type, JSON)]
    if len(jsons) == 1:
        out["metadata_column"] = jsons[0].name
    out.update(declared)
    out.update(given)
    return out


def model_dimension(model: Any, embedding_column: str | None) -> int | None:
    """The dimension the model's vector column declares (``None``: none)."""
    table = getattr(model, "__table__", model)
    for column in table.columns:
        if column.name == embedding_column:
            dim = _vector_dim(column.type)
            return dim if isinstance(dim, int) else None
    return None


def _vector_dim(kind: Any) -> int | bool | None:
    """The dimension of a pgvector column type, ``None`` without one, ``False``: not a vector."""
    try:
        # imported by name: pgvector-python 0.3 (what langchain-postgres and vecs pin) has no
        # type information, later versions do
        pgv = importlib.import_module("pgvector.sqlalchemy")
    except ImportError:
        raise NotInstalledError("pgvector", "pgvector", "pgvector") from None
    types = tuple(t for t in (getattr(pgv, "VECTOR", None), getattr(pgv, "HALFVEC", None)) if t is not None)
    if not isinstance(kind, types):
        return False
    dim = getattr(kind, "dim", None)
    return int(dim) if dim is not None else None


def _app_sets(column: Any, string: type) -> bool:
    """A key column the application gives values to: text or uuid, not filled by the database
    (an identity or serial integer is the database's)."""
    if column.identity is not None:
        return False
    type_name = type(column.type).__name__.lower()
    return isinstance(column.type, string) or "uuid" in type_name


def _key(table: Any, unique_constraint: Any, string: type) -> list[str]:
    """The key's column names: one (a key column) or several (a template's fields)."""
    pk = list(table.primary_key.columns)
    if len(pk) == 1 and _app_sets(pk[0], string):
        return [pk[0].name]
    uniques: list[list[str]] = [
        [c.name for c in con.columns] for con in table.constraints if isinstance(con, unique_constraint)
    ]
    uniques += [[c.name for c in ix.columns] for ix in table.indexes if ix.unique]
    single = [u for u in uniques if len(u) == 1 and _app_sets(table.columns[u[0]], string)]
    if single:
        return single[0]
    several = [u for u in uniques if len(u) > 1]
    if several:
        return several[0]
    if len(pk) > 1:
        return [c.name for c in pk]
    return []


def _default_template(table: Any, parts: list[str]) -> str:
    """The natural key's template (:func:`._mapping.default_template`) of the model's columns."""
    from sqlalchemy import Integer, String

    def kind(column: Any) -> str:
        return (
            "text"
            if isinstance(column.type, String)
            else "integer"
            if isinstance(column.type, Integer)
            else ""
        )

    return default_template([(p, kind(table.columns[p])) for p in parts])
