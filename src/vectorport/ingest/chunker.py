"""Paragraph-aware chunking bounded by the embedder's own tokenizer.

A document's blocks are cut into *units*: a whole paragraph when it fits the budget, else its
sentences, else windows of words (code blocks: lines). Units are packed greedily up to
``target_tokens`` (never more than the model accepts); when a chunk overflows it is cut at the
last paragraph start that leaves it at least half full, else at a sentence. Each chunk after the
first repeats the previous chunk's trailing sentences up to ``overlap_tokens`` — except at a new
section, which starts clean. A trailing chunk under ``min_tokens`` is merged into its
predecessor when the result still fits. Token counts are summed per unit: exact for WordPiece
and BPE tokenizers that split on whitespace, which all sentence-transformers models do.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .documents import BlockKind, Document, sha256_hex

__all__ = ["Chunk", "Chunker", "ChunkingConfig"]

TokenCounter = Callable[[Sequence[str]], list[int]]

_SENTENCE_END = re.compile(r"(?<=[.!?;:])[\"'\u201d\u2019)\]]*\s+")
_WS = re.compile(r"\S+")


@dataclass(frozen=True)
class ChunkingConfig:
    """Token budget of a chunk.

    Parameters
    ----------
    target_tokens
        Largest chunk, in the embedder's tokens; lowered to the embedder's input limit.
    overlap_tokens
        Trailing text of one chunk repeated at the start of the next (sentence granularity).
    min_tokens
        A trailing chunk shorter than this is merged into the previous one when it fits.
    """

    target_tokens: int = 500
    overlap_tokens: int = 50
    min_tokens: int = 50

    def __post_init__(self) -> None:
        if self.target_tokens < 8:
            raise ValueError(f"target_tokens must be at least 8, got {self.target_tokens}")
        if self.overlap_tokens < 0 or self.min_tokens < 0:
            raise ValueError("overlap_tokens and min_tokens must not be negative")

    def effective(self, model_limit: int | None) -> ChunkingConfig:
        """The budget once bounded by the model's input limit (overlap ≤ ¼, minimum ≤ ½)."""
        target = self.target_tokens if model_limit is None else min(self.target_tokens, model_limit)
        return ChunkingConfig(
            target, min(self.overlap_tokens, target // 4), min(self.min_tokens, target // 2)
        )

    @property
    def signature(self) -> str:
        """Recorded on every chunk: a changed budget re-chunks every document."""
        return f"v1:{self.target_tokens}/{self.overlap_tokens}/{self.min_tokens}"


@dataclass(frozen=True)
class Chunk:
    """One chunk of a document."""

    index: int
    text: str
    tokens: int
    section: str | None

    @property
    def content_hash(self) -> str:
        """SHA-256 of the chunk text."""
        return sha256_hex(self.text)


@dataclass(frozen=True)
class _Unit:
    text: str
    tokens: int
    new_block: bool
    heading: bool
    section: str | None
    joiner: str


class Chunker:
    """Cut documents into chunks that the embedder can take whole.

    >>> from vectorport.ingest.embedders import HashEmbedder
    >>> from vectorport.ingest.loaders import load_bytes
    >>> e = HashEmbedder(8)
    >>> c = Chunker(e.count_tokens, ChunkingConfig(20, 4, 5))
    >>> doc = load_bytes(b"# T\\n\\n" + b"Word one two three. " * 12, "a.md")
    >>> [ch.tokens for ch in c.chunk(doc)]
    [17, 20, 20]
    """

    def __init__(
        self, count_tokens: TokenCounter, config: ChunkingConfig | None = None, model_limit: int | None = None
    ) -> None:
        self.count_tokens = count_tokens
        self.config = (config or ChunkingConfig()).effective(model_limit)

    def chunk(self, doc: Document) -> list[Chunk]:
        """The chunks of a document, in order (empty for a document without text)."""
        units = self._units(doc)
        if not units:
            return []
        ranges = self._pack(units)
        out = []
        for i, (start, end, fresh) in enumerate(ranges):
            parts = [units[start].text]
            for u in units[start + 1 : end]:
                parts.append("\n\n" if u.new_block else u.joiner)
                parts.append(u.text)
            section = units[fresh].section if fresh < end else units[start].section
            out.append(Chunk(i, "".join(parts), sum(u.tokens for u in units[start:end]), section))
        return out

    # ------------------------------------------------------------------ units
    def _units(self, doc: Document) -> list[_Unit]:
        limit = self.config.target_tokens
        blocks = [b for b in doc.blocks if b.text.strip()]
        counts = self.count_tokens([b.text for b in blocks])
        units: list[_Unit] = []
        for block, n in zip(blocks, counts, strict=True):
            heading = block.kind is BlockKind.HEADING
            if n <= limit:
                units.append(_Unit(block.text, n, True, heading, block.section, " "))
                continue
            if block.kind is BlockKind.CODE:
                pieces, joiner = [ln for ln in block.text.split("\n") if ln.strip()], "\n"
            else:
                pieces, joiner = [s for s in _SENTENCE_END.split(block.text) if s.strip()], " "
            first = True
            for piece, m in zip(pieces, self.count_tokens(pieces), strict=True):
                for text, k in [(piece, m)] if m <= limit else self._windows(piece, limit):
                    units.append(_Unit(text, k, first, heading and first, block.section, joiner))
                    first = False
        return units

    def _windows(self, text: str, limit: int) -> list[tuple[str, int]]:
        words = _WS.findall(text)
        counts = self.count_tokens(words)
        out: list[tuple[str, int]] = []
        cur: list[str] = []
        tok = 0
        for word, n in zip(words, counts, strict=True):
            if cur and tok + n > limit:
                out.append((" ".join(cur), tok))
                cur, tok = [], 0
            if n > limit:
                # A single "word" longer than the budget (a URL, base64): cut by characters.
                step = max(1, len(word) * limit // max(n, 1))
                out.extend((word[i : i + step], min(limit, n)) for i in range(0, len(word), step))
                continue
            cur.append(word)
            tok += n
        if cur:
            out.append((" ".join(cur), tok))
        return out

    # ------------------------------------------------------------------ packing
    def _pack(self, units: list[_Unit]) -> list[tuple[int, int, int]]:
        """``(start, end, fresh)`` unit ranges; ``start..fresh`` is the overlap."""
        cfg = self.config
        limit, n = cfg.target_tokens, len(units)
        ranges: list[tuple[int, int, int]] = []
        start = fresh = 0
        while fresh < n:
            end, tok, new_tok = start, 0, 0
            while end < n and tok + units[end].tokens <= limit:
                if end > fresh and units[end].heading and new_tok >= cfg.min_tokens:
                    break
                tok += units[end].tokens
                if end >= fresh:
                    new_tok += units[end].tokens
                end += 1
            if end <= fresh:  # the overlap left no room: drop it
                start = fresh
                continue
            if end < n and not units[end].heading:
                floor = max(cfg.min_tokens, limit // 2)
                acc = sum(u.tokens for u in units[start:fresh])
                best = None
                for b in range(fresh, end):
                    if b > fresh and units[b].new_block and acc >= floor:
                        best = b
                    acc += units[b].tokens
                if best is not None:
                    end = best
            ranges.append((start, end, fresh))
            fresh = end
            if end >= n:
                break
            if units[end].heading or cfg.overlap_tokens == 0:
                start = end
                continue
            s, ot = end, 0
            while s - 1 > start and s - 1 >= ranges[-1][2] and ot + units[s - 1].tokens <= cfg.overlap_tokens:
                s -= 1
                ot += units[s].tokens
            start = s
        if len(ranges) > 1:
            (ps, _pe, pf), (_ls, le, lf) = ranges[-2], ranges[-1]
            fresh_tokens = sum(u.tokens for u in units[lf:le])
            if fresh_tokens < cfg.min_tokens and sum(u.tokens for u in units[ps:le]) <= limit:
                ranges[-2:] = [(ps, le, pf)]
        return ranges
