"""Every fenced code block of README.md and docs/ (found by itself: a new page is covered) runs as
written, in a sandbox directory, so a doc that drifts from the code fails the build.

How a block is treated, by its info string (the word after the fence):

* ``python``: executed. The python blocks of one page that follow each other (no shell block in
  between) share one interpreter and namespace, in order.
* ``sh``, ``bash``, ``shell``: run by ``bash -euo pipefail``; ``console``: its ``$ `` lines (with
  their ``\\`` continuations) are run, the other lines are the output they print.
* ``json``: parsed.
* ``text`` (output, diagrams): not code; counted as text.
* anything marked to skip — ``skip`` among the info words (```` ```sh skip ````) or an HTML comment
  ``<!-- skip: why -->`` on the line before the fence — is not run, and counted. Any other block
  (no language, ``sql``…) fails the count test: mark it.

The sandbox: a fresh directory per page holding a copy of ``corpus/``; ``PATH`` starts with this
interpreter's ``bin`` (``vectorport`` on it), ``HOME`` and vectorport's state are the sandbox's;
``s3vectors://`` URLs without ``endpoint_url`` reach a local bucket server
(``AWS_ENDPOINT_URL_S3VECTORS``, dummy credentials); ``pgvector://DIR`` starts an embedded
PostgreSQL in the sandbox (stopped afterwards); Chroma directories are the sandbox's.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import vectorport

ROOT = Path(__file__).resolve().parents[1]
RUN = {"python", "py", "sh", "bash", "shell", "console", "json"}
FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^\n`]*)$")
SKIP_COMMENT = re.compile(r"<!--\s*skip\b[^>]*-->")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    """1-based line of the opening fence."""
    info: str
    code: str
    skip_comment: bool = False

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    @property
    def lang(self) -> str:
        words = self.info.split()
        return words[0].lower() if words else ""

    @property
    def kind(self) -> str:
        """``skip``, ``text``, ``run`` or ``unmarked``."""
        if self.skip_comment or "skip" in self.info.split()[1:]:
            return "skip"
        if self.lang == "text":
            return "text"
        return "run" if self.lang in RUN else "unmarked"


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks_of(path: Path) -> list[Block]:
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        fence = m.group("fence")
        end = i + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        body = "\n".join(line[len(m.group("indent")) :] for line in lines[i + 1 : end])
        prev = lines[i - 1] if i else ""
        out.append(Block(path, i + 1, m.group("info").strip(), body + "\n", bool(SKIP_COMMENT.search(prev))))
        i = end + 1
    return out


def all_blocks() -> list[Block]:
    return [b for page in pages() for b in blocks_of(page)]


def console_commands(code: str) -> str:
    """The commands of a console transcript: ``$ `` lines and their continuations."""
    out: list[str] = []
    continuing = False
    for line in code.splitlines():
        if line.startswith("$ "):
            out.append(line[2:])
        elif continuing:
            out.append(line)
        else:
            continue
        continuing = line.rstrip().endswith("\\")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------- the count
def test_every_block_is_run_or_marked(capsys: pytest.CaptureFixture[str]) -> None:
    blocks = all_blocks()
    kinds = {k: [b for b in blocks if b.kind == k] for k in ("run", "skip", "text", "unmarked")}
    with capsys.disabled():
        print(
            f"\ndocs blocks: {len(blocks)} in {len(pages())} pages: {len(kinds['run'])} run, "
            f"{len(kinds['skip'])} marked skip, {len(kinds['text'])} text"
        )
    assert sum(len(v) for v in kinds.values()) == len(blocks)
    unmarked = [f"{b.where} ({b.info or 'no language'})" for b in kinds["unmarked"]]
    assert not unmarked, "blocks neither runnable nor marked (```text, ```LANG skip or <!-- skip -->): " + (
        ", ".join(unmarked)
    )


# ---------------------------------------------------------------------- the sandbox
@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    pytest.importorskip("boto3")
    from vectorport.bucketserver import LocalServer

    server = LocalServer()
    server.start()
    yield server.url
    server.stop()


@pytest.fixture
def sandbox(endpoint: str) -> Iterator[tuple[Path, dict[str, str]]]:
    # not under pytest's tmp_path (mode 0700): an embedded PostgreSQL started as root runs as an
    # unprivileged user that must reach its data directory
    root = Path(tempfile.mkdtemp(prefix="vectorport-docs-"))
    root.chmod(0o755)
    shutil.copytree(ROOT / "corpus", root / "corpus")
    (root / "home").mkdir()
    bin_dir = str(Path(sys.executable).parent)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "VOYAGE_", "PG"))},
        "PATH": os.pathsep.join([bin_dir, os.environ.get("PATH", "")]),
        "HOME": str(root / "home"),
        "VECTORPORT_STATE_DIR": str(root / "state"),
        "PYTHONPATH": str(Path(vectorport.__file__).parents[1]),
        "AWS_ENDPOINT_URL_S3VECTORS": endpoint,
        "AWS_ACCESS_KEY_ID": "docs",
        "AWS_SECRET_ACCESS_KEY": "docs",
        "AWS_DEFAULT_REGION": "us-east-1",
        "ANONYMIZED_TELEMETRY": "False",
        "COLUMNS": "160",
    }
    yield root, env
    _stop_servers(root)
    shutil.rmtree(root, ignore_errors=True)


def _stop_servers(root: Path) -> None:
    from vectorport.backends.pgvector._embedded import stop_embedded

    for marker in root.rglob("PG_VERSION"):
        if marker.parent.name != "base":
            stop_embedded(marker.parent)


# ---------------------------------------------------------------------- running a page
PY_RUNNER = textwrap.dedent(
    """
    import json, sys, traceback
    namespace = {"__name__": "__main__"}
    for path, line, code in json.load(open(sys.argv[1], encoding="utf-8")):
        where = f"{path}:{line}"
        try:  # padded so that a traceback's line numbers are the page's
            exec(compile("\\n" * line + code, path, "exec"), namespace)
        except BaseException:
            print(f"DOCS BLOCK FAILED: {where}", file=sys.stderr)
            traceback.print_exc()
            sys.exit(1)
    """
)


def _groups(blocks: list[Block]) -> Iterator[list[Block]]:
    """Runnable blocks in page order, consecutive python blocks grouped."""
    group: list[Block] = []
    for b in blocks:
        if b.kind != "run":
            continue
        if b.lang in ("python", "py"):
            group.append(b)
            continue
        if group:
            yield group
            group = []
        yield [b]
    if group:
        yield group


def _run(group: list[Block], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    first = group[0]
    if first.lang in ("python", "py"):
        payload = cwd / ".docs-blocks.json"
        rows = [[str(b.path.relative_to(ROOT)), b.line, b.code] for b in group]
        payload.write_text(json.dumps(rows), encoding="utf-8")
        runner = cwd / ".docs-runner.py"
        runner.write_text(PY_RUNNER, encoding="utf-8")
        cmd = [sys.executable, str(runner), str(payload)]
        return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    script = console_commands(first.code) if first.lang == "console" else first.code
    cmd = ["bash", "-euo", "pipefail", "-c", script]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _backends(path: Path) -> list[Any]:
    text = path.read_text(encoding="utf-8")
    found = [m for m in ("pgvector", "chroma", "s3vectors") if f"{m}:/" in text or f"{m}+" in text]
    return [getattr(pytest.mark, m) for m in found] or [pytest.mark.memory]


RUNNABLE = [p for p in pages() if any(b.kind == "run" for b in blocks_of(p))]


@pytest.mark.parametrize(
    "page",
    [pytest.param(p, id=str(p.relative_to(ROOT)), marks=_backends(p)) for p in RUNNABLE],
)
def test_page_blocks_run_as_written(page: Path, sandbox: tuple[Path, dict[str, str]]) -> None:
    cwd, env = sandbox
    for group in _groups(blocks_of(page)):
        if group[0].lang == "json":
            try:
                json.loads(group[0].code)
            except json.JSONDecodeError as exc:
                pytest.fail(f"{group[0].where}: not JSON: {exc}", pytrace=False)
            continue
        proc = _run(group, cwd, env)
        if proc.returncode != 0:
            where = re.search(r"DOCS BLOCK FAILED: (\S+)", proc.stderr)
            name = where.group(1) if where else group[0].where
            pytest.fail(
                f"{name}: the block failed (exit {proc.returncode})\n--- stdout\n{proc.stdout[-2500:]}"
                f"\n--- stderr\n{proc.stderr[-4000:]}",
                pytrace=False,
            )
