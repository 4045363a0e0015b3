"""``CompareOptions`` is the one declaration of compare's options: the command's flags are made
from it, a value set by a flag reaches the run as the same field, and a bad value is refused by
the declaration whichever way it came in."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator

import pytest
import typer
from typer.testing import CliRunner

import vectorport
from vectorport.cli import app
from vectorport.compare import CompareOptions
from vectorport.testing import clustered_records

pytestmark = pytest.mark.memory

FLAGS = {"k": {"--k", "-k"}, "concurrency": {"--concurrency", "-c"}}
"""The flags the command renames; every other CLI field is ``--`` plus its name with dashes."""


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    store = vectorport.connect("memory://compare-options", dimension=8)
    store.upsert(clustered_records(120, 8, seed=2))
    yield "memory://compare-options"
    store.drop()


def _compare_flags() -> dict[str, set[str]]:
    command = typer.main.get_command(app).commands["compare"]  # type: ignore[attr-defined]
    return {p.name: set(p.opts) for p in command.params}


def test_every_command_line_field_is_a_flag_and_nothing_else_is() -> None:
    flags = _compare_flags()
    for f in dataclasses.fields(CompareOptions):
        if f.metadata["cli"]:
            assert flags[f.name] == FLAGS.get(f.name, {"--" + f.name.replace("_", "-")}), f.name
        else:
            assert f.name not in flags, f"{f.name} is Python only"


def test_flags_reach_the_run_as_the_declared_fields(url: str) -> None:
    result = CliRunner().invoke(
        app,
        ["compare", url, "--sample", "6", "-k", "3", "-c", "2", "--warmup", "1", "--seed", "7", "--json"],
    )
    assert result.exit_code == 0, result.output
    config = json.loads(result.stdout)["config"]
    python = vectorport.compare([url], 6, k=3, concurrency=2, warmup=1, seed=7).config
    for name in ("k", "concurrency", "warmup", "seed", "queries"):
        assert config[name] == python[name], name
    assert (config["k"], config["concurrency"], config["warmup"], config["seed"]) == (3, 2, 1, 7)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("k", 0, "k must be a positive integer, got 0"),
        ("warmup", -1, "warmup must be >= 0, got -1"),
        ("concurrency", 0, "concurrency must be at least 1, got 0"),
    ],
)
def test_a_bad_value_is_refused_the_same_from_python_and_the_command_line(
    url: str, field: str, value: int, message: str
) -> None:
    with pytest.raises(vectorport.ConfigurationError, match=message):
        CompareOptions(**{field: value})
    with pytest.raises(vectorport.ConfigurationError, match=message):
        vectorport.compare([url], 3, **{field: value})
    flag = {"k": "-k"}.get(field, "--" + field)
    result = CliRunner().invoke(app, ["compare", url, "--sample", "3", flag, str(value)])
    assert result.exit_code == 2 and message in result.stderr, result.output


def test_an_unknown_keyword_is_a_type_error(url: str) -> None:
    with pytest.raises(TypeError, match="min_recal"):
        vectorport.compare([url], 3, min_recal=0.9)
