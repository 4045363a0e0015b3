"""Real backend servers shared by every test folder, read from the backend registry (the
``vectorport.backends`` entry points, :mod:`vectorport.testing.backends`): each server starts
once per session on first use, and a test skips cleanly when its backend's driver is absent.

* ``url_for(target, name=None, **params)`` — the URL of a fresh collection on a test target's
  server (``"pgvector"``, ``"chroma+http"``: a backend's name, or ``NAME+VARIANT``);
* ``server_of(target)`` — what that server yields (a data directory, ``host:port``, a server);
* ``pg_dir``, ``chroma_dir``, ``chroma_server``, ``bucket_server`` — the same, by name, for the
  tests of one backend;
* ``chroma_default_ef`` — chromadb's default embedding function made runnable offline
  (``tests/_chroma_onnx.py``), so tests build collections the way plain ``chromadb`` does.

The backend markers are registered by the vectorport pytest plugin, from the same registry.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from vectorport.backends.s3vectors._server import TEST_SUPABASE_KEY
from vectorport.exceptions import NotInstalledError
from vectorport.testing.backends import ServerPool

SUPABASE_KEY = TEST_SUPABASE_KEY

if os.environ.get("PYTEST_XDIST_WORKER"):
    # a pytest-xdist worker starts with COLUMNS=80, which the CLI honours as the user's terminal
    # width; the tests judge the CLI as a CI log sees it (no COLUMNS: 200 columns)
    os.environ.pop("COLUMNS", None)


@pytest.fixture(scope="session", autouse=True)
def own_state_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Checkpoints and sync states of this session only: a state left in the user's state
    directory by an earlier run (a finished migration of the same two URLs) must not decide
    what a test's migrate or sync does. A test that sets its own keeps it."""
    with pytest.MonkeyPatch.context() as patch:
        if not os.environ.get("VECTORPORT_STATE_DIR"):
            patch.setenv("VECTORPORT_STATE_DIR", str(tmp_path_factory.mktemp("vectorport-state")))
        yield


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _chroma_binary() -> str:
    from vectorport.backends.chroma._server import _binary

    try:
        return _binary()
    except NotInstalledError:
        pytest.skip("the chroma CLI (from the chromadb package) is not installed")


@pytest.fixture(scope="session")
def server_of(vectorport_servers: ServerPool) -> Callable[[str], Any]:
    """``server_of(target)``: the handle of that test target's server (started on first use);
    skips the test when the backend is not installed."""

    def get(target: str) -> Any:
        try:
            return vectorport_servers.handle(target)
        except NotInstalledError as exc:
            pytest.skip(str(exc))

    return get


@pytest.fixture(scope="session")
def url_for(vectorport_servers: ServerPool) -> Callable[..., str]:
    """``url_for(target, name=None, **params)``: a URL of a fresh collection on that target's
    session server (the server starts on first use; the test skips if the backend is absent)."""

    def make(target: str, name: str | None = None, **params: Any) -> str:
        try:
            return vectorport_servers.url(target, name, **params)
        except NotInstalledError as exc:
            pytest.skip(str(exc))

    return make


@pytest.fixture(scope="session")
def pg_dir(server_of: Callable[[str], Any]) -> Path:
    """The data directory of the session's embedded PostgreSQL + pgvector server."""
    return Path(server_of("pgvector"))


@pytest.fixture(scope="session")
def bucket_server(server_of: Callable[[str], Any]) -> Any:
    """vectorport's local S3 Vectors server (Supabase mode on, key ``SUPABASE_KEY``)."""
    return server_of("s3vectors")


@pytest.fixture(scope="session")
def chroma_dir(server_of: Callable[[str], Any]) -> str:
    """A directory for embedded (``PersistentClient``) collections."""
    return str(server_of("chroma"))


@pytest.fixture(scope="session")
def chroma_server(server_of: Callable[[str], Any]) -> str:
    """``host:port`` of a real ``chroma run`` subprocess."""
    return str(server_of("chroma+http"))


@pytest.fixture(scope="session")
def chroma_default_ef(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The folder chromadb's ``DefaultEmbeddingFunction`` reads its ONNX model from (for the
    session); see ``tests/_chroma_onnx.py`` for where the model comes from."""
    pytest.importorskip("chromadb")
    from ._chroma_onnx import chroma_default_function, chroma_model_dir

    folder = chroma_model_dir(tmp_path_factory.mktemp("chroma-model"))
    with chroma_default_function(folder):
        yield folder
