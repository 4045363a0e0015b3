"""Reads of a pgvector collection and the shape of its rows: which rows are the collection's
(its scope, a filter compiled inside it), the columns a statement selects for what a caller
asked (``include``) and how a result row becomes a record; reads by key, the row count and
keyset scan pages (optionally one hash segment of the keys).

The statements are built apart from running them (``read_sql``, ``count_sql``, ``scan_sql``),
so the async store (:mod:`._async`) runs the same ones on its own connections.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from psycopg import sql

from ..._cursor import Position, position_field
from ..._models import Include, Record, Vector
from ..._paging import PAGE_BYTES
from ...conventions.llamaindex import from_node_metadata
from ...exceptions import ConfigurationError
from ...filters import FilterNode
from ._quote import Identifier
from ._schema import DEFAULT_COLUMNS
from .filters import TRUE, PgFilterCompiler, Predicate

if TYPE_CHECKING:
    from .store import PgVectorStore

__all__ = ["Reader"]


class Reader:
    """The collection's rows as records: scope, filters, selected columns, reads and scans."""

    def __init__(self, store: PgVectorStore) -> None:
        self.store = store

    def compiler(self, prefix: str | None = None) -> PgFilterCompiler:
        """A filter compiler over the bound table's metadata column (never SQL NULL)."""
        columns = (
            self.store.catalog.bound.columns if self.store.catalog.bound is not None else DEFAULT_COLUMNS
        )
        return PgFilterCompiler(columns.metadata_expr(prefix))

    def compile_filter(self, where: FilterNode) -> Predicate:
        # Every statement with a filter (searches, DELETE) names the table ``t``, so one
        # compilation serves them all. The collection's scope (a shared table) is part of it.
        pred = self.compiler("t").compile(where)
        scope = self.scope()
        if scope is TRUE:
            return pred
        return Predicate(f"{scope.text} AND ({pred.text})", {**scope.params, **pred.params})

    def scope(self) -> Predicate:
        """The rows of the collection in its table (``TRUE``: all of them)."""
        layout = self.store.catalog.bound
        if layout is None or (layout.columns.scope is None and not layout.columns.skip_null_vectors):
            return TRUE
        return Predicate(layout.columns.scope_sql(), layout.columns.scope_values)

    def columns(self, include: frozenset[Include], prefix: str | None = None) -> list[sql.Composable]:
        """The metadata, text and vector columns ``include`` asks for, named ``metadata``,
        ``text`` and ``embedding`` whatever the table calls them."""
        cols = self.store.layout.columns
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
                else sql.SQL("{} AS {}").format(value, Identifier(role))
            )
        return out

    @staticmethod
    def aliases(include: frozenset[Include]) -> list[sql.Composable]:
        """The output names of :meth:`columns`."""
        return [
            Identifier(name)
            for name, inc in (
                ("metadata", Include.METADATA),
                ("text", Include.TEXT),
                ("embedding", Include.VECTOR),
            )
            if inc in include
        ]

    def record(self, row: Sequence[Any], include: frozenset[Include]) -> Record:
        metadata, text, vector = self.decode(row, include)
        if vector is None and Include.VECTOR in include:
            raise ConfigurationError(
                f"{self.store._where}: the row with key {row[0]!r} has no vector (its "
                f"{self.store.layout.columns.embedding!r} is NULL); a vectorport record needs one: fill or "
                f'delete such rows, or leave them out with where="{self.store.layout.columns.embedding} '
                'IS NOT NULL"'
            )
        if row[0] is None:
            raise ConfigurationError(
                f"{self.store._where}: a row's key is NULL ({self.key_source()}); give every row a key, or "
                "leave such rows out with where="
            )
        return Record(row[0], vector, metadata, text)

    def key_source(self) -> str:
        cols = self.store.layout.columns
        return f"key_expression={cols.key_expression}" if cols.key_expression else f"key_column={cols.key}"

    def decode(
        self, row: Sequence[Any], include: frozenset[Include], offset: int = 1
    ) -> tuple[dict[str, Any], str | None, Vector | None]:
        """Metadata, text and vector of a result row laid out as :meth:`columns` says."""
        i = offset
        metadata: dict[str, Any] = {}
        text: str | None = None
        vector: Vector | None = None
        cols = self.store.layout.columns
        if Include.METADATA in include:
            metadata = row[i]
            i += 1
            if not isinstance(metadata, dict):
                raise ConfigurationError(
                    f"{self.store._where}: the metadata of the row with key {row[0]!r} is a JSON "
                    f"{type(metadata).__name__}, not an object (column {cols.metadata!r}); "
                    "vectorport metadata is a JSON object: pass metadata_column= to use another "
                    "column, or metadata_columns= to read plain columns instead"
                )
            if not cols.own:
                metadata = self.user_metadata(metadata)
        if Include.TEXT in include:
            text = row[i]
            i += 1
        if Include.VECTOR in include and row[i] is not None:
            vector = row[i]
        return metadata, text, vector

    def user_metadata(self, metadata: dict[str, Any]) -> dict[str, Any]:
        """The user's metadata of a row of a table made elsewhere (framework bookkeeping out)."""
        if self.store.layout.columns.node_metadata:
            _, metadata = from_node_metadata(metadata)
        return metadata

    def read(self, keys: Sequence[str], include: frozenset[Include]) -> list[Record]:
        query, params = self.read_sql(keys, include)
        with self.store.server.errors("get"):
            conn, _ = self.store.server.conn()
            rows = conn.execute(query, params, binary=True).fetchall()
        return [self.record(r, include) for r in rows]

    def read_sql(
        self, keys: Sequence[str], include: frozenset[Include]
    ) -> tuple[sql.Composed, dict[str, Any]]:
        """The statement reading the rows of ``keys`` (run by the sync store or the async one)."""
        layout = self.store.layout
        cols = sql.SQL(", ").join([layout.columns.key_expr(), *self.columns(include)])
        match, values = layout.columns.lookup(keys)
        scope = self.scope()
        query = sql.SQL("SELECT {} FROM {} AS t WHERE {} AND {}").format(
            cols, layout.qualified, scope.sql, match
        )
        return query, {**scope.params, "keys": values}

    def count(self) -> int:
        query, params = self.count_sql()
        with self.store.server.errors("count"):
            conn, _ = self.store.server.conn()
            row = conn.execute(query, params).fetchone()
        return int(row[0]) if row else 0

    def count_sql(self) -> tuple[sql.Composed, dict[str, Any]]:
        scope = self.scope()
        query = sql.SQL("SELECT count(*) FROM {} AS t WHERE {}").format(
            self.store.layout.qualified, scope.sql
        )
        return query, scope.params

    def scan_page(
        self, limit: int, include: frozenset[Include], segment: tuple[int, int], after: Position | None
    ) -> tuple[Sequence[Record], Position | None]:
        """One keyset page of the collection (the rows after ``after``)."""
        if after is None:
            self.store.foreign.check_keys()
        query, params = self.scan_sql(limit, include, segment, after)
        with self.store.server.errors("scan"):
            conn, _ = self.store.server.conn()
            rows = conn.execute(query, params, binary=True).fetchall()
        return self.scan_rows(rows, limit, include)

    def scan_sql(
        self, limit: int, include: frozenset[Include], segment: tuple[int, int], position: Position | None
    ) -> tuple[sql.Composed, dict[str, Any]]:
        """The statement reading one scan page (keyset: the rows after ``position``)."""
        index, parts = segment
        columns = self.store.layout.columns
        order = columns.order_expr("t")  # qualified: an output column may have its name
        scope = self.scope()
        conds: list[sql.Composable] = [scope.sql]
        params: dict[str, Any] = {**scope.params, "limit": limit}
        if position is not None:
            params["after"] = position_field(position, "after", str, self.store.name)
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
        sized = Include.TEXT in include and bool(columns.text)
        key = columns.key_expr()
        if sized:
            key = sql.SQL("{} AS vp_key").format(key)
        cols = sql.SQL(", ").join([key, *self.columns(include), sql.SQL("{} AS vp_position").format(order)])
        query: sql.Composed = sql.SQL("SELECT {} FROM {} AS t WHERE {} ORDER BY {} LIMIT %(limit)s").format(
            cols, self.store.layout.qualified, where, order
        )
        if sized:
            query = self._within_bytes(query, include)
            params["page_bytes"] = PAGE_BYTES
        return query, params

    def _within_bytes(self, page: sql.Composed, include: frozenset[Include]) -> sql.Composed:
        """``page`` cut where its texts pass :data:`PAGE_BYTES` (at least one row): a page
        of large texts never holds more than about that much, whatever its row count. The sizes
        come from ``octet_length`` (a stored text's size, read without decompressing it); the
        rows past the cut are not sent. Each row also says whether ``page`` held a row after it
        (``vp_more``), so a cut page is not taken for the last one. Both are window functions
        over the page's own order, kept in memory (a ``count(*) OVER ()`` would hold the whole
        page, vectors included, on disk: 19 ms against 4 ms for 5,000 rows of 384 dimensions)."""
        outputs = [Identifier("vp_key"), *self.aliases(include), Identifier("vp_position")]
        size = "coalesce(octet_length(q.text), 0)"
        sized = sql.SQL(
            "SELECT {outputs}, vp_more FROM ("
            f"SELECT q.*, sum({size}) OVER w - {size} AS vp_before, lead(true, 1, false) OVER w AS vp_more "
            "FROM ({page}) AS q WINDOW w AS (ORDER BY q.vp_position ROWS UNBOUNDED PRECEDING)) AS s "
            "WHERE vp_before < %(page_bytes)s ORDER BY vp_position"
        )
        return sized.format(outputs=sql.SQL(", ").join(outputs), page=page)

    def scan_rows(
        self, rows: Sequence[Any], limit: int, include: frozenset[Include]
    ) -> tuple[Sequence[Record], Position | None]:
        """A scan page's records and the position after them (``None``: the last page)."""
        records = tuple(self.record(r, include) for r in rows)
        sized = bool(rows) and Include.TEXT in include and bool(self.store.layout.columns.text)
        cut = sized and bool(rows[-1][-1])  # the page held rows past its last one sent
        done = len(records) < limit and not cut
        return records, None if done else {"after": str(rows[-1][-2 if sized else -1])}
