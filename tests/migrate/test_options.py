"""Run options are one typed declaration: keyword arguments, CLI flags, the resume rule and the
report's ``options`` all come from :class:`MigrateOptions`."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import typer

import vectorport
from vectorport.cli import app
from vectorport.exceptions import ConfigurationError
from vectorport.migrate import MigrateOptions

pytestmark = pytest.mark.memory


def _source(name: str) -> None:
    store = vectorport.connect(f"memory://{name}", dimension=2)
    store.upsert([vectorport.Record(f"k{i}", [1.0, float(i)], {"i": i}, "t") for i in range(20)])


def test_a_resume_may_change_the_free_options_not_the_fixed_ones(tmp_path: Path) -> None:
    assert set(MigrateOptions().fixed()) == {"metadata_policy", "text_key", "reembed"}
    _source("opt-src")
    ck = tmp_path / "ck.json"
    try:
        first = vectorport.migrate.run("memory://opt-src", "memory://opt-dst", checkpoint=ck, concurrency=2)
        assert first.ok and first.options["concurrency"] == 2
        again = vectorport.migrate.run(
            "memory://opt-src", "memory://opt-dst", checkpoint=ck, resume=True, concurrency=1, progress=False
        )
        assert again.already_complete and again.ok
        with pytest.raises(ConfigurationError, match="metadata_policy"):
            vectorport.migrate.run(
                "memory://opt-src", "memory://opt-dst", checkpoint=ck, resume=True, metadata_policy="drop"
            )
    finally:
        for name in ("opt-src", "opt-dst"):
            vectorport.connect(f"memory://{name}").drop()


def test_the_report_options_are_the_declaration() -> None:
    names = {f.name for f in dataclasses.fields(MigrateOptions)}
    assert set(MigrateOptions().to_dict()) == names
    with pytest.raises(TypeError):
        vectorport.migrate.run("memory://nowhere", "memory://nowhere-2", no_such_option=True)


def test_every_cli_option_is_a_flag_of_migrate() -> None:
    command = typer.main.get_command(app).commands["migrate"]  # type: ignore[attr-defined]
    params = {p.name for p in command.params}
    offered = {f.name for f in dataclasses.fields(MigrateOptions) if f.metadata["cli"]}
    assert offered <= params
    assert {"cap", "retry", "source_options", "target_options"}.isdisjoint(params)
