"""A pgvector table to create in the ``vecs`` layout has no text column: records with texts
are refused at plan time (``--plan``, and a migration before any write), naming the layout and
what to do; with ``text_key=`` in the target URL the texts go into the metadata."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from typer.testing import CliRunner

import vectorport
from vectorport import Record
from vectorport.backends.pgvector._embedded import embedded_conninfo
from vectorport.cli import app

pytestmark = pytest.mark.pgvector
runner = CliRunner()


def _source(name: str) -> str:
    url = f"memory://{name}"
    with vectorport.connect(url, dimension=2) as store:
        store.upsert([Record(f"k{i}", [1.0, float(i)], {"i": i}, f"text {i}") for i in range(5)])
    return url


def _tables(pg_dir: Path) -> list[str]:
    with psycopg.connect(embedded_conninfo(pg_dir)) as conn:
        rows = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'vecs'"
        ).fetchall()
    return sorted(r[0] for r in rows)


def test_texts_into_a_vecs_table_are_refused_by_the_plan(url_for: Callable[..., str], pg_dir: Path) -> None:
    source = _source("vecs-texts-src")
    target = url_for("pgvector", "vecs_texts", layout="vecs")
    planned = runner.invoke(app, ["migrate", source, target, "--plan", "--no-progress", "--json"])
    assert planned.exit_code == 4, planned.output
    reasons = json.loads(planned.stdout)["plan"]["reasons"]
    assert any("vecs table has no text column" in r and "text_key=" in r for r in reasons), reasons
    assert "vecs_texts" not in _tables(pg_dir)

    run = runner.invoke(app, ["migrate", source, target, "--no-progress"])
    assert run.exit_code == 4, run.output
    assert "the vecs table has no text column" in run.output
    assert "layout= vectorport" in run.output
    assert "vecs_texts" not in _tables(pg_dir)  # refused before the table was made


def test_with_text_key_the_texts_are_kept_in_the_metadata(url_for: Callable[..., str], pg_dir: Path) -> None:
    source = _source("vecs-texts-key-src")
    target = url_for("pgvector", "vecs_text_key", layout="vecs", text_key="body")
    run = runner.invoke(app, ["migrate", source, target, "--no-progress"])
    assert run.exit_code == 0, run.output
    with psycopg.connect(embedded_conninfo(pg_dir)) as conn:
        rows = conn.execute("SELECT id, metadata->>'body' FROM vecs.vecs_text_key ORDER BY id").fetchall()
    assert rows == [(f"k{i}", f"text {i}") for i in range(5)]
