"""Advice is structured: library errors and report notes carry the options they name as
:class:`~vectorport.exceptions.Advice`; the library says them as keyword arguments, the command
line as its flags, from the parts, never by reading the sentence."""

from __future__ import annotations

import ast
import contextlib
import pickle
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import vectorport
from vectorport.cli import app
from vectorport.cli._common import cli_text
from vectorport.exceptions import (
    Advice,
    Advised,
    Call,
    ConfigurationError,
    NotFoundError,
    Problem,
    ValidationError,
)
from vectorport.migrate import sync

pytestmark = pytest.mark.memory


@pytest.fixture
def source() -> Iterator[str]:
    url = "memory://advice-src"
    store = vectorport.connect(url, dimension=2)
    store.upsert([vectorport.Record(f"k{i}", [1.0, float(i)], {"i": i}, "t") for i in range(5)])
    yield url
    store.drop()
    with contextlib.suppress(NotFoundError):
        vectorport.connect("memory://advice-dst").drop()


def test_a_library_error_carries_its_advice_and_the_cli_prints_the_flags(source: str, tmp_path: Path) -> None:
    missing = tmp_path / "none.json"
    with pytest.raises(ConfigurationError) as refused:
        vectorport.migrate.run(source, "memory://advice-dst", checkpoint=missing, resume=True)
    assert refused.value.advice == (Advice("resume", True), Advice("checkpoint"), Advice("resume", True))
    assert str(refused.value).startswith(f"resume=True, but there is no checkpoint at {missing}")
    assert "give checkpoint= the file of the interrupted run" in str(refused.value)
    out = CliRunner().invoke(
        app, ["migrate", source, "memory://advice-dst", "--checkpoint", str(missing), "--resume"]
    )
    assert out.exit_code == 2, out.output
    line = " ".join(out.stderr.split())
    assert f"--resume, but there is no checkpoint at {missing}" in line, line
    assert "give --checkpoint the file of the interrupted run, or run without --resume" in line, line
    assert "resume=True" not in line and "checkpoint=" not in line, line


def test_a_report_note_carries_its_advice(source: str, tmp_path: Path) -> None:
    state = tmp_path / "s.sqlite"
    sync(source, "memory://advice-dst", state=state)
    vectorport.connect(source).delete(["k0"])
    report = sync(source, "memory://advice-dst", state=state)
    (note,) = report.notes
    assert isinstance(note, Advised) and note.advice == (Advice("delete", True),)
    assert note == "1 records in the target are not in the source; pass delete=True to delete them"
    assert report.to_dict()["notes"] == [note]


def test_rewording_the_sentence_cannot_break_the_cli_advice() -> None:
    reworded = ConfigurationError(
        Advised.of(
            "an entirely new sentence, {} first and {} later, then {} and {}",
            Advice("metadata_policy", "stringify"),
            Advice("verify", False),
            Advice("text_key", None),
            Call("sync", ("memory://a", "s3vectors://b/i?region=x&y=z")),
        )
    )
    assert cli_text(reworded) == (
        "an entirely new sentence, --metadata-policy stringify first and --no-verify later, then "
        "no --text-key and vectorport sync memory://a 's3vectors://b/i?region=x&y=z'"
    )
    # the command line never reads a sentence: a plain one keeps its Python wording
    assert cli_text("pass metadata_policy='flatten'") == "pass metadata_policy='flatten'"
    # an option the command line does not offer keeps the library's wording
    assert cli_text(Advised.of("use {}", Advice("float_ulps", 2))) == "use float_ulps=2"


def test_advice_survives_pickling_and_composition() -> None:
    inner = Advised.of("pass {} (whole: {:g})", Advice("max_outage", 30.0), 30.0)
    outer = Advised.of("{!r} failed; {}", "x", inner)
    assert outer == "'x' failed; pass max_outage=30 (whole: 30)"
    assert outer.advice == (Advice("max_outage", 30.0),)
    again = pickle.loads(pickle.dumps(ConfigurationError(outer)))
    assert again.advice == outer.advice and str(again) == outer


def test_a_validation_error_keeps_the_advice_of_its_hint() -> None:
    hint = Advised.of("run again (with a {}, {} continues it)", Advice("checkpoint"), Advice("resume", True))
    error = ValidationError([Problem("k1", "vector", "is empty")], hint=hint)
    assert error.advice == (Advice("checkpoint"), Advice("resume", True))
    assert str(error).endswith(
        "nothing was written. run again (with a checkpoint=, resume=True continues it)"
    )
    assert cli_text(error).endswith("run again (with a --checkpoint, --resume continues it)")


CREATE = "`vectorport ingest PATH URL` (--embedder and --metric set its spec) or `vectorport migrate SRC URL`"


def _said(args: list[str]) -> str:
    """The error line a command prints (exit 2), on one line."""
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 2, out.output
    return " ".join(out.stderr.split())


@pytest.mark.parametrize(
    ("url", "python", "command_line"),
    [
        ("memory://advice-missing", "pass dimension= (and metric=) to create it", f"create it with {CREATE}"),
        pytest.param(
            "chroma://{tmp}/typo?collection=docs",
            "check the path, or pass dimension= (and metric=) to create the collection there",
            f"check the path, or create the collection there with {CREATE}",
            marks=pytest.mark.chroma,
        ),
    ],
    ids=["memory", "chroma"],
)
def test_creating_a_collection_is_a_keyword_in_python_and_a_command_on_the_command_line(
    url: str, python: str, command_line: str, tmp_path: Path
) -> None:
    url = url.format(tmp=tmp_path)
    with pytest.raises(NotFoundError) as missing:
        vectorport.connect(url)
    assert str(missing.value).endswith(python), str(missing.value)
    said = _said(["search", url, "login"])
    assert said.endswith(command_line), said
    assert "dimension=" not in said and "metric=)" not in said, said


def test_following_without_capture_is_a_keyword_in_python_and_a_flag_on_the_command_line(
    source: str, tmp_path: Path
) -> None:
    with pytest.raises(ConfigurationError) as refused:
        sync(source, "memory://advice-dst", state=tmp_path / "s.sqlite", follow=True)
    assert str(refused.value) == (
        f"{source} cannot capture its changes (only PostgreSQL sources can), so follow=True has "
        "nothing to follow: call sync again on a schedule instead, which scans"
    )
    said = _said(["sync", source, "memory://advice-dst", "--state", str(tmp_path / "c.sqlite"), "--follow"])
    assert said.endswith("so --follow has nothing to follow: run sync --every 30s instead, which scans"), said


def test_an_alias_command_is_a_call_in_python_and_a_command_line_on_the_command_line(tmp_path: Path) -> None:
    from vectorport import alias

    registry = str(tmp_path / "aliases.sqlite")
    with pytest.raises(NotFoundError) as missing:
        alias.status("nosuch", registry=registry)
    assert str(missing.value).endswith("create it with `vectorport.alias.create('nosuch', serve='URL')`")
    said = _said(["alias", "status", "nosuch", "--registry", registry])
    assert said.endswith("create it with `vectorport alias create nosuch --serve URL`"), said


def test_an_option_of_a_command_declared_by_hand_is_said_as_its_flag() -> None:
    """Advice naming a hand-declared option (doctor's ``--embedder`` and its ``--no-embedder``
    switch, ingest's ``--root``) is said as the flag; in Python as the keyword."""
    error = ConfigurationError(
        Advised.of(
            "pass {} or none ({}); give {}", Advice("embedder"), Advice("embedder", None), Advice("root")
        )
    )
    assert str(error) == "pass embedder= or none (embedder=None); give root="
    assert cli_text(error) == "pass --embedder or none (--no-embedder); give --root"


_COMMANDS = (
    "alias|bucket|compare|diff|doctor|drop|export|import|info|ingest|migrate|pgvector|search|sync|verify"
)
_NAMES_THE_CLI = re.compile(rf"(?<![\w-])--[a-z][a-z-]+|[`(]vectorport ({_COMMANDS})\b")
"""A flag, or a command line quoted in a sentence."""
_CLI_MODULES = (
    "cli/",
    "examples/",
    "bucketserver/_main.py",
    "alias/_html.py",
    "compare/_html.py",
    "compare/_modes_html.py",
    "compare/_table.py",
)
"""Modules that are command lines themselves (vectorport's, the demo's, the bucket server's), and
the pages a command writes (titled by the command line that made them)."""
_KNOWN = {
    ("alias/_follower.py", "`vectorport alias status` shows it caught up"): "an alias report's gate detail",
    ("alias/_follower.py", "(another --state, or another host)"): "an alias report's gate detail",
    ("alias/_phases.py", "(`sync --follow` of these two stores"): "an alias report's note",
    ("backends/chroma/_server.py", "--path"): "the argv of Chroma's own server",
    ("backends/chroma/_server.py", "--host"): "the argv of Chroma's own server",
    ("backends/chroma/_server.py", "--port"): "the argv of Chroma's own server",
    ("backends/chroma/errors.py", "`chroma run --path DIR --port PORT`"): "Chroma's own command",
    ("backends/chroma/_writers.py", "`chroma run --path "): "Chroma's own command",
    ("backends/chroma/errors.py", "not like a Chroma 1.x server"): "Chroma's own command",
    ("backends/parquet/_snapshot.py", "snapshot %s is unpinned"): "a log line",
    ("backends/pgvector/_catalog.py", "has no valid HNSW index"): "a log line",
    ("backends/pgvector/_index.py", "could not build the HNSW index"): "a log line",
    ("backends/pgvector/_index.py", "bulk load interrupted"): "a log line",
    ("backends/pgvector/_catalog.py", "(vectorport pgvector schema prints one)"): "pgvector schema",
    ("backends/pgvector/_search.py", "as `vectorport pgvector schema` prints it"): "pgvector schema",
    ("backends/pgvector/_schema_sql.py", "-- vectorport pgvector collection"): "an SQL comment",
    ("ray/__init__.py", "--engine ray need the Python module"): "an install hint naming both",
    ("testing/plugin.py", "--vectorport-report"): "the pytest plugin's own option",
}
"""Sentences that still name a command line, each with why: an alias report (rendered by the
library, not worded by the command line), another program's command line, a log line, or
``vectorport pgvector schema`` (whose ``--dim`` has no keyword of that name in Python)."""


def _sentences() -> Iterator[tuple[str, int, str]]:
    """Every string of the library that is not a docstring nor an option's help, by module."""
    root = Path(vectorport.__file__).parent
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(_CLI_MODULES):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        left_out = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}
        for call in ast.walk(tree):
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "option":
                left_out.update(id(n) for n in ast.walk(call))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in left_out:
                yield rel, node.lineno, node.value


def test_no_library_sentence_names_a_flag_or_a_command_line() -> None:
    """The library says options as keywords and commands as calls (Advice, Call, Step parts of
    an Advised text); the command line words them. A sentence that spells a flag or a command
    line itself breaks that: it reads wrong in Python and cannot follow a renamed flag."""
    found = [
        f"{rel}:{line}: {text[:90]!r}"
        for rel, line, text in _sentences()
        if _NAMES_THE_CLI.search(text)
        and not any(rel == where and fragment in text for where, fragment in _KNOWN)
    ]
    assert not found, "\n".join(found)
