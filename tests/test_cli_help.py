"""Every command's ``--help`` reads cleanly at 80 columns: no value type on flags, no RST markup,
no hard line breaks from docstrings, nothing cut off with an ellipsis; ``-v``/``-q`` work after
a command's name too."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

import vectorport
from vectorport.cli import app
from vectorport.ingest.doctor import CHECKS

TRUNCATED = re.compile(r"\w…\s*│\s*$")


def _commands(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, group
    if hasattr(group, "commands"):  # typer's own click types
        for name, command in group.commands.items():
            yield from _commands(command, (*path, name))


COMMANDS = list(_commands(typer.main.get_command(app)))


def help_at_80(path: tuple[str, ...]) -> str:
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "80", "TERMINAL_WIDTH": "80"})
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=lambda p: " ".join(p) or "vectorport")
def test_help_reads_cleanly_at_80_columns(path: tuple[str, ...]) -> None:
    text = help_at_80(path)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "<bool>" not in text, "a flag takes no value"
    assert "``" not in text, "RST markup"
    cut = [line for line in lines if TRUNCATED.search(line)]
    assert not cut, f"cut off: {cut}"
    for line in lines:
        if re.search(r"--verbose\s+-v", line):
            assert "<int>" not in line


@pytest.mark.parametrize("path", [p for p, c in COMMANDS if not hasattr(c, "commands")], ids=" ".join)
def test_help_paragraphs_have_no_hard_line_breaks(path: tuple[str, ...]) -> None:
    command = dict(COMMANDS)[path]
    for paragraph in (command.help or "").split("\n\n"):
        assert "\n" not in paragraph.strip(), paragraph
    # the command lists show each command's first paragraph on lines of their own width
    parent = help_at_80(path[:-1])
    first_words = " ".join((command.help or "").split("\n\n")[0].split()[:4])
    assert first_words.split()[0] in parent


def test_doctor_skip_lists_the_checks() -> None:
    text = " ".join(help_at_80(("doctor",)).split())
    for check in CHECKS:
        assert check in text
    result = CliRunner().invoke(app, ["doctor", "memory://nothing", "--skip", "embeding-drift"])
    assert result.exit_code == 2 and "did you mean 'embedding-drift'?" in result.stderr


def test_log_options_after_the_command() -> None:
    store = vectorport.connect("memory://help-log-src", dimension=2)
    store.upsert([vectorport.Record("a", [1.0, 0.0])])
    try:
        result = CliRunner().invoke(
            app, ["migrate", "memory://help-log-src", "memory://help-log-dst", "--plan", "-v"]
        )
        assert result.exit_code == 0, result.output
        result = CliRunner().invoke(app, ["info", "memory://help-log-src", "-q", "--json"])
        assert result.exit_code == 0, result.output
        result = CliRunner().invoke(app, ["-v", "info", "memory://help-log-src", "-vv"])
        assert result.exit_code == 0, result.output
    finally:
        store.drop()


def test_typer_itself_is_left_alone() -> None:
    """Flags lose their type through typer's own ``cls=`` hook, not by patching typer."""
    import typer.core

    assert not hasattr(typer.core.TyperOption.display_type_rich, "__wrapped__")
    assert typer.core.TyperOption.display_type_rich.__module__ == "typer.core"


def test_report_is_one_option_wherever_a_command_writes_its_json_report() -> None:
    """``--report`` is declared once (``ReportOption``): the same flag, help and check of the
    path on every command that writes its JSON report to a file."""
    found = {}
    for path, command in COMMANDS:
        for param in getattr(command, "params", []):
            # compare's and alias status's --report are their HTML reports
            if "--report" in param.opts and path[-1] != "compare" and path != ("alias", "status"):
                found[path] = (param.help, param.callback.__name__ if param.callback else None)
    assert {p[-1] for p in found} >= {"migrate", "verify", "sync", "export"}
    assert set(found.values()) == {("Also write the JSON report to this file.", "writable_path")}
