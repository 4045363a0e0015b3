"""Not-found errors name what exists and the nearest match; on the command line, advice names
commands and flags that exist, never Python keyword arguments."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

import vectorport
from vectorport.cli import app
from vectorport.cli._common import cli_text
from vectorport.exceptions import NotFoundError

pytestmark = pytest.mark.memory

PYTHON_KEYWORD = re.compile(r"\b(dimension|metric|embedding_model)=(?=[\s),;]|$)")

LIBRARY_ADVICE = (
    "memory collection 'x' does not exist at memory://x; pass dimension= (and metric=) to create it",
    "s3vectors: the vector bucket 'b' does not exist at s3vectors://b/i; pass dimension= (and metric=) "
    "to create it with the index",
    "chroma collection 'x' at chroma://./d?collection=x: there is no Chroma database in ./d (no "
    "chroma.sqlite3); check the path, or pass dimension= (and metric=) to create the collection there",
    "chroma collection 'x' at chroma://./d?collection=x is empty and records no dimension; pass "
    "dimension= to adopt it",
    "pgvector: relation does not exist: the table does not exist; create the collection with dimension=",
    "pgvector public.t has no HNSW index on 'embedding' telling its metric: pass metric= (cosine, "
    "euclidean or dot; searches are then exact), or create an HNSW index (vectorport pgvector schema "
    "prints one)",
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


@pytest.mark.parametrize("message", LIBRARY_ADVICE)
def test_cli_advice_names_commands_and_flags(message: str) -> None:
    assert PYTHON_KEYWORD.search(message)
    said = cli_text(message)
    assert not PYTHON_KEYWORD.search(said), said
    for flag in re.findall(r"--[a-z][a-z-]+", said):
        command = re.findall(r"`vectorport (\w+)[^`]*`", said)
        assert command, said
        helps = " ".join(CliRunner().invoke(app, [c, "--help"]).stdout for c in command)
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
