"""``sync --follow`` as CI and journald see it (stderr no terminal): a lag line while behind at
most every 30 s and one when it catches up, none while idle (it repeated twice a second and
flooded such logs); Ctrl-C's exit code 130 is in the one exit-code table."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from vectorport._exit import ExitCode
from vectorport.cli import _cmd_sync
from vectorport.engine._progress import ProgressMode
from vectorport.sync._capture import Lag

pytestmark = pytest.mark.memory


def _printed(terminal: bool, lags: list[Lag], monkeypatch: pytest.MonkeyPatch) -> list[str]:
    out = io.StringIO()
    monkeypatch.setattr(_cmd_sync, "err_console", Console(file=out, force_terminal=terminal, width=200))
    printer = _cmd_sync._LagPrinter(as_json=False, follow=True, mode=ProgressMode.NONE)
    for lag in lags:
        printer(lag)
    return out.getvalue().splitlines()


def test_an_idle_feed_says_so_once_in_a_log(monkeypatch: pytest.MonkeyPatch) -> None:
    behind = [Lag(2.0, 50, i, "0/1") for i in range(5)]
    idle = [Lag(0.0, 0, 5, "0/2") for _ in range(200)]
    lines = _printed(False, behind + idle, monkeypatch)
    assert len(lines) == 2 and "50 changes behind" in lines[0] and "0 changes behind" in lines[1], lines


def test_a_terminal_still_sees_the_caught_up_line(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = _printed(True, [Lag(0.0, 0, 0, "0/2")] * 3, monkeypatch)
    assert len(lines) == 1


def test_ctrl_c_has_its_row_in_the_exit_code_table() -> None:
    assert ExitCode.INTERRUPTED == 130
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    table = readme.split("Every command exits with a code from one table")[1].split("\n## ")[0]
    assert {int(c) for c in re.findall(r"^\| (\d+) \|", table, re.M)} == {int(c) for c in ExitCode}
