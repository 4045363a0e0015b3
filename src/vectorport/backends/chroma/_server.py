"""A real ``chroma run`` server (the CLI the chromadb package ships) in a subprocess, for the
test suites and for anyone who wants a throwaway Chroma server."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from ...exceptions import BackendUnavailableError, NotInstalledError

__all__ = ["chroma_run"]

START_SECONDS = 60


def _binary() -> str:
    beside = Path(sys.executable).parent / "chroma"
    if beside.exists():
        return str(beside)
    found = shutil.which("chroma")
    if found is None:
        raise NotInstalledError("chroma", "chroma", "the chroma CLI")
    return found


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_ready(proc: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + START_SECONDS
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1):
                return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise BackendUnavailableError(
                    f"chroma run did not start: {log.read_text(errors='replace')[-2000:]}"
                ) from None
            time.sleep(0.2)


@contextlib.contextmanager
def chroma_run(directory: Path) -> Iterator[str]:
    """``chroma run --path DIRECTORY/db`` on a free loopback port for the block; yields
    ``host:port``. The server is stopped (and killed after 20 s) at the end."""
    port = _free_port()
    log_path = directory / "server.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHONTRACEMALLOC")}
    env["ANONYMIZED_TELEMETRY"] = "False"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [_binary(), "run", "--path", str(directory / "db"), "--host", "127.0.0.1", "--port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        try:
            _wait_ready(proc, port, log_path)
            yield f"127.0.0.1:{port}"
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
