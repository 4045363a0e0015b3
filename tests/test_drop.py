"""``vectorport drop URL``: asks first (or ``--yes``), says what it dropped, refuses to guess."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

import vectorport
from vectorport.cli import app

pytestmark = pytest.mark.memory


@pytest.fixture
def made_by_mistake() -> str:
    store = vectorport.connect("memory://drop-mistake", dimension=4)
    store.upsert([vectorport.Record("a", [1.0, 0.0, 0.0, 0.0])])
    return "memory://drop-mistake"


def exists(url: str) -> bool:
    try:
        vectorport.connect(url).close()
    except vectorport.NotFoundError:
        return False
    return True


def test_no_answer_keeps_the_collection(made_by_mistake: str) -> None:
    res = CliRunner().invoke(app, ["drop", made_by_mistake], input="n\n")
    assert res.exit_code == 1 and "not dropped" in res.stderr
    assert "1 records" in res.stderr and exists(made_by_mistake)
    res = CliRunner().invoke(app, ["drop", made_by_mistake])  # nobody to ask
    assert res.exit_code == 2 and "pass --yes" in res.stderr and exists(made_by_mistake)


def test_yes_drops_it(made_by_mistake: str) -> None:
    res = CliRunner().invoke(app, ["drop", made_by_mistake], input="y\n")
    assert res.exit_code == 0 and "dropped memory://drop-mistake" in res.stderr
    assert not exists(made_by_mistake)


def test_dropping_what_is_not_there_is_a_usage_error() -> None:
    res = CliRunner().invoke(app, ["drop", "memory://drop-never-made", "--yes"])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert len(res.stderr.strip().splitlines()) == 1
