"""The catalog side of a pgvector store: the catalog table recording each collection's spec,
opening a table (described from its catalog row, or adopted from its columns and indexes when
vectorport did not create it), creating, dropping and listing collections."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

import psycopg
from psycopg import sql

from ..._capabilities import Capabilities
from ..._features import Feature
from ..._models import CollectionSpec, Metric
from ..._suggest import what_exists
from ...exceptions import ConfigurationError, NotFoundError, UnsupportedFeatureError, VectorportError
from ._inspect import TableFacts, fts_language
from ._layouts import LANGCHAIN_COLLECTIONS, ROLE_OPTION, resolve
from ._migrations import apply_migrations
from ._rpc import RPC_PREFIXES
from ._schema import Columns, Layout
from ._state import StoreState

__all__ = ["CATALOG_TABLE", "CatalogMixin"]

log = logging.getLogger("vectorport.pgvector")

CATALOG_TABLE = "vectorport_collections"


class CatalogMixin(StoreState):
    """Catalog, open (describe or adopt), create, drop and list."""

    def _collection_capabilities(self, declared: Capabilities) -> Capabilities:
        # The index mode is a property of the collection, known once it is opened: an exact
        # table promises exact answers.
        layout = self._layout
        if layout is None:
            return declared
        caps = replace(declared, exact=True, recall_tolerance=1.0) if layout.index == "exact" else declared
        if layout.columns.fts is None:  # a table made elsewhere without the generated fts column
            caps = replace(caps, features=caps.features - {Feature.HYBRID, Feature.TEXT_SEARCH})
        return caps

    def _catalog(self) -> sql.Identifier:
        return sql.Identifier(self.schema, CATALOG_TABLE)

    def bind(
        self,
        dimension: int | None = None,
        metric: str | Metric | None = None,
        embedding_model: str | None = None,
    ) -> CollectionSpec:
        # A table made elsewhere with no HNSW index does not tell its metric: the one asked
        # for here is taken (and the base class checks the rest of the spec as usual).
        if metric is None:
            metric = self._url_metric  # ?metric= in the URL, as on the command line
        self._requested_metric = None if metric is None else Metric.parse(metric)
        self._requested_dimension = dimension
        data_dir = self.server.data_dir
        if data_dir is not None and dimension is None and not (data_dir / "PG_VERSION").exists():
            # Opening must not initialise a 40 MB cluster at a mistyped path (`vectorport info`,
            # `migrate --plan`): only a call that may create the collection starts one there.
            raise NotFoundError(
                f"{self._where}: there is no PostgreSQL data directory at {data_dir} (no PG_VERSION); "
                "check the path, or give the dimension (and metric) to create the collection there"
            )
        return super().bind(dimension, metric, embedding_model)

    def _catalog_metric(self, conn: psycopg.Connection[Any]) -> Metric | None:
        row = self._catalog_row(conn)
        return Metric.parse(str(row[1])) if row else None

    def _catalog_row(self, conn: psycopg.Connection[Any]) -> tuple[Any, ...] | None:
        """The catalog row of the table; ``None`` when there is none, or no catalog (a database
        vectorport never wrote to), or the role may not read it."""
        if not self._has_catalog(conn):
            return None
        try:
            with conn.transaction():
                row: tuple[Any, ...] | None = conn.execute(
                    sql.SQL(
                        "SELECT dimension, metric, embedding_model, index_kind, hnsw_m, "
                        "hnsw_ef_construction, text_search_config FROM {} WHERE table_name = %s"
                    ).format(self._catalog()),
                    (self.table,),
                ).fetchone()
        except psycopg.errors.InsufficientPrivilege:
            log.warning(
                "pgvector: %s: this role may not read %s; the table is described from its columns "
                "and indexes",
                self._where,
                CATALOG_TABLE,
            )
            return None
        return row

    def _describe_collection(self) -> CollectionSpec | None:
        """Open the table: reads only (catalog row, columns, indexes), never a write."""
        with self.server.errors("open"):
            conn, _ = self.server.conn()
            qualified = sql.Identifier(self.schema, self.table).as_string(conn)
            found = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (qualified,)).fetchone()
            if not (found and found[0]):
                return None  # a stale catalog row is replaced when the table is created again
            facts = TableFacts.read(conn, qualified)
            self.layout_name, columns = resolve(facts, self.table, self.mapping, self._where)
            if not columns.own:
                return self.foreign.open(conn, facts, columns)
            row = self._catalog_row(conn)
            if row is None:
                return self._adopt(conn, facts, columns)
            dim, metric_name, model, kind, m, ef, language = row
            metric = Metric.parse(metric_name)
            if facts.dimension(columns.embedding) != int(dim):
                raise ConfigurationError(
                    f"{self._where}: the catalog says {dim} dimensions but column {columns.embedding!r} "
                    f"is {facts.columns[columns.embedding].type}; the table was altered outside "
                    "vectorport: fix the column type, or delete its row from "
                    f"{self.schema}.{CATALOG_TABLE} so it is described from the table"
                )
            # The index actually there wins over the recorded kind: an HNSW index made since
            # (by hand) serves searches, so they are tuned as HNSW searches.
            serving = [
                ix
                for ix in facts.indexes_on(columns.embedding)
                if ix.method == "hnsw" and ix.valid and ix.metric is metric
            ]
            own = f"{self.table}_embedding_hnsw"
            name = None if not serving or own in {ix.name for ix in serving} else serving[0].name
            layout = Layout(
                self.schema,
                self.table,
                int(dim),
                metric,
                "hnsw" if serving else kind,
                m or 16,
                ef or 64,
                language,
                columns,
                name,
            )
            self._bind_layout(layout)
            if layout.index == "hnsw" and not serving:
                self._note_missing_index(conn)
        return CollectionSpec(self.collection, int(dim), metric, model)

    def _adopt(self, conn: psycopg.Connection[Any], facts: TableFacts, columns: Columns) -> CollectionSpec:
        """Open a table vectorport did not create (``vectorport pgvector schema`` SQL, or a
        table of one's own with the four data columns): the dimension comes from the vector
        column, the metric from its HNSW index (or ``metric=`` when it has none, and then
        searches are exact). It is recorded in the catalog at the first write, not here."""
        dim = facts.dimension(columns.embedding)
        assert dim is not None  # resolve_columns checked it
        indexes = facts.indexes_on(columns.embedding)
        hnsw = [ix for ix in indexes if ix.method == "hnsw" and ix.valid and ix.metric is not None]
        # an IVFFlat index tells the metric too; vectorport searches such a table exactly (its
        # exact statement orders by distance and key, which no vector index serves)
        ivf = [ix.metric for ix in indexes if ix.method == "ivfflat" and ix.valid and ix.metric is not None]
        requested = self._requested_metric or self._url_metric or (ivf[0] if ivf and not hnsw else None)
        language = fts_language(facts, columns) or "english"
        if hnsw:
            ix = hnsw[0]
            assert ix.metric is not None
            layout = Layout(
                self.schema,
                self.table,
                dim,
                ix.metric,
                "hnsw",
                int(ix.options.get("m", 16)),
                int(ix.options.get("ef_construction", 64)),
                language,
                columns,
                ix.name,
            )
        elif requested is not None:
            layout = Layout(
                self.schema, self.table, dim, requested, "exact", language=language, columns=columns
            )
        else:
            raise ConfigurationError(
                f"{self._where} has no HNSW index on {columns.embedding!r} telling its metric: pass "
                "metric= (cosine, euclidean or dot; searches are then exact), or create an HNSW index "
                "(vectorport pgvector schema prints one)"
            )
        self._bind_layout(layout)
        self._unrecorded = True
        log.info(
            "pgvector: opened %s, a table vectorport did not create (%d dims, %s, %s)",
            self._where,
            dim,
            layout.metric.value,
            "HNSW index " + layout.hnsw_index if layout.hnsw_index else "exact search",
        )
        return CollectionSpec(self.collection, dim, layout.metric, None)

    def _note_missing_index(self, conn: psycopg.Connection[Any]) -> None:
        """The table should have an HNSW index and has none: a bulk load is running (it builds
        the index when it ends) or one was interrupted. Opening builds nothing; the next write
        through vectorport, the end of a bulk load or :meth:`build_index` does."""
        self._index_missing = True
        try:
            got = conn.execute(
                "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", (self._index_lock,)
            ).fetchone()
            if got and got[0]:
                conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (self._index_lock,))
            loading = not (got and got[0])
        except psycopg.Error:
            loading = False
        if loading:
            log.info("pgvector: %s: a bulk load is running; its end builds the HNSW index", self._where)
            return
        log.warning(
            "pgvector: %s has no valid HNSW index (an interrupted bulk load?): searches are exact "
            "scans, correct but slower, until it is built by the next write through vectorport, "
            "the end of a bulk load, or `vectorport pgvector build-index URL`",
            self._where,
        )

    def _prepare_catalog(self) -> None:
        """The catalog's migrations, and the catalog row of an adopted table (once per store)."""
        if self._write_ready:
            return
        with self._write_lock:
            if self._write_ready:
                return
            try:
                with self.server.errors("prepare the catalog"):
                    conn, _ = self.server.conn()
                    apply_migrations(conn, self.schema)
                    if self._unrecorded and self._layout is not None:
                        self._record_layout(conn, self._layout, None)
                        self._unrecorded = False
            except ConfigurationError as exc:
                # A role that may write the table but not create or write the catalog: the
                # table is all a write needs (a read-only connection fails on the write itself).
                if not isinstance(
                    exc.__cause__,
                    psycopg.errors.InsufficientPrivilege | psycopg.errors.ReadOnlySqlTransaction,
                ):
                    raise
                log.warning(
                    "pgvector: %s: cannot write the catalog %s.%s (%s); writing without it",
                    self._where,
                    self.schema,
                    CATALOG_TABLE,
                    exc.__cause__,
                )
            self._write_ready = True

    def _record_layout(self, conn: psycopg.Connection[Any], layout: Layout, model: str | None) -> None:
        hnsw = layout.index == "hnsw"
        conn.execute(
            sql.SQL(
                "INSERT INTO {} (table_name, dimension, metric, embedding_model, index_kind, hnsw_m, "
                "hnsw_ef_construction, text_search_config) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (table_name) DO NOTHING"
            ).format(self._catalog()),
            (
                layout.table,
                layout.dimension,
                layout.metric.value,
                model,
                layout.index,
                layout.m if hnsw else None,
                layout.ef_construction if hnsw else None,
                layout.language,
            ),
        )

    def _create_collection(self, spec: CollectionSpec) -> None:
        if self.mapping.layout not in (None, "vectorport"):
            self.foreign.create(spec)
            if self.layout_name != "langchain" and (
                not self.layout.hnsw_index or self.layout_name == "llamaindex"
            ):
                # a framework table whose shape tells no metric (vecs, Supabase and LangChain v2
                # make no index; a LlamaIndex table's index is not what LlamaIndex searches by):
                # the catalog records the one it was made for, so it reopens so
                with self.server.errors("create collection"):
                    conn, _ = self.server.conn()
                    apply_migrations(conn, self.schema)
                    with conn.transaction():  # a row left by a table of that name dropped by hand
                        conn.execute(
                            sql.SQL("DELETE FROM {} WHERE table_name = %s").format(self._catalog()),
                            (self.table,),
                        )
                        self._record_layout(conn, self.layout, spec.embedding_model)
            return
        if self.mapping.mapped:
            options = (
                ", ".join(sorted(ROLE_OPTION[r] for r, _ in self.mapping.columns)) or "the mapping options"
            )
            raise ConfigurationError(
                f"{self._where} does not exist; {options} name the columns of an existing table, and "
                "vectorport creates tables with the columns key, embedding, metadata, text"
            )
        layout = Layout(
            self.schema,
            self.table,
            spec.dimension,
            spec.metric,
            self.index,
            self.m,
            self.ef_construction,
            self.language,
        )
        self._bind_layout(layout)  # refuses before any DDL what this server cannot index
        with self.server.errors("create collection"):
            conn, _ = self.server.conn()
            apply_migrations(conn, self.schema)
            with conn.transaction():
                conn.execute(
                    "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                    (f"vectorport.pgvector.table:{self.schema}.{self.table}",),
                )
                # fails early, with PostgreSQL's own message, on an unknown text search config
                conn.execute("SELECT %s::regconfig", (layout.language,))
                qualified = layout.qualified.as_string(conn)
                # the row of a table dropped outside vectorport describes another table
                conn.execute(
                    sql.SQL("DELETE FROM {} WHERE table_name = %s AND to_regclass(%s) IS NULL").format(
                        self._catalog()
                    ),
                    (self.table, qualified),
                )
                for statement in layout.table_ddl():
                    conn.execute(statement)
                self._record_layout(conn, layout, spec.embedding_model)
        self._write_ready = True
        self._bind_layout(layout)

    def _drop_collection(self) -> None:
        if self._layout is not None and not self._layout.columns.own and self._created_foreign:
            self._drop_created_foreign()
            return
        if self._layout is not None and not self._layout.columns.own:
            raise UnsupportedFeatureError(
                f"{self._where} was made by {self.layout_name or 'another tool'}, not vectorport: vectorport "
                "does not drop it; delete its records (delete with a filter) or drop it yourself"
            )
        with self.server.errors("drop"):
            conn, _ = self.server.conn()
            with conn.transaction():
                conn.execute(
                    sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(self.schema, self.table))
                )
                for prefix in RPC_PREFIXES:
                    conn.execute(
                        sql.SQL("DROP FUNCTION IF EXISTS {}").format(
                            sql.Identifier(self.schema, f"{prefix}{self.table}")
                        )
                    )
                if self._has_catalog(conn):
                    conn.execute(
                        sql.SQL("DELETE FROM {} WHERE table_name = %s").format(self._catalog()),
                        (self.table,),
                    )
        self._layout = None
        self._unrecorded = self._index_missing = False
        self._statements.clear()

    def _drop_created_foreign(self) -> None:
        """Drop the framework table this store object created (for LangChain, the collection's
        row, whose embeddings go with it: the shared table is every collection's)."""
        with self.server.errors("drop"):
            conn, _ = self.server.conn()
            with conn.transaction():
                if self.layout_name == "langchain":
                    conn.execute(
                        sql.SQL("DELETE FROM {} WHERE name = %s").format(
                            sql.Identifier(self.schema, LANGCHAIN_COLLECTIONS)
                        ),
                        (self.collection,),
                    )
                else:
                    conn.execute(
                        sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(self.schema, self.table))
                    )
                    if self._has_catalog(conn):
                        conn.execute(
                            sql.SQL("DELETE FROM {} WHERE table_name = %s").format(self._catalog()),
                            (self.table,),
                        )
        self._layout = None
        self._created_foreign = False
        self._statements.clear()

    def _has_catalog(self, conn: psycopg.Connection[Any]) -> bool:
        row = conn.execute(
            "SELECT to_regclass(%s) IS NOT NULL", (self._catalog().as_string(conn),)
        ).fetchone()
        return bool(row and row[0])

    def _not_found(self) -> NotFoundError:
        langchain = self.foreign.langchain_not_found()
        if langchain is not None:
            return langchain
        # Name every table of the schema with a vector column, not only those in vectorport's
        # catalog: the table the user meant was often made elsewhere.
        try:
            with self.server.errors("list tables"):
                conn, _ = self.server.conn()
                rows = conn.execute(
                    "SELECT DISTINCT c.relname FROM pg_class c "
                    "JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped "
                    "JOIN pg_type t ON t.oid = a.atttypid "
                    "WHERE n.nspname = %s AND c.relkind IN ('r', 'p', 'v', 'm') "
                    "AND t.typname IN ('vector', 'halfvec') ORDER BY c.relname",
                    (self.schema,),
                ).fetchall()
            names: list[str] | None = [str(r[0]) for r in rows]
        except VectorportError:
            names = None
        where = f"in schema {self.schema!r}"
        tail = what_exists("tables with a vector column", self.table, names, where)
        return NotFoundError(
            f"{self._where} does not exist{tail}; pass dimension= (and metric=) to create it"
        )

    def list_collections(self) -> list[str]:
        """The collections recorded in the schema's catalog whose tables exist (a table made
        elsewhere is listed once vectorport has written to it)."""
        with self.server.errors("list collections"):
            conn, _ = self.server.conn()
            if not self._has_catalog(conn):
                return []
            rows = conn.execute(
                sql.SQL(
                    "SELECT c.table_name FROM {} AS c WHERE to_regclass(quote_ident(%s) || '.' || "
                    "quote_ident(c.table_name)) IS NOT NULL ORDER BY c.table_name"
                ).format(self._catalog()),
                (self.schema,),
            ).fetchall()
        return [str(r[0]) for r in rows]
