"""Two scenarios of issue 43 that every runner must pass, read back with psycopg: bucket keys
that are UUIDs in 32-hex form keep their UUID in a uuid-keyed table (not a uuid5 of the text),
and a snapshot with one part swapped in from another snapshot is refused with nothing written."""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from typer.testing import CliRunner

import vectorport
from vectorport import Record
from vectorport.backends.pgvector._embedded import embedded_conninfo
from vectorport.cli import app
from vectorport.snapshot import export

DIM = 4
N = 200


def hex_uuid_records(n: int = N) -> list[Record]:
    rng = np.random.default_rng(43)
    return [
        Record(
            uuid.UUID(int=int(rng.integers(1, 2**62)) << 64 | i).hex, rng.normal(size=DIM), {"i": i}, f"t{i}"
        )
        for i in range(n)
    ]


def uuid_table(pg_dir: Path, name: str) -> str:
    """A table keyed by a ``uuid`` column, as an application makes it; its vectorport URL."""
    with psycopg.connect(embedded_conninfo(pg_dir), autocommit=True) as conn:
        columns = f"id uuid PRIMARY KEY, embedding vector({DIM}), content text, metadata jsonb"
        conn.execute(f"CREATE TABLE {name} ({columns})")
    return f"pgvector://{pg_dir}?table={name}"


def rows(pg_dir: Path, sql: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(embedded_conninfo(pg_dir)) as conn:
        return conn.execute(sql).fetchall()


def table_exists(pg_dir: Path, name: str) -> bool:
    return rows(pg_dir, f"SELECT to_regclass('public.{name}')") != [(None,)]


def hex_keys_into_a_uuid_table(
    engine: list[str], url_for: Callable[..., str], pg_dir: Path, name: str
) -> dict[str, Any]:
    """Migrate 32-hex UUID keys from a bucket into a uuid-keyed table through the CLI; the ids
    psycopg reads are those UUIDs, every one. Returns the migrate report."""
    source = url_for("s3vectors", write_rate=0)
    records = hex_uuid_records()
    with vectorport.connect(source, dimension=DIM) as store:
        store.upsert(records)
    target = uuid_table(pg_dir, name)
    out = CliRunner().invoke(app, ["migrate", source, target, *engine, "--no-progress", "--json"])
    assert out.exit_code == 0, out.output
    ids = {r[0] for r in rows(pg_dir, f"SELECT id FROM {name}")}
    assert ids == {uuid.UUID(r.key) for r in records}
    return dict(json.loads(out.stdout))


def swapped_part_is_refused(engine: list[str], pg_dir: Path, tmp_path: Path, name: str) -> str:
    """Export two snapshots of several parts; copy one part of the second over the first's
    (manifest untouched); ``import`` refuses the first with nothing written (psycopg finds no
    table or an empty one). Returns the CLI's output."""
    for label, offset in (("a", 0), ("b", 10_000)):
        url = f"memory://swap-{name}-{label}"
        with vectorport.connect(url, dimension=DIM) as store:
            store.upsert(
                [Record(f"k{offset + i}", [1.0, i, 0.5, offset], {"i": i}, f"t{i}") for i in range(600)]
            )
        export(url, tmp_path / label, max_part_bytes=4_000, verify=False)
    parts = sorted((tmp_path / "a").glob("part-*.parquet"))
    assert len(parts) >= 3
    swapped = sorted((tmp_path / "b").glob("part-*.parquet"))[1]
    shutil.copyfile(swapped, parts[1])
    target = f"pgvector://{pg_dir}?table={name}"
    out = CliRunner().invoke(app, ["import", str(tmp_path / "a"), target, *engine, "--no-progress"])
    assert out.exit_code == 2, out.output  # a bad input file
    assert "does not match its manifest" in out.output, out.output
    if table_exists(pg_dir, name):
        assert rows(pg_dir, f"SELECT count(*) FROM {name}") == [(0,)]
    return str(out.output)
