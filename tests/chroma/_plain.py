"""A plain chromadb client on the same directory or server as a vectorport URL: the view of a
Chroma user who never heard of vectorport."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qs, urlsplit

import chromadb
from chromadb.config import Settings


def _settings() -> Settings:
    return Settings(anonymized_telemetry=False)


@contextmanager
def plain_client(url: str) -> Iterator[Any]:
    """``chromadb.PersistentClient`` / ``chromadb.HttpClient`` for ``url``, closed afterwards."""
    parts = urlsplit(url)
    if parts.scheme == "chroma":
        client: Any = chromadb.PersistentClient(
            path=url.split("://", 1)[1].split("?")[0], settings=_settings()
        )
    else:
        client = chromadb.HttpClient(host=parts.hostname, port=parts.port, settings=_settings())
    try:
        yield client
    finally:
        servers = [
            getattr(client, "_server", None),
            getattr(getattr(client, "_admin_client", None), "_server", None),
        ]
        client.close()
        # chromadb's HttpClient never closes its httpx sessions (see ChromaStore.close).
        for server in servers:
            session = getattr(server, "_session", None)
            if session is not None:
                session.close()


def collection_name(url: str) -> str:
    return parse_qs(urlsplit(url).query)["collection"][0]
