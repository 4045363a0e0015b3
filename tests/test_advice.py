"""Advice is structured: library errors and report notes carry the options they name as
:class:`~vectorport.exceptions.Advice`; the library says them as keyword arguments, the command
line as its flags, from the parts, never by reading the sentence."""

from __future__ import annotations

import contextlib
import pickle
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
    assert cli_text(Advised.of("use {}", Advice("metric", "cosine"))) == "use metric='cosine'"


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
