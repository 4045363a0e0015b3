"""Headless Chromium (Debian's ``chromium`` package) for rendering the HTML report."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("headless Chromium is not installed (apt-get install -y chromium)")
    return found


def render(page: Path, *, screenshot: Path | None = None, size: str = "1200,2400") -> str:
    """The DOM after load (``--dump-dom``), and optionally a PNG screenshot."""
    with tempfile.TemporaryDirectory(prefix="vectorport-chromium-") as profile:
        base = [chromium(), *FLAGS, f"--user-data-dir={profile}", f"--window-size={size}"]
        dom = subprocess.run(
            [*base, "--dump-dom", page.resolve().as_uri()],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout
        if screenshot is not None:
            subprocess.run(
                [*base, f"--screenshot={screenshot}", page.resolve().as_uri()],
                capture_output=True,
                timeout=120,
                check=True,
            )
    return dom
