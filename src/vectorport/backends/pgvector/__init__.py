"""PostgreSQL + pgvector: any server by DSN, or an embedded one in a local data directory.

Besides :class:`PgVectorStore` (``postgresql://…?table=T``, ``pgvector://DIR?table=T``):
:func:`schema_sql`, the SQL of a collection as vectorport creates it, and
:func:`start_embedded` / :func:`stop_embedded` for the embedded server of a data directory
(:func:`embedded_data_dir` resolves the directory as a ``pgvector://`` URL does).
"""

from ._embedded import embedded_data_dir, start_embedded, stop_embedded
from ._schema import schema_sql
from .store import PgVectorStore

__all__ = ["PgVectorStore", "embedded_data_dir", "schema_sql", "start_embedded", "stop_embedded"]
