"""One pass over a store that folds every record into per-key-bin content digests.

Verification compares two such passes (or the copy's own digests with one pass over the
target) instead of fetching the target back by key: the records are read the fastest way the
backend allows — several scan segments at once where each reads only its own records (the
bucket service's segments), one scan otherwise — and each record costs one hash. A record's digest is
:func:`vectorport._digest.record_digest` of what the target holds for it: the source side goes
through the migration's :class:`Transformer` first, the target side is taken as read.

The same pass feeds the exact top-k of the sampled queries (:class:`StreamingTopK`), so the
query check needs no pass of its own.

:class:`TargetScan` runs that pass over a migration's target on a thread of its own, from the
moment the copy has written every record: the read then goes on beside the target's deferred
work (pgvector's HNSW build when leaving a bulk load, which changes no record), and
verification takes its digests instead of reading the target afterwards.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from .._digest import BinSums, bin_of, record_digest
from .._exact import StreamingTopK
from .._features import Feature
from .._models import Record
from .._protocol import VectorStore
from ._transform import Transformer

__all__ = ["DigestScan", "TargetScan", "in_lanes", "page_digests", "parallel_segments", "scan_digests"]

log = logging.getLogger("vectorport.migrate")


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


def in_lanes(lanes: int, lane: Callable[[int], None]) -> None:
    """Run ``lane(0) … lane(lanes - 1)`` at once (inline for one lane); the first error raises."""
    if lanes == 1:
        lane(0)
        return
    with ThreadPoolExecutor(max_workers=lanes, thread_name_prefix="vectorport-lane") as pool:
        for fut in [pool.submit(lane, i) for i in range(lanes)]:
            fut.result()


def scan_digests(
    store: VectorStore,
    transformer: Transformer | None,
    parts: int,
    *,
    exact: StreamingTopK | None = None,
    concurrency: int = 4,
    advance: Callable[[int], None] | None = None,
) -> DigestScan:
    """Read every record of ``store`` once (vectors, metadata, text) and fold it into
    ``parts`` key bins; rows also go to ``exact`` when given."""
    lanes = parallel_segments(store, concurrency)
    lock = threading.Lock()
    total = BinSums(parts)
    seen = [0]

    def lane(i: int) -> None:
        mine = BinSums(parts)
        top = exact.empty_like() if exact is not None else None  # merged once, no lock per page
        n = 0
        for page in store.scan(include=["vector", "metadata", "text"], segment=(i, lanes)):
            for seg, digest in page_digests(page.records, transformer, parts):
                mine.add(seg, digest)
            n += len(page)
            if top is not None:
                top.update_records(page.records)
            if advance is not None:
                advance(len(page))
        with lock:
            total.merge(mine)
            seen[0] += n
            if exact is not None and top is not None:
                exact.merge(top)

    in_lanes(lanes, lane)
    total.clean()
    return DigestScan(total, seen[0])


class TargetScan:
    """:func:`scan_digests` of ``target`` (taken as read) on a thread started by :meth:`start`.

    ``exact``'s queries get an exact top-k of their own (:attr:`top`), merged by whoever takes
    the result, so a failed scan leaves ``exact`` as it was. :meth:`result` waits for the scan
    and returns it, or ``None`` when it failed (logged: verification then reads the target
    itself) or was never started; :meth:`close` waits for a started scan to end.
    """

    def __init__(
        self, target: VectorStore, parts: int, *, exact: StreamingTopK | None = None, concurrency: int = 4
    ) -> None:
        self.target, self.parts, self.concurrency = target, parts, concurrency
        self.top = exact.empty_like() if exact is not None else None
        self.scan: DigestScan | None = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="vectorport-target-scan", daemon=True)

    def start(self) -> None:
        """Begin reading (once: the target holds every record from now on)."""
        if self._thread.ident is None:
            self._thread.start()

    def _run(self) -> None:
        try:
            self.scan = scan_digests(
                self.target, None, self.parts, exact=self.top, concurrency=self.concurrency
            )
        except BaseException as exc:  # handed to the caller of result(), which reads again
            self.error = exc

    def close(self) -> None:
        if self._thread.ident is not None:
            self._thread.join()

    def result(self) -> DigestScan | None:
        self.close()
        if self.error is not None:
            log.warning("the target's read beside its index build failed (%s); it is read again", self.error)
        return self.scan
