"""One pass over a store that folds every record into per-key-bin content digests.

Verification compares two such passes (or the copy's own digests with one pass over the
target) instead of fetching the target back by key: the records are read the fastest way the
backend allows — several scan segments at once where each reads only its own records (the
bucket service's segments), one scan otherwise — and each record costs one hash. A record's digest is
:func:`vectorport._digest.record_digest` of what the target holds for it: the source side goes
through the migration's :class:`Transformer` first, the target side is taken as read.

The same pass feeds the exact top-k of the sampled queries (:class:`StreamingTopK`), so the
query check needs no pass of its own. Verification runs it as tasks, one per segment
(:func:`vectorport.verify._tasks.scan_task`); the copy's read-back folds its pages with
:func:`page_digests`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .._digest import BinSums, bin_of, record_digest
from .._exact import StreamingTopK
from .._features import Feature
from .._models import Record
from .._protocol import VectorStore
from ._runner import LocalRunner
from ._transform import Transformer

__all__ = [
    "DigestScan",
    "digest_segment",
    "each_segment",
    "page_digests",
    "parallel_segments",
]


@dataclass
class DigestScan:
    """What a digest pass found: per-bin digests and counts, and the records read."""

    sums: BinSums
    records: int


def page_digests(
    records: Iterable[Record], transformer: Transformer | None, parts: int
) -> list[tuple[int, bytes]]:
    """``(bin, digest)`` of each record as the target holds it."""
    out: list[tuple[int, bytes]] = []
    for rec in records:
        if transformer is not None:
            t = transformer.apply(rec.metadata, rec.text)
            meta, text = t.metadata, t.text
        else:
            meta, text = rec.metadata, rec.text
        out.append((bin_of(rec.key, parts), record_digest(rec.key, rec.vector, meta, text)))
    return out


def parallel_segments(store: VectorStore, concurrency: int) -> int:
    """How many scan segments to read at once (1: one plain scan). Only where each segment
    reads just its own records (``parallel_segments``): pgvector's segments filter every row by
    a key hash, and four of them were slower than one scan (50k rows: 1.6 s against 1.0 s)."""
    if concurrency <= 1 or Feature.PARALLEL_SEGMENTS not in store.capabilities.features:
        return 1
    return concurrency


def each_segment(segments: int, read: Callable[[int], None]) -> None:
    """Run ``read(0) … read(segments - 1)`` (one per scan segment) at once, as tasks of this
    process's runner (inline for one); the first error raises."""
    for _ in LocalRunner().map(read, [(i,) for i in range(segments)]):
        pass


def digest_segment(
    store: VectorStore,
    transformer: Transformer | None,
    parts: int,
    segment: tuple[int, int],
    *,
    top: StreamingTopK | None = None,
    advance: Callable[[int], None] | None = None,
    batch_size: int | None = None,
) -> DigestScan:
    """Read scan segment ``segment`` of ``store`` (vectors, metadata, text) and fold each record,
    as the target should hold it (after ``transformer``), into ``parts`` key bins; rows also go
    to ``top`` when given. The one digest read of every verification, in a thread or a task."""
    sums = BinSums(parts)
    n = 0
    for page in store.scan(batch_size=batch_size, include=["vector", "metadata", "text"], segment=segment):
        for seg, digest in page_digests(page.records, transformer, parts):
            sums.add(seg, digest)
        n += len(page)
        if top is not None:
            top.update_records(page.records)
        if advance is not None:
            advance(len(page))
    return DigestScan(sums, n)
