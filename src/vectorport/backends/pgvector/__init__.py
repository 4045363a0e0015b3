"""PostgreSQL + pgvector: any server by DSN, or an embedded one in a local data directory."""

from .store import PgVectorStore

__all__ = ["PgVectorStore"]
