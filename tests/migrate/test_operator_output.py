"""What an operator sees during a long migration into pgvector: the index build after a bulk
load reports progress (from ``pg_stat_progress_create_index``) and is timed apart from the copy,
and starting an embedded server prints a line."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import vectorport
from vectorport._activity import Activity, listening
from vectorport.cli import app

pytestmark = pytest.mark.pgvector
runner = CliRunner()


def test_index_build_progress_and_its_time_apart_from_the_copy(
    url_for: Callable[..., str], tmp_path: Path
) -> None:
    n, dim = 20_000, 128
    src = "memory://operator-index-src"
    rng = np.random.default_rng(5)
    vectorport.connect(src, dimension=dim).upsert(
        [vectorport.Record(f"k{i:06d}", rng.standard_normal(dim).astype(np.float32)) for i in range(n)]
    )
    target = url_for("pgvector")
    events: list[Activity] = []
    try:
        with listening(events.append):
            res = runner.invoke(
                app,
                [
                    "migrate",
                    src,
                    target,
                    "--checkpoint",
                    str(tmp_path / "ck.json"),
                    "--queries",
                    "0",
                    "--json",
                ],
            )
    finally:
        vectorport.connect(src).drop()
    assert res.exit_code == 0, res.output
    builds = [e for e in events if e.kind == "index_build"]
    assert builds[0].message.endswith(f"building the HNSW index over {n:,} rows") and builds[0].done is None
    assert builds[-1].finished and "HNSW index built in" in builds[-1].message
    progress = [e for e in builds if e.total]
    assert progress, "no progress was read from pg_stat_progress_create_index during the build"
    assert all(0 <= (e.done or 0) <= (e.total or 0) for e in progress)
    assert any("loading tuples" in e.message for e in progress), {e.message for e in progress}
    report = json.loads(res.stdout)
    copy, timings = report["copy"], report["timings"]
    assert copy["index_seconds"] > 0 and timings["index"] == pytest.approx(copy["index_seconds"], abs=1e-3)
    # the rate is the copy's (as the progress bar showed it), not diluted by the index build
    assert copy["records_per_second"] == pytest.approx(n / copy["seconds"], rel=0.01)
    assert timings["copy"] + timings["index"] <= timings["total"]


def test_embedded_server_start_prints_a_line() -> None:
    pytest.importorskip("psycopg")
    from vectorport.backends.pgvector._embedded import stop_embedded

    root = Path(tempfile.mkdtemp(prefix="vectorport-operator-"))
    root.chmod(0o755)
    data = root / "data"
    try:
        url = f"pgvector://{data}?table=docs"
        vectorport.connect("memory://operator-one", dimension=2).upsert([vectorport.Record("a", [1.0, 0.0])])
        res = runner.invoke(app, ["migrate", "memory://operator-one", url, "--no-progress"])
        assert res.exit_code == 0, res.output
        lines = res.stderr.splitlines()
        assert any(f"starting the embedded PostgreSQL server in {data}" in ln for ln in lines), res.stderr
        assert any("embedded PostgreSQL server ready" in ln for ln in lines), res.stderr
        res = runner.invoke(app, ["migrate", "memory://operator-one", url, "--no-progress", "-q"])
        assert "starting the embedded" not in res.stderr  # already running; and -q is quiet
    finally:
        vectorport.connect("memory://operator-one").drop()
        stop_embedded(data)
        shutil.rmtree(root, ignore_errors=True)
