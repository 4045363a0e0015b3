"""The SQL of one collection: table, indexes and search statements.

One generator serves the store (which executes it) and ``vectorport pgvector schema`` (which
prints it with the Supabase RPC functions: :mod:`._schema_sql`), so the printed DDL is exactly
what the library creates. Identifiers are quoted with ``_quote.Identifier``
(:class:`psycopg.sql.Identifier`, ``%`` included); the few constants DDL cannot take as
parameters (dimension, HNSW options, text search configuration) are validated and rendered with
``_quote.Literal``.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from psycopg import sql

from ..._models import Metric
from ..._names import NameRule
from ...exceptions import ConfigurationError, UnsupportedFeatureError
from ._mapping import DEFAULT_COLUMNS, Columns
from ._quote import Identifier, Literal

__all__ = [
    "DEFAULT_COLUMNS",
    "HALFVEC_INDEX_MAX_DIM",
    "METRIC_OPCLASS",
    "METRIC_OPERATOR",
    "TABLE_NAMES",
    "VECTOR_INDEX_MAX_DIM",
    "VECTOR_MAX_DIM",
    "Columns",
    "IndexKind",
    "Layout",
    "check_identifier",
    "check_table_name",
    "display_name",
    "tsquery_sql",
]

# pgvector limits (README "Indexing"): vector columns hold up to 16,000 dims; HNSW indexes
# vector up to 2,000 dims and halfvec up to 4,000.
VECTOR_MAX_DIM = 16_000
VECTOR_INDEX_MAX_DIM = 2_000
HALFVEC_INDEX_MAX_DIM = 4_000

IndexKind = str  # "hnsw" | "exact"
INDEX_KINDS = ("exact", "hnsw")

# Canonical distances (DESIGN §2) are exactly pgvector's operators: <=> is 1 - cos, <-> is L2
# (not squared), <#> is -dot.
METRIC_OPERATOR: dict[Metric, str] = {
    Metric.COSINE: "<=>",
    Metric.DOT: "<#>",
    Metric.EUCLIDEAN: "<->",
}
METRIC_OPCLASS: dict[Metric, str] = {
    Metric.COSINE: "cosine_ops",
    Metric.DOT: "ip_ops",
    Metric.EUCLIDEAN: "l2_ops",
}
OPCLASS_METRIC: dict[str, Metric] = {
    f"{kind}_{suffix}": metric for metric, suffix in METRIC_OPCLASS.items() for kind in ("halfvec", "vector")
}
_MAX_TABLE_BYTES = 40  # leaves room for index/function names within NAMEDATALEN (63 bytes)
_LANGUAGE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$")
_BARE = re.compile(r"^[a-z_][a-z0-9_]*$")


@dataclass(frozen=True)
class Layout:
    """Where a collection lives and how it is indexed."""

    schema: str
    table: str
    dimension: int
    metric: Metric
    index: IndexKind = "hnsw"
    m: int = 16
    ef_construction: int = 64
    language: str = "english"
    columns: Columns = DEFAULT_COLUMNS
    hnsw_index: str | None = None
    """The name of the HNSW index (``None``: :attr:`hnsw_index_name`, the one vectorport makes)."""

    def __post_init__(self) -> None:
        check_table_name(self.table)
        check_identifier("schema", self.schema)
        if self.index not in INDEX_KINDS:
            raise ConfigurationError(f"index must be one of {', '.join(INDEX_KINDS)}, got {self.index!r}")
        if not 1 <= self.dimension <= VECTOR_MAX_DIM:
            raise UnsupportedFeatureError(
                f"pgvector vector columns hold 1 to {VECTOR_MAX_DIM} dimensions, not {self.dimension}"
            )
        if self.index == "hnsw" and self.dimension > HALFVEC_INDEX_MAX_DIM:
            raise UnsupportedFeatureError(
                f"pgvector HNSW indexes hold at most {HALFVEC_INDEX_MAX_DIM} dimensions (as halfvec); "
                f"{self.dimension} needs index=exact"
            )
        if not 2 <= self.m <= 100:
            raise ConfigurationError(f"HNSW m must be between 2 and 100, got {self.m}")
        if not 4 <= self.ef_construction <= 1000 or self.ef_construction < 2 * self.m:
            raise ConfigurationError(
                "HNSW ef_construction must be between 4 and 1000 and at least 2*m, "
                f"got {self.ef_construction}"
            )
        if not _LANGUAGE.match(self.language):
            raise ConfigurationError(f"not a text search configuration name: {self.language!r}")

    # ------------------------------------------------------------------ names
    @property
    def qualified(self) -> Identifier:
        return Identifier(self.schema, self.table)

    def _name(self, suffix: str, prefix: str = "") -> Identifier:
        return Identifier(f"{prefix}{self.table}{suffix}")

    def _qualified_name(self, suffix: str, prefix: str = "") -> Identifier:
        return Identifier(self.schema, f"{prefix}{self.table}{suffix}")

    @property
    def halfvec_index(self) -> bool:
        """Above 2,000 dims the HNSW index is built on ``embedding::halfvec(dim)`` (pgvector's
        half-precision indexing); the column keeps full float32 precision."""
        return self.index == "hnsw" and self.dimension > VECTOR_INDEX_MAX_DIM

    @property
    def vector_type(self) -> sql.Composable:
        return sql.SQL("vector({})").format(Literal(self.dimension))

    @property
    def operator(self) -> sql.SQL:
        return sql.SQL(METRIC_OPERATOR[self.metric])

    def distance(self, column: sql.Composable, query: sql.Composable) -> sql.Composable:
        """Canonical distance between a vector column and a query vector expression."""
        if self.columns.halfvec:  # a halfvec column is compared (and indexed) as halfvec
            return sql.SQL("({} {} {}::halfvec)").format(column, self.operator, query)
        return sql.SQL("({} {} {})").format(column, self.operator, query)

    def embedding(self, prefix: str | None = None) -> sql.Composable:
        return self.columns.ident("embedding", prefix)

    def key(self, prefix: str | None = None) -> sql.Composable:
        """The chunk key as text (a column, or an expression over the row)."""
        return self.columns.key_expr(prefix)

    def index_distance(self, column: sql.Composable, query: sql.Composable) -> sql.Composable:
        """The ordering expression the HNSW index serves (halfvec casts above 2,000 dims)."""
        if not self.halfvec_index:
            return self.distance(column, query)
        half = sql.SQL("halfvec({})").format(Literal(self.dimension))
        return sql.SQL("({}::{} {} {}::{})").format(column, half, self.operator, query, half)

    # ------------------------------------------------------------------ DDL
    @property
    def hnsw_index_name(self) -> str:
        """The name (in :attr:`schema`) of the HNSW index vectorport creates and manages."""
        return f"{self.table}_embedding_hnsw"

    @property
    def comment(self) -> str:
        """``COMMENT ON TABLE`` text: how to search the table from SQL, for psql's ``\\d+``."""
        op = METRIC_OPERATOR[self.metric]
        score = "1 - distance" if self.metric is Metric.COSINE else "-distance"
        order = f"embedding {op} query"
        if self.halfvec_index:  # the index serves the halfvec expression only
            half = f"halfvec({self.dimension})"
            order = f"embedding::{half} {op} query::{half}"
        return (
            f"vectorport collection: {self.dimension} dims, {self.metric.value} metric. "
            f"Nearest first: ORDER BY {order} LIMIT k; distance = embedding {op} query, "
            f"score = {score}. Spec in {display_name(self.schema, 'vectorport_collections')}."
        )

    def hnsw_index_ddl(self) -> sql.Composed | None:
        """``CREATE INDEX IF NOT EXISTS`` of the HNSW index (``None`` for ``index=exact``)."""
        if self.index != "hnsw":
            return None
        kind = "halfvec" if self.halfvec_index else "vector"
        column = (
            sql.SQL("({}::halfvec({}))").format(self.embedding(), Literal(self.dimension))
            if self.halfvec_index
            else self.embedding()
        )
        return sql.SQL(
            "CREATE INDEX IF NOT EXISTS {name} ON {table} USING hnsw ({column} {opclass}) "
            "WITH (m = {m}, ef_construction = {ef})"
        ).format(
            name=Identifier(self.hnsw_index_name),
            table=self.qualified,
            column=column,
            opclass=sql.SQL(f"{kind}_{METRIC_OPCLASS[self.metric]}"),
            m=Literal(self.m),
            ef=Literal(self.ef_construction),
        )

    def hnsw_build_bytes(self, rows: int) -> int:
        """Memory an HNSW build of ``rows`` rows needs to keep its graph in memory.

        pgvector's in-memory element: the vector (float32, or float16 for a halfvec index), a
        level-0 neighbour list of 2m candidates (~16 bytes each) plus the upper levels, and
        fixed overhead. Measured at 384 dims, m = 16: 16 MB held 7,450 tuples (2,252 B each);
        this formula gives 2,312 B, and callers add a margin.
        """
        vector = (2 if self.halfvec_index else 4) * self.dimension + 8
        return rows * (vector + 32 * self.m + 256)

    def table_ddl(self) -> list[sql.Composed]:
        """CREATE TABLE and its indexes, each idempotent (``IF NOT EXISTS``)."""
        statements: list[sql.Composed] = [
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {table} (\n"
                '    key        text COLLATE "C" PRIMARY KEY,\n'
                "    embedding  {vtype} NOT NULL,\n"
                "    metadata   jsonb NOT NULL DEFAULT '{{}}'::jsonb,\n"
                "    text       text,\n"
                "    fts        tsvector GENERATED ALWAYS AS "
                "(to_tsvector({lang}::regconfig, coalesce(text, ''))) STORED,\n"
                "    updated_at timestamptz NOT NULL DEFAULT now()\n"
                ")"
            ).format(table=self.qualified, vtype=self.vector_type, lang=Literal(self.language))
        ]
        statements.append(sql.SQL("COMMENT ON TABLE {} IS {}").format(self.qualified, Literal(self.comment)))
        hnsw = self.hnsw_index_ddl()
        if hnsw is not None:
            statements.append(hnsw)
        # jsonb_path_ops: smaller and faster than the default opclass for @>, which is what
        # $eq/$in compile to (and the Supabase `metadata @> filter` pattern).
        statements.append(
            sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} USING gin ({} jsonb_path_ops)").format(
                self._name("_metadata_gin"), self.qualified, self.columns.ident("metadata")
            )
        )
        if self.columns.fts:
            statements.append(
                sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} USING gin ({})").format(
                    self._name("_fts_gin"), self.qualified, self.columns.ident("fts")
                )
            )
        return statements

    def _embedding_present(self, prefix: str | None = None, before: str = "") -> sql.Composable:
        """``<before><embedding> IS NOT NULL`` when the column admits NULL (such rows have no
        distance and are no search result), else nothing."""
        if not self.columns.embedding_nullable:
            return sql.SQL("")
        return sql.SQL("{}{} IS NOT NULL").format(sql.SQL(before), self.embedding(prefix))

    def _score_sql(self, distance: sql.Composable) -> sql.Composable:
        if self.metric is Metric.COSINE:
            return sql.SQL("1 - {}").format(distance)
        return sql.SQL("-{}").format(distance)

    def hybrid_sql(
        self,
        *,
        query: sql.Composable,
        text: sql.Composable,
        where: sql.Composable,
        candidates: sql.Composable,
        limit: sql.Composable,
        vector_weight: sql.Composable,
        text_weight: sql.Composable,
        rrf_k: sql.Composable,
        outer_columns: sql.Composable,
        parser: str = "websearch",
    ) -> sql.Composed:
        """One statement: vector and full-text candidates (each filtered inside its own
        ranking), fused by reciprocal rank fusion ``w_v/(rrf_k + r_v) + w_t/(rrf_k + r_t)``.

        Output columns: ``<outer_columns>, distance, rrf_score, vector_rank, text_rank``.
        Both the library and ``hybrid_match_<table>`` use it, with their own placeholders;
        ``parser`` is how the text becomes a ``tsquery`` (:func:`tsquery_sql`).
        """
        emb = self.embedding("t")
        tkey = self.key("t")
        fts = self.columns.ident("fts", "t")
        return sql.SQL(_HYBRID_SQL).format(
            tsquery=tsquery_sql(parser, self.language, text),
            idist=self.index_distance(emb, query),
            dist=self.distance(emb, query),
            table=self.qualified,
            where=where,
            candidates=candidates,
            wv=vector_weight,
            wt=text_weight,
            k=rrf_k,
            limit=limit,
            outer=outer_columns,
            tkey=tkey,
            fts=fts,
            notnull=self._embedding_present("t", " AND "),
            # without an index the candidates are exact, ties at the cut included (by key); an
            # HNSW scan orders by the bare index expression alone, or the index goes unused
            ties=sql.SQL(", key" if self.index == "exact" else ""),
        )


_HYBRID_SQL = (
    "  WITH tsq AS MATERIALIZED (SELECT {tsquery} AS q),\n"
    "  vec AS MATERIALIZED (\n"
    "    SELECT hits.key, row_number() OVER (ORDER BY hits.ord, hits.key) AS r\n"
    "    FROM (SELECT {tkey} AS key, {idist} AS ord FROM {table} AS t WHERE {where}{notnull}\n"
    "          ORDER BY ord{ties} LIMIT {candidates}) AS hits\n"
    "  ),\n"
    "  txt AS MATERIALIZED (\n"
    "    SELECT {tkey} AS key,\n"
    "           row_number() OVER (ORDER BY ts_rank_cd({fts}, tsq.q) DESC, {tkey}) AS r\n"
    "    FROM {table} AS t, tsq\n"
    "    WHERE {fts} @@ tsq.q AND {where}\n"
    "    ORDER BY r LIMIT {candidates}\n"
    "  ),\n"
    "  fused AS (\n"
    "    SELECT coalesce(vec.key, txt.key) AS key, vec.r AS vector_rank, txt.r AS text_rank,\n"
    "           coalesce({wv} / ({k} + vec.r), 0.0)\n"
    "           + coalesce({wt} / ({k} + txt.r), 0.0) AS rrf_score\n"
    "    FROM vec FULL OUTER JOIN txt ON vec.key = txt.key\n"
    "  )\n"
    "  SELECT {outer}, {dist}::double precision AS distance, f.rrf_score::double precision,\n"
    "         f.vector_rank, f.text_rank\n"
    "  FROM fused AS f JOIN {table} AS t ON {tkey} = f.key\n"
    "  ORDER BY f.rrf_score DESC, f.key\n"
    "  LIMIT {limit}"
)
"""The hybrid statement of :meth:`Layout.hybrid_sql`."""


_TSQUERY = {
    "websearch": "websearch_to_tsquery({lang}::regconfig, {text})",
    "plain": "plainto_tsquery({lang}::regconfig, {text})",
    # plainto_tsquery's lexemes, AND-ed, become OR-ed: its output quotes each lexeme and the
    # default parser's lexemes hold no spaces, so " & " occurs only between them
    "any": "replace(plainto_tsquery({lang}::regconfig, {text})::text, ' & ', ' | ')::tsquery",
}


def tsquery_sql(parser: str, language: str, text: sql.Composable) -> sql.Composable:
    """The ``tsquery`` of ``text`` by ``parser`` (``websearch``, ``plain`` or ``any``)."""
    return sql.SQL(_TSQUERY[parser]).format(lang=Literal(language), text=text)


def check_identifier(what: str, name: object) -> str:
    """``name``, a schema, table or column name given to vectorport; refused when empty or
    holding a control or format character (Unicode category C: newline, CR, tab, NUL, zero-width
    and bidi marks …).

    PostgreSQL could hold most of them in a quoted identifier, but nobody means them, and they
    turn printed SQL (a newline ends a ``--`` comment) and terminal output into traps.
    """
    if not isinstance(name, str) or not name:
        raise ConfigurationError(f"pgvector {what} name must be a non-empty string, got {name!r}")
    bad = next((c for c in name if unicodedata.category(c).startswith("C")), None)
    if bad is not None:
        label = unicodedata.name(bad, "a control character")
        raise ConfigurationError(
            f"pgvector {what} name {name!r} contains U+{ord(bad):04X} ({label}); names cannot hold "
            "control or invisible format characters (newline, tab, NUL, zero-width, bidi …)"
        )
    return name


def display_name(*parts: str) -> str:
    """A (qualified) name for SQL comments and literals: bare when it needs no quotes, else
    quoted and escaped as an SQL identifier, so it reads back as exactly one name."""
    if all(_BARE.match(p) for p in parts):
        return ".".join(parts)
    return Identifier(*parts).as_string(None)


TABLE_NAMES = NameRule(
    "pgvector table name",
    f"1-{_MAX_TABLE_BYTES} UTF-8 bytes without control or invisible format characters (PostgreSQL "
    "truncates identifiers at 63 bytes and vectorport derives index and function names from the "
    "table's)",
    max_bytes=_MAX_TABLE_BYTES,
    replacement="_",
)


def check_table_name(name: str) -> None:
    """Refuse names PostgreSQL would truncate or cannot hold (see :data:`TABLE_NAMES`)."""
    if not isinstance(name, str) or not name:
        raise TABLE_NAMES.missing("a pgvector URL needs ?table=NAME (the collection's table)")
    TABLE_NAMES.check(name)
