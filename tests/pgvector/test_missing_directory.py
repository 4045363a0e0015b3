"""A read-only open of a ``pgvector://`` directory that holds no cluster names the directory and
creates nothing (a mistyped path used to get a new 40 MB cluster from `vectorport info`)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

import vectorport

pytestmark = pytest.mark.pgvector


@pytest.fixture
def nowhere() -> Path:
    return Path(tempfile.mkdtemp(prefix="vectorport-missing-")) / "pgg"


def test_open_names_the_missing_directory_and_creates_nothing(nowhere: Path) -> None:
    with pytest.raises(vectorport.NotFoundError, match=f"no PostgreSQL data directory at {nowhere}"):
        vectorport.connect(f"pgvector://{nowhere}?table=tickets")
    assert not nowhere.exists()


def test_info_and_a_migration_plan_create_no_cluster(nowhere: Path) -> None:
    env = {**os.environ, "COLUMNS": "200"}
    done = subprocess.run(
        [sys.executable, "-m", "vectorport", "info", f"pgvector://{nowhere}?table=tickets"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2 and str(nowhere) in done.stderr and "Traceback" not in done.stderr
    src = vectorport.connect("memory://missing-dir-src", dimension=2)
    try:
        src.upsert([vectorport.Record("a", [1, 0])])
        plan = vectorport.migrate.run(
            "memory://missing-dir-src", f"pgvector://{nowhere}?table=t", plan_only=True
        )
        assert plan.status == "planned"
    finally:
        src.drop()
    assert not nowhere.exists()


def test_a_missing_table_names_the_vector_tables_there_and_the_nearest(pg_url: Any, admin: Any) -> None:
    admin.execute("CREATE TABLE IF NOT EXISTS handmade_tickets (id bigint PRIMARY KEY, emb vector(3))")
    try:
        with pytest.raises(vectorport.NotFoundError) as info:
            vectorport.connect(pg_url(table="handmade_tickts"))
        message = str(info.value)
        assert "did you mean 'handmade_tickets'?" in message and "tables with a vector column" in message
    finally:
        admin.execute("DROP TABLE handmade_tickets")
