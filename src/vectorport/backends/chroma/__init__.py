"""Chroma (embedded ``PersistentClient`` or a server through ``HttpClient``)."""

from .store import ChromaStore

__all__ = ["ChromaStore"]
