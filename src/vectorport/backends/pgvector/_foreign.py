"""Tables made elsewhere (a framework's, or one's own): opening one in the layout
:mod:`._layouts` resolved (its scope, dimension and metric), checking its keys, and the
statements that write records in its shape.

vectorport never changes such a table's definition: no catalog row, no index dropped or built,
no ``DROP TABLE``. It writes rows the way the table's owner does (LangChain's collection id,
LlamaIndex's node bookkeeping, a uuid5 id for a chunk key that is not a uuid).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql
from psycopg.types.json import Json

from ..._models import CollectionSpec, Metric
from ..._suggest import what_exists
from ..._validate import Batch
from ...conventions.llamaindex import to_node_metadata
from ...exceptions import (
    Action,
    Advised,
    ConfigurationError,
    NotFoundError,
    Problem,
    Step,
    UnsupportedFeatureError,
    ValidationError,
    VectorportError,
)
from ._constraints import Constraint, ConstraintCheck, read_constraints
from ._describe import rewritten_url
from ._framework_ddl import framework_ddl
from ._inspect import TableFacts
from ._layouts import LANGCHAIN_COLLECTIONS, LANGCHAIN_TABLE, LAYOUTS, shape
from ._mapping import KEEP_KEY, KEY_PARTS, NO_TEXT, Columns, row_id
from ._quote import Identifier, Literal
from ._schema import Layout
from .filters import Predicate

if TYPE_CHECKING:
    from .store import PgVectorStore

__all__ = ["ForeignTables"]

log = logging.getLogger("vectorport.pgvector")

_SCOPE_PARAM = "vp_collection"
_SCALAR_CAST = {"json": "{}::json", "jsonb": "{}"}


def no_text_column(where: str) -> str:
    """Why a record with a text cannot be written where there is no text column, and what to do."""
    with_text = ", ".join(name for name in LAYOUTS if (found := shape(name)) is not None and found.text)
    return (
        f"{where} has no text column: add text_key=NAME to the target URL to keep the text in the "
        f"metadata under that key, or choose a layout with a text column (layout= {with_text})"
    )


class ForeignTables:
    """Open, check and write tables vectorport did not create."""

    def __init__(self, store: PgVectorStore) -> None:
        self.store = store
        self.keys_checked = False
        """The keys of the table were checked (unique, not NULL) before its first scan."""
        self.constraints: tuple[Constraint, ...] = ()
        """The table's CHECK constraints and unique keys, read when it was opened."""
        self._constraint_check: ConstraintCheck | None = None

    # ------------------------------------------------------------------ open
    def open(
        self, conn: psycopg.Connection[Any], facts: TableFacts, columns: Columns
    ) -> CollectionSpec | None:
        if self.store.layout_name == "langchain":
            scoped = self._langchain_collection(conn, columns)
            if scoped is None:
                return None  # the collection can be created: a row in langchain_pg_collection
            columns = scoped
        if self.store.mapping.where:
            self._check_where(conn, facts, columns)
        dim = facts.dimension(columns.embedding) or self._data_dimension(conn, columns)
        if dim is None:
            raise NotFoundError(
                Advised.of(
                    "{}: the collection holds no vectors and its column {!r} declares no dimension; {}",
                    self.store._where,
                    columns.embedding,
                    Step(Action.ADOPT),
                )
            )
        metric = self._foreign_metric(facts, columns, conn)
        # an index on an expression (LangChain's ``(embedding::vector(n))``) serves no search
        # vectorport sends; searches are then exact
        hnsw = [
            ix
            for ix in facts.indexes_on(columns.embedding)
            if ix.method == "hnsw"
            and ix.valid
            and ix.metric is metric
            and ix.definition.strip('"') == columns.embedding
        ]
        layout = Layout(
            self.store.schema,
            self.store.table,
            dim,
            metric,
            "hnsw" if hnsw else "exact",
            int(hnsw[0].options.get("m", 16)) if hnsw else 16,
            int(hnsw[0].options.get("ef_construction", 64)) if hnsw else 64,
            self._foreign_language(facts, columns),
            columns,
            hnsw[0].name if hnsw else None,
        )
        self.store.catalog.bind_layout(layout)
        self.store.catalog.write_ready = True  # nothing of vectorport's own to prepare in such a table
        self.constraints = read_constraints(conn, layout.qualified.object_name(conn))
        self._constraint_check = None
        log.info(
            "pgvector: opened %s as a %s table (%d dims, %s, %s%s)",
            self.store._where,
            self.store.layout_name,
            dim,
            metric.value,
            f"HNSW index {hnsw[0].name}" if hnsw else "exact search",
            "; read-only: " + columns.read_only if columns.read_only else "",
        )
        return CollectionSpec(self.store.collection, dim, metric, None)

    def _langchain_collection(self, conn: psycopg.Connection[Any], columns: Columns) -> Columns | None:
        """The columns scoped to the LangChain collection's rows of the shared table (``None``:
        the collection has no row yet, and may be created)."""
        collections = Identifier(self.store.schema, LANGCHAIN_COLLECTIONS)
        known = conn.execute(
            "SELECT to_regclass(%s) IS NOT NULL", (collections.object_name(conn),)
        ).fetchone()
        if not (known and known[0]):
            raise ConfigurationError(
                f"{self.store._where} has LangChain's columns but there is no {LANGCHAIN_COLLECTIONS} table "
                f"in schema {self.store.schema!r} naming its collections; pass layout= (or the column "
                "options) to map it otherwise"
            )
        row = conn.execute(
            sql.SQL("SELECT uuid FROM {} WHERE name = %s").format(
                Identifier(self.store.schema, LANGCHAIN_COLLECTIONS)
            ),
            (self.store.collection,),
        ).fetchone()
        if row is None and self.store.mapping.layout != "langchain":
            names = [
                str(n[0])
                for n in conn.execute(sql.SQL("SELECT name FROM {} ORDER BY name").format(collections))
            ]
            # the whole URL: table= would still name the shared table, not the collection
            url = rewritten_url(
                self.store,
                drop=("table", "collection", "layout"),
                add=(("layout", "langchain"), ("collection", names[0] if names else "NAME")),
            )
            raise ConfigurationError(
                f"{self.store._where} is LangChain's table of every collection; name one: {url} "
                f"(its collections: {', '.join(map(repr, names)) or 'none'})"
            )
        if row is None:
            return None
        scope = f"collection_id = %({_SCOPE_PARAM})s"
        if columns.scope:
            scope = f"{scope} AND ({columns.scope})"
        return replace(
            columns,
            scope=scope,
            scope_params=((_SCOPE_PARAM, row[0]),),
            fixed=(("collection_id", _SCOPE_PARAM),),
        )

    def _check_where(self, conn: psycopg.Connection[Any], facts: TableFacts, columns: Columns) -> None:
        """``where=`` must select some row: a condition that matches none is a mistake."""
        found = conn.execute(
            sql.SQL("SELECT EXISTS (SELECT 1 FROM {} AS t WHERE {})").format(
                Identifier(self.store.schema, self.store.table),
                sql.SQL(columns.scope_sql(with_null_vectors=True)),
            ),
            columns.scope_values,
        ).fetchone()
        if not (found and found[0]):
            raise ConfigurationError(
                f"{self.store._where}: where={self.store.mapping.where} matches no row of the table; "
                f"check the condition (its columns: {facts.describe()})"
            )

    def langchain_not_found(self) -> NotFoundError | None:
        """The error for a LangChain collection that has no row in ``langchain_pg_collection``
        (``None``: not the LangChain layout, or no such table), naming the collections there."""
        if self.store.mapping.layout != "langchain":
            return None
        collections = Identifier(self.store.schema, LANGCHAIN_COLLECTIONS)
        try:
            with self.store.server.errors("list LangChain collections"):
                conn, _ = self.store.server.conn()
                known = conn.execute(
                    "SELECT to_regclass(%s) IS NOT NULL", (collections.object_name(conn),)
                ).fetchone()
                if not (known and known[0]):
                    return None
                rows = conn.execute(sql.SQL("SELECT name FROM {} ORDER BY name").format(collections))
                names: list[str] | None = [str(r[0]) for r in rows]
        except VectorportError:
            names = None
        where = f"in {self.store.schema}.{LANGCHAIN_COLLECTIONS}"
        return NotFoundError(
            Advised.of(
                "{}: LangChain collection {!r} does not exist{}; name one with collection=NAME, or {}",
                self.store.url.masked,
                self.store.collection,
                what_exists("collections", self.store.collection, names, where),
                Step(Action.CREATE),
            )
        )

    def _data_dimension(self, conn: psycopg.Connection[Any], columns: Columns) -> int | None:
        """The dimension of the collection's first vector (a ``vector`` column without one)."""
        emb = columns.ident("embedding")
        row = conn.execute(
            sql.SQL("SELECT vector_dims({}) FROM {} AS t WHERE {} AND {} IS NOT NULL LIMIT 1").format(
                emb, Identifier(self.store.schema, self.store.table), sql.SQL(columns.scope_sql()), emb
            ),
            columns.scope_values,
        ).fetchone()
        if row is None:
            return self.store.catalog.requested_dimension
        return int(row[0])

    def _foreign_metric(self, facts: TableFacts, columns: Columns, conn: psycopg.Connection[Any]) -> Metric:
        """The metric: the asked one, else the one vectorport recorded when it created the table
        (or LangChain collection), else the HNSW index's, else the framework's default."""
        asked = self.store.catalog.requested_metric or self.store._url_metric
        indexed = [
            ix
            for ix in facts.indexes_on(columns.embedding)
            if ix.method in ("hnsw", "ivfflat") and ix.valid and ix.metric is not None
        ]
        if asked is not None:
            return asked
        recorded = self._recorded_metric(conn)
        if recorded is not None:
            return recorded
        if indexed and not (
            self.store.layout_name == "llamaindex" and indexed[0].opclass == "halfvec_l2_ops"
        ):
            assert indexed[0].metric is not None
            return indexed[0].metric
        # (LlamaIndex makes a halfvec_l2_ops index by default with use_halfvec=True, yet searches
        # by cosine_distance whatever its index: the table's metric is the one LlamaIndex uses)
        if self.store.layout_name in ("custom", None):
            raise ConfigurationError(
                Advised.of(
                    "{} has no vector index on {!r} telling its metric: {}",
                    self.store._where,
                    columns.embedding,
                    Step(Action.NAME_METRIC),
                )
            )
        # LangChain, LlamaIndex, vecs and Supabase's match_documents all default to cosine
        return Metric.COSINE

    def _recorded_metric(self, conn: psycopg.Connection[Any]) -> Metric | None:
        """The metric vectorport recorded when it created this framework table, whose own shape
        keeps none (no index yet): in its catalog row, or for a LangChain collection (a row of a
        shared table) under ``vectorport_metric`` in the collection's ``cmetadata``."""
        if self.store.layout_name == "langchain":
            row = conn.execute(
                sql.SQL("SELECT cmetadata::jsonb ->> 'vectorport_metric' FROM {} WHERE name = %s").format(
                    Identifier(self.store.schema, LANGCHAIN_COLLECTIONS)
                ),
                (self.store.collection,),
            ).fetchone()
            name = row[0] if row else None
        else:
            return self.store.catalog.catalog_metric(conn)
        return Metric.parse(str(name)) if name else None

    def _foreign_language(self, facts: TableFacts, columns: Columns) -> str:
        """The text search configuration of the ``tsvector`` column: ``language=`` when given,
        else from its generated expression or the trigger that maintains it, else the one the
        layout's convention searches with, else ``english``."""
        col = facts.columns.get(columns.fts) if columns.fts else None
        source = (col.generated or "") if col else ""
        if col and not source and self.store._explicit_language is None:
            source = facts.trigger_source
        found = re.search(r"to_tsvector\(\s*'([A-Za-z_][\w.]*)'", source) or re.search(
            r"tsvector_update_trigger\(\s*'?\w+'?\s*,\s*'(?:pg_catalog\.)?([A-Za-z_]\w*)'", source
        )
        if columns.fts is None and columns.fts_index is not None:
            return columns.fts_index  # the keyword index's: its expression is the search's
        if self.store._explicit_language is not None:
            return self.store.language
        if found:
            return found.group(1)
        preset = shape(self.store.layout_name)
        return (preset.text_search.language if preset is not None else None) or self.store.language

    def check_keys(self) -> None:
        """Refuse a table whose keys are not unique or are NULL, or that has rows without a
        vector, before any record is read from it (scans walk the keys in order, so each key
        must name one row; a migration's plan scans first, so it stops before any write)."""
        cols = self.store.layout.columns
        if self.keys_checked:
            return
        self._check_vectors()
        if not cols.ordered_by_key and cols.key_unique:
            self.keys_checked = True
            return
        key = cols.key_expr()
        with self.store.server.errors("check keys"):
            conn, _ = self.store.server.conn()
            dup = conn.execute(
                sql.SQL(
                    "SELECT k, n FROM (SELECT {key} AS k, count(*) AS n FROM {table} AS t WHERE {scope} "
                    "GROUP BY 1 HAVING count(*) > 1 OR {key} IS NULL) AS d "
                    "ORDER BY k NULLS FIRST, n DESC LIMIT 5"
                ).format(key=key, table=self.store.layout.qualified, scope=sql.SQL(cols.scope_sql())),
                cols.scope_values,
            ).fetchall()
        if dup and dup[0][0] is None:
            raise ConfigurationError(
                f"{self.store._where}: the key ({self.store.reader.key_source()}) is NULL in "
                f"{dup[0][1]} rows; give every "
                "row a key (e.g. coalesce(...) in key_expression=), or leave such rows out with where="
            )
        if dup:
            named = ", ".join(f"{k!r} ({n} rows)" if k is not None else f"NULL ({n} rows)" for k, n in dup)
            raise ConfigurationError(
                f"{self.store._where}: the key ({self.store.reader.key_source()}) is not unique: {named}; "
                "vectorport needs "
                "one row per key: pass a key_expression= that tells the rows apart (e.g. add a "
                "column: file_path || '#' || chunk_index), or a where= that leaves the duplicates out"
            )
        self.keys_checked = True

    def _check_vectors(self) -> None:
        cols = self.store.layout.columns
        if not cols.embedding_nullable:
            return
        emb = cols.ident("embedding", "t")
        scope = Predicate(cols.scope_sql(with_null_vectors=True), cols.scope_values)
        with self.store.server.errors("check vectors"):
            conn, _ = self.store.server.conn()
            row = conn.execute(
                sql.SQL(
                    "SELECT count(*), (array_agg(k ORDER BY k))[1:5] FROM (SELECT {} AS k FROM {} AS t "
                    "WHERE {} AND {} IS NULL) AS n"
                ).format(cols.key_expr("t"), self.store.layout.qualified, scope.sql, emb),
                scope.params,
            ).fetchone()
        if row and row[0]:
            examples = ", ".join(repr(k) for k in row[1] or [])
            if cols.skip_null_vectors:
                log.warning(
                    "pgvector: %s: %d rows without a vector are left out (null_vectors=skip), e.g. %s",
                    self.store._where,
                    row[0],
                    examples,
                )
                return
            raise ConfigurationError(
                f"{self.store._where}: {row[0]} rows have no vector (their {cols.embedding!r} is NULL), e.g. "
                f"{examples}; a vectorport record needs one: fill or delete them, or add "
                "null_vectors=skip to the URL to leave them out"
            )

    # ------------------------------------------------------------------ write
    def check_writable(self) -> None:
        cols = self.store.layout.columns
        if cols.read_only:
            raise UnsupportedFeatureError(
                f"{self.store._where} is a read-only source for vectorport: {cols.read_only}; nothing was "
                "written. Migrate it into a table vectorport (or a framework's layout) can write"
            )

    def layout_problems(self, key: str, metadata: dict[str, Any], text: str | None) -> list[tuple[str, str]]:
        """What keeps a record from this table before any write (a migration's plan asks): a
        key that does not fit the table's ``key_template``, a field a ``NOT NULL`` column
        without a default needs and the record lacks. Reads nothing."""
        if self.store.catalog.bound is None:
            return self._created_problems(text)  # a table to create takes any key
        cols = self.store.catalog.bound.columns
        template = cols.key_template
        found: list[tuple[str, str]] = []
        if text is not None and cols.text is None and not (cols.text_key and cols.metadata is not None):
            found.append(("text", no_text_column(f"the {self.store.layout_name or 'custom'} table")))
        if template is not None and template.split(key, [kind for _, kind, _ in cols.key_parts]) is None:
            found.append(("key", f"key {key!r} does not fit key_template={template.text}"))
        for name in cols.required_columns:
            if metadata.get(name) is None:
                found.append(
                    (
                        f"metadata.{name}",
                        f"the column {name!r} is NOT NULL without a default and the record has no {name!r}",
                    )
                )
        return found or self._constraint_problems(key, metadata, text)

    def _created_problems(self, text: str | None) -> list[tuple[str, str]]:
        """A record with a text, for a table to create in a layout without a text column (vecs)
        and no ``text_key`` to keep the text in the metadata."""
        mapping = self.store.mapping
        found = shape(mapping.layout)
        if text is None or found is None or found.text or mapping.text_key:
            return []
        return [("text", no_text_column(f"the {mapping.layout} table"))]

    def _constraint_problems(
        self, key: str, metadata: dict[str, Any], text: str | None
    ) -> list[tuple[str, str]]:
        """The table's CHECK constraints and unique keys this record would break, found by a
        ``SELECT`` of the row the merge would write (:mod:`._constraints`): one round trip a
        record, only for a table that has such constraints over the columns written."""
        cols = self.store.layout.columns
        if not self.constraints or cols.node_metadata or cols.read_only:
            return []
        if self._constraint_check is None:
            names, values, keys = self._row(defaults=False)
            self._constraint_check = ConstraintCheck(
                self.store.layout.qualified, names, values, keys, self.constraints
            )
        check = self._constraint_check
        statement = check.statement(self.store.layout.vector_type)
        meta = dict(metadata)
        if statement is None or self._keyed(key, meta) is not None:
            return []
        if text is None and cols.text_required:
            meta[NO_TEXT] = True
        params = {**cols.scope_values, "vp_key": row_id(cols.key_kind, key) or key, "vp_text": text}
        params["vp_metadata"] = Json(meta)
        with self.store.server.errors("plan"):
            conn, _ = self.store.server.conn()
            row = conn.execute(statement, params).fetchone()
        return check.problems(tuple(row or ()), key)

    def batch(self, batch: Batch) -> tuple[list[str], list[dict[str, Any]]]:
        """Keys and metadata as the table's owner stores them; refuses the whole batch (nothing
        written) when a record does not fit."""
        cols = self.store.layout.columns
        plain = {name for name, _ in cols.metadata_columns}
        problems: list[Problem] = []
        keys: list[str] = []
        metadatas: list[dict[str, Any]] = []
        for key, metadata, text in zip(batch.keys, batch.metadatas, batch.texts, strict=True):
            meta = dict(metadata)
            if cols.metadata is None:
                extra = sorted(set(meta) - plain)
                if extra:
                    problems.append(
                        Problem(
                            key,
                            extra[0],
                            f"the table has no metadata column and no column {extra[0]!r} "
                            f"(its metadata columns: {', '.join(sorted(plain)) or 'none'})",
                        )
                    )
            problem = self._keyed(key, meta)
            if problem is not None:
                problems.append(problem)
                continue
            if text is None and cols.text_required:
                if cols.metadata is None:
                    problems.append(
                        Problem(
                            key, "", f"the text column {cols.text!r} is NOT NULL and the record has no text"
                        )
                    )
                    continue
                meta[NO_TEXT] = True
            if text is not None and cols.text is None:
                if cols.text_key and cols.metadata is not None:
                    meta[cols.text_key] = text
                else:
                    problems.append(Problem(key, "", no_text_column("the table")))
            if cols.node_metadata:
                meta = to_node_metadata(key, text, meta, text_in_node=False)
            keys.append(row_id(cols.key_kind, key) or key)
            metadatas.append(meta)
        if problems:
            raise ValidationError(problems[:20], backend="pgvector", outcome="nothing was written")
        return keys, metadatas

    def _keyed(self, key: str, meta: dict[str, Any]) -> Problem | None:
        """Add to ``meta`` what the table's key needs (the columns a key template splits the key
        into, the key in its field, a key kept beside its uuid5 row id); the problem when the
        key cannot be written in this table."""
        cols = self.store.layout.columns
        template = cols.key_template
        if template is not None:
            parts = template.split(key, [kind for _, kind, _ in cols.key_parts])
            if parts is None:
                return Problem(key, "", f"key {key!r} does not fit key_template={template.text}")
            meta[KEY_PARTS] = dict(zip(template.fields, parts, strict=True))
        if cols.key_field is not None:
            if cols.key_field in meta:
                return Problem(
                    key, cols.key_field, f"the metadata field {cols.key_field!r} holds the key here"
                )
            meta[cols.key_field] = key
        rid = row_id(cols.key_kind, key)
        if rid != key:
            if not cols.keep_key:
                return Problem(
                    key,
                    "",
                    f"key {key!r} is not a{'n' if cols.key_kind == 'integer' else ''} {cols.key_kind} "
                    "and the table has no metadata column to keep it in",
                )
            meta[KEEP_KEY] = key
        return None

    def merge_statements(self, stage: sql.Identifier) -> list[sql.Composed]:
        """The statements merging the staged rows into the table."""
        cols = self.store.layout.columns
        table = self.store.layout.qualified
        names, values, keys = self._row()
        targets = [Identifier(name) for name in names]
        conflict = sql.SQL(", ").join(targets[:keys])
        insert = sql.SQL("INSERT INTO {} AS t ({}){} SELECT {} FROM {} AS s").format(
            table,
            sql.SQL(", ").join(targets),
            sql.SQL(" OVERRIDING SYSTEM VALUE" if cols.overriding else ""),
            sql.SQL(", ").join(values),
            stage,
        )
        if (not cols.key_unique and cols.key_template is None) or cols.numbered:
            # LlamaIndex's node_id has no unique index, a numbered row's key is in its metadata:
            # replace a key's rows in one transaction
            delete = sql.SQL("DELETE FROM {} AS t WHERE {} AND {} IN (SELECT s.key FROM {} AS s)").format(
                table, sql.SQL(cols.scope_sql()), cols.key_expr("t"), stage
            )
            return [delete, insert]
        # a row's serial id stays what it is when a natural key replaces the row
        kept = [Identifier(n) for n in names[keys:] if n != cols.surrogate]
        updates = sql.SQL(", ").join(sql.SQL("{0} = EXCLUDED.{0}").format(t) for t in kept)
        guard: sql.Composable = sql.SQL("")
        if cols.fixed:
            # the key belongs to another collection of a shared table: not taken over (counted)
            guard = sql.SQL(" WHERE ") + sql.SQL(" AND ").join(
                sql.SQL("t.{0} = EXCLUDED.{0}").format(Identifier(c)) for c, _ in cols.fixed
            )
        return [sql.SQL("{} ON CONFLICT ({}) DO UPDATE SET {}{}").format(insert, conflict, updates, guard)]

    def _row(self, defaults: bool = True) -> tuple[list[str], list[sql.Composable], int]:
        """The columns a merge writes, their values from a staged row ``s`` (``key``,
        ``embedding``, ``metadata``, ``text``) and how many of them, first, are the key's.
        ``defaults=False``: a field the record lacks is NULL, not the column's default (a
        plan's check must not draw a sequence's next value)."""
        cols = self.store.layout.columns
        targets, values = self._key_targets(defaults)
        keys = len(targets)
        targets.append(cols.embedding)
        values.append(sql.SQL("s.embedding"))
        plain = [name for name, _ in cols.metadata_columns]
        hidden = plain + ([KEY_PARTS] if cols.key_template else [])
        if cols.metadata is not None:
            meta: sql.Composable = sql.SQL("s.metadata")
            if hidden:
                meta = sql.SQL("(s.metadata - {}::text[])").format(Literal(hidden))
            targets.append(cols.metadata)
            values.append(sql.SQL("{}::json").format(meta) if cols.metadata_json else meta)
        fill, given = defaults, dict(cols.column_defaults)
        for name, kind in cols.metadata_columns:
            targets.append(name)
            if kind in ("json", "jsonb"):
                value = sql.SQL("(s.metadata -> {})::" + kind).format(Literal(name))
            else:
                value = sql.SQL("(s.metadata ->> {})::{}").format(Literal(name), sql.SQL(kind))
            if name in given:
                # a record without the field keeps the column's default (NOT NULL DEFAULT now()),
                # as the application's own INSERT that leaves the column out does; the merge
                # runs with parameters, so a % of the default's SQL is doubled
                default = sql.SQL(given[name].replace("%", "%%") if fill else "NULL")
                value = sql.SQL("CASE WHEN s.metadata ? {} THEN {} ELSE {} END").format(
                    Literal(name), value, default
                )
            values.append(value)
        if cols.text is not None:
            targets.append(cols.text)
            values.append(sql.SQL("coalesce(s.text, '')") if cols.text_required else sql.SQL("s.text"))
        if cols.fts_written and cols.fts is not None:
            targets.append(cols.fts)
            values.append(
                sql.SQL("to_tsvector({}::regconfig, coalesce(s.text, ''))").format(
                    Literal(self.store.layout.language)
                )
            )
        for column, param in cols.fixed:
            targets.append(column)
            values.append(sql.Placeholder(param))
        return targets, values, keys

    def _key_targets(self, defaults: bool = True) -> tuple[list[str], list[sql.Composable]]:
        """The key's columns and their values from a staged row: the key column, or the columns
        a key template split the key into (carried in the staged metadata)."""
        cols = self.store.layout.columns
        if cols.key_field is not None:
            return [], []  # the database numbers the rows; the key is in the metadata
        if cols.numbered and cols.key_default is not None:
            numbered = cols.key_default.replace("%", "%%") if defaults else "NULL"
            key: sql.Composable = sql.SQL("CASE WHEN s.metadata ? {} THEN {} ELSE s.key::bigint END").format(
                Literal(KEEP_KEY), sql.SQL(numbered)
            )
            return [cols.key], [key]
        if cols.key_template is None:
            key = sql.SQL("s.key::uuid") if cols.key_kind == "uuid" else sql.SQL("s.key")
            return [cols.key], [key]
        targets: list[str] = []
        values: list[sql.Composable] = []
        for name, _, kind in cols.key_parts:
            targets.append(name)
            values.append(
                sql.SQL("(s.metadata -> {} ->> {})::{}").format(
                    Literal(KEY_PARTS), Literal(name), sql.SQL(kind)
                )
            )
        return targets, values

    def taken_keys(self, keys: Sequence[str]) -> list[str]:
        """Those of ``keys`` another collection of LangChain's shared table holds (its primary
        key is the row id across collections, so they cannot be written to this one); empty for
        any other table."""
        if (self.store.mapping.layout or self.store.layout_name) != "langchain" or not keys:
            return []
        embeddings = Identifier(self.store.schema, LANGCHAIN_TABLE)
        with self.store.server.errors("plan"):
            conn, _ = self.store.server.conn()
            found = conn.execute(
                "SELECT to_regclass(%s) IS NOT NULL", (embeddings.object_name(conn),)
            ).fetchone()
            if not (found and found[0]):
                return []
            rows = conn.execute(
                sql.SQL(
                    "SELECT e.id FROM {} AS e JOIN {} AS c ON c.uuid = e.collection_id "
                    "WHERE e.id = ANY(%s) AND c.name <> %s"
                ).format(embeddings, Identifier(self.store.schema, LANGCHAIN_COLLECTIONS)),
                (list(keys), self.store.collection),
            ).fetchall()
        return [str(r[0]) for r in rows]

    def check_rowcount(self, rowcount: int, n: int) -> None:
        """After the merge: every staged row was written (a shared table refuses a key that
        belongs to another collection, and the transaction rolls back)."""
        if rowcount != n:
            raise ConfigurationError(
                f"{self.store._where}: {n - max(rowcount, 0)} of {n} keys belong to another collection of "
                "this shared table (its primary key is the row id across collections); nothing was "
                "written: give those records other keys, or write them to that collection"
            )

    # ------------------------------------------------------------------ create
    def create(self, spec: CollectionSpec) -> None:
        """A framework layout's table that does not exist yet, made as its framework makes it
        (a LangChain collection is a row of ``langchain_pg_collection``)."""
        layout = self.store.mapping.layout or "custom"
        plain = not (
            self.store.mapping.columns
            or self.store.mapping.key_expression
            or self.store.mapping.where
            or self.store.mapping.metadata_columns is not None
        )
        if not plain or not framework_ddl(
            layout, self.store.schema, self.store.table, spec.dimension, spec.metric
        ):
            raise NotFoundError(
                f"{self.store._where} does not exist; vectorport writes into a {layout} table with a mapping "
                "but does not create one: create it first (or drop the column options to create a "
                "vectorport table)"
            )
        with self.store.server.errors("create collection"):
            conn, _ = self.store.server.conn()
            found = conn.execute("SELECT to_regnamespace(%s) IS NOT NULL", (self.store.schema,)).fetchone()
            statements = framework_ddl(
                layout,
                self.store.schema,
                self.store.table,
                spec.dimension,
                spec.metric,
                new_schema=not (found and found[0]),
            )
            with conn.transaction():
                conn.execute(
                    "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                    (f"vectorport.pgvector.table:{self.store.schema}.{self.store.table}",),
                )
                for statement in statements:
                    conn.execute(statement)
                if layout == "langchain":
                    # LangChain keeps no metric (its app picks one per query); the collection's
                    # cmetadata records the one it was made for, so it opens with it again
                    conn.execute(
                        sql.SQL(
                            "INSERT INTO {} (uuid, name, cmetadata) VALUES (gen_random_uuid(), %s, %s) "
                            "ON CONFLICT (name) DO NOTHING"
                        ).format(Identifier(self.store.schema, LANGCHAIN_COLLECTIONS)),
                        (self.store.collection, Json({"vectorport_metric": spec.metric.value})),
                    )
        log.info("pgvector: created %s as %s creates it", self.store._where, layout)
        self.store.catalog.created_foreign = True
        self.store.catalog.requested_dimension, self.store.catalog.requested_metric = (
            spec.dimension,
            spec.metric,
        )
        if self.store.catalog.describe() is None:  # pragma: no cover - created just above
            raise NotFoundError(f"{self.store._where} was created but cannot be opened")
