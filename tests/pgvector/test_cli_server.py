"""``vectorport pgvector start|stop``: the embedded server left running for psql and other clients."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import vectorport

pytestmark = pytest.mark.pgvector
psycopg = pytest.importorskip("psycopg")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vectorport", "pgvector", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_start_prints_a_uri_that_outside_clients_use_then_stop(tmp_path: Path) -> None:
    data = tmp_path / "pgdata"
    with vectorport.connect(f"pgvector://{data}?table=docs&index=exact", dimension=3) as store:
        store.upsert([vectorport.Record("docs/a.md#chunk0", [1, 2, 3], {"lang": "en"}, "hello")])
    started = _cli("start", str(data), "--json")
    assert started.returncode == 0, started.stderr
    info = json.loads(started.stdout)
    try:
        # the writer process has exited: the server is up only because `start` kept it
        with psycopg.connect(info["uri"]) as conn:
            row = conn.execute("SELECT key, metadata->>'lang', text, embedding::text FROM docs").fetchone()
        assert row == ("docs/a.md#chunk0", "en", "hello", "[1,2,3]")
        psql = shutil.which("psql")
        if psql:
            out = subprocess.run(
                [psql, info["uri"], "-At", "-c", "SELECT count(*) FROM docs"],
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert out.stdout.strip() == "1", out.stderr
        again = _cli("start", str(data))  # idempotent: reuses the running server
        assert again.returncode == 0 and again.stdout.strip() == info["uri"]
    finally:
        stopped = _cli("stop", str(data), "--json")
    assert json.loads(stopped.stdout) == {
        "schema": "vectorport.pgvector-stop/1",
        "data_dir": str(data),
        "stopped": True,
    }
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(info["uri"], connect_timeout=5)
    assert json.loads(_cli("stop", str(data), "--json").stdout)["stopped"] is False


def test_start_without_a_directory_is_a_usage_error() -> None:
    res = _cli("start", "")
    assert res.returncode == 2 and "data directory" in res.stderr
