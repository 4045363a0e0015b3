"""The migration's copy stage, under the run's placement: in this process (threads, with the
read-back of paced targets), or as one task per shard of the source (each the ordinary copy,
:func:`~vectorport.migrate._records.copy_records`, with its own checkpoint beside the run's:
``ck.shard-I-of-N.json``), so a retried task — or a later ``resume`` after the whole run was
killed — continues from the shard's last acknowledged batch."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._digest import bin_count
from .._features import write_cap_of
from .._models import ScanPage
from ..engine._checkpoint import Checkpoint, shard_path
from ..engine._endpoints import open_pair
from ..engine._progress import Progress, polled
from ..engine._runner import Runner, worker_info
from ..engine._transform import Transformer
from ..engine._whole import note_pid
from ..exceptions import ConfigurationError
from ..verify._queries import SampledQueries, query_page, sampled_queries
from ..verify._tasks import TargetScan
from ._options import MigrateOptions
from ._readback import ReadBack
from ._records import CopyJob, CopyStats, copy_records
from ._reembed import load_embedder

if TYPE_CHECKING:
    from ._engine import RunContext

__all__ = ["DEFAULT_BATCH", "copy_placed"]

DEFAULT_BATCH = 1000
"""Records per write when ``batch_size`` is not given (capped by the target's own limit)."""


def copy_placed(ctx: RunContext, runner: Runner) -> CopyStats:
    """Copy every record of the run (after the plan, into the created target)."""
    if ctx.placement.here:
        return _copy_here(ctx)
    return _copy_shards(ctx, runner)


def _copy_here(ctx: RunContext) -> CopyStats:
    o = ctx.options
    if o.verify and _read_back_applies(ctx):
        parts = ctx.digests.parts if ctx.digests is not None else bin_count(ctx.total)
        if ctx.digests is not None:  # the read-back is the target's exact truth for the queries
            ctx.queries = sampled_queries(ctx.src.store, ctx.dst.store, ctx.segment, o.sample_queries, o.k)
        ctx.read_back = ReadBack(ctx.dst.store, parts, exact=ctx.queries.exact if ctx.queries else None)
    first = _FirstPage(query_page(o.sample_queries))
    if o.verify and ctx.read_back is None and ctx.digests is not None and ctx.segment[1] == 1:
        # the copy's digests are the source's side: the target's is read beside its deferred work
        ctx.target_scan = TargetScan(
            ctx.dst.store, ctx.digests.parts, pick=_picker(ctx, first), concurrency=o.concurrency
        )
    try:
        stats = copy_records(
            CopyJob(
                ctx.src.store,
                ctx.dst.store,
                ctx.transformer,
                ctx.batch,
                shard=ctx.segment,
                concurrency=o.concurrency,
                checkpoint=ctx.ck,
                retry=o.retry,
                embedder=ctx.embedder,
                progress=o.progress,
                total=ctx.total,
                scan_batch_size=ctx.scan_page,
                checker=ctx.checker,
                digests=ctx.digests,
                on_written=ctx.read_back.written if ctx.read_back is not None else None,
                on_first_page=first.keep if ctx.target_scan is not None else None,
                on_copied=ctx.target_scan.start if ctx.target_scan is not None else None,
            )
        )
    except BaseException:
        if ctx.read_back is not None:
            ctx.read_back.close()  # the readers end before the stores are closed
        if ctx.target_scan is not None:
            ctx.target_scan.close()
        raise
    if ctx.read_back is not None:
        # the last batches are read back while verification lists the target's keys
        ctx.read_back.finish()
    return stats


class _FirstPage:
    """The start of the source's first page as the copy read it: the records the queries are
    picked from (:func:`~vectorport.verify._queries.query_page`), no more kept."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.page: ScanPage | None = None

    def keep(self, page: ScanPage) -> None:
        self.page = page if len(page) <= self.size else ScanPage(page.records[: self.size], page.cursor)


def _picker(ctx: RunContext, first: _FirstPage) -> Callable[[], SampledQueries]:
    """The sampled queries, picked once the copy ended from the first page it read, while the
    target finishes its deferred work (an index build), and sent to the source there: its
    answers do not wait for the target's index."""

    def pick() -> SampledQueries:
        o, src = ctx.options, ctx.src.store
        queries = sampled_queries(src, ctx.dst.store, ctx.segment, o.sample_queries, o.k, first.page)
        first.page = None
        queries.ask_source(src)
        return queries

    return pick


def _read_back_applies(ctx: RunContext) -> bool:
    """Whether the copy reads each acknowledged batch back (:mod:`._readback`): into a target
    whose writes are paced (reads then cost no copy time), in a run that writes every record
    (not a resumed one), whose records compare as digests (not re-embedded, floats kept)."""
    ck = ctx.ck
    fresh = ck is None or (ck.cursor is None and not ck.scanned)
    return (
        fresh
        and ctx.segment[1] == 1
        and ctx.embedder is None
        and ctx.dst.capabilities.metadata.float_ulps == 0
        and write_cap_of(ctx.dst.store) is not None
    )


def _copy_shards(ctx: RunContext, runner: Runner) -> CopyStats:
    """One task per shard of the source, each with its own checkpoint beside the run's."""
    if not (isinstance(ctx.source, str) and isinstance(ctx.target, str)):
        raise ConfigurationError(
            f"engine {runner.name} opens the stores in its tasks: pass URLs, not store objects"
        )
    placement, n = ctx.placement, ctx.placement.shards
    options = placement.capped(ctx.dst.store, ctx.options)
    if ctx.ck is not None and not options.resume:
        for i in range(n):  # start over, as one process does without resume
            shard_path(ctx.ck.path, (i, n)).unlink(missing_ok=True)
    base = str(ctx.ck.path) if ctx.ck is not None else None
    calls = [(ctx.source, ctx.target, (i, n), options, base) for i in range(n)]
    started = time.monotonic()
    paths = [shard_path(base, (i, n)) for i in range(n)] if base is not None else []
    done = (lambda: sum(map(_copied, paths))) if paths else None
    total = ctx.total or None
    with Progress("copy", total, enabled=ctx.options.progress) as bar, polled(bar, total, done):
        results = list(runner.map(copy_shard, calls))
    placement.ran([w for _, w in results], time.monotonic() - started)
    stats = _merged([s for s, _ in results], placement.seconds, ctx.batch, options.concurrency)
    if ctx.ck is not None:
        ctx.ck.copied = stats.resumed_from + stats.records
        ctx.ck.scanned = ctx.ck.complete = stats.complete
        ctx.ck.save()
    return stats


def _copied(path: Path) -> int:
    try:
        ck = Checkpoint.load(path)
    except ConfigurationError:  # caught mid-write by another process: the next poll reads it
        return 0
    return ck.copied if ck is not None else 0


def _merged(parts: list[CopyStats], seconds: float, batch: int, concurrency: int) -> CopyStats:
    """The shards' copies as one (counts summed, the wall time of all of them)."""
    out = CopyStats(seconds=seconds, batch_size=batch, concurrency=concurrency, complete=True)
    for s in parts:
        out.records += s.records
        out.batches += s.batches
        out.retries += s.retries
        out.resumed_from += s.resumed_from
        out.index_seconds = max(out.index_seconds, s.index_seconds)
        out.complete = out.complete and s.complete
        if s.resumed_cursor is not None:
            out.resumed_cursor = s.resumed_cursor
    out.seconds = max(seconds - out.index_seconds, 0.0)
    return out


def copy_shard(
    source: str, target: str, shard: tuple[int, int], options: MigrateOptions, base: str | None
) -> tuple[CopyStats, dict[str, Any]]:
    """One task: the copy of one shard, continuing from its checkpoint when there is one."""
    started = time.monotonic()
    note_pid(shard)
    embedder = load_embedder(options.reembed)[0] if options.reembed else None
    src, dst = open_pair(source, target, options.source_options, options.target_options)
    try:
        transformer = Transformer(dst.capabilities.metadata, options.metadata_policy, options.text_key)
        ck = None
        if base is not None:
            path = shard_path(base, shard)
            ck = Checkpoint.load(path) or Checkpoint(path, src.label, dst.label, shard, options.fixed())
        size = min(options.batch_size or DEFAULT_BATCH, dst.capabilities.max_write_batch)
        stats = copy_records(
            CopyJob(
                src.store,
                dst.store,
                transformer,
                size,
                shard=shard,
                concurrency=options.concurrency,
                checkpoint=ck,
                retry=options.retry,
                embedder=embedder,
                scan_batch_size=size,
            )
        )
    finally:
        dst.close()
        src.close()
    worker = worker_info(f"copy {shard[0]}/{shard[1]}", stats.records, started)
    worker.update(shard=shard[0], resumed_from=stats.resumed_from)
    return stats, worker
