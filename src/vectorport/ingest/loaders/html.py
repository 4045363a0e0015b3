"""HTML (``.html``, ``.htm``): visible text by block element; ``<h1>`` to ``<h6>`` start sections,
``<pre>`` keeps its lines, scripts, styles and navigation are dropped."""

from __future__ import annotations

from html.parser import HTMLParser

from ..documents import Block, BlockKind, Document
from ._text import collapse_spaces, decode

__all__ = ["SUFFIXES", "html_to_blocks", "load"]

SUFFIXES = (".html", ".htm", ".xhtml")

_BLOCK_TAGS = frozenset(
    {
        "address", "article", "aside", "blockquote", "br", "dd", "details", "div", "dl", "dt",
        "figcaption", "footer", "form", "header", "hr", "li", "main", "ol", "p", "section",
        "summary", "table", "td", "th", "tr", "ul",
    }
)  # fmt: skip
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_SKIP = frozenset({"script", "style", "noscript", "template", "svg", "nav", "head"})


class _Extractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[Block] = []
        self.title: str | None = None
        self.h1: str | None = None
        self._buf: list[str] = []
        self._skip = 0
        self._pre = 0
        self._heading: str | None = None
        self._in_title = False
        self._title_buf: list[str] = []
        self._section: str | None = None

    def _flush(self) -> None:
        raw = "".join(self._buf)
        self._buf.clear()
        if self._pre:
            text = raw.strip("\n")
            kind = BlockKind.CODE
        else:
            text = collapse_spaces(raw.replace("\n", " "))
            kind = BlockKind.PARAGRAPH
        if not text.strip():
            return
        if self._heading:
            self._section = text
            if self._heading == "h1" and self.h1 is None:
                self.h1 = text
            self.blocks.append(Block(text, BlockKind.HEADING, text))
        else:
            self.blocks.append(Block(text, kind, self._section))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        if tag in _SKIP:
            self._skip += 1
            return
        if tag in _BLOCK_TAGS or tag in _HEADINGS or tag == "pre":
            self._flush()
        if tag in _HEADINGS:
            self._heading = tag
        if tag == "pre":
            self._pre += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
            self.title = collapse_spaces("".join(self._title_buf)) or None
        if tag in _SKIP:
            self._skip = max(0, self._skip - 1)
            return
        if tag in _BLOCK_TAGS or tag in _HEADINGS or tag == "pre":
            self._flush()
        if tag in _HEADINGS:
            self._heading = None
        if tag == "pre":
            self._pre = max(0, self._pre - 1)

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self._title_buf.append(data)
            return
        if not self._skip:
            self._buf.append(data)

    def close(self) -> None:
        super().close()
        self._flush()


def html_to_blocks(markup: str) -> tuple[list[Block], str | None]:
    """Blocks of visible text and the title (``<title>``, else the first ``<h1>``)."""
    parser = _Extractor()
    parser.feed(markup)
    parser.close()
    return parser.blocks, parser.title or parser.h1


def load(data: bytes, source: str, doc_hash: str) -> Document:
    """Read an HTML page.

    >>> doc = load(b"<title>T</title><h2>A</h2><p>x &amp; y</p><script>no()</script>", "p.html", "h")
    >>> doc.title, [b.text for b in doc.blocks]
    ('T', ['A', 'x & y'])
    """
    blocks, title = html_to_blocks(decode(data))
    return Document(source, tuple(blocks), doc_hash, title, "html")
