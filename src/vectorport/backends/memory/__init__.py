"""The exact in-memory reference store (``memory://NAME``)."""

from ..._registry import Backend, TestTarget
from .store import MemoryStore

__all__ = ["MemoryStore", "backend"]

backend = Backend(
    name="memory",
    package=__name__,
    store=".store:MemoryStore",
    tests=(TestTarget("{scheme}://{collection}"),),
)
"""This backend, as the ``vectorport.backends`` entry point registers it."""
