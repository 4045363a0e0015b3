"""The README's first screen works as printed: every line of its ``sh`` blocks runs, in order, in
one new shell, in a fresh copy of the repository, with no ``vectorport`` on PATH beforehand.

Two things differ from a new user's machine, to keep CI fast and offline: ``.venv`` is this test
run's virtualenv (so ``make demo`` does not build one; its recorded install stamp is kept newer
than ``pyproject.toml``), and ``DEMO_ARGS=--embedder hash:64`` makes the demo model-free. Chroma's
default embedding function finds its model in ``~/.cache/chroma`` as it would after its first
download (``tests/_chroma_onnx.py``)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import vectorport

from ._chroma_onnx import home_with_model

pytestmark = pytest.mark.chroma

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"^```sh\n(.*?)^```", re.S | re.M)


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = [line for block in BLOCK.findall(text) for line in block.splitlines()]
    return [line for line in lines if line.strip() and not line.lstrip().startswith("#")]


def test_the_readme_blocks_are_the_first_steps() -> None:
    commands = readme_commands()
    assert commands[0].startswith("make demo")
    assert any(c.startswith("source .venv/bin/activate") for c in commands)
    assert any(c.startswith("vectorport search 'chroma://./my-chroma") for c in commands)


def test_readme_commands_work_as_printed(tmp_path: Path, chroma_default_ef: Path) -> None:
    venv = Path(sys.prefix)
    stamp = venv / ".installed"
    if venv == Path(sys.base_prefix) or not stamp.exists():
        pytest.skip("needs the tests to run in a virtualenv built by `make` (its .installed stamp)")
    repo = tmp_path / "vectorport"
    repo.mkdir()
    for name in ("Makefile", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, repo / name)
    for name in ("corpus", "docs"):
        shutil.copytree(ROOT / name, repo / name)
    (repo / ".venv").symlink_to(venv, target_is_directory=True)
    before = stamp.stat().st_mtime - 60
    os.utime(repo / "pyproject.toml", (before, before))
    (tmp_path / "home").mkdir()
    home = home_with_model(tmp_path / "home", chroma_default_ef)
    bin_dir = str(venv / "bin")
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p != bin_dir)
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONHOME")},
        "PATH": path,
        "HOME": str(home),
        "DEMO_ARGS": "--embedder hash:64",
        "PYTHONPATH": str(Path(vectorport.__file__).parents[1]),
        "ANONYMIZED_TELEMETRY": "False",
    }
    assert shutil.which("vectorport", path=path) is None
    script = "set -euo pipefail\n" + "\n".join(
        f"echo '>>> {i}'\n{c}" for i, c in enumerate(readme_commands())
    )
    proc = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, env=env, cwd=repo, timeout=900
    )
    ran = re.findall(r"^>>> (\d+)$", proc.stdout, re.M)
    failed = readme_commands()[int(ran[-1])] if ran else "(before the first command)"
    assert proc.returncode == 0, f"{failed}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert "t1" in proc.stdout  # the login ticket answers "login problems"
