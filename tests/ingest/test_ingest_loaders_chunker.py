from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vectorport.ingest import Chunker, ChunkingConfig, HashEmbedder, load_bytes
from vectorport.ingest.documents import BlockKind
from vectorport.ingest.loaders.mbox import clean_body

pytestmark = pytest.mark.memory

COUNT = HashEmbedder(8).count_tokens


def test_markdown_sections_code_and_front_matter() -> None:
    md = b"""---
title: "Front Title"
---
Intro line
one.

Setext Heading
--------------

```python
def f():

    return 1
```

### Deep <!-- hidden -->

Last para.
"""
    doc = load_bytes(md, "docs/a.md")
    assert doc.title == "Front Title"
    assert doc.format == "markdown"
    kinds = [(b.kind, b.section) for b in doc.blocks]
    assert kinds[0] == (BlockKind.PARAGRAPH, None)
    assert kinds[1] == (BlockKind.HEADING, "Setext Heading")
    code = doc.blocks[2]
    assert code.kind is BlockKind.CODE and "\n\n    return 1" in code.text  # blank line kept inside code
    assert doc.blocks[3].text == "### Deep" and doc.blocks[4].section == "Deep"
    assert "hidden" not in doc.text


def test_html_drops_scripts_and_keeps_structure() -> None:
    html = b"""<html><head><title>Page &amp; Title</title><style>p{}</style></head>
    <body><nav>menu menu</nav><h1>Main</h1><p>First   para
    wraps.</p><ul><li>one</li><li>two</li></ul><pre>a  b
  c</pre><script>var x;</script></body></html>"""
    doc = load_bytes(html, "p.html")
    assert doc.title == "Page & Title"
    texts = [b.text for b in doc.blocks]
    assert texts == ["Main", "First para wraps.", "one", "two", "a  b\n  c"]
    assert all("menu" not in t and "var x" not in t for t in texts)
    assert doc.blocks[1].section == "Main"


def test_mbox_strips_quotes_and_signatures() -> None:
    mbox = b"""From alice@example.org Mon Jan  1 00:00:00 2024
From: Alice <alice@example.org>
Subject: Re: pgvector  index
Date: Mon, 1 Jan 2024 10:00:00 +0000

Use HNSW with ef_search 100.

On Sun, 31 Dec 2023, Bob <bob@example.org> wrote:
> Which index should we use?
> IVFFlat or HNSW?

-- 
Alice
Staff Engineer

From bob@example.org Mon Jan  1 01:00:00 2024
From: Bob <bob@example.org>
Subject: Thanks
Content-Type: text/html; charset=utf-8

<p>Thanks, will do.</p><p>&gt;From the docs too.</p>
"""
    doc = load_bytes(mbox, "mail/list.mbox")
    assert doc.title == "Re: pgvector index"
    text = doc.text
    assert "Use HNSW with ef_search 100." in text
    assert "Which index" not in text and "wrote:" not in text
    assert "Staff Engineer" not in text
    assert "Thanks, will do." in text
    sections = {b.section for b in doc.blocks}
    assert sections == {"Re: pgvector index", "Thanks"}


def test_clean_body_forward_tail() -> None:
    body = "Short answer: yes.\n\n-----Original Message-----\nFrom: X\nold stuff"
    assert clean_body(body) == "Short answer: yes."


def test_plain_text_paragraphs() -> None:
    doc = load_bytes("Caf\u00e9 one.\r\n\r\n\r\nTwo\r\nlines.  \n".encode(), "a.txt")
    assert [b.text for b in doc.blocks] == ["Caf\u00e9 one.", "Two\nlines."]
    assert load_bytes(b"\xe9t\xe9", "latin.txt").text == "\u00e9t\u00e9"
    assert load_bytes(b"a\x00b", "nul.txt").text == "ab"


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text)


def test_chunker_respects_budget_overlap_and_sections() -> None:
    paras = []
    for s in range(3):
        paras.append(f"## Section {s}")
        for p in range(4):
            paras.append(" ".join(f"s{s}p{p}w{i}." if i % 9 == 8 else f"s{s}p{p}w{i}" for i in range(45)))
    doc = load_bytes("\n\n".join(paras).encode(), "x.md")
    chunker = Chunker(COUNT, ChunkingConfig(100, 10, 20))
    chunks = chunker.chunk(doc)
    assert all(c.tokens <= 100 for c in chunks)
    assert all(COUNT([c.text])[0] == c.tokens for c in chunks)
    # every word appears, in order, once the overlaps are removed
    seen: list[str] = []
    for c in chunks:
        words = _words(c.text)
        overlap = 0
        for k in range(min(len(seen), len(words)), 0, -1):
            if seen[-k:] == words[:k]:
                overlap = k
                break
        assert overlap <= 10
        seen += words[overlap:]
    assert seen == _words(doc.text)
    # chunks never start in the middle of a paragraph when a paragraph boundary was available
    sections = [c.section for c in chunks]
    assert sections == sorted(sections, key=lambda s: s or "")
    assert {c.section for c in chunks} == {"Section 0", "Section 1", "Section 2"}
    # a section heading starts a chunk
    assert sum(c.text.startswith("## Section") for c in chunks) == 3


def test_chunker_bounded_by_model_limit_and_minimum_merges_tail() -> None:
    chunker = Chunker(COUNT, ChunkingConfig(500, 50, 50), model_limit=64)
    assert chunker.config.target_tokens == 64 and chunker.config.overlap_tokens == 16
    doc = load_bytes((" ".join(f"word{i}" for i in range(130)) + " end").encode(), "w.txt")
    chunks = chunker.chunk(doc)
    assert all(c.tokens <= 64 for c in chunks)
    small = Chunker(COUNT, ChunkingConfig(50, 0, 20))
    doc2 = load_bytes(b"alpha " * 45 + b"\n\nshort tail here", "t.txt")
    tail = small.chunk(doc2)
    assert len(tail) == 1 and tail[0].text.endswith("short tail here")
    assert Chunker(COUNT).chunk(load_bytes(b"  \n\n ", "e.txt")) == []


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.lists(st.text(alphabet="abcdefgh", min_size=1, max_size=9), min_size=1, max_size=80).map(" ".join),
        min_size=1,
        max_size=12,
    ),
    st.integers(min_value=8, max_value=80),
    st.integers(min_value=0, max_value=20),
)
def test_chunker_property_never_over_budget_and_loses_nothing(
    paras: list[str], limit: int, overlap: int
) -> None:
    doc = load_bytes("\n\n".join(paras).encode(), "p.txt")
    chunks = Chunker(COUNT, ChunkingConfig(limit, overlap, 4)).chunk(doc)
    assert chunks
    assert all(c.tokens <= limit for c in chunks)
    joined = " ".join(c.text for c in chunks)
    assert set(_words(doc.text)) <= set(_words(joined))
    assert [c.index for c in chunks] == list(range(len(chunks)))
