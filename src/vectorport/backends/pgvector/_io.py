"""Reads and writes of a pgvector collection: upserts staged by binary ``COPY`` into a temp
table and merged with one ``INSERT … ON CONFLICT``, deletes by key or by filter, reads by key,
the row count and keyset scan pages (optionally one hash segment of the keys)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql

from ..._cursor import Position, position_field
from ..._models import Include, Record
from ..._validate import Batch
from ...filters import FilterNode
from ._catalog import CatalogMixin
from ._codec import copy_binary

__all__ = ["ReadWriteMixin"]


class ReadWriteMixin(CatalogMixin):
    """Upsert, delete, get, count and scan."""

    def _stage(self, conn: psycopg.Connection[Any], staged: set[str]) -> sql.Identifier:
        name, create = self._stage_sql()
        if name.as_string() not in staged:
            conn.execute(create)
            staged.add(name.as_string())
        return name

    def _stage_sql(self) -> tuple[sql.Identifier, sql.Composed]:
        """The session's staging table for this collection and the statement creating it."""
        layout = self.layout
        name = f"vectorport_stage_{abs(hash((layout.schema, layout.table, layout.dimension))):x}"
        # A session-private table, emptied at every commit: COPY lands here, then one
        # INSERT … ON CONFLICT merges it into the collection.
        create = sql.SQL(
            'CREATE TEMP TABLE IF NOT EXISTS {} (key text COLLATE "C", embedding {}, '
            "metadata jsonb, text text) ON COMMIT DELETE ROWS"
        ).format(sql.Identifier(name), layout.vector_type)
        return sql.Identifier(name), create

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
        payload = self._write_payload(batch)
        with self.server.errors("upsert"):
            conn, staged = self.server.conn()
            try:
                with conn.transaction():
                    stage = self._stage(conn, staged)
                    with conn.cursor() as copying, copying.copy(self._copy_sql(stage)) as pipe:
                        pipe.write(payload)
                    rowcount = None
                    for statement in self._merge_statements(stage):
                        rowcount = conn.execute(statement, self._merge_params()).rowcount
                    self._check_merged(rowcount, len(batch))
            except psycopg.errors.UndefinedTable:
                staged.clear()  # e.g. a temp table lost with a reset session
                raise

    def _write_payload(self, batch: Batch) -> bytes:
        """The binary ``COPY`` of a batch as the table stores it (a table made elsewhere: its
        owner's shape, checked before any write), after the first write's preparations."""
        keys, metadatas = batch.keys, batch.metadatas
        if not self.layout.columns.own:
            self.foreign.check_writable()
            keys, metadatas = self.foreign.batch(batch)
        self.indexing.prepare_writes()
        return copy_binary(keys, batch.vectors, metadatas, batch.texts)

    @staticmethod
    def _copy_sql(stage: sql.Identifier) -> sql.Composed:
        return sql.SQL("COPY {} (key, embedding, metadata, text) FROM STDIN (FORMAT BINARY)").format(stage)

    def _merge_statements(self, stage: sql.Identifier) -> list[sql.Composed]:
        """The statements merging the staged rows into the table (parameters: the scope's)."""
        return [self._merge_sql(stage)] if self.layout.columns.own else self.foreign.merge_statements(stage)

    def _merge_params(self) -> dict[str, Any] | None:
        cols = self.layout.columns
        return None if cols.own else cols.scope_values

    def _check_merged(self, rowcount: int | None, n: int) -> None:
        if not self.layout.columns.own and rowcount is not None:
            self.foreign.check_rowcount(rowcount, n)

    def _remove(self, keys: Sequence[str]) -> None:
        query, params = self._remove_sql(keys)
        with self.server.errors("delete"):
            conn, _ = self.server.conn()
            conn.execute(query, params)

    def _remove_sql(self, keys: Sequence[str]) -> tuple[sql.Composed, dict[str, Any]]:
        """The statement deleting ``keys`` (run by the sync store or the async one), after the
        checks and the catalog preparation every write needs."""
        layout = self.layout
        if not layout.columns.own:
            self.foreign.check_writable()
        self.indexing.prepare_writes()
        match, values = layout.columns.lookup(keys, "t")
        scope = self._scope()
        query = sql.SQL("DELETE FROM {} AS t WHERE {} AND {}").format(layout.qualified, scope.sql, match)
        return query, {**scope.params, "keys": values}

    def _delete_matching(self, where: FilterNode | None) -> int:
        # one SQL statement instead of a scan and deletes by key
        query, params = self._delete_sql(where)
        with self.server.errors("delete"):
            conn, _ = self.server.conn()
            cur = conn.execute(query, params)
        return max(cur.rowcount, 0)

    def _delete_sql(self, where: FilterNode | None) -> tuple[sql.Composed, dict[str, Any]]:
        """The statement deleting the records matching ``where`` (``None``: all)."""
        if not self.layout.columns.own:
            self.foreign.check_writable()
        pred = self._scope() if where is None else self._compile_filter(where)
        self.indexing.prepare_writes()
        return sql.SQL("DELETE FROM {} AS t WHERE {}").format(self.layout.qualified, pred.sql), pred.params

    def _read(self, keys: Sequence[str], include: frozenset[Include]) -> list[Record]:
        query, params = self._read_sql(keys, include)
        with self.server.errors("get"):
            conn, _ = self.server.conn()
            rows = conn.execute(query, params, binary=True).fetchall()
        return [self._record(r, include) for r in rows]

    def _read_sql(
        self, keys: Sequence[str], include: frozenset[Include]
    ) -> tuple[sql.Composed, dict[str, Any]]:
        """The statement reading the rows of ``keys`` (run by the sync store or the async one)."""
        layout = self.layout
        cols = sql.SQL(", ").join([layout.columns.key_expr(), *self._columns(include)])
        match, values = layout.columns.lookup(keys)
        scope = self._scope()
        query = sql.SQL("SELECT {} FROM {} AS t WHERE {} AND {}").format(
            cols, layout.qualified, scope.sql, match
        )
        return query, {**scope.params, "keys": values}

    def _count(self) -> int:
        query, params = self._count_sql()
        with self.server.errors("count"):
            conn, _ = self.server.conn()
            row = conn.execute(query, params).fetchone()
        return int(row[0]) if row else 0

    def _count_sql(self) -> tuple[sql.Composed, dict[str, Any]]:
        scope = self._scope()
        query = sql.SQL("SELECT count(*) FROM {} AS t WHERE {}").format(self.layout.qualified, scope.sql)
        return query, scope.params

    def _scan_page(
        self, limit: int, include: frozenset[Include], segment: tuple[int, int], position: Position | None
    ) -> tuple[Sequence[Record], Position | None]:
        if position is None:
            self.foreign.check_keys()
        query, params = self._scan_sql(limit, include, segment, position)
        with self.server.errors("scan"):
            conn, _ = self.server.conn()
            rows = conn.execute(query, params, binary=True).fetchall()
        return self._scan_rows(rows, limit, include)

    def _scan_sql(
        self, limit: int, include: frozenset[Include], segment: tuple[int, int], position: Position | None
    ) -> tuple[sql.Composed, dict[str, Any]]:
        """The statement reading one scan page (keyset: the rows after ``position``)."""
        index, parts = segment
        columns = self.layout.columns
        order = columns.order_expr("t")  # qualified: an output column may have its name
        scope = self._scope()
        conds: list[sql.Composable] = [scope.sql]
        params: dict[str, Any] = {**scope.params, "limit": limit}
        if position is not None:
            params["after"] = position_field(position, "after", str, self.name)
            conds.append(sql.SQL("{} > %(after)s::{}").format(order, sql.SQL(columns.order_cast)))
        if parts > 1:
            # hashtextextended is the function hash partitioning relies on, so it is stable
            # across servers and versions; each segment is a disjoint residue class.
            conds.append(
                sql.SQL(
                    "mod(mod(hashtextextended({}::text, 0), %(parts)s) + %(parts)s, %(parts)s) = %(index)s"
                ).format(order)
            )
            params.update(parts=parts, index=index)
        where = sql.SQL(" AND ").join(conds)
        key = columns.key_expr()
        cols = sql.SQL(", ").join([key, *self._columns(include), sql.SQL("{} AS vp_position").format(order)])
        query = sql.SQL("SELECT {} FROM {} AS t WHERE {} ORDER BY {} LIMIT %(limit)s").format(
            cols, self.layout.qualified, where, order
        )
        return query, params

    def _scan_rows(
        self, rows: Sequence[Any], limit: int, include: frozenset[Include]
    ) -> tuple[Sequence[Record], Position | None]:
        """A scan page's records and the position after them (``None``: the last page)."""
        records = tuple(self._record(r, include) for r in rows)
        done = len(records) < limit
        return records, None if done else {"after": str(rows[-1][-1])}
