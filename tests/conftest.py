"""Real backend servers shared by every test folder, each started once per session on first use
and skipped cleanly when its backend package is absent:

* ``pg_dir`` — the data directory of an embedded PostgreSQL + pgvector server;
* ``chroma_dir`` — a directory for embedded Chroma collections;
* ``chroma_server`` — ``host:port`` of a real ``chroma run`` subprocess;
* ``bucket_server`` — vectorport's local S3-Vectors-compatible server (Supabase mode on, key
  ``SUPABASE_KEY``);
* ``url_for(backend, name=None, **params)`` — the URL of a fresh collection on one of them;
* ``chroma_default_ef`` — chromadb's default embedding function made runnable offline
  (``tests/_chroma_onnx.py``), so tests build collections the way plain ``chromadb`` does.
"""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ._backends import URLS, VARIANTS

SUPABASE_KEY = "test-service-role-key"
_names = itertools.count()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def pytest_configure(config: pytest.Config) -> None:
    # one marker per backend of the table (pyproject.toml declares the same names for
    # --strict-markers users who run a single file)
    for name in URLS:
        config.addinivalue_line("markers", f"{name}: tests that need the {name} backend")


@pytest.fixture(scope="session")
def pg_dir() -> Iterator[Path]:
    """The data directory of a real server started once (and stopped at the end).

    Not under pytest's tmp_path: pytest keeps /tmp/pytest-of-<user> at mode 0700, and when the
    tests run as root the server runs as an unprivileged system user that must reach the
    directory.
    """
    pytest.importorskip("psycopg")
    pytest.importorskip("vectorport.backends.pgvector")
    import vectorport
    from vectorport.backends.pgvector._embedded import stop_embedded

    root = Path(tempfile.mkdtemp(prefix="vectorport-pgvector-tests-"))
    root.chmod(0o755)
    data = root / "data"
    store = vectorport.connect(f"pgvector://{data}?table=warmup", dimension=2)
    store.drop()
    store.close()
    yield data
    stop_embedded(data)
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def bucket_server() -> Iterator[Any]:
    """vectorport's local S3 Vectors server, in process, for the whole session."""
    pytest.importorskip("boto3")
    server_mod = pytest.importorskip("vectorport.bucketserver")
    srv = server_mod.LocalServer(supabase_key=SUPABASE_KEY)
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def chroma_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A directory for embedded (``PersistentClient``) collections."""
    pytest.importorskip("chromadb")
    pytest.importorskip("vectorport.backends.chroma")
    return str(tmp_path_factory.mktemp("chroma-embedded"))


@pytest.fixture(scope="session")
def chroma_default_ef(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The folder chromadb's ``DefaultEmbeddingFunction`` reads its ONNX model from (for the
    session); see ``tests/_chroma_onnx.py`` for where the model comes from."""
    pytest.importorskip("chromadb")
    from ._chroma_onnx import chroma_default_function, chroma_model_dir

    folder = chroma_model_dir(tmp_path_factory.mktemp("chroma-model"))
    with chroma_default_function(folder):
        yield folder


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
    pytest.importorskip("chromadb")
    pytest.importorskip("vectorport.backends.chroma")
    data = tmp_path_factory.mktemp("chroma-server")
    port = free_port()
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
def url_for(request: pytest.FixtureRequest) -> Callable[..., str]:
    """``url_for(backend, name=None, **params)``: a URL of a fresh collection on that backend's
    session server (the server starts on first use; the test skips if the backend is absent)."""

    def make(backend: str, name: str | None = None, **params: Any) -> str:
        coll = name or f"c{os.getpid()}x{next(_names)}"
        extra = "".join(f"&{k}={v}" for k, v in params.items())
        maker = URLS.get(backend) or VARIANTS.get(backend)
        if maker is None:
            raise ValueError(backend)
        return maker(request.getfixturevalue, coll, extra)

    return make
