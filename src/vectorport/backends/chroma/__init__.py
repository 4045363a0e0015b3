"""Chroma (embedded ``PersistentClient`` or a server through ``HttpClient``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..._registry import Backend, TestTarget

if TYPE_CHECKING:
    from .store import ChromaStore

__all__ = ["ChromaStore", "backend"]

backend = Backend(
    name="chroma",
    package=__name__,
    store=".store:ChromaStore",
    schemes=("chroma", "chroma+http", "chroma+https"),
    extra="chroma",
    requires=("chromadb",),
    tests=(
        # embedded collections in one directory (one process at a time), and a real server
        TestTarget("chroma://{server}?collection={collection}"),
        TestTarget(
            "chroma+http://{server}?collection={collection}", server="._server:chroma_run", variant="http"
        ),
    ),
)
"""This backend, as the ``vectorport.backends`` entry point registers it."""


def __getattr__(name: str) -> Any:
    # the store imports chromadb: only when asked for
    if name == "ChromaStore":
        from .store import ChromaStore

        return ChromaStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
