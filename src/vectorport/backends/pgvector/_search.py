"""Search in a pgvector collection: the vector search statement (the filter inside the HNSW
ranking, per-query ``hnsw.*`` settings sent only when they change), full-text search and
hybrid search fused by reciprocal rank fusion.

Against the reference (:mod:`vectorport._textsearch`) pgvector guarantees: the filter inside
both rankings, the fusion arithmetic and candidate depth (``2k`` per side), ties by key, and,
with the ``simple`` text search configuration and ``text_parser=any``, the same set of
matching records on plain words. The text ranking is ``ts_rank_cd`` over the collection's text
search configuration (``language=``: stemming and stop words), not BM25.

Statements are composed once per shape (filter text and include) and kept as bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql

from ..._models import Include, Match, QueryResult, Vector, score_from_distance
from ..._protocol import FilterLike
from ..._querying import prepare_query
from ..._textsearch import HYBRID_DEPTH, check_fusion, check_query_text, text_match
from ...exceptions import ConfigurationError, UnsupportedFeatureError
from ._connections import Session
from ._options import SearchSettings, local_gucs_sql, set_gucs_sql
from ._quote import Identifier
from ._schema import tsquery_sql
from .filters import TRUE, Predicate

if TYPE_CHECKING:
    from .store import PgVectorStore

__all__ = ["SearchCall", "Searcher"]

_STATEMENT_CACHE = 256  # composed statements kept per store (one per filter shape and include)

_TEXT_INCLUDES = frozenset({Include.METADATA, Include.TEXT})


@dataclass(frozen=True)
class SearchCall:
    """One search statement to run: its cache key and builder, parameters, the ``hnsw.*``
    settings it needs (``None``: exact search), the operation's name for errors, and the
    exact search that finishes an index walk which came back short (:meth:`short`)."""

    key: tuple[Any, ...]
    build: Callable[[], sql.Composable]
    params: dict[str, Any]
    gucs: tuple[tuple[str, str], ...] | None
    what: str
    exact: SearchCall | None = None

    def short(self, rows: Sequence[object]) -> SearchCall | None:
        """The exact search to run instead when the index returned fewer than ``k`` rows.

        An HNSW walk can end before ``k`` rows match although more exist: its iterative scan
        stops at ``max_scan_tuples``, and a graph built on tight clusters can leave some
        unreachable from the entry point (a CI run: 552 of k = 1,500 on 20k rows in 32
        clusters; rare, 0 of 60 builds here). Fewer rows then say only "the walk ended",
        so they are replaced by the exact answer, min(k, matching rows); a query run with
        ``iterative_scan=off`` asked for the walk alone and has no exact search.
        """
        return self.exact if self.exact is not None and len(rows) < self.params["k"] else None


class Searcher:
    """Vector, text and hybrid search."""

    def __init__(self, store: PgVectorStore) -> None:
        self.store = store
        self.statements: dict[tuple[Any, ...], bytes] = {}
        """Composed statements by shape, for the bound layout (cleared when it changes)."""

    def _settings(self, params: Mapping[str, Any]) -> SearchSettings:
        return (
            SearchSettings.parse(params, self.store.search_defaults) if params else self.store.search_defaults
        )

    def _statement(
        self,
        conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any],
        key: tuple[Any, ...],
        build: Callable[[], sql.Composable],
    ) -> bytes:
        """The SQL bytes of a statement, composed once per shape (``key``) and bound layout.

        Composing and quoting a :mod:`psycopg.sql` tree costs more than the rest of a query's
        Python; a filter's shape is its predicate text, so equal keys are equal statements.
        """
        text = self.statements.get(key)
        if text is None:
            composed: sql.Composable = build()
            text = composed.as_bytes(conn)
            if len(self.statements) >= _STATEMENT_CACHE:
                self.statements.clear()
            self.statements[key] = text
        return text

    def _apply_gucs(self, session: Session, wanted: tuple[tuple[str, str], ...]) -> None:
        """Bring the session's ``hnsw.*`` settings to ``wanted``: nothing is sent when they are
        already so, otherwise one statement with the changed ones.

        Session level (not ``SET LOCAL``) so a query needs no transaction of its own: no
        BEGIN/COMMIT round trips. Sent outside any transaction (autocommit), so a rollback
        cannot undo them behind the record kept here.
        """
        changed = session.changes(wanted)
        if not changed:
            return
        conn = session.conn
        conn.execute(
            set_gucs_sql([n for n, _ in changed]).encode("ascii"),
            [x for pair in changed for x in pair],
            prepare=True,
        )
        session.settled(wanted, changed, conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE)

    def _run_search(self, call: SearchCall) -> list[tuple[Any, ...]]:
        with self.store.server.errors(call.what):
            session = self.store.server.session()
            conn = session.conn
            query = self._statement(conn, call.key, call.build)
            if call.gucs and session.lent:
                # an application's connection, lent for this search: its settings, local to the
                # pipeline's implicit transaction, and the search in one round trip (no RESET)
                with conn.pipeline():
                    conn.execute(*local_gucs_sql(call.gucs), prepare=True)
                    cur = conn.execute(query, call.params, binary=True, prepare=True)
            else:
                if call.gucs:
                    self._apply_gucs(session, call.gucs)
                cur = conn.execute(query, call.params, binary=True, prepare=True)
            rows: list[tuple[Any, ...]] = cur.fetchall()
            return rows

    def _call(
        self,
        key: tuple[Any, ...],
        build: Callable[[], sql.Composable],
        params: dict[str, Any],
        k: int,
        settings: SearchSettings,
        what: str,
        filtered: bool,
    ) -> SearchCall:
        gucs = settings.gucs(k, filtered) if self.store.layout.index == "hnsw" else None
        return SearchCall(key, build, params, gucs, what)

    def _search_sql(self, where: str, include: frozenset[Include], *, exact: bool = False) -> sql.Composed:
        """The vector search statement; ``exact`` ranks every matching row without the index."""
        layout = self.store.layout
        q = sql.Placeholder("q")
        emb = layout.embedding()
        dist = layout.distance(emb, q)
        cols = self.store.reader.columns(include)
        key = layout.key()
        select = sql.SQL(", ").join(
            [
                key
                if layout.columns.key == "key" and layout.columns.plain_key
                else sql.SQL("{} AS key").format(key),
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
        outer = sql.SQL(", ").join(
            [Identifier("key"), Identifier("distance"), *self.store.reader.aliases(include)]
        )
        if exact:
            # OFFSET 0 keeps the ranking out of the subquery (it is not flattened), so no
            # index can order it, whatever the server's version or statistics: every row
            # matching the filter is ranked (the filter may still use its own index)
            return sql.SQL(
                "SELECT {outer} FROM (SELECT {select} FROM {table} AS t WHERE {where} OFFSET 0) AS hits "
                "ORDER BY distance, key LIMIT %(k)s"
            ).format(outer=outer, select=select, table=layout.qualified, where=sql.SQL(where))
        # The inner ORDER BY is the bare index expression so the planner can use the HNSW
        # index (an extra sort key would defeat it); the outer one breaks ties by key. The
        # filter is inside, before the LIMIT: rows are ranked among those that match.
        ordering = sql.SQL("distance") if not layout.halfvec_index else layout.index_distance(emb, q)
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
        call = self._search_call(vector, k, where, include, params)
        rows = self._run_search(call)
        exact = call.short(rows)
        return self._matches(rows if exact is None else self._run_search(exact), include)

    def _search_call(
        self,
        vector: Vector,
        k: int,
        where: Predicate | None,
        include: frozenset[Include],
        params: Mapping[str, Any],
    ) -> SearchCall:
        """The vector search statement and its parameters (run by the sync store or the async one)."""
        settings = self._settings(params)
        pred = where or self.store.reader.scope()
        values = {**pred.params, "q": vector, "k": k}
        call = self._call(
            ("query", pred.text, include),
            lambda: self._search_sql(pred.text, include),
            values,
            k,
            settings,
            "query",
            pred is not TRUE,
        )
        if call.gucs is None or settings.iterative_scan == "off":
            return call
        exact = SearchCall(
            ("query", pred.text, include, "exact"),
            lambda: self._search_sql(pred.text, include, exact=True),
            values,
            None,
            "query",
        )
        return replace(call, exact=exact)

    def _matches(self, rows: Sequence[Sequence[Any]], include: frozenset[Include]) -> list[Match]:
        """The matches of a vector search's result rows."""
        metric = self.store.layout.metric
        out = []
        for row in rows:
            metadata, text, vec = self.store.reader.decode(row, include, offset=2)
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

    def text_query(
        self,
        text: str,
        k: int = 10,
        *,
        filter: FilterLike = None,
        include: Iterable[str] | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> QueryResult:
        """Full-text search: the text parsed by ``text_parser`` (``websearch`` by default,
        ``plain`` or ``any``: a URL option or ``params={"text_parser": …}``) in the collection's
        text search configuration, matched against the ``fts`` column and ranked by
        ``ts_rank_cd`` (best first, ties by key), filter inside.

        Matches carry ``distance = -ts_rank_cd`` and ``score = ts_rank_cd`` (there is no
        vector), and ``extra = {"text_rank": 1-based position, "text_score": ts_rank_cd}``.
        """
        query, values, inc, k = self._text_call(text, k, filter, include, params)
        with self.store.server.errors("text query"):
            conn, _ = self.store.server.conn()
            rows = conn.execute(query, values, binary=True).fetchall()
        return self._text_result(rows, inc, k)

    def _text_call(
        self,
        text: str,
        k: int,
        filter: FilterLike,
        include: Iterable[str] | None,
        params: Mapping[str, Any] | None,
    ) -> tuple[sql.Composed, dict[str, Any], frozenset[Include], int]:
        """:meth:`text_query`'s statement, its parameters, the includes and ``k``, checked
        before any I/O (run by the sync store or the async one)."""
        text = check_query_text(text, "text_query")
        prep = prepare_query(self.store, None, k, filter, include, params, includes=_TEXT_INCLUDES)
        if set(prep.params) - {"text_parser"}:
            raise ConfigurationError(
                f"text_query takes only the text_parser param, got {sorted(prep.params)}"
            )
        parser = self._settings(prep.params).text_parser
        k, inc, pred = prep.k, prep.include, prep.where or self.store.reader.scope()
        self._require_fts("text_query")
        layout = self.store.layout
        query = sql.SQL(
            "SELECT {cols} FROM (SELECT {tkey} AS key, ts_rank_cd({fts}, q.q)::double precision AS rank "
            "FROM {table} AS t, (SELECT {tsquery} AS q) AS q "
            "WHERE {fts} @@ q.q AND {where} ORDER BY rank DESC, {tkey} LIMIT %(k)s) AS hits "
            "JOIN {table} AS t ON {tkey} = hits.key ORDER BY hits.rank DESC, hits.key"
        ).format(
            cols=sql.SQL(", ").join(
                [sql.SQL("hits.key"), sql.SQL("hits.rank"), *self.store.reader.columns(inc, "t")]
            ),
            table=layout.qualified,
            tsquery=tsquery_sql(parser, layout.language, sql.Placeholder("text")),
            where=pred.sql,
            tkey=layout.key("t"),
            fts=layout.columns.ident("fts", "t"),
        )
        return query, {**pred.params, "text": text, "k": k}, inc, k

    def _text_result(self, rows: Sequence[Any], inc: frozenset[Include], k: int) -> QueryResult:
        out = []
        for position, row in enumerate(rows, start=1):
            metadata, body, vec = self.store.reader.decode(row, inc, offset=2)
            rank = float(row[1])
            out.append(
                text_match(row[0], rank, position, metadata if Include.METADATA in inc else None, body, vec)
            )
        return QueryResult(tuple(out), k)

    def _require_fts(self, what: str) -> None:
        if not self.store.layout.columns.text_searchable:
            raise UnsupportedFeatureError(
                f"{self.store._where}: {what} needs the generated tsvector column fts, which this table "
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
        filter is inside both rankings; the text parsed as in :meth:`text_query`); a record's fused score is
        ``weight / (rrf_k + vector_rank) + (1 - weight) / (rrf_k + text_rank)`` (a side it is
        missing from adds 0). Results are ordered by that score, ties by key. Each match has
        the canonical vector ``distance`` and its ``score``, and ``extra`` =
        ``{"rrf_score", "vector_rank", "text_rank"}`` (ranks are 1-based, ``None`` when absent).
        """
        call, inc, k = self._hybrid_call(vector, text, k, filter, weight, rrf_k, include, params)
        return self._hybrid_result(self._run_search(call), inc, k)

    def _hybrid_call(
        self,
        vector: Sequence[float] | Any,
        text: str,
        k: int,
        filter: FilterLike,
        weight: float,
        rrf_k: int,
        include: Iterable[str] | None,
        params: Mapping[str, Any] | None,
    ) -> tuple[SearchCall, frozenset[Include], int]:
        """:meth:`hybrid_query`'s search call, the includes and ``k``, checked before any I/O
        (run by the sync store or the async one)."""
        text = check_query_text(text, "hybrid_query")
        prep = prepare_query(self.store, vector, k, filter, include, params, includes=_TEXT_INCLUDES)
        weight, rrf_k = check_fusion(weight, rrf_k)
        vec, k, inc, pred = prep.vector, prep.k, prep.include, prep.where or self.store.reader.scope()
        settings = self._settings(prep.params)
        depth = HYBRID_DEPTH * k
        self._require_fts("hybrid_query")
        layout = self.store.layout

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
                outer_columns=sql.SQL(", ").join([sql.SQL("f.key"), *self.store.reader.columns(inc, "t")]),
                parser=settings.text_parser,
            )

        values = {
            **pred.params,
            "q": vec,
            "text": text,
            "candidates": depth,
            "k": k,
            "wv": weight,
            "wt": 1.0 - weight,
            "rrf_k": rrf_k,
        }
        call = self._call(
            ("hybrid", pred.text, inc, settings.text_parser),
            build,
            values,
            depth,
            settings,
            "hybrid query",
            pred is not TRUE,
        )
        return call, inc, k

    def _hybrid_result(self, rows: Sequence[Any], inc: frozenset[Include], k: int) -> QueryResult:
        layout = self.store.layout
        out = []
        ncols = 1 + len(self.store.reader.columns(inc))
        for row in rows:
            metadata, body, found = self.store.reader.decode(row, inc)
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
