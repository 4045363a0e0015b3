"""What Ctrl-C says about a copy cut short at its end: an index build only where the target
builds one after the copy (pgvector), never for a bucket or Chroma target."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from vectorport.cli import _cmd_migrate
from vectorport.cli._common import make_console
from vectorport.migrate import Checkpoint

pytestmark = pytest.mark.memory


@pytest.mark.parametrize(
    ("target", "says"),
    [
        ("s3vectors://docs-bucket/chunks?region=us-east-1", "cut short before it was marked complete"),
        ("chroma://./chroma?collection=docs", "cut short before it was marked complete"),
        ("pgvector://./pg?table=docs", "the target's index build was cut short"),
    ],
)
def test_ctrl_c_at_the_end_of_a_copy(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    target: str,
    says: str,
) -> None:
    path = tmp_path / "ck.json"
    ck = Checkpoint(path, "memory://src", target, (0, 1), {}, copied=1200, scanned=True)
    ck.save()
    monkeypatch.setattr(_cmd_migrate, "err_console", make_console(stderr=True))
    # the resume hint repeats the command line: the one a user typed, not pytest's (whose test
    # paths and -m expression may hold any word, "index" among them)
    monkeypatch.setattr(sys, "argv", ["vectorport", "migrate", "memory://src", target])
    _cmd_migrate._interrupted(path)
    err = " ".join(capsys.readouterr().err.split())
    assert "all 1,200 records copied" in err and says in err
    assert f"migrate memory://src {shlex.quote(target)} --checkpoint" in err and "--resume" in err
    if "index build" not in says:
        assert "index" not in err
