"""The HNSW index of a pgvector collection: deferred during a bulk load and built after it,
built before the first write when an interrupted load left it missing, built on request
(:meth:`Indexing.build_index`), and reported by ``info()``.

Loaders hold a session-level advisory lock shared for the whole load and whoever builds the
index holds it exclusive, so concurrent loaders (sharded migrations) share one deferral and the
last to finish builds the index.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql

from ...exceptions import ConfigurationError, VectorportError
from ._build_progress import watch_index_build
from ._quote import Identifier
from ._schema import Layout

if TYPE_CHECKING:
    from .store import PgVectorStore

__all__ = ["BULK_SMALL", "Indexing"]

log = logging.getLogger("vectorport.pgvector")

BULK_SMALL = 1_000
"""A bulk load defers the HNSW index when the table holds fewer rows than this, or fewer
than twice the records expected: rebuilding over them then costs less than maintaining the
graph on every insert (a bulk build is ~4x faster per row at 384 dims)."""

# Valid HNSW indexes of a table, by name (to_regclass: no rows when the table is missing).
_HNSW_INDEXES = (
    "SELECT c.relname, i.indisvalid FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid "
    "JOIN pg_am AS am ON am.oid = c.relam WHERE i.indrelid = to_regclass(%s) AND am.amname = 'hnsw'"
)


class Indexing:
    """The table's HNSW index: bulk loads (the index deferred), builds and repairs, and the
    writes' preparation (the catalog migrated, a missing index rebuilt)."""

    def __init__(self, store: PgVectorStore) -> None:
        self.store = store
        self.missing = False
        """Opened without its HNSW index (an interrupted bulk load): the next write builds it."""
        self.loading = 0
        """Bulk loads running on this store object (their end builds the index)."""
        self.direct = False
        """A bulk load into a table that held fewer rows than :data:`BULK_SMALL` (its index
        deferred) is running: upserts are copied straight into the table until one meets a key
        the table holds (:meth:`Writer.copied_directly`)."""

    @property
    def lock_name(self) -> str:
        """The advisory lock of the table's index."""
        # Session-level advisory lock on this name: loaders hold it shared for the whole load,
        # whoever builds the index holds it exclusive. A killed process's session ends and
        # releases it, so a crash never leaves the index "being handled" forever.
        return f"vectorport.pgvector.index:{self.store.schema}.{self.store.table}"

    def _hnsw_indexes(self, conn: psycopg.Connection[Any]) -> list[tuple[str, bool]]:
        qualified = self.store.layout.qualified.object_name(conn)
        return [(str(n), bool(v)) for n, v in conn.execute(_HNSW_INDEXES, (qualified,)).fetchall()]

    @contextmanager
    def bulk_load(self, expected: int | None = None) -> Iterator[None]:
        """Load a large stream of upserts with the HNSW index built after, not maintained.

        On entering, when the table holds fewer than ``max(1000, 2 * expected)`` rows, its HNSW
        index is dropped; on leaving normally it is rebuilt in one pass (``CREATE INDEX`` with
        ``maintenance_work_mem`` raised to the graph's estimated size, up to the
        ``maintenance_work_mem`` option, 1 GB by default; ``max_parallel_maintenance_workers``
        from the option of that name, else the server's), the table ``ANALYZE``-d just before.
        GIN indexes stay maintained (they cost little). While the index is deferred, upserts are
        copied straight into the table (:meth:`Writer.copied_directly`). Concurrent loaders
        (sharded migrations) share the deferral: the last one to finish builds the index.

        Queries inside the block are exact scans (correct, slower). When the block raises or
        the process dies, the table stays without the index (searches stay correct, exact)
        until the next write through vectorport, the next bulk load's end, or
        :meth:`build_index`; opening the collection builds nothing.
        """
        layout = self.store.layout
        if expected is not None and (
            isinstance(expected, bool) or not isinstance(expected, int) or expected < 0
        ):
            raise ConfigurationError(f"expected must be a non-negative integer, got {expected!r}")
        if layout.index != "hnsw" or not layout.columns.own:
            yield  # a table made elsewhere keeps its indexes as its owner made them
            return
        self.loading += 1
        try:
            self.prepare_writes()
            with self.store.server.errors("bulk load"):
                # a session kept for the load (its engine's when it has one) holds the lock throughout
                conn, give_back = self.store.server.pool.hold()
        except BaseException:
            self.loading -= 1
            raise
        try:
            with self.store.server.errors("bulk load"):
                conn.execute("SELECT pg_advisory_lock_shared(hashtextextended(%s, 0))", (self.lock_name,))
                deferred = self.store.deferred_index and self._defer_index(conn, layout, expected)
            self.direct = deferred
            try:
                yield
            except BaseException:
                if deferred:
                    self.missing = True
                    log.warning(
                        "pgvector: %s: bulk load interrupted; the table has no HNSW index (searches "
                        "are exact scans) until the next write through vectorport, the next bulk "
                        "load or `vectorport pgvector build-index URL` builds it",
                        self.store._where,
                    )
                raise
            with self.store.server.errors("build the HNSW index"):
                conn.execute("SELECT pg_advisory_unlock_shared(hashtextextended(%s, 0))", (self.lock_name,))
                self._ensure_index(conn)
                self.missing = False
        finally:
            self.loading -= 1
            self.direct = self.direct and self.loading > 0
            give_back()

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
                "pgvector: %s holds %s+ rows: bulk load keeps the HNSW index maintained",
                self.store._where,
                rows,
            )
            return False
        conn.execute(
            sql.SQL("DROP INDEX IF EXISTS {}").format(Identifier(layout.schema, layout.hnsw_index_name))
        )
        log.info(
            "pgvector: %s: HNSW index dropped for a bulk load into %d rows; it is built after",
            self.store._where,
            rows,
        )
        return True

    def _ensure_index(self, conn: psycopg.Connection[Any]) -> bool:
        """ANALYZE the table and build the HNSW index if it is missing, unless a bulk load is
        running.
        Returns False when a load is running (the last loader to finish builds it)."""
        if self.store.catalog.bound is None:
            return True  # the collection was dropped meanwhile
        key = (self.lock_name,)
        row = conn.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", key).fetchone()
        if not (row and row[0]):
            log.info(
                "pgvector: %s: another bulk load is running; it builds the HNSW index", self.store._where
            )
            return False
        try:
            layout = self.store.layout
            qualified = layout.qualified.object_name(conn)
            found = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (qualified,)).fetchone()
            if not (found and found[0]):
                return True  # dropped meanwhile
            # statistics first: ANALYZE and CREATE INDEX take conflicting locks, so one waits
            # for the other; done first it runs beside whatever reads the loaded table meanwhile
            # (a migration's verification) instead of alone after the build (0.2 s at 30k rows)
            conn.execute(sql.SQL("ANALYZE {}").format(layout.qualified))
            indexes = self._hnsw_indexes(conn)
            if not any(valid for _, valid in indexes):
                if (layout.hnsw_index_name, False) in indexes:
                    # an interrupted CREATE INDEX CONCURRENTLY leaves an invalid index behind
                    conn.execute(
                        sql.SQL("DROP INDEX IF EXISTS {}").format(
                            Identifier(layout.schema, layout.hnsw_index_name)
                        )
                    )
                self._build_index(conn, layout)
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
        memory_kb = max(current_kb, min(needed_kb, self.store.build_memory_kb))
        log.info(
            "pgvector: %s: building the HNSW index over %d rows (m=%d, ef_construction=%d, "
            "maintenance_work_mem=%dMB)",
            self.store._where,
            rows,
            layout.m,
            layout.ef_construction,
            memory_kb // 1024,
        )
        started = time.monotonic()
        workers = self.store.build_workers
        # progress from pg_stat_progress_create_index, read on a second connection
        with watch_index_build(self.store.server.pool.spare, conn.info.backend_pid, self.store._where, rows):
            while True:
                try:
                    with conn.transaction():
                        conn.execute(
                            "SELECT set_config('maintenance_work_mem', %s, true)", (f"{memory_kb}kB",)
                        )
                        if workers is not None:
                            conn.execute(
                                "SELECT set_config('max_parallel_maintenance_workers', %s, true)",
                                (str(workers),),
                            )
                        conn.execute(ddl)
                    break
                except psycopg.Error as exc:
                    # A parallel build keeps the graph in dynamic shared memory; a small /dev/shm
                    # (containers: 64 MB) fails it with class 53. A serial build uses local memory.
                    if workers == 0 or not (exc.sqlstate or "").startswith("53"):
                        raise
                    log.warning(
                        "pgvector: %s: parallel index build failed (%s); building serially",
                        self.store._where,
                        exc,
                    )
                    workers = 0
        log.info("pgvector: %s: HNSW index built in %.1f s", self.store._where, time.monotonic() - started)

    def _repair_index(self) -> None:
        """Build a missing HNSW index before the first write after an interrupted bulk load;
        on failure the write goes ahead and searches stay correct (exact scans)."""
        log.info(
            "pgvector: %s: its HNSW index is missing; building it before the first write", self.store._where
        )
        try:
            with self.store.server.errors("build the HNSW index"):
                conn, _ = self.store.server.conn()
                self._ensure_index(conn)
        except VectorportError as exc:
            log.warning(
                "pgvector: %s: could not build the HNSW index (%s); searches are exact scans until "
                "it is built (`vectorport pgvector build-index URL`, or the next bulk load)",
                self.store._where,
                exc,
            )

    def build_index(self) -> str:
        """``ANALYZE`` the table, then build the collection's HNSW index when it is missing
        (after an interrupted bulk load). Opening a collection never builds it; the next write
        through vectorport does, and so does this call (``vectorport pgvector build-index``).

        Returns ``"built"``, ``"present"`` (nothing to do), ``"loading"`` (a bulk load is
        running elsewhere; its end builds the index) or ``"exact"`` (a collection without a
        vector index by design). Errors are raised, not logged.
        """
        layout = self.store.layout
        if layout.index != "hnsw":
            return "exact"
        self.store.catalog.prepare()
        with self.store.server.errors("build the HNSW index"):
            conn, _ = self.store.server.conn()
            before = any(valid for _, valid in self._hnsw_indexes(conn))
            if before and not self.missing:
                return "present"
            if not self._ensure_index(conn):
                return "loading"
        self.missing = False
        return "present" if before else "built"

    def prepare_writes(self) -> None:
        """Before the first write through this store: the catalog's migrations, the catalog
        row of an adopted table, and a missing HNSW index (unless a bulk load of this store is
        running: its end builds it). Opening a collection does none of this."""
        if self.store.catalog.write_ready and not self.missing:
            return
        self.store.catalog.prepare()
        with self.store.catalog.write_lock:
            if self.missing and not self.loading:
                self.missing = False
                self._repair_index()

    def state(self) -> str | None:
        """``valid`` or ``missing`` for an HNSW collection (``None``: exact by design)."""
        if self.store.layout.index != "hnsw":
            return None
        with self.store.server.errors("info"):
            conn, _ = self.store.server.conn()
            return "valid" if any(valid for _, valid in self._hnsw_indexes(conn)) else "missing"
