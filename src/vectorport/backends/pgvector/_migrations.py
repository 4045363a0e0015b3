"""Versioned catalog SQL (``migrations/pgvector/NNNN_name.sql``), applied in order, recorded
in ``vectorport_migrations`` of the collection's schema.

The files are found in the installed package (``vectorport/_migrations/pgvector``, shipped
by the wheel's ``force-include``) or, in a source checkout / editable install, in the
repository's top-level ``migrations/pgvector``.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from ...exceptions import ConfigurationError
from ._quote import Identifier

__all__ = [
    "MIGRATIONS_TABLE",
    "Migration",
    "apply_migrations",
    "load_migrations",
    "migrations_dir",
    "pending_migrations",
]

log = logging.getLogger("vectorport.pgvector")

MIGRATIONS_TABLE = "vectorport_migrations"
_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode("utf-8")).hexdigest()


def migrations_dir() -> Path:
    """Where the pgvector migration files are."""
    here = Path(__file__).resolve()
    candidates = [
        here.parents[2] / "_migrations" / "pgvector",  # wheel: vectorport/_migrations/pgvector
        here.parents[4] / "migrations" / "pgvector",  # checkout: <repo>/migrations/pgvector
    ]
    for path in candidates:
        if path.is_dir():
            return path
    raise ConfigurationError(
        "the pgvector migration files are missing from this installation (looked in "
        + ", ".join(str(p) for p in candidates)
        + ")"
    )


def load_migrations(directory: Path | None = None) -> list[Migration]:
    """Every ``NNNN_name.sql`` file, by version; versions must be unique."""
    directory = directory or migrations_dir()
    out: dict[int, Migration] = {}
    for path in sorted(directory.glob("*.sql")):
        found = _FILE.match(path.name)
        if not found:
            raise ConfigurationError(f"migration file {path.name!r} is not named NNNN_name.sql")
        version = int(found.group(1))
        if version in out:
            raise ConfigurationError(f"two migration files have version {version:04d}")
        out[version] = Migration(version, found.group(2), path.read_text(encoding="utf-8"))
    return [out[v] for v in sorted(out)]


def pending_migrations(
    conn: psycopg.Connection[Any], schema: str, migrations: list[Migration] | None = None
) -> list[int]:
    """Versions ``schema`` lacks, found with reads only (none: nothing to write)."""
    migrations = load_migrations() if migrations is None else migrations
    table = Identifier(schema, MIGRATIONS_TABLE)
    row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (table.object_name(conn),)).fetchone()
    if not (row and row[0]):
        return [m.version for m in migrations]
    done = {
        int(v): str(c)
        for v, c in conn.execute(sql.SQL("SELECT version, checksum FROM {}").format(table)).fetchall()
    }
    for mig in migrations:
        if mig.version in done and done[mig.version] != mig.checksum:
            log.warning(
                "pgvector: migration %04d_%s differs from the one applied to schema %r; "
                "applied files must not be edited",
                mig.version,
                mig.name,
                schema,
            )
    return [m.version for m in migrations if m.version not in done]


def apply_migrations(conn: psycopg.Connection[Any], schema: str) -> list[int]:
    """Apply the migrations ``schema`` lacks, in order, in one transaction holding an advisory
    lock (so concurrent processes apply each file once, and a failing file leaves nothing
    behind). Returns the versions applied."""
    migrations = load_migrations()
    table = Identifier(schema, MIGRATIONS_TABLE)
    if not pending_migrations(conn, schema, migrations):
        return []  # read-only: a read-only role or a hot standby opens collections too
    lock_key = f"vectorport.pgvector.migrations:{schema}"
    applied_now: list[int] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (lock_key,))
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(Identifier(schema)))
        conn.execute(
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} (\n"
                "    version    integer PRIMARY KEY,\n"
                "    name       text NOT NULL,\n"
                "    checksum   text NOT NULL,\n"
                "    applied_at timestamptz NOT NULL DEFAULT now()\n"
                ")"
            ).format(table)
        )
        done = {int(r[0]) for r in conn.execute(sql.SQL("SELECT version FROM {}").format(table)).fetchall()}
        for mig in migrations:
            if mig.version in done:
                continue
            with conn.transaction():  # a savepoint per file, so errors name the file
                # Unqualified names in the file land in the target schema; the server's own
                # search_path stays after it so extension types (vector) still resolve.
                conn.execute(
                    "SELECT set_config('search_path', quote_ident(%s) || ', ' || "
                    "current_setting('search_path'), true)",
                    (schema,),
                )
                conn.execute(mig.sql.encode("utf-8"))
                conn.execute(
                    sql.SQL("INSERT INTO {} (version, name, checksum) VALUES (%s, %s, %s)").format(table),
                    (mig.version, mig.name, mig.checksum),
                )
            log.info("pgvector: applied migration %04d_%s to schema %r", mig.version, mig.name, schema)
            applied_now.append(mig.version)
    return applied_now
