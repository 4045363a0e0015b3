"""Every command's ``--json`` writes one JSON document on stdout (JSON Lines for ``sync``) that
names its schema and validates against the schema published in ``src/vectorport/schemas/``
(listed in ``docs/json.md``)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import typer
from typer.testing import CliRunner

import vectorport
from vectorport.cli import app
from vectorport.testing import clustered_records

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = resources.files("vectorport") / "schemas"


def schema_of(name: str) -> dict[str, Any]:
    """The published schema called ``vectorport.<command>/<n>``."""
    command, version = name.removeprefix("vectorport.").split("/")
    return json.loads((SCHEMAS / f"{command}-{version}.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def check(doc: dict[str, Any]) -> str:
    """Validate ``doc`` against the schema it names; return that name."""
    name = doc.get("schema")
    assert isinstance(name, str) and name.startswith("vectorport."), doc
    jsonschema.validate(doc, schema_of(name), cls=jsonschema.Draft202012Validator)
    return name


def test_every_published_schema_is_a_valid_schema_and_listed_in_the_docs() -> None:
    listed = (ROOT / "docs" / "json.md").read_text(encoding="utf-8")
    files = sorted(p.name for p in SCHEMAS.iterdir() if p.name.endswith(".json"))
    assert files
    for file in files:
        doc = json.loads((SCHEMAS / file).read_text(encoding="utf-8"))
        jsonschema.Draft202012Validator.check_schema(doc)
        command, version = file.removesuffix(".json").rsplit("-", 1)
        assert doc["properties"]["schema"]["const"] == f"vectorport.{command}/{version}"
        assert f"`vectorport.{command}/{version}`" in listed, file


def json_commands() -> set[str]:
    """Every command (``group sub`` for sub-commands) that has a ``--json`` option."""
    found: set[str] = set()

    def walk(cmd: Any, prefix: str) -> None:
        if hasattr(cmd, "commands"):  # a group (typer's own click)
            for name, sub in cmd.commands.items():
                walk(sub, f"{prefix} {name}".strip())
        elif any("--json" in p.opts for p in cmd.params):
            found.add(prefix)

    walk(typer.main.get_command(app), "")
    return found


# ---------------------------------------------------------------------- memory:// commands, in process


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    tmp = tmp_path_factory.mktemp("json")
    patch = pytest.MonkeyPatch()
    patch.setenv("VECTORPORT_STATE_DIR", str(tmp / "state-dir"))  # checkpoints of this test only
    src = vectorport.connect("memory://json-src", dimension=8)
    src.upsert(clustered_records(120, 8, seed=5))
    docs = tmp / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Vectors\n\nVectors are lists of numbers.\n\nThey have a dimension.\n")
    (tmp / "q.jsonl").write_text(json.dumps({"text": "vectors", "relevant": ["a.md#0"]}) + "\n")
    yield tmp
    patch.undo()
    for name in ("json-src", "json-dst", "json-imp", "json-docs", "json-drop"):
        with contextlib.suppress(vectorport.VectorportError):
            vectorport.connect(f"memory://{name}").drop()


def memory_commands(tmp: Path) -> list[tuple[str, list[str]]]:
    return [
        ("backends", ["backends"]),
        ("info", ["info", "memory://json-src"]),
        ("compare", ["compare", "memory://json-src", "--sample", "3", "-k", "3", "--warmup", "0"]),
        ("migrate", ["migrate", "memory://json-src", "memory://json-plan", "--plan"]),
        ("migrate", ["migrate", "memory://json-src", "memory://json-dst"]),
        ("verify", ["verify", "memory://json-src", "memory://json-dst"]),
        ("sync", ["sync", "memory://json-src", "memory://json-dst", "--state", str(tmp / "state")]),
        ("export", ["export", "memory://json-src", str(tmp / "snap")]),
        ("import", ["import", str(tmp / "snap"), "memory://json-imp"]),
        ("ingest", ["ingest", str(tmp / "docs"), "memory://json-docs", "--embedder", "hash:16"]),
        ("search", ["search", "memory://json-docs", "vectors"]),
        ("doctor", ["doctor", "memory://json-docs"]),
        (
            "compare",
            ["compare", "memory://json-docs", "--queries", str(tmp / "q.jsonl"), "--mode", "vector,text"],
        ),
        ("pgvector schema", ["pgvector", "schema", "--table", "t", "--dim", "3"]),
        ("drop", ["drop", "memory://json-imp", "--yes"]),
    ]


# commands whose --json is checked by the tests below that start their servers
SERVER_COMMANDS = {"bucket serve", "pgvector start", "pgvector stop", "pgvector build-index"}


@pytest.mark.memory
def test_every_json_command_is_checked(workspace: Path) -> None:
    checked = {name for name, _ in memory_commands(workspace)} | SERVER_COMMANDS
    assert json_commands() <= checked, json_commands() - checked


@pytest.mark.memory
def test_each_command_prints_one_document_of_its_schema(workspace: Path) -> None:
    runner = CliRunner()
    seen = []
    for name, args in memory_commands(workspace):
        res = runner.invoke(app, [*args, "--json"])
        assert res.exit_code == 0, (name, res.output)
        if name == "sync":  # JSON Lines: one compact document per line
            lines = res.stdout.splitlines()
            assert len(lines) == 1, res.stdout
            doc = json.loads(lines[0])
        else:
            doc = json.loads(res.stdout)  # exactly one document: nothing else on stdout
        seen.append(check(doc))
    assert "vectorport.compare-modes/1" in seen and "vectorport.migrate/1" in seen


@pytest.mark.memory
def test_a_failure_under_json_is_a_document_too() -> None:
    res = CliRunner().invoke(app, ["info", "bogus://x", "--json"])
    assert res.exit_code == 2
    doc = json.loads(res.stdout)
    assert check(doc) == "vectorport.error/1" and doc["exit_code"] == 2 and "bogus" in doc["error"]


@pytest.mark.memory
def test_compare_json_takes_urls_after_it(workspace: Path) -> None:
    res = CliRunner().invoke(
        app, ["compare", "--json", "memory://json-src", "memory://json-src", "--sample", "2"]
    )
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert check(doc) == "vectorport.compare/1" and len(doc["stores"]) == 2


# ---------------------------------------------------------------------- commands that run servers
@pytest.mark.s3vectors
def test_bucket_serve_prints_its_endpoint_as_a_document(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    cmd = [
        sys.executable,
        "-m",
        "vectorport",
        "bucket",
        "serve",
        "--port",
        "0",
        "--data",
        str(tmp_path),
        "--json",
    ]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env) as proc:
        try:
            assert proc.stdout is not None
            doc = json.loads(proc.stdout.readline())
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
    assert check(doc) == "vectorport.bucket-serve/1" and doc["endpoint_url"].startswith("http://")


@pytest.mark.pgvector
def test_pgvector_commands_print_documents_of_their_schemas(tmp_path: Path) -> None:
    runner = CliRunner()
    data = tmp_path / "pg"
    started = runner.invoke(app, ["pgvector", "start", str(data), "--json"])
    try:
        assert started.exit_code == 0, started.output
        assert check(json.loads(started.stdout)) == "vectorport.pgvector-start/1"
        store = vectorport.connect(f"pgvector://{data}?table=docs", dimension=3)
        store.upsert([vectorport.Record("a", [1.0, 0.0, 0.0])])
        store.close()
        built = runner.invoke(app, ["pgvector", "build-index", f"pgvector://{data}?table=docs", "--json"])
        assert built.exit_code == 0, built.output
        assert check(json.loads(built.stdout)) == "vectorport.pgvector-build-index/1"
    finally:
        stopped = runner.invoke(app, ["pgvector", "stop", str(data), "--json"])
    assert stopped.exit_code == 0, stopped.output
    assert check(json.loads(stopped.stdout)) == "vectorport.pgvector-stop/1"
