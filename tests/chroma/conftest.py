"""Fixtures for the Chroma tests: an embedded directory and a real ``chroma run`` server."""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import vectorport

StoreMaker = Callable[[int, str], vectorport.VectorStore]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _chroma_binary() -> str:
    beside = Path(sys.executable).parent / "chroma"
    if beside.exists():
        return str(beside)
    found = shutil.which("chroma")
    if found is None:
        pytest.skip("the chroma CLI (from the chromadb package) is not installed")
    return found


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``host:port`` of a ``chroma run`` subprocess on a free loopback port, stopped at the end."""
    data = tmp_path_factory.mktemp("chroma-server")
    port = _free_port()
    log = (data / "server.log").open("wb")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHONTRACEMALLOC")}
    env["ANONYMIZED_TELEMETRY"] = "False"
    proc = subprocess.Popen(
        [_chroma_binary(), "run", "--path", str(data / "db"), "--host", "127.0.0.1", "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"chroma run did not start: {(data / 'server.log').read_text()[-2000:]}"
                    ) from None
                time.sleep(0.2)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@pytest.fixture(scope="session")
def chroma_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A directory for embedded (``PersistentClient``) collections."""
    return str(tmp_path_factory.mktemp("chroma-embedded"))


_names = itertools.count()


def _unique(prefix: str) -> str:
    return f"{prefix}-{os.getpid()}-{next(_names)}"


@pytest.fixture(scope="session")
def embedded_url(chroma_dir: str) -> Callable[[], str]:
    """A function returning the URL of a new, unused embedded collection."""
    return lambda: f"chroma://{chroma_dir}?collection={_unique('emb')}"


@pytest.fixture(scope="session")
def server_url(chroma_server: str) -> Callable[[], str]:
    """A function returning the URL of a new, unused collection on the server."""
    return lambda: f"chroma+http://{chroma_server}?collection={_unique('srv')}"


@pytest.fixture(scope="session", params=["embedded", "server"])
def new_url(request: pytest.FixtureRequest) -> Callable[[], str]:
    """``embedded_url`` and ``server_url`` in turn."""
    fixture: Callable[[], str] = request.getfixturevalue(f"{request.param}_url")
    return fixture
