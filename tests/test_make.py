"""``make test`` runs what CI runs: the HTML render test's Chromium is installed as CI does when
that needs no password, and a machine where it cannot be is told plainly what is skipped and how
to get it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAKE = shutil.which("make")

pytestmark = pytest.mark.skipif(MAKE is None, reason="make is not installed")


def test_make_test_sees_to_chromium_first() -> None:
    assert MAKE is not None
    dry = subprocess.run([MAKE, "-n", "test"], capture_output=True, text=True, cwd=ROOT, timeout=60)
    steps = dry.stdout
    assert "command -v chromium" in steps and "apt-get install -y -qq chromium" in steps
    assert steps.index("chromium") < steps.index("pytest")


def test_without_chromium_and_root_make_says_what_is_skipped(tmp_path: Path) -> None:
    assert MAKE is not None
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "make").symlink_to(MAKE)
    fake_id = bin_dir / "id"
    fake_id.write_text("#!/bin/sh\necho 1000\n")
    fake_id.chmod(0o755)
    env = {**os.environ, "PATH": str(bin_dir)}
    out = subprocess.run([MAKE, "chromium"], capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    said = " ".join(out.stdout.split())
    assert "SKIPPED" in said and "HTML report" in said and "apt-get install -y chromium" in said
