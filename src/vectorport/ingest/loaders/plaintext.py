"""Plain text (``.txt``, ``.text``, ``.rst``): blank-line separated paragraphs, no title."""

from __future__ import annotations

from ..documents import Block, Document
from ._text import decode, paragraphs

__all__ = ["SUFFIXES", "load"]

SUFFIXES = (".txt", ".text", ".rst")


def load(data: bytes, source: str, doc_hash: str) -> Document:
    """Read plain text.

    >>> load(b"One.\\n\\nTwo\\nlines.", "a.txt", "h").blocks[1].text
    'Two\\nlines.'
    """
    blocks = tuple(Block(p) for p in paragraphs(decode(data)))
    return Document(source, blocks, doc_hash, None, "text")
