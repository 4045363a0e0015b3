"""Markdown (``.md``, ``.markdown``, ``.mdx``): ATX and setext headings start sections, fenced
code stays one block, YAML front matter gives the title."""

from __future__ import annotations

import re

from ..documents import Block, BlockKind, Document
from ._text import decode

__all__ = ["SUFFIXES", "load"]

SUFFIXES = (".md", ".markdown", ".mdx")

_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_FRONT_TITLE = re.compile(r"""^title:\s*["']?(.*?)["']?\s*$""", re.MULTILINE)


def load(data: bytes, source: str, doc_hash: str) -> Document:
    """Read Markdown into heading, paragraph and code blocks.

    >>> doc = load(b"# Guide\\n\\nIntro.\\n\\n## Setup\\n\\nRun it.", "g.md", "h")
    >>> doc.title, [(b.kind.value, b.section) for b in doc.blocks]
    ('Guide', [('heading', 'Guide'), ('paragraph', 'Guide'), ('heading', 'Setup'), ('paragraph', 'Setup')])
    """
    title, text = _front_matter(decode(data))
    text = _COMMENT.sub("", text)

    blocks: list[Block] = []
    section: str | None = None
    para: list[str] = []

    def flush() -> None:
        joined = "\n".join(para).strip()
        para.clear()
        if joined:
            blocks.append(Block(joined, BlockKind.PARAGRAPH, section))

    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i].rstrip()
        fence = _FENCE.match(line)
        if fence:
            flush()
            code, i = _fenced(lines, i, fence.group(1))
            blocks.append(Block(code, BlockKind.CODE, section))
            continue
        heading = _ATX.match(line)
        setext = _SETEXT.match(line) if len(para) == 1 else None
        if heading or setext:
            if heading:
                flush()
                level, name = len(heading.group(1)), heading.group(2).strip()
                shown = line.strip()
            else:
                assert setext is not None
                level = 1 if setext.group(1).startswith("=") else 2
                name = para.pop().strip()
                shown = f"{'#' * level} {name}"
            if name:
                section = name
                if level == 1 and title is None:
                    title = name
                blocks.append(Block(shown, BlockKind.HEADING, section))
            i += 1
            continue
        if not line.strip():
            flush()
        else:
            para.append(line)
        i += 1
    flush()
    return Document(source, tuple(blocks), doc_hash, title, "markdown")


def _front_matter(text: str) -> tuple[str | None, str]:
    """The title of a YAML front matter block (if any) and the text after it."""
    if not text.startswith("---\n"):
        return None, text
    end = text.find("\n---", 4)
    if end == -1:
        return None, text
    found = _FRONT_TITLE.search(text[4:end])
    return (found.group(1).strip() if found else None), text[end + 4 :].lstrip("\n")


def _fenced(lines: list[str], i: int, marker: str) -> tuple[str, int]:
    """The code block opened by ``marker`` on line ``i`` (to its closing fence, or the end of the
    text when it has none), and the index of the line after it."""
    body = [lines[i].rstrip()]
    i += 1
    while i < len(lines) and not lines[i].strip().startswith(marker[0] * len(marker)):
        body.append(lines[i].rstrip())
        i += 1
    if i < len(lines):
        body.append(lines[i].rstrip())
    return "\n".join(body), i + 1
