"""`vectorport bucket serve` refuses bad settings and busy ports with a one-line error and
exit 2, never a traceback."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.s3vectors


def _serve(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vectorport", "bucket", "serve", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    "args",
    [
        ("--port", "70000"),
        ("--port", "-1"),
        ("--throttle-fraction", "2"),
        ("--throttle-fraction", "-0.5"),
        ("--throttle-rps", "0"),
        ("--write-rate", "-5"),
        ("--max-top-k", "0"),
    ],
)
def test_out_of_range_settings_are_usage_errors(args: tuple[str, str]) -> None:
    done = _serve(*args)
    assert done.returncode == 2, done
    assert args[0] in done.stderr and "Traceback" not in done.stderr


def test_a_busy_port_is_named() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = _serve("--port", str(port))
    assert done.returncode == 2, done
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr and "--port" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_unusable_data_directory_is_named_not_the_port(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    for data in ("/proc/nope", str(tmp_path / "file")):
        done = _serve("--data", data, "--port", "0")
        assert done.returncode == 2, done
        assert data in done.stderr and "data directory" in done.stderr, done.stderr
        assert "cannot listen" not in done.stderr and "Traceback" not in done.stderr


def test_default_max_top_k_is_the_adapters_and_the_servers() -> None:
    """`bucket serve` accepts what the adapter declares (AWS: topK up to 10,000 since June 2026),
    so a `compare -k 150` against it does not fail every query."""
    import inspect

    from vectorport.backends.s3vectors import S3VectorsStore
    from vectorport.bucketserver import Limits
    from vectorport.cli._cmd_bucket import serve

    default = inspect.signature(serve).parameters["max_top_k"].default
    assert default == Limits().max_top_k == S3VectorsStore.capabilities.max_top_k == 10_000
