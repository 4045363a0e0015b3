"""The README's first screen works as printed: every line of its ``sh`` blocks runs, in order, in
one new shell, in a fresh copy of the repository, with no ``vectorport`` on PATH beforehand.

Two things differ from a new user's machine, to keep CI fast and offline: ``.venv`` is this test
run's virtualenv (so ``make demo`` does not build one; its recorded install stamp is kept newer
than ``pyproject.toml``), and ``DEMO_ARGS=--embedder hash:64`` makes the demo model-free. Chroma's
default embedding function finds its model in ``~/.cache/chroma`` as it would after its first
download (``tests/_chroma_onnx.py``)."""

from __future__ import annotations

import json
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


def test_the_offline_form_downloads_nothing(tmp_path: Path) -> None:
    """The README's offline one-liner makes the tickets collection with no download: every
    proxy points at a closed port, ``$HOME`` has no Chroma cache and gets none; chromadb reads
    back the three documents under its default function, and ``vectorport search`` (its
    packaged model) answers the login question with the login ticket."""
    chromadb = pytest.importorskip("chromadb")
    (line,) = [c for c in readme_commands() if c.startswith("HF_HUB_OFFLINE=1 python -c")]
    home = tmp_path / "home"
    home.mkdir()
    dead = "http://127.0.0.1:9"  # the discard port: any download through a proxy fails at once
    bin_dir = str(Path(sys.executable).parent)
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONHOME")},
        "PATH": os.pathsep.join([bin_dir, os.environ.get("PATH", "")]),
        "HOME": str(home),
        "PYTHONPATH": str(Path(vectorport.__file__).parents[1]),
        "ANONYMIZED_TELEMETRY": "False",
        **{name: dead for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy")},
        "NO_PROXY": "",
        "no_proxy": "",
    }
    proc = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", line],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert not (home / ".cache" / "chroma").exists()

    client = chromadb.PersistentClient(str(tmp_path / "my-chroma"))
    collection = client.get_collection("tickets")
    got = collection.get(ids=["t1", "t2", "t3"], include=["documents", "embeddings"])
    assert got["documents"][0] == "I cannot log in after resetting my password"
    assert len(got["embeddings"][0]) == 384
    assert collection.configuration_json["embedding_function"]["name"] == "default"

    url = f"chroma://{tmp_path / 'my-chroma'}?collection=tickets"
    search = subprocess.run(
        [sys.executable, "-m", "vectorport", "search", url, "login problems", "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert search.returncode == 0, search.stderr[-3000:]
    assert json.loads(search.stdout)["matches"][0]["key"] == "t1"
