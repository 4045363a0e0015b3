"""Run options are one typed declaration: keyword arguments, CLI flags, the resume rule and the
report's ``options`` all come from :class:`MigrateOptions`."""

from __future__ import annotations

import dataclasses
import inspect
import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

import vectorport
from vectorport._options import RunOptions
from vectorport.cli import app
from vectorport.compare import CompareOptions
from vectorport.engine._progress import ProgressMode
from vectorport.exceptions import ConfigurationError
from vectorport.migrate import MigrateOptions, SyncOptions
from vectorport.snapshot import ExportOptions
from vectorport.verify._options import VerifyOptions

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
        with pytest.raises(ConfigurationError) as refused:
            vectorport.migrate.run(
                "memory://opt-src", "memory://opt-dst", checkpoint=ck, resume=True, metadata_policy="drop"
            )
        assert str(refused.value).startswith(
            f"the checkpoint {ck} records metadata_policy='error', this run has metadata_policy='drop': "
            "metadata_policy cannot change between a migrate run and the next over the same checkpoint; "
        )
        # the command line words the same rule (one check) as its flags
        args = ["migrate", "memory://opt-src", "memory://opt-dst", "--checkpoint", str(ck), "--resume"]
        out = CliRunner().invoke(app, [*args, "--reembed", "hash:2"])
        assert out.exit_code == 2, out.output
        line = " ".join(out.stderr.split())
        assert "records no --reembed, this run has --reembed hash:2" in line, line
        assert "(--resume), or pass another --checkpoint path" in line, line
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


def test_sync_options_are_one_declaration_too(tmp_path: Path) -> None:
    names = {f.name for f in dataclasses.fields(SyncOptions)}
    command = typer.main.get_command(app).commands["sync"]  # type: ignore[attr-defined]
    params = {p.name for p in command.params}
    assert {f.name for f in dataclasses.fields(SyncOptions) if f.metadata["cli"]} <= params
    assert {"cap", "retry", "poll", "source_options", "target_options"}.isdisjoint(params)
    # what Ray's shards cannot honour is named before any I/O; everything else means the same
    assert SyncOptions(follow=True, shard="0/2", delete=True, until_equal=True).refused_by("ray") == [
        "shard",
        "follow",
    ]
    _source("opt-sync-src")
    try:
        report = vectorport.sync(
            "memory://opt-sync-src", "memory://opt-sync-dst", state=tmp_path / "s.sqlite", concurrency=2
        )
        assert set(report.options) == names and report.options["concurrency"] == 2
        assert report.to_dict()["engine"] == "local" and report.sync.new == 20
        with pytest.raises(TypeError):
            vectorport.sync("memory://opt-sync-src", "memory://opt-sync-dst", no_such_option=True)
        with pytest.raises(ConfigurationError, match="concurrency must be at least 1"):
            vectorport.sync("memory://opt-sync-src", "memory://opt-sync-dst", concurrency=0)
    finally:
        for name in ("opt-sync-src", "opt-sync-dst"):
            vectorport.connect(f"memory://{name}").drop()


def test_one_options_mechanism_for_every_command() -> None:
    """migrate, sync, export and compare declare their options on the one neutral base; its
    checks and enum parsing apply to each."""
    for cls in (MigrateOptions, SyncOptions, ExportOptions, CompareOptions):
        assert issubclass(cls, RunOptions)
        name = "batch_size" if "batch_size" in cls.__dataclass_fields__ else "concurrency"
        with pytest.raises(vectorport.ConfigurationError, match=f"{name} must be"):
            cls(**{name: 0})
    assert ExportOptions(progress=True).progress is ProgressMode.BAR
    assert SyncOptions(metadata_policy="Drop").to_dict()["metadata_policy"] == "drop"


@pytest.mark.parametrize(
    ("command", "cls"),
    [
        ("migrate", MigrateOptions),
        ("sync", SyncOptions),
        ("export", ExportOptions),
        ("verify", VerifyOptions),
    ],
)
def test_every_command_line_option_is_a_derived_flag(command: str, cls: type[RunOptions]) -> None:
    """Each command's flags are its declaration's command-line fields (no hand-declared copy):
    the same help text, the Python-only fields absent."""
    params = {p.name: p for p in typer.main.get_command(app).commands[command].params}  # type: ignore[attr-defined]
    for f in dataclasses.fields(cls):
        if f.metadata["cli"]:
            assert params[f.name].help == f.metadata["help"], f.name
        else:
            assert f.name not in params, f.name


def test_verify_flags_are_its_options(tmp_path: Path) -> None:
    _source("opt-verify-src")
    _source("opt-verify-dst")
    try:
        args = ["verify", "memory://opt-verify-src", "memory://opt-verify-dst", "--json"]
        out = CliRunner().invoke(
            app, [*args, "--method", "keyed", "--queries", "2", "-k", "3", "--concurrency", "1"]
        )
        assert out.exit_code == 0, out.output
        report = json.loads(out.stdout)
        assert report["method"] == "keyed" and report["status"] == "verified", report
        bad = CliRunner().invoke(app, [*args, "--method", "fastest"])
        assert bad.exit_code == 2 and "verification method must be auto, digest or keyed" in bad.stderr
        assert len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    finally:
        for name in ("opt-verify-src", "opt-verify-dst"):
            vectorport.connect(f"memory://{name}").drop()


def test_what_migrate_and_sync_share_is_declared_once() -> None:
    """The Python-only fields of a run between two stores are one declaration, after each
    command's own fields in its keyword arguments and its report's ``options``."""
    from vectorport.engine._options import TransferOptions

    shared = ["cap", "retry", "source_options", "target_options"]
    assert [f.name for f in dataclasses.fields(TransferOptions)] == shared
    for cls in (MigrateOptions, SyncOptions):
        assert issubclass(cls, TransferOptions) and set(shared).isdisjoint(vars(cls)["__annotations__"])
        assert list(cls().to_dict())[-4:] == shared
        assert list(inspect.signature(cls).parameters)[-4:] == shared
