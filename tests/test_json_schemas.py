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
from vectorport.engine import _progress as progress_module
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
    for name in ("json-src", "json-dst", "json-imp", "json-docs", "json-drop", "json-alias"):
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
        ("diff", ["diff", "memory://json-src", "memory://json-dst"]),
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
        *alias_commands(),
    ]


def alias_commands() -> list[tuple[str, list[str]]]:
    """The cut-over of an alias from json-src to json-alias (no gate: nothing was shadowed)."""
    off = ["--min-queries", "0", "--min-overlap", "0", "--max-p99-ratio", "0"]
    return [
        ("alias create", ["alias", "create", "json", "--serve", "memory://json-src"]),
        ("alias shadow", ["alias", "shadow", "json", "memory://json-alias"]),
        ("alias switch", ["alias", "switch", "json", *off]),
        ("alias rollback", ["alias", "rollback", "json"]),
        ("alias switch", ["alias", "switch", "json", *off]),
        ("alias retire", ["alias", "retire", "json", "memory://json-src"]),
        ("alias status", ["alias", "status", "json"]),
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


# ---------------------------------------------------------------------- --progress json: JSON Lines on stderr


def progress_lines(stderr: str) -> list[dict[str, Any]]:
    """Every stderr line of a ``--progress json`` run, each validated against its schema."""
    lines = [json.loads(line) for line in stderr.splitlines() if line.strip()]
    assert lines, "no progress line"
    assert {check(doc) for doc in lines} == {"vectorport.progress/1"}, stderr
    return lines


@pytest.mark.memory
@pytest.mark.parametrize(
    ("command", "stages"),
    [("migrate", {"copy", "verify"}), ("sync", {"sync"}), ("verify", {"verify"})],
)
def test_progress_json_writes_json_lines_on_stderr_and_the_report_on_stdout(
    command: str, stages: set[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(progress_module, "JSON_INTERVAL", 0.0)  # every move is a line
    src = vectorport.connect(f"memory://progress-src-{command}", dimension=8)
    src.upsert(clustered_records(300, 8, seed=3))
    dst = f"memory://progress-dst-{command}"
    extra = {"migrate": ["--checkpoint", str(tmp_path / "ck")], "sync": ["--state", str(tmp_path / "st")]}
    if command == "verify":
        vectorport.migrate.run(src.url.raw, dst, checkpoint=tmp_path / "ck.json")
    args = [command, "--progress", "json", src.url.raw, dst, *extra.get(command, [])]
    try:
        res = CliRunner().invoke(app, [*args, "--json"])
        assert res.exit_code == 0, res.output
        check(json.loads(res.stdout))  # stdout: the report alone
        lines = progress_lines(res.stderr)
        assert {doc["stage"] for doc in lines} == stages
        for stage in stages:  # each stage's first line says it started, its last that all was done
            mine = [doc for doc in lines if doc["stage"] == stage]
            assert mine[0]["done"] == 0 and mine[-1]["done"] == mine[-1]["total"] == 300, mine
            assert [doc["done"] for doc in mine].count(0) == 1, mine  # one start line
            assert mine[-1]["rate"] > 0 and mine[-1]["eta"] == 0
    finally:
        for url in (src.url.raw, dst):
            with contextlib.suppress(vectorport.VectorportError):
                vectorport.connect(url).drop()


@pytest.mark.memory
@pytest.mark.parametrize("stall", ["advance", "update"])
def test_a_stage_that_stalls_writes_its_start_line_once(
    stall: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Work that reports no records for a while (Ray tasks not done yet, a scan segment with
    none) writes no line repeating the last one: one start line, one per move, one end line."""
    monkeypatch.setattr(progress_module, "JSON_INTERVAL", 0.0)
    with progress_module.Progress("verify", 10, enabled="json") as bar:
        for _ in range(3):
            if stall == "advance":
                bar.advance(0)
            else:
                bar.update(0, 10)
        bar.advance(4)
        bar.advance(0)
        bar.advance(6)
    lines = progress_lines(capsys.readouterr().err)
    assert [d["done"] for d in lines] == [0, 4, 10, 10]  # start, two moves, end
    assert {d["stage"] for d in lines} == {"verify"}


@pytest.mark.memory
def test_progress_flag_forms(tmp_path: Path) -> None:
    """A bare ``--progress`` (before the URLs too) is the bar, ``--no-progress`` nothing, a
    misspelt mode is refused naming the choices; Python takes ``progress="json"``."""
    src = vectorport.connect("memory://progress-forms", dimension=8)
    src.upsert(clustered_records(50, 8, seed=4))
    runner = CliRunner()
    try:
        bar = runner.invoke(app, ["migrate", "--progress", src.url.raw, "memory://progress-bar"])
        assert bar.exit_code == 0 and "copy" in bar.stderr and "━" in bar.stderr, bar.output
        quiet = runner.invoke(app, ["sync", src.url.raw, "memory://progress-bar", "--no-progress"])
        assert quiet.exit_code == 0 and "━" not in quiet.stderr and "{" not in quiet.stderr, quiet.output
        bad = runner.invoke(app, ["migrate", "--progress", "jsn", src.url.raw, "memory://progress-bad"])
        assert bad.exit_code == 2 and "jsn" in bad.stderr and "json" in bad.stderr, bad.output
        with pytest.raises(vectorport.VectorportError):
            vectorport.connect("memory://progress-bad")  # refused before anything was made
    finally:
        for name in ("progress-forms", "progress-bar"):
            with contextlib.suppress(vectorport.VectorportError):
                vectorport.connect(f"memory://{name}").drop()


def test_follow_lag_is_a_progress_line_with_lag_and_behind(capsys: pytest.CaptureFixture[str]) -> None:
    from vectorport.cli._cmd_sync import _LagPrinter
    from vectorport.migrate import ProgressMode
    from vectorport.sync._capture import Lag

    printer = _LagPrinter(as_json=True, follow=True, mode=ProgressMode.JSON)
    printer(Lag(0.5, 12, 100, "0/1A"))
    printer(Lag(0.0, 0, 112, "0/1B"))
    out, err = capsys.readouterr()
    lines = progress_lines(err)
    assert [(d["stage"], d["done"], d["lag"], d["behind"]) for d in lines] == [
        ("follow", 100, 0.5, 12),
        ("follow", 112, 0.0, 0),
    ]
    assert lines[1]["eta"] == 0
    assert [check(json.loads(line)) for line in out.splitlines()] == ["vectorport.sync.lag/1"] * 2
