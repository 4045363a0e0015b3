"""Read-back: the target's records fetched by key while the copy is still writing.

Into a target whose writes are paced (a bucket index's cap of 2,500 vectors/s), the copy spends
most of its time waiting for the cap, and reading the whole target back after it cost another
third of the copy (100k x 384 through ``ListVectors``: 23 to 33 s after a 39 s copy). Reads are not
under the write cap, so each batch the target acknowledges is fetched back by key (``get``:
vectors, metadata, text) by a reader thread while later batches wait for the cap, and folded
into per-key-bin content digests: what the target held for those keys just after writing them.

Verification then needs from the target only one key listing, without vectors, at the end
(:func:`list_key_sums`): its per-bin key digests and counts must equal those of the keys
read back, so nothing was lost, added or duplicated since. A bin whose content or keys
differ is compared record by record, as in every digest verification. What read-back does not
see is a record rewritten with other content, under the same key, by someone else between its
read-back and the end of the run; ``vectorport verify`` reads the whole target again.

Into a target whose writes are not paced, reading each batch back would compete with the copy
for the same server; there the target is read once, whole (:class:`TargetScan`), but from the
moment its last write is acknowledged, while the target does the work it deferred (pgvector
builds its HNSW and GIN indexes then: its rows are final already), instead of after that work.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Sequence

from .._digest import BinSums, bin_of, key_digest
from .._exact import StreamingTopK
from .._models import Record
from .._protocol import VectorStore
from ..engine._digestscan import each_segment, page_digests, parallel_segments

__all__ = ["ReadBack", "list_key_sums"]

log = logging.getLogger("vectorport.migrate")

_INCLUDE = ["vector", "metadata", "text"]


def _fold_keys(sums: BinSums, keys: Sequence[str]) -> None:
    for key in keys:
        sums.add(bin_of(key, sums.parts), key_digest(key))


class ReadBack:
    """Fetches acknowledged batches back from ``target`` on ``readers`` threads.

    :meth:`written` is called with each acknowledged batch's keys (from the copy's writer
    threads); it blocks while ``backlog`` batches wait, so memory stays bounded when the reads
    fall behind the writes. :meth:`close` waits for the last read. After an error the rest is
    not read, :attr:`error` says why, and verification reads the whole target instead.
    """

    def __init__(
        self,
        target: VectorStore,
        parts: int,
        *,
        exact: StreamingTopK | None = None,
        readers: int = 4,
        backlog: int = 64,
    ) -> None:
        self.target = target
        self.parts = parts
        self.top = exact.empty_like() if exact is not None else None
        """The exact top-k of ``exact``'s queries over the records read back (verification
        merges it in when it takes the read-back as the target's side)."""
        self.sums = BinSums(parts)
        """Content digests of the records read back."""
        self.keys = BinSums(parts)
        """Key digests of the records read back (compared with the final key listing)."""
        self.records = 0
        self.error: BaseException | None = None
        self._queue: queue.Queue[list[str] | None] = queue.Queue(maxsize=backlog)
        self._lock = threading.Lock()
        self._finished = False
        self._threads = [
            threading.Thread(target=self._read, name=f"vectorport-readback-{i}", daemon=True)
            for i in range(max(1, readers))
        ]
        for t in self._threads:
            t.start()

    @property
    def usable(self) -> bool:
        return self.error is None

    def written(self, keys: list[str]) -> None:
        if self.error is None:
            self._queue.put(keys)

    def _read(self) -> None:
        sums, key_sums = BinSums(self.parts), BinSums(self.parts)
        top = self.top.empty_like() if self.top is not None else None
        n = 0
        while True:
            keys = self._queue.get()
            if keys is None:
                break
            if self.error is not None:
                continue  # drain: the copy must never block on a reader that gave up
            try:
                records: list[Record] = self.target.get(keys, include=_INCLUDE)
                for seg, digest in page_digests(records, None, self.parts):
                    sums.add(seg, digest)
                _fold_keys(key_sums, [r.key for r in records])
                n += len(records)
                if top is not None:
                    top.update_records(records)
            except BaseException as exc:  # the copy goes on; verification reads the target instead
                with self._lock:
                    self.error = self.error or exc
                log.warning("read-back stopped (%s); verification will read the whole target", exc)
        with self._lock:
            self.sums.merge(sums)
            self.keys.merge(key_sums)
            self.records += n
            if top is not None and self.top is not None:
                self.top.merge(top)

    def finish(self) -> None:
        """No more batches: the readers stop after the ones handed over (returns at once)."""
        if not self._finished:
            self._finished = True
            for _ in self._threads:
                self._queue.put(None)

    def join(self) -> None:
        """Wait for every batch handed over to be read."""
        self.finish()
        for t in self._threads:
            t.join()

    def close(self) -> None:
        """:meth:`finish` and :meth:`join` (idempotent)."""
        self.join()


def list_key_sums(store: VectorStore, parts: int, concurrency: int = 4) -> tuple[BinSums, int]:
    """Per-bin key digests and counts of every key ``store`` holds (no vectors, metadata or
    text; several scan segments at once where the store's segments split the reads), and the
    number of rows listed."""
    segments = parallel_segments(store, concurrency)
    lock = threading.Lock()
    total = BinSums(parts)
    rows = [0]

    def read(i: int) -> None:
        mine = BinSums(parts)
        n = 0
        for page in store.scan(include=[], segment=(i, segments)):
            keys = [r.key for r in page]
            n += len(keys)
            _fold_keys(mine, keys)
        with lock:
            total.merge(mine)
            rows[0] += n

    each_segment(segments, read)
    total.clean()
    return total, rows[0]
