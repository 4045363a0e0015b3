"""The interop tests' PostgreSQL fixtures (the ``interop`` database and the tables the
frameworks' own clients built in it), for the round trips with the frameworks' stores."""

from tests.interop.conftest import interop_uri, pg_tables, pg_uri

__all__ = ["interop_uri", "pg_tables", "pg_uri"]
