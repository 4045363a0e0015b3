"""Writes of a pgvector collection: upserts staged by binary ``COPY`` into a temp table and
merged with one ``INSERT … ON CONFLICT``, deletes by key or by filter. During a bulk load that
deferred the index (the table held almost nothing), upserts are copied straight into the table
until the first key it already holds (:meth:`Writer.copied_directly`).

The statements are built apart from running them (``payload``, ``stage_sql``,
``merge_statements``, ``remove_sql``, ``delete_sql``), so the async store (:mod:`._async`) runs
the same ones on its own connections.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql

from ..._validate import Batch
from ...filters import FilterNode
from ._codec import copy_binary
from ._quote import Identifier

if TYPE_CHECKING:
    from .store import PgVectorStore

__all__ = ["Writer"]


class Writer:
    """Upserts and deletes: the staging table, the merge into the collection's table (a table
    made elsewhere: its owner's shape, :mod:`._foreign`) and the delete statements."""

    def __init__(self, store: PgVectorStore) -> None:
        self.store = store

    def stage_sql(self, staged: set[str]) -> tuple[sql.Identifier, sql.Composed | None]:
        """The session's staging table for this collection and the statement creating it
        (``None``: the session has it). The write that runs that statement adds the name to
        ``staged`` once its transaction committed (:meth:`staged`): a failed or cancelled
        write's rollback takes the table with it, so the next write creates it again."""
        layout = self.store.layout
        name = f"vectorport_stage_{abs(hash((layout.schema, layout.table, layout.dimension))):x}"
        # A session-private table, emptied at every commit: COPY lands here, then one
        # INSERT … ON CONFLICT merges it into the collection.
        create = sql.SQL(
            'CREATE TEMP TABLE IF NOT EXISTS {} (key text COLLATE "C", embedding {}, '
            "metadata jsonb, text text) ON COMMIT DELETE ROWS"
        ).format(Identifier(name), layout.vector_type)
        return Identifier(name), None if name in staged else create

    @staticmethod
    def staged(stage: sql.Identifier, staged: set[str]) -> None:
        """The session holds ``stage`` (its creating transaction committed)."""
        staged.add(stage.as_string())

    def merge_sql(self, stage: sql.Identifier) -> sql.Composed:
        """``INSERT … SELECT … FROM <stage> ON CONFLICT (key) DO UPDATE`` for the bound table's
        columns (``updated_at`` set when the table has one)."""
        cols = self.store.layout.columns
        targets = [cols.ident(r) for r in ("key", "embedding", "metadata", "text")]
        values: list[sql.Composable] = [sql.SQL(r) for r in ("key", "embedding", "metadata", "text")]
        if cols.updated_at:
            targets.append(Identifier(cols.updated_at))
            values.append(sql.SQL("now()"))
        updates = sql.SQL(", ").join(sql.SQL("{0} = EXCLUDED.{0}").format(t) for t in targets[1:])
        return sql.SQL(
            "INSERT INTO {table} AS t ({targets})\nSELECT {values} FROM {stage}\n"
            "ON CONFLICT ({key}) DO UPDATE SET {updates}"
        ).format(
            table=self.store.layout.qualified,
            targets=sql.SQL(", ").join(targets),
            values=sql.SQL(", ").join(values),
            stage=stage,
            key=targets[0],
            updates=updates,
        )

    def write(self, batch: Batch) -> None:
        payload = self.payload(batch)
        with self.store.server.errors("upsert"):
            conn, staged = self.store.server.conn()
            if self.store.indexing.direct and self.copied_directly(conn, payload):
                return
            stage, create = self.stage_sql(staged)
            try:
                with conn.transaction():
                    if create is not None:
                        conn.execute(create)
                    with conn.cursor() as copying, copying.copy(self.copy_sql(stage)) as pipe:
                        pipe.write(payload)
                    rowcount = None
                    for statement in self.merge_statements(stage):
                        rowcount = conn.execute(statement, self.merge_params()).rowcount
                    self.check_merged(rowcount, len(batch))
            except psycopg.errors.UndefinedTable:
                staged.clear()  # e.g. a temp table lost with a reset session
                raise
            self.staged(stage, staged)

    def copied_directly(self, conn: psycopg.Connection[Any], payload: bytes) -> bool:
        """``COPY`` the batch straight into the table, as a hand-written load does: staging and
        merging costs the server every row twice (30k x 384: 3.7 s against 1.8 s, serially).
        Only during a bulk load into a table that held (almost) nothing (:attr:`Indexing.direct`):
        a key the table already holds (a resumed copy's overlap, a retried batch that had been
        written) fails the whole ``COPY`` (its savepoint rolls back), and from then on this load
        stages and merges, so the upsert's meaning never changes. False: not written."""
        try:
            with (
                conn.transaction(),
                conn.cursor() as copying,
                copying.copy(self.copy_sql(self.store.layout.qualified)) as pipe,
            ):
                pipe.write(payload)
        except psycopg.errors.UniqueViolation:
            self.store.indexing.direct = False
            return False
        return True

    def payload(self, batch: Batch) -> bytes:
        """The binary ``COPY`` of a batch as the table stores it (a table made elsewhere: its
        owner's shape, checked before any write), after the first write's preparations."""
        keys, metadatas = batch.keys, batch.metadatas
        if not self.store.layout.columns.own:
            self.store.foreign.check_writable()
            keys, metadatas = self.store.foreign.batch(batch)
        self.store.indexing.prepare_writes()
        return copy_binary(keys, batch.vectors, metadatas, batch.texts)

    @staticmethod
    def copy_sql(stage: sql.Identifier) -> sql.Composed:
        return sql.SQL("COPY {} (key, embedding, metadata, text) FROM STDIN (FORMAT BINARY)").format(stage)

    def merge_statements(self, stage: sql.Identifier) -> list[sql.Composed]:
        """The statements merging the staged rows into the table (parameters: the scope's)."""
        return (
            [self.merge_sql(stage)]
            if self.store.layout.columns.own
            else self.store.foreign.merge_statements(stage)
        )

    def merge_params(self) -> dict[str, Any] | None:
        cols = self.store.layout.columns
        return None if cols.own else cols.scope_values

    def check_merged(self, rowcount: int | None, n: int) -> None:
        if not self.store.layout.columns.own and rowcount is not None:
            self.store.foreign.check_rowcount(rowcount, n)

    def remove(self, keys: Sequence[str]) -> None:
        query, params = self.remove_sql(keys)
        with self.store.server.errors("delete"):
            conn, _ = self.store.server.conn()
            conn.execute(query, params)

    def remove_sql(self, keys: Sequence[str]) -> tuple[sql.Composed, dict[str, Any]]:
        """The statement deleting ``keys`` (run by the sync store or the async one), after the
        checks and the catalog preparation every write needs."""
        layout = self.store.layout
        if not layout.columns.own:
            self.store.foreign.check_writable()
        self.store.indexing.prepare_writes()
        match, values = layout.columns.lookup(keys, "t")
        scope = self.store.reader.scope()
        query = sql.SQL("DELETE FROM {} AS t WHERE {} AND {}").format(layout.qualified, scope.sql, match)
        return query, {**scope.params, "keys": values}

    def delete_matching(self, where: FilterNode | None) -> int:
        # one SQL statement instead of a scan and deletes by key
        query, params = self.delete_sql(where)
        with self.store.server.errors("delete"):
            conn, _ = self.store.server.conn()
            cur = conn.execute(query, params)
        return max(cur.rowcount, 0)

    def delete_sql(self, where: FilterNode | None) -> tuple[sql.Composed, dict[str, Any]]:
        """The statement deleting the records matching ``where`` (``None``: all)."""
        if not self.store.layout.columns.own:
            self.store.foreign.check_writable()
        pred = self.store.reader.scope() if where is None else self.store.reader.compile_filter(where)
        self.store.indexing.prepare_writes()
        return sql.SQL("DELETE FROM {} AS t WHERE {}").format(
            self.store.layout.qualified, pred.sql
        ), pred.params
