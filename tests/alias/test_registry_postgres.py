"""The alias registry in PostgreSQL (what apps on several hosts share), and what an app's call
does when the registry cannot be reached: it fails clearly once the routing bound has passed,
and works again when the registry is back."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit

import numpy as np
import pytest

import vectorport
from vectorport import alias
from vectorport.backends.pgvector import start_embedded
from vectorport.exceptions import BackendUnavailableError

from ._data import DIM, filled

pytestmark = [pytest.mark.alias, pytest.mark.pgvector, pytest.mark.memory]


class SocketProxy:
    """A Unix-socket forwarder in front of the PostgreSQL server's socket: :meth:`cut` closes it
    and every connection through it, as a network partition would."""

    def __init__(self, target: Path, directory: Path) -> None:
        self.target = target
        self.path = directory / target.name
        self._open: list[socket.socket] = []
        self._listener: socket.socket | None = None

    def start(self) -> None:
        self.path.unlink(missing_ok=True)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(self.path))
        listener.listen(16)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.connect(str(self.target))
            self._open += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := a.recv(65536):
                b.sendall(data)
        with contextlib.suppress(OSError):
            b.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        if self._listener is not None:
            self._listener.close()
        for sock in self._open:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        self._open.clear()
        self.path.unlink(missing_ok=True)


@pytest.fixture
def proxied(pg_dir: Path, tmp_path: Path) -> Iterator[tuple[str, SocketProxy]]:
    """A ``postgresql://`` registry URI reaching the session's server through a proxy."""
    uri = start_embedded(pg_dir)
    socket_dir = Path(parse_qs(urlsplit(uri).query)["host"][0])
    target = next(socket_dir.glob(".s.PGSQL.*"))
    proxy_dir = tmp_path / "proxy"
    proxy_dir.mkdir()
    proxy = SocketProxy(target, proxy_dir)
    proxy.start()
    yield f"postgresql://postgres@/postgres?host={proxy_dir}&port={target.suffix[1:]}", proxy
    proxy.cut()


def test_a_postgresql_registry_serves_the_alias_and_an_unreachable_one_fails_the_call(
    proxied: tuple[str, SocketProxy], request: pytest.FixtureRequest
) -> None:
    registry, proxy = proxied
    name = f"pg-{request.node.name[-20:]}-{time.monotonic_ns()}"
    serve = f"memory://{name}"
    filled(serve)
    try:
        assert alias.create(name, serve, registry=registry).registry.startswith("postgresql://")
        store = vectorport.connect(f"alias://{name}?registry={quote(registry, safe='')}")
        assert store.count() == 60
        proxy.cut()
        time.sleep(alias.CHECK_INTERVAL * 1.2)
        with pytest.raises(
            BackendUnavailableError, match=r"the alias registry postgresql://.* cannot be reached"
        ):
            store.query(np.ones(DIM), k=3)
        proxy.start()
        assert len(store.query(np.ones(DIM), k=3)) == 3  # reconnected
        store.close()
    finally:
        vectorport.connect(serve).drop()


def test_a_pgvector_data_directory_names_the_registry(pg_dir: Path, request: pytest.FixtureRequest) -> None:
    name = f"pgdir-{time.monotonic_ns()}"
    serve = f"memory://{name}"
    filled(serve)
    try:
        alias.create(name, serve, registry=f"pgvector://{pg_dir}")
        report = alias.status(name, registry=f"pgvector://{pg_dir}")
        assert report.state.serving.url == serve and report.ok
    finally:
        vectorport.connect(serve).drop()
