"""The server object: :class:`LocalServer` and the :func:`running` context manager."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from typing import Any

from ._core import Limits
from ._http import Throttle, VectorServer
from ._service import Service

__all__ = ["LocalServer", "running"]


class LocalServer:
    """The server, configured; :meth:`start` serves in a background thread.

    Parameters
    ----------
    data:
        Directory for durable data; ``None`` keeps everything in memory.
    host, port:
        Where to listen; port 0 picks a free port (see :attr:`url`).
    supabase_key:
        When set, ``POST /storage/v1/vector/<Operation>`` requires ``Authorization: Bearer KEY``.
    throttle:
        Injected 429/503 responses (:class:`Throttle`).
    limits:
        AWS limits to enforce (:class:`Limits`).
    region:
        Region used in ARNs.
    """

    def __init__(
        self,
        data: str | os.PathLike[str] | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        supabase_key: str | None = None,
        throttle: Throttle | None = None,
        limits: Limits | None = None,
        region: str = "us-east-1",
        snapshot_bytes: int = 64 << 20,
    ) -> None:
        self.service = Service(data, region=region, limits=limits, snapshot_bytes=snapshot_bytes)
        self.httpd = VectorServer((host, port), self.service, supabase_key=supabase_key, throttle=throttle)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The endpoint URL (``http://host:port``)."""
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def throttle(self) -> Throttle:
        return self.httpd.throttle

    def serve_forever(self) -> None:
        """Serve in the calling thread until :meth:`stop` (or KeyboardInterrupt)."""
        try:
            self.httpd.serve_forever(poll_interval=0.2)
        finally:
            self.httpd.server_close()
            self.service.close()

    def start(self) -> str:
        """Serve in a daemon thread; returns the endpoint URL."""
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True
        )
        self._thread.start()
        return self.url

    def stop(self) -> None:
        """Stop serving, snapshot every index and release the port."""
        if self._thread is not None:
            self.httpd.shutdown()
            self._thread.join()
            self._thread = None
        self.httpd.server_close()
        self.service.close()


@contextlib.contextmanager
def running(data: str | os.PathLike[str] | None = None, **options: Any) -> Iterator[str]:
    """Run a :class:`LocalServer` in this process for the ``with`` block; yields its URL."""
    server = LocalServer(data, **options)
    url = server.start()
    try:
        yield url
    finally:
        server.stop()
