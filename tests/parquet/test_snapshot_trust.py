"""What an import trusts in a snapshot directory: a manifest or part that is a symbolic link (to
another snapshot's part, to a file outside the directory) is refused before anything is read
through it or written (links were followed), and an import that no expected digest pins says
so plainly (it once said ``verified (exit 0)`` and nothing else)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import vectorport
from vectorport.cli import app
from vectorport.snapshot import export, import_snapshot

pytestmark = [pytest.mark.parquet, pytest.mark.memory]
pytest.importorskip("pyarrow")


@pytest.fixture
def snapshots(tmp_path: Path) -> Any:
    for name, sign in (("mine", 1.0), ("other", -1.0)):
        store = vectorport.connect(f"memory://trust-{name}", dimension=2, metric="cosine")
        store.upsert(
            [vectorport.Record(f"k{i:04d}", [sign, float(i)], {"i": i}, "t" * 40) for i in range(900)]
        )
        export(f"memory://trust-{name}", tmp_path / name, max_part_bytes=20_000, verify=False)
        store.drop()
    yield tmp_path / "mine", tmp_path / "other"


def _parts(folder: Path) -> list[str]:
    return [p["file"] for p in json.loads((folder / "_manifest.json").read_text())["parts"]]


def _nothing_written(url: str) -> bool:
    try:
        vectorport.connect(url)
    except vectorport.NotFoundError:
        return True
    return False


def test_a_symlinked_part_is_refused_before_any_write(snapshots: Any) -> None:
    mine, other = snapshots
    last = _parts(mine)[-1]
    (mine / last).unlink()
    os.symlink(other / _parts(other)[-1], mine / last)
    with pytest.raises(vectorport.ConfigurationError, match="symbolic link"):
        import_snapshot(mine, "memory://trust-linked-part")
    assert _nothing_written("memory://trust-linked-part")


def test_a_symlinked_manifest_is_refused(snapshots: Any, tmp_path: Path) -> None:
    mine, _ = snapshots
    outside = tmp_path / "outside-manifest.json"
    shutil.move(mine / "_manifest.json", outside)
    os.symlink(outside, mine / "_manifest.json")
    out = CliRunner().invoke(app, ["import", str(mine), "memory://trust-linked-manifest"])
    assert out.exit_code == 2 and "symbolic link" in out.stderr, out.output
    assert "Traceback" not in out.output
    assert _nothing_written("memory://trust-linked-manifest")


def test_an_unpinned_import_says_so_and_a_pinned_one_does_not(snapshots: Any) -> None:
    mine, _ = snapshots
    runner = CliRunner()
    out = runner.invoke(app, ["import", str(mine), "memory://trust-unpinned"])
    assert out.exit_code == 0, out.output
    assert "is unpinned" in out.stderr and "--expect-digest" in out.stderr
    digest = next(line.split()[-1] for line in out.stderr.splitlines() if "is unpinned" in line).rstrip(")")
    out = runner.invoke(app, ["import", str(mine), "memory://trust-pinned", "--expect-digest", digest])
    assert out.exit_code == 0, out.output
    assert "is unpinned" not in out.output
