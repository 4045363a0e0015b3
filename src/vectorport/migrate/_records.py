"""The copy: stream scan pages, transform, write batches concurrently, checkpoint what is safe.

Memory is bounded by one scan page plus ``2 * concurrency`` write batches, whatever the size
of the collection. Batches are written by a thread pool; a scan page is *acknowledged* when
every batch cut from it has been written. The checkpoint's cursor only moves past a page when
that page and every page before it are acknowledged, so a run killed at any instant resumes
from a cursor behind which nothing is missing; records after it may be written twice, which
is harmless because upserts replace by key.

A re-embedding copy (``--reembed``) pays for each vector, so a resume must not embed again what
the killed run wrote: it saves the checkpoint at every acknowledgement (a small file against a
page of model calls), and the first pages after the resumed cursor -- the only ones the killed
run can have written past it, at most the pipeline's window -- are looked up in the target
first; a record the target already holds is not embedded again (``CopyStats.skipped``).

The copy runs inside the target's bulk-load hook (:meth:`BaseStore.bulk_load`), so a target
that defers index maintenance builds its index once at the end; that build is timed apart
(``index_seconds``), with its own progress bar when the target reports progress.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from .._activity import listening
from .._digest import BinSums
from .._embedder import Embedder
from .._features import bulk_load_of
from .._gc import bulk_allocations
from .._models import JSON, Record, ScanPage
from .._protocol import VectorStore
from .._retry import RetryPolicy, retry_scope
from .._validate import metadata_checked
from ..engine._checkpoint import Checkpoint
from ..engine._digestscan import page_digests
from ..engine._pipeline import Acknowledged, prefetched
from ..engine._progress import IndexBar, Progress, ProgressMode
from ..engine._transform import Transformed, Transformer
from ..exceptions import Advice, Advised, TransientError, ValidationError
from ._plan import PlanChecker
from ._reembed import reembedded

__all__ = ["CopyJob", "CopyStats", "copy_records"]

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
    """Calls (writes, and re-embedding requests) retried after a
    :class:`~vectorport.exceptions.TransientError`."""
    resumed_from: int = 0
    """Records a previous run had already copied (from the checkpoint)."""
    resumed_cursor: str | None = None
    skipped: int = 0
    """Records a resumed re-embedding found already written past the checkpoint (by the killed
    run, after its last save) and did not embed again."""
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
            "skipped": self.skipped,
            "seconds": round(self.seconds, 3),
            "index_seconds": round(self.index_seconds, 3),
            "records_per_second": round(self.rate, 1),
            "batch_size": self.batch_size,
            "concurrency": self.concurrency,
            "complete": self.complete,
            "refused": self.refused,
        }


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
        hint=Advised.of(
            "fix the records named and run the migration again (with a {}, {} continues it)",
            Advice("checkpoint"),
            Advice("resume", True),
        ),
    )
    again.__cause__ = error
    return again


class _Refused(Exception):
    """Leaves the bulk load of a refused single-pass copy without the target's deferred work."""


@dataclass
class _Slot:
    """One scan page in flight: its cursor and size, and the digests of its records as written
    (folded into the copy's digests once the page is acknowledged)."""

    cursor: str | None
    size: int
    digests: list[tuple[int, bytes]] = field(default_factory=list)


_Batch = tuple[list[Record], list[dict[str, JSON]]]
"""A write batch: its records and the metadata already checked."""


class _Copy:
    """The writing side of one :func:`copy_records` run: each page checked (or transformed), cut
    into batches and written through the acknowledged-write pipeline; each acknowledged page
    moves the checkpoint and folds its digests."""

    def __init__(self, job: CopyJob, bar: Progress, stats: CopyStats) -> None:
        self.target, self.transformer, self.checkpoint = job.target, job.transformer, job.checkpoint
        self.bar, self.stats, self.digests = bar, stats, stats.digests
        self.batch_size, self.retry, self.embedder = job.batch_size, job.retry, job.embedder
        self.checker, self.on_written = job.checker, job.on_written
        fresh = job.checkpoint is None or (job.checkpoint.cursor is None and not job.checkpoint.scanned)
        self.on_first_page = job.on_first_page if fresh and job.embedder is None else None
        self.lock = threading.Lock()
        self.last_save = 0.0
        self.finished_scan = False
        window = max(2, 2 * job.concurrency)
        # re-embedding: every acknowledgement is saved, and what a killed run can have written
        # past its last save (the window's batches, so at most that many pages) is looked up
        self.save_interval = 0.0 if job.embedder is not None else CHECKPOINT_INTERVAL
        resumed = job.checkpoint is not None and job.checkpoint.copied > 0
        self.recheck = window + 2 if job.embedder is not None and resumed else 0
        self.writes: Acknowledged[_Slot, _Batch] = Acknowledged(
            self._write,
            concurrency=job.concurrency,
            window=window,
            # at most a window of pages written but not yet acknowledged (a page before them still
            # retrying): a resume re-checks that many pages past the checkpoint (``recheck``)
            units=window,
            on_batch=self._written,
            on_unit=self._advance,
            name="vectorport-migrate",
        )

    def drive(self, pages: Iterable[ScanPage], started: float) -> None:
        """Write ``pages``, wait for the batches in flight, keep the checkpoint; raise the first
        write error, or :class:`_Refused` (inside the bulk load: neither a failed nor a refused
        copy builds indexes; the caller rolls a refused target back)."""
        stats = self.stats
        try:
            for page in pages:
                self.page(page)
                if self.writes.error is not None:
                    break
            else:
                self.finished_scan = True
        finally:
            close = getattr(pages, "close", None)
            if close is not None:
                close()  # stops the prefetching reader
            self.writes.close()
            stats.seconds = time.monotonic() - started
            if self.checkpoint is not None:
                self.checkpoint.save()
        if self.writes.error is not None:
            raise _said_what_was_written(self.writes.error, stats)
        if stats.refused:
            raise _Refused

    @property
    def complete(self) -> bool:
        return self.finished_scan and not self.writes.units and not self.stats.refused

    def page(self, page: ScanPage) -> None:
        """Check or transform one page and submit its batches (after a refusal: only check)."""
        seen, self.on_first_page = self.on_first_page, None
        if seen is not None:
            seen(page)
        if self.stats.refused:
            self._check(page.records)
            return
        recheck = self.recheck > 0
        self.recheck -= int(recheck)
        slot = _Slot(page.cursor, 0)
        # a refusal leaves the page unacknowledged; the rest of the source is only checked
        with contextlib.suppress(_Refused):
            self.writes.submit(slot, self._batches(page.records, slot, recheck))

    def _check(self, records: Sequence[Record]) -> list[Transformed]:
        if self.checker is None:
            return [self.transformer.apply(rec.metadata, rec.text) for rec in records]
        outs = self.checker.observe(records)
        self.stats.refused = self.stats.refused or self.checker.plan.refused
        return outs

    def _batches(self, page: Sequence[Record], slot: _Slot, recheck: bool) -> Iterator[_Batch]:
        """The write batches of one page, each checked just before it is handed to the writers
        (the first are written while the rest are checked). At a refusal the rest of the page
        is checked and :class:`_Refused` raised: the page is never acknowledged."""
        for start in range(0, len(page), self.batch_size):
            chunk = page[start : start + self.batch_size]
            outs = self._check(chunk)
            if self.stats.refused:
                self._check(page[start + self.batch_size :])
                raise _Refused
            records = [Record(r.key, r.vector, o.metadata, o.text) for r, o in zip(chunk, outs, strict=True)]
            holdable = [not o.unresolved for o in outs]
            if self.digests is not None:
                slot.digests.extend(page_digests(records, None, self.digests.parts))
            slot.size += len(records)  # those a killed run wrote included: the target holds them
            if recheck:
                records, holdable = self._not_yet_written(records, holdable)
                if not records:
                    continue
            # metadata the checks just found holdable is not checked again by the target's upsert
            yield records, [r.metadata for r, ok in zip(records, holdable, strict=True) if ok]

    def _not_yet_written(
        self, records: list[Record], holdable: list[bool]
    ) -> tuple[list[Record], list[bool]]:
        """A page just after a resumed re-embedding's cursor, without the records the killed run
        already wrote (they are in the target, embedded by the same model: not embedded again)."""
        held = {r.key for r in self.target.get([r.key for r in records], include=[])}
        if not held:
            return records, holdable
        keep = [i for i, r in enumerate(records) if r.key not in held]
        with self.lock:
            self.stats.skipped += len(records) - len(keep)
        self.bar.advance(len(records) - len(keep))
        return [records[i] for i in keep], [holdable[i] for i in keep]

    def _write(self, batch: _Batch) -> None:
        records, checked = batch
        if self.embedder is not None:
            # the embedder's own policy (a provider's rate limits), its retries counted
            with retry_scope(None, on_retry=self._retried):
                records = reembedded(self.embedder, records)
        # The store retries each of its calls (one retry layer); the migration's policy, when
        # given, replaces the store's for the copy, and every retry is counted in the report.
        with (
            retry_scope(self.retry, on_retry=self._retried),
            metadata_checked(self.transformer.rules, checked),
        ):
            self.target.upsert(records)

    def _retried(self, exc: TransientError) -> None:
        with self.lock:
            self.stats.retries += 1

    def _written(self, batch: _Batch) -> None:
        n = len(batch[0])
        with self.lock:
            self.stats.records += n
            self.stats.batches += 1
        self.bar.advance(n)
        if self.on_written is not None:
            self.on_written([r.key for r in batch[0]])

    def _advance(self, slot: _Slot) -> None:
        """An acknowledged page, in order (in the writer thread that completed it): fold its
        digests, move the checkpoint past it."""
        ck = self.checkpoint
        if self.digests is not None:
            for seg, digest in slot.digests:
                self.digests.add(seg, digest)
        if ck is None:
            return
        ck.copied += slot.size
        if slot.cursor is None:
            # not complete yet: the target may still have deferred work (an index build)
            ck.scanned = True
        else:
            ck.cursor = slot.cursor
        now = time.monotonic()
        if ck.scanned or now - self.last_save >= self.save_interval:
            ck.save()
            self.last_save = now


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


@dataclass
class CopyJob:
    """What one :func:`copy_records` run copies, and how.

    A single-pass copy passes ``checker``, the plan's per-record checks, run on each page before
    any of it is written: at the first refusal nothing more is written and the rest of the
    source is only checked, so the plan lists every problem (``stats.refused``); and
    ``digests``, into which each acknowledged record's digest is folded (kept in the checkpoint).
    ``on_written`` is called with the keys of each batch the target acknowledged (from the
    writer threads), e.g. to read them back while the copy goes on (:mod:`._readback`).
    """

    source: VectorStore
    target: VectorStore
    transformer: Transformer
    batch_size: int
    shard: tuple[int, int] = (0, 1)
    concurrency: int = 4
    checkpoint: Checkpoint | None = None
    retry: RetryPolicy | None = None
    embedder: Embedder | None = None
    progress: ProgressMode | bool = False
    total: int | None = None
    scan_batch_size: int | None = None
    checker: PlanChecker | None = None
    digests: BinSums | None = None
    on_written: Callable[[list[str]], None] | None = None
    on_first_page: Callable[[ScanPage], None] | None = None
    """Called with the source's first page, vectors included, before it is written (not on a
    resumed run, nor a re-embedding one): e.g. to pick the sampled queries from it
    (:func:`~vectorport.verify._queries.pick_queries`) instead of reading it again."""
    on_copied: Callable[[], None] | None = None
    """Called once every record was acknowledged, before the target's deferred work (an index
    build): e.g. to start reading the target (:class:`~vectorport.verify._tasks.TargetScan`)."""


@bulk_allocations()
def copy_records(job: CopyJob) -> CopyStats:
    """Copy every record of ``job.shard`` from the source to the target, resuming from the
    checkpoint. Raises the first write error after the batches in flight have finished (the
    checkpoint then holds everything acknowledged before it)."""
    ck = job.checkpoint
    stats = CopyStats(batch_size=job.batch_size, concurrency=job.concurrency, digests=job.digests)
    if ck is not None:
        stats.resumed_from, stats.resumed_cursor = ck.copied, ck.cursor
    include = ["metadata", "text"] if job.embedder is not None else ["vector", "metadata", "text"]
    started = time.monotonic()
    index_bar = IndexBar(job.progress)
    try:
        with (
            listening(index_bar),
            index_bar,
            bulk_load_of(job.target, job.total),
            Progress("copy", job.total, enabled=job.progress, completed=stats.resumed_from) as bar,
        ):
            copy = _Copy(job, bar, stats)
            copy.drive(_pages(job.source, ck, job.shard, job.scan_batch_size, include), started)
            copied_at = time.monotonic()
            if job.on_copied is not None and copy.complete:
                job.on_copied()
    except _Refused:
        return stats
    # leaving the bulk load: the target's deferred work (an index build) ran just now
    stats.index_seconds = time.monotonic() - copied_at
    _completed(stats, copy, ck)
    return stats


def _completed(stats: CopyStats, copy: _Copy, checkpoint: Checkpoint | None) -> None:
    stats.complete = copy.complete
    if checkpoint is not None and stats.complete and not checkpoint.complete:
        checkpoint.complete = True
        checkpoint.save()
