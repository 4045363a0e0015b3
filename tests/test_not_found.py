"""Not-found errors name what exists and the nearest match; on the command line, advice names
commands and flags that exist, never Python keyword arguments."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

import vectorport
from vectorport.cli import app
from vectorport.cli._common import cli_text
from vectorport.exceptions import Action, Advised, NotFoundError, Step

pytestmark = pytest.mark.memory

PYTHON_KEYWORD = re.compile(r"\b(dimension|metric|embedding_model)=(?=[\s),;]|$)")
PYTHON_CALL = re.compile(r"\b\w+\(\)")
COMMANDS = sorted(
    {c.name for c in app.registered_commands if c.name} | {g.name for g in app.registered_groups if g.name}
)


def test_missing_collection_names_what_exists_and_the_nearest() -> None:
    stores = [vectorport.connect(f"memory://nf-{name}", dimension=2) for name in ("tickets", "docs")]
    try:
        with pytest.raises(NotFoundError) as caught:
            vectorport.connect("memory://nf-tickts")
        message = str(caught.value)
        # other tests of the session hold memory collections too: the listing may be cut
        assert "did you mean 'nf-tickets'?" in message and "the collections there" in message
        with pytest.raises(NotFoundError, match=r"the collections there: "):
            vectorport.connect("memory://zzzzzzzzzzzz")
    finally:
        for store in stores:
            store.drop()


@pytest.mark.parametrize("action", list(Action), ids=lambda a: a.name)
def test_cli_advice_names_commands_and_flags(action: Action) -> None:
    """Every step the library advises has a command-line wording of its own, naming no Python
    keyword or method, and only flags of the commands it names."""
    message = Advised.of("x; {}", Step(action, "memory://src"))
    assert PYTHON_KEYWORD.search(message) or PYTHON_CALL.search(message) or "sync" in message
    said = cli_text(message)
    assert said != message and not PYTHON_KEYWORD.search(said) and not PYTHON_CALL.search(said), said
    flags = re.findall(r"--[a-z][a-z-]+", said)
    named = [c for c in COMMANDS if re.search(rf"\b{c}\b", said)]
    assert named or not flags, said
    helps = " ".join(CliRunner().invoke(app, [c, "--help"]).stdout for c in named)
    for flag in flags:
        assert flag in helps, (flag, said)


def test_cli_not_found_is_one_line_with_the_nearest_name() -> None:
    store = vectorport.connect("memory://nf-cli-tickets", dimension=2)
    try:
        result = CliRunner().invoke(app, ["search", "memory://nf-cli-tickts", "login"])
        assert result.exit_code == 2
        err = result.stderr
        assert "did you mean 'nf-cli-tickets'?" in err and not PYTHON_KEYWORD.search(err)
        assert "vectorport ingest PATH URL" in err and len(err.strip().splitlines()) == 1
    finally:
        store.drop()
