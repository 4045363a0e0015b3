"""``make demo`` end to end with the fast hash embedder (the real run uses MiniLM): every step
that this tree can run must succeed, and the unchanged re-ingest must not embed anything."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import vectorport
from vectorport.demo import repository_root

pytestmark = pytest.mark.memory


def test_demo_runs_end_to_end() -> None:
    root = repository_root()
    if root is None:
        pytest.skip("not a source checkout")
    work = Path(tempfile.mkdtemp(prefix="vectorport-demo-"))
    work.chmod(0o755)  # the embedded PostgreSQL runs as another user
    env = {**os.environ, "PYTHONPATH": str(Path(vectorport.__file__).parents[1])}
    proc = subprocess.run(
        [sys.executable, "-m", "vectorport.demo", "--embedder", "hash:64", "--workdir", str(work)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd=root,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    summary = json.loads((work / "summary.json").read_text())
    steps = {s["name"]: s for s in summary["steps"]}
    assert all(s["status"] in ("ok", "skipped") for s in steps.values())
    assert steps["re-ingest the unchanged corpus"]["detail"].endswith("embedding calls 0")
    assert "where everything is" in proc.stdout
    if "compare the stores on text queries" in steps and (work / "report.html").exists():
        assert (work / "report.json").exists()
