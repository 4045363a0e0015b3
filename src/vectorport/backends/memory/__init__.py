"""The exact in-memory reference store (``memory://NAME``)."""

from .store import MemoryStore

__all__ = ["MemoryStore"]
