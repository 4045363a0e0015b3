"""Loaders by file suffix: Markdown, plain text, HTML and mail. Each module exposes
``SUFFIXES`` and ``load(data, source, doc_hash) -> Document``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..documents import Document, sha256_hex
from . import html, markdown, mbox, plaintext

__all__ = ["LOADERS", "Loader", "load_bytes", "load_path", "loader_for"]

Loader = Callable[[bytes, str, str], Document]

LOADERS: dict[str, Loader] = {
    suffix: module.load for module in (html, markdown, mbox, plaintext) for suffix in module.SUFFIXES
}
"""Suffix (lower case, with the dot) → loader."""


def loader_for(path: str | Path) -> Loader | None:
    """The loader for a file name, or ``None`` when vectorport does not read that format."""
    return LOADERS.get(Path(path).suffix.lower())


def load_bytes(data: bytes, source: str) -> Document:
    """Load a document from its bytes; the format comes from ``source``'s suffix."""
    loader = loader_for(source) or plaintext.load
    return loader(data, source, sha256_hex(data))


def load_path(path: str | Path, source: str | None = None) -> Document:
    """Load a file; ``source`` (default: the path as given) names it in keys and metadata."""
    p = Path(path)
    return load_bytes(p.read_bytes(), source or p.as_posix())
