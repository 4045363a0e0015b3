"""``make demo`` end to end with the fast hash embedder (the real run uses MiniLM): every step
that this tree can run must succeed, and the unchanged re-ingest must not embed anything."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import vectorport
from vectorport.examples.demo import repository_root

pytestmark = pytest.mark.memory


def test_demo_runs_end_to_end() -> None:
    root = repository_root()
    if root is None:
        pytest.skip("not a source checkout")
    work = Path(tempfile.mkdtemp(prefix="vectorport-demo-"))
    work.chmod(0o755)  # the embedded PostgreSQL runs as another user
    env = {**os.environ, "PYTHONPATH": str(Path(vectorport.__file__).parents[1])}
    proc = subprocess.run(
        [sys.executable, "-m", "vectorport.examples.demo", "--embedder", "hash:64", "--workdir", str(work)],
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
        report = (work / "report.html").read_text()
        # the demo's queries are filtered too, and gated: the report says what the terminal says
        assert 'id="plot-recall-filter"' in report and "<h2>Per filter</h2>" in report
        assert (
            "gates passed" in report
            and "gates passed" in steps["compare the stores on text queries"]["detail"]
        )
    # every command the demo suggests works as printed in a new shell, venv not activated
    assert summary["try"] and all(line in proc.stdout for line in summary["try"])
    venv_bin = str(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p != venv_bin)
    for line in summary["try"]:
        tried = subprocess.run(
            ["bash", "-c", line],
            capture_output=True,
            text=True,
            env={**env, "PATH": path},
            timeout=300,
            cwd=root,
        )
        assert tried.returncode == 0, (line, tried.stdout[-2000:], tried.stderr[-2000:])
        if " ingest " in line:  # the same chunking and model: nothing to re-embed
            assert re.search(r"embedding calls\W+0\b", tried.stdout), tried.stdout
