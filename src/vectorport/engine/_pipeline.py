"""The copy: stream scan pages, transform, write batches concurrently, checkpoint what is safe.

Memory is bounded by one scan page plus ``2 * concurrency`` write batches, whatever the size
of the collection. Batches are written by a thread pool; a scan page is *acknowledged* when
every batch cut from it has been written. The checkpoint's cursor only moves past a page when
that page and every page before it are acknowledged, so a run killed at any instant resumes
from a cursor behind which nothing is missing; records after it may be written twice, which
is harmless because upserts replace by key.

The copy runs inside the target's bulk-load hook (:meth:`BaseStore.bulk_load`), so a target
that defers index maintenance builds its index once at the end; that build is timed apart
(``index_seconds``), with its own progress bar when the target reports progress.
"""

from __future__ import annotations

import functools
import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from .._activity import Activity, listening
from .._capabilities import MetadataRules
from .._digest import BinSums
from .._embedder import Embedder
from .._features import bulk_load_of
from .._gc import bulk_allocations
from .._models import JSON, Record, ScanPage
from .._protocol import VectorStore
from .._retry import RetryPolicy, retry_scope
from .._validate import metadata_checked
from ..exceptions import TransientError, ValidationError
from ..migrate._plan import PlanChecker
from ..migrate._reembed import embed_texts
from ._checkpoint import Checkpoint
from ._digestscan import page_digests
from ._progress import Progress, ProgressMode
from ._transform import Transformer

__all__ = ["CopyStats", "IndexBar", "copy_records"]

log = logging.getLogger("vectorport.migrate")

CHECKPOINT_INTERVAL = 0.25
"""Seconds between checkpoint writes while the watermark moves (always written at the end)."""


@dataclass
class CopyStats:
    """What one copy run did."""

    records: int = 0
    """Records written (acknowledged by the target) in this run."""
    batches: int = 0
    retries: int = 0
    """Batches retried after a :class:`~vectorport.exceptions.TransientError`."""
    resumed_from: int = 0
    """Records a previous run had already copied (from the checkpoint)."""
    resumed_cursor: str | None = None
    seconds: float = 0.0
    """Seconds copying (reading, transforming, writing), without the index build after it."""
    index_seconds: float = 0.0
    """Seconds the target spent after the copy on work it deferred (pgvector: building the
    HNSW index dropped for the bulk load)."""
    batch_size: int = 0
    concurrency: int = 0
    complete: bool = False
    refused: bool = False
    """A single-pass copy met a record the target cannot take (``checker.plan`` says which) and
    stopped writing before that record's page."""
    digests: BinSums | None = None
    """The single-pass copy's digests of every record the target acknowledged (resumed ones too)."""

    @property
    def rate(self) -> float:
        """Records per second copied in this run (the index build not counted)."""
        return self.records / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, JSON]:
        return {
            "records": self.records,
            "batches": self.batches,
            "retries": self.retries,
            "resumed_from": self.resumed_from,
            "resumed": self.resumed_cursor is not None,
            "seconds": round(self.seconds, 3),
            "index_seconds": round(self.index_seconds, 3),
            "records_per_second": round(self.rate, 1),
            "batch_size": self.batch_size,
            "concurrency": self.concurrency,
            "complete": self.complete,
            "refused": self.refused,
        }


def prefetched(pages: Iterable[ScanPage]) -> Iterator[ScanPage]:
    """``pages``, with the next one read by a thread while the caller works on the current one
    (a source's read, often in a driver that releases the GIL, overlaps the transform, checks
    and digests). At most one page waits; closing the iterator stops the reader after the read
    it is in."""
    slot: queue.Queue[tuple[ScanPage | None, BaseException | None]] = queue.Queue(maxsize=1)
    stop = threading.Event()

    def hand_over(item: tuple[ScanPage | None, BaseException | None]) -> bool:
        while not stop.is_set():
            try:
                slot.put(item, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    def read() -> None:
        try:
            for page in pages:
                if not hand_over((page, None)):
                    return
            hand_over((None, None))
        except BaseException as exc:  # handed to the caller, raised there
            hand_over((None, exc))

    reader = threading.Thread(target=read, name="vectorport-prefetch", daemon=True)
    reader.start()
    try:
        while True:
            page, exc = slot.get()
            if exc is not None:
                raise exc
            if page is None:
                return
            yield page
    finally:
        stop.set()
        reader.join()


def _said_what_was_written(error: BaseException, stats: CopyStats) -> BaseException:
    """A batch's :class:`ValidationError` says "nothing was written" of *its* batch; other batches
    of the copy may have been written before it or alongside it. Say how many, so the message is
    true of the migration and not only of the batch."""
    written = stats.records + stats.resumed_from
    if not isinstance(error, ValidationError) or written == 0:
        return error
    again = ValidationError(
        error.problems,
        outcome=(
            f"that batch was not written, but {written} records of this migration were "
            f"({stats.records} in this run, in {stats.batches} batches); the target holds them"
        ),
        hint=(
            "fix the records named and run the migration again (with a checkpoint=, resume=True continues it)"
        ),
    )
    again.__cause__ = error
    return again


class _Refused(Exception):
    """Leaves the bulk load of a refused single-pass copy without the target's deferred work."""


@dataclass
class _Slot:
    """One scan page in flight: its cursor, size and unacknowledged batches, and the digests of
    its records as written (folded into the copy's digests once the page is acknowledged)."""

    cursor: str | None
    size: int
    left: int
    digests: list[tuple[int, bytes]] = field(default_factory=list)


@dataclass
class _State:
    checkpoint: Checkpoint | None
    progress: Progress
    stats: CopyStats
    digests: BinSums | None = None
    pending: deque[_Slot] = field(default_factory=deque)
    lock: threading.Lock = field(default_factory=threading.Lock)
    error: BaseException | None = None
    last_save: float = 0.0
    finished_scan: bool = False

    def acknowledge(self, slot: _Slot, n: int) -> None:
        with self.lock:
            slot.left -= 1
            self.stats.records += n
            self.stats.batches += 1
            self._advance()
        self.progress.advance(n)

    def add(self, slot: _Slot) -> None:
        with self.lock:
            self.pending.append(slot)
            self._advance()

    def _advance(self) -> None:
        moved = False
        ck = self.checkpoint
        while self.pending and self.pending[0].left == 0:
            slot = self.pending.popleft()
            moved = True
            if self.digests is not None:
                for seg, digest in slot.digests:
                    self.digests.add(seg, digest)
            if ck is not None:
                ck.copied += slot.size
                if slot.cursor is None:
                    # not complete yet: the target may still have deferred work (an index build)
                    ck.scanned = True
                else:
                    ck.cursor = slot.cursor
        now = time.monotonic()
        if ck is not None and moved and (ck.scanned or now - self.last_save >= CHECKPOINT_INTERVAL):
            ck.save()
            self.last_save = now

    def flush(self) -> None:
        with self.lock:
            if self.checkpoint is not None:
                self.checkpoint.save()


class IndexBar:
    """A progress bar for an index build the target reports (:mod:`vectorport._activity`),
    shown once the copy's bar is gone."""

    def __init__(self, enabled: ProgressMode | bool) -> None:
        self.mode = ProgressMode.parse(enabled)
        self.bar: Progress | None = None

    def __call__(self, event: Activity) -> None:
        if event.kind != "index_build" or not self.mode:
            return
        if event.finished:
            self.close()
        elif event.total:
            if self.bar is None:
                self.bar = Progress("index build (heap blocks)", event.total, enabled=self.mode).__enter__()
            self.bar.update(event.done or 0, event.total)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None

    def __enter__(self) -> IndexBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _write(
    target: VectorStore,
    records: list[Record],
    texts: Sequence[str] | None,
    embedder: Embedder | None,
    retry: RetryPolicy | None,
    state: _State,
    checked: tuple[MetadataRules, list[dict[str, JSON]]],
) -> None:
    if embedder is not None and texts is not None:
        vectors = embed_texts(embedder, texts)
        records = [Record(r.key, vectors[i], r.metadata, r.text) for i, r in enumerate(records)]

    def count(exc: TransientError) -> None:
        with state.lock:
            state.stats.retries += 1

    # The store retries each of its calls (one retry layer); the migration's policy, when given,
    # replaces the store's for the copy, and every retry is counted in the report.
    with retry_scope(retry, on_retry=count), metadata_checked(*checked):
        target.upsert(records)


class _Copy:
    """The writing side of one :func:`copy_records` run: each page checked (or transformed),
    cut into batches and handed to the pool, at most ``2 * concurrency`` batches in flight."""

    def __init__(
        self,
        target: VectorStore,
        transformer: Transformer,
        state: _State,
        pool: ThreadPoolExecutor,
        *,
        batch_size: int,
        concurrency: int,
        retry: RetryPolicy | None,
        embedder: Embedder | None,
        checker: PlanChecker | None,
        on_written: Callable[[list[str]], None] | None,
    ) -> None:
        self.target, self.transformer, self.state, self.pool = target, transformer, state, pool
        self.batch_size, self.retry, self.embedder = batch_size, retry, embedder
        self.checker, self.on_written = checker, on_written
        self.slots = threading.BoundedSemaphore(max(2, 2 * concurrency))

    def drive(self, pages: Iterable[ScanPage], started: float) -> None:
        """Write ``pages``, wait for the batches in flight, keep the checkpoint; raise the first
        write error, or :class:`_Refused` (inside the bulk load: neither a failed nor a refused
        copy builds indexes; the caller rolls a refused target back)."""
        state, stats = self.state, self.state.stats
        try:
            self.run(pages)
        finally:
            close = getattr(pages, "close", None)
            if close is not None:
                close()  # stops the prefetching reader
            self.pool.shutdown(wait=True)
            stats.seconds = time.monotonic() - started
            state.flush()
        if state.error is not None:
            raise _said_what_was_written(state.error, stats)
        if stats.refused:
            raise _Refused

    def run(self, pages: Iterable[ScanPage]) -> None:
        """Write every page until the scan ends or a batch fails (``state.error``)."""
        for page in pages:
            self.page(page)
            if self.state.error is not None:
                return
        self.state.finished_scan = True

    def page(self, page: ScanPage) -> None:
        """Check or transform one page and submit its batches (after a refusal: only check)."""
        stats = self.state.stats
        if self.checker is not None:
            outs = self.checker.observe(page)
            stats.refused = stats.refused or self.checker.plan.refused
        else:
            outs = [self.transformer.apply(rec.metadata, rec.text) for rec in page]
        if stats.refused:
            return  # nothing more is written; the rest is only checked
        records = [Record(r.key, r.vector, o.metadata, o.text) for r, o in zip(page, outs, strict=True)]
        holdable = [not o.unresolved for o in outs]
        texts = [o.text or "" for o in outs]
        starts = range(0, len(records), self.batch_size)
        slot = _Slot(page.cursor, len(records), len(starts))
        digests = self.state.digests
        if digests is not None:
            slot.digests = page_digests(records, None, digests.parts)
        self.state.add(slot)
        for start in starts:
            if not self.acquire():
                return
            end = start + self.batch_size
            chunk = records[start:end]
            # metadata the checks just found holdable is not checked again by the target's upsert
            checked = [r.metadata for r, ok in zip(chunk, holdable[start:end], strict=True) if ok]
            self.submit(slot, chunk, texts[start:end] if self.embedder is not None else None, checked)

    def submit(
        self, slot: _Slot, chunk: list[Record], texts: list[str] | None, checked: list[dict[str, JSON]]
    ) -> None:
        fut = self.pool.submit(
            _write,
            self.target,
            chunk,
            texts,
            self.embedder,
            self.retry,
            self.state,
            (self.transformer.rules, checked),
        )
        fut.add_done_callback(functools.partial(self.done, slot=slot, keys=[r.key for r in chunk]))

    def acquire(self) -> bool:
        """Wait for room for one more batch in flight; False once a batch has failed."""
        state = self.state
        while not self.slots.acquire(timeout=0.5):
            if state.error is not None:
                return False
        if state.error is not None:
            self.slots.release()
            return False
        return True

    def done(self, fut: Future[None], slot: _Slot, keys: list[str]) -> None:
        self.slots.release()
        exc = fut.exception()
        if exc is not None:
            with self.state.lock:
                self.state.error = self.state.error or exc
            return
        self.state.acknowledge(slot, len(keys))
        if self.on_written is not None:
            self.on_written(keys)


def _pages(
    source: VectorStore,
    checkpoint: Checkpoint | None,
    shard: tuple[int, int],
    batch_size: int | None,
    include: list[str],
) -> Iterable[ScanPage]:
    """The source's pages from the checkpoint's cursor on, read ahead by a thread. None when
    every record was acknowledged before a kill that came during the target's final work (an
    index build): only that work is left, redone on leaving the bulk load."""
    if checkpoint is not None and checkpoint.scanned:
        return ()
    cursor = checkpoint.cursor if checkpoint is not None else None
    return prefetched(source.scan(batch_size=batch_size, include=include, segment=shard, cursor=cursor))


@bulk_allocations()
def copy_records(
    source: VectorStore,
    target: VectorStore,
    transformer: Transformer,
    *,
    shard: tuple[int, int] = (0, 1),
    batch_size: int,
    concurrency: int = 4,
    checkpoint: Checkpoint | None = None,
    retry: RetryPolicy | None = None,
    embedder: Embedder | None = None,
    progress: ProgressMode | bool = False,
    total: int | None = None,
    scan_batch_size: int | None = None,
    checker: PlanChecker | None = None,
    digests: BinSums | None = None,
    on_written: Callable[[list[str]], None] | None = None,
) -> CopyStats:
    """Copy every record of ``shard`` from ``source`` to ``target``, resuming from ``checkpoint``.

    Raises the first write error after the batches in flight have finished (the checkpoint then
    holds everything acknowledged before it).

    A single-pass copy passes ``checker``, the plan's per-record checks, run on each page before
    any of it is written: at the first refusal nothing more is written and the rest of the
    source is only checked, so the plan lists every problem (``stats.refused``); and
    ``digests``, into which each acknowledged record's digest is folded (kept in the checkpoint).

    ``on_written`` is called with the keys of each batch the target acknowledged (from the
    writer threads), e.g. to read them back while the copy goes on (:mod:`._readback`).
    """
    stats = CopyStats(batch_size=batch_size, concurrency=concurrency, digests=digests)
    if checkpoint is not None:
        stats.resumed_from, stats.resumed_cursor = checkpoint.copied, checkpoint.cursor
    include = ["metadata", "text"] if embedder is not None else ["vector", "metadata", "text"]
    started = time.monotonic()
    index_bar = IndexBar(progress)
    try:
        with (
            listening(index_bar),
            index_bar,
            bulk_load_of(target, total),
            Progress("copy", total, enabled=progress, completed=stats.resumed_from) as bar,
            ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="vectorport-migrate") as pool,
        ):
            state = _State(checkpoint, bar, stats, digests)
            copy = _Copy(
                target,
                transformer,
                state,
                pool,
                batch_size=batch_size,
                concurrency=concurrency,
                retry=retry,
                embedder=embedder,
                checker=checker,
                on_written=on_written,
            )
            copy.drive(_pages(source, checkpoint, shard, scan_batch_size, include), started)
            copied_at = time.monotonic()
    except _Refused:
        return stats
    # leaving the bulk load: the target's deferred work (an index build) ran just now
    stats.index_seconds = time.monotonic() - copied_at
    _completed(stats, state, checkpoint)
    return stats


def _completed(stats: CopyStats, state: _State, checkpoint: Checkpoint | None) -> None:
    stats.complete = state.finished_scan and not state.pending and not stats.refused
    if checkpoint is not None and stats.complete and not checkpoint.complete:
        checkpoint.complete = True
        checkpoint.save()
