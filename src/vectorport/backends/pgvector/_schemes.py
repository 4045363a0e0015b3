"""The URL schemes of the pgvector backend (read by its descriptor without importing psycopg)."""

__all__ = ["EMBEDDED_SCHEME", "LIBPQ_SCHEMES", "SQLALCHEMY_SCHEMES"]

EMBEDDED_SCHEME = "pgvector"
"""``pgvector://DATA_DIR?table=T``: the embedded server of a local data directory."""
LIBPQ_SCHEMES = ("postgres", "postgresql")
SQLALCHEMY_SCHEMES = (
    "postgresql+asyncpg",
    "postgresql+pg8000",
    "postgresql+psycopg",
    "postgresql+psycopg2",
    "postgresql+psycopg2cffi",
    "postgresql+psycopg_async",
)
"""SQLAlchemy URLs of PostgreSQL drivers; every one runs on psycopg 3 here."""
