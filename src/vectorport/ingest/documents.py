"""What a loader hands the chunker: a document as an ordered list of blocks.

A :class:`Block` is a paragraph, a heading, a code block or one e-mail message; the chunker
never splits inside a block unless the block alone exceeds the token budget. ``section`` is
the heading a block sits under, carried into chunk metadata.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import StrEnum

__all__ = ["Block", "BlockKind", "Document", "sha256_hex"]


class BlockKind(StrEnum):
    """What a block is; headings start sections, code keeps its line breaks."""

    HEADING = "heading"
    PARAGRAPH = "paragraph"
    CODE = "code"


@dataclass(frozen=True)
class Block:
    """One paragraph-like unit of a document."""

    text: str
    kind: BlockKind = BlockKind.PARAGRAPH
    section: str | None = None


@dataclass(frozen=True)
class Document:
    """A loaded document.

    Parameters
    ----------
    source
        The path relative to the ingest root, POSIX separators (``docs/intro.md``); chunk keys
        are ``f"{source}#chunk{i}"``.
    blocks
        The text, in reading order.
    doc_hash
        SHA-256 of the file's bytes: the incremental indexer compares it with the store's.
    title
        The document title when the format has one (Markdown ``# H1``, HTML ``<title>``,
        the first mail subject).
    format
        The loader that read it: ``markdown``, ``text``, ``html``, ``mbox``.
    """

    source: str
    blocks: tuple[Block, ...]
    doc_hash: str
    title: str | None = None
    format: str = "text"

    @property
    def text(self) -> str:
        """All blocks joined by blank lines."""
        return "\n\n".join(b.text for b in self.blocks)


def sha256_hex(data: bytes | str) -> str:
    """Hex SHA-256 of bytes, or of a string's UTF-8 encoding."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()
