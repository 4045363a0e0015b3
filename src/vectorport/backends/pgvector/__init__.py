"""PostgreSQL + pgvector: any server by DSN, or an embedded one in a local data directory.

Besides :class:`PgVectorStore` (``postgresql://…?table=T``, ``pgvector://DIR?table=T``):
:func:`schema_sql`, the SQL of a collection as vectorport creates it, and
:func:`start_embedded` / :func:`stop_embedded` for the embedded server of a data directory
(:func:`embedded_data_dir` resolves the directory as a ``pgvector://`` URL does).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..._registry import Backend, TestTarget
from ._embedded import embedded_data_dir, start_embedded, stop_embedded
from ._schemes import EMBEDDED_SCHEME, LIBPQ_SCHEMES, SQLALCHEMY_SCHEMES

if TYPE_CHECKING:
    from ._schema_sql import schema_sql
    from .store import PgVectorStore

__all__ = ["PgVectorStore", "backend", "embedded_data_dir", "schema_sql", "start_embedded", "stop_embedded"]

_SERVER = "._embedded:local_server"
backend = Backend(
    name="pgvector",
    package=__name__,
    store=".store:PgVectorStore",
    # libpq URIs, and SQLAlchemy URLs of every driver (all run on psycopg: _dsn.py)
    schemes=(EMBEDDED_SCHEME, *LIBPQ_SCHEMES, *SQLALCHEMY_SCHEMES),
    extra="pgvector",
    requires=("psycopg",),
    model_options="._model:model_options",
    tests=(
        TestTarget("pgvector://{server}?table={collection}", server=_SERVER),
        TestTarget("pgvector://{server}?table={collection}&index=exact", server=_SERVER, variant="exact"),
    ),
)
"""This backend, as the ``vectorport.backends`` entry point registers it."""


def __getattr__(name: str) -> Any:
    # the store and the schema import psycopg: only when asked for
    if name == "PgVectorStore":
        from .store import PgVectorStore

        return PgVectorStore
    if name == "schema_sql":
        from ._schema_sql import schema_sql

        return schema_sql
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
