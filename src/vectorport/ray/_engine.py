"""``--engine ray``: :class:`RayRunner`, the runner that puts a migration's (or an export's) copy
and verification on a Ray cluster. Every other stage (options, checkpoint, plan, target creation,
status, notes, the report) is :func:`vectorport.migrate`'s own, run on the driver: a runner
decides placement and parallelism, never meaning.

* copy: one Ray task per shard of the source (``scan(segment=(i, n))``), each the ordinary
  copy (:func:`~vectorport.migrate._run.copy_records`) with its own checkpoint beside the run's
  (``ck.shard-I-of-N.json``), so Ray's retry of a task whose worker died — or a later
  ``resume`` after the whole run was killed — continues from the last acknowledged batch;
  writes are idempotent upserts, so a batch written twice leaves one record. A target with a
  per-index write cap (buckets: ``write_rate``) gets the cap divided among the workers.
* verify: the merged-digest verification (:func:`~vectorport.migrate._merged.verify_merged`),
  each native scan segment read by a Ray task, with the run's progress (re-embedded
  records are compared record by record on the driver, as in one process).
* export: one Ray task per scan segment of the source, each writing its segment's Parquet
  parts (:func:`~vectorport.snapshot._export.write_segment`); the manifest and the
  verification are :func:`vectorport.snapshot.export`'s own stages, as in one process.
* a store only one process may open (an embedded Chroma directory) is never opened by several
  workers: the whole migration (or export) runs as one Ray task; a ``memory://`` store, which no
  other process can see, is refused before any I/O. That task forwards its progress through a
  Ray queue, and the driver shows it as the local runner would (:class:`~vectorport.migrate._progress.Relay`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import ray

from .._features import write_cap_of
from .._options import RunOptions
from .._protocol import VectorStore
from .._report import Report
from ..backends.parquet._format import PartInfo
from ..exceptions import ConfigurationError
from ..migrate import MigrateOptions, MigrationReport
from ..migrate import run as migrate
from ..migrate._checkpoint import Checkpoint, shard_path
from ..migrate._endpoints import StoreLike, open_source
from ..migrate._engine import (
    DEFAULT_BATCH,
    RunContext,
    _count_or_none,
    open_pair,
    refuse_options,
    verify_here,
)
from ..migrate._merged import verify_merged, worker_info
from ..migrate._options import SyncOptions, VerifyOptions
from ..migrate._progress import Progress, ProgressEvent, ProgressMode, Relay, forwarded
from ..migrate._reembed import load_embedder
from ..migrate._run import CopyStats, copy_records
from ..migrate._sync import sync
from ..migrate._syncreport import SyncReport
from ..migrate._transform import Transformer
from ..migrate._verify import VECTOR_TOLERANCE, VerifyReport
from ..snapshot._export import ExportContext, ExportReport, export, write_segment
from ..snapshot._options import ExportOptions
from ._verify import ensure_ray, ray_runner, reachable

if TYPE_CHECKING:
    from .._models import JSON
    from ..migrate._sync import SyncContext

Opts = TypeVar("Opts", MigrateOptions, SyncOptions)

__all__ = ["RayRunner", "engine_fields", "export_on_ray", "gather", "migrate_on_ray", "note_pid"]


def engine_fields(
    workers: int,
    records: int,
    seconds: float,
    write_rate_per_worker: float | None,
    per_worker: list[dict[str, Any]],
) -> dict[str, Any]:
    """What a run split over Ray tasks adds to its engine's report: ``engine``, ``workers``,
    the overall rate (``records`` over ``seconds``), the write cap each worker got and each
    task's node, pid, records and rate."""
    return {
        "engine": "ray",
        "workers": workers,
        "records_per_second": round(records / seconds, 1) if seconds > 0 else None,
        "write_rate_per_worker": write_rate_per_worker,
        "per_worker": list(per_worker),
    }


def note_pid(shard: tuple[int, int]) -> None:
    """Write this worker's pid as ``shard-I.pid`` into ``$VECTORPORT_RAY_PIDS`` when set: lets a
    test find (and kill) the worker running a shard."""
    pid_dir = os.environ.get("VECTORPORT_RAY_PIDS")
    if pid_dir:
        Path(pid_dir, f"shard-{shard[0]}.pid").write_text(str(os.getpid()))


class RayRunner:
    """Ray tasks: ``workers`` copy shards and verification segments (see the module docstring).

    ``address`` goes to ``ray.init`` (``"auto"``: the running cluster; ``None``: a local one when
    Ray is not initialised yet); ``max_retries``: Ray's retries of a task whose worker died.
    """

    name = "ray"
    here = False

    def __init__(
        self, workers: int = 2, address: str | None = None, max_retries: int = 3, segments: int | None = None
    ) -> None:
        if workers < 1:
            raise ConfigurationError(f"workers must be at least 1, got {workers}")
        if segments is not None and segments < 1:
            raise ConfigurationError(f"segments must be at least 1, got {segments}")
        self.workers, self.address, self.max_retries = workers, address, max_retries
        self.segments = segments
        """Native scan segments each store is read in by a verification (default ``workers``)."""
        self.shards = workers
        self.per_worker: list[dict[str, Any]] = []
        self.write_rate_per_worker: float | None = None
        self.copy_seconds = 0.0
        self.copied = 0

    def check(self, options: RunOptions, source: StoreLike, target: StoreLike) -> None:
        refuse_options(options, self.name)
        if not (isinstance(source, str) and isinstance(target, str)):
            raise ConfigurationError(
                "engine ray opens the stores in its workers: pass URLs, not store objects "
                "(nothing was read or written)"
            )
        if options.WRITES_TARGET:
            self.one_process = reachable(source, written=target)
        else:
            self.one_process = reachable(source, target)

    def delegate(self, source: StoreLike, target: StoreLike, options: RunOptions) -> Report | None:
        """A store only one process may open: the whole command (a migration, an export, a
        sync) as one Ray task."""
        if not self.one_process:
            return None
        assert isinstance(source, str) and isinstance(target, str)  # check() refused store objects
        ensure_ray(self.address)
        started = time.monotonic()
        task = ray.remote(max_retries=self.max_retries, retry_exceptions=False)(_whole)
        report, worker = _await_whole(task, source, target, options)
        self.workers, self.per_worker = 1, [worker]
        self.copy_seconds, self.copied = time.monotonic() - started, worker["records"]
        note = (
            f"{', '.join(self.one_process)} can be opened by one process at a time: the whole "
            f"{options.COMMAND} ran as one Ray task"
        )
        if isinstance(report, MigrationReport | SyncReport):
            report.engine = self.describe()
            report.notes.append(note)
        elif isinstance(report, ExportReport):
            report.engine, report.workers, report.per_worker = self.name, 1, [worker]
            report.notes.append(note)
        return report

    def capped(self, store: VectorStore, options: Opts) -> Opts:
        """The options each worker writes with: a per-index write cap divided among them."""
        cap = write_cap_of(store)
        if cap is None:
            return options
        self.write_rate_per_worker = cap / self.workers
        return replace(options, target_options={**options.target_options, "write_rate": cap / self.workers})

    def export(self, ctx: ExportContext) -> list[PartInfo]:
        """One Ray task per scan segment, each writing its segment's parts into the directory
        (which every worker must reach: a shared file system on a real cluster)."""
        assert isinstance(ctx.source, str)  # see check()
        ensure_ray(self.address)
        o, n = ctx.options, ctx.segments
        task = ray.remote(max_retries=self.max_retries, retry_exceptions=False)(_export_segment)
        started = time.monotonic()
        pending = [task.remote(ctx.source, o, str(ctx.directory), (i, n)) for i in range(n)]
        parts: list[PartInfo] = []
        self.per_worker = []
        with Progress("export", _count_or_none(ctx.src.store), enabled=o.progress) as bar:
            while pending:  # the bar follows the tasks as they finish
                done, pending = ray.wait(pending, num_returns=1)
                got, worker = ray.get(done[0])
                parts += got
                self.per_worker.append(worker)
                bar.advance(worker["records"])
        self.per_worker.sort(key=lambda w: str(w["task"]))
        self.copy_seconds, self.copied = time.monotonic() - started, sum(p.records for p in parts)
        return parts

    def copy(self, ctx: RunContext) -> CopyStats:
        assert isinstance(ctx.source, str) and isinstance(ctx.target, str)  # see check()
        ensure_ray(self.address)
        options = self.capped(ctx.dst.store, ctx.options)
        if ctx.ck is not None and not options.resume:
            for i in range(self.workers):  # start over, as one process does without resume
                shard_path(ctx.ck.path, (i, self.workers)).unlink(missing_ok=True)
        task = ray.remote(max_retries=self.max_retries, retry_exceptions=False)(_copy_shard)
        base = str(ctx.ck.path) if ctx.ck is not None else None
        started = time.monotonic()
        pending = [
            task.remote(ctx.source, ctx.target, (i, self.workers), options, base) for i in range(self.workers)
        ]
        results = _gather(pending, ctx, base, self.workers)
        self.copy_seconds = time.monotonic() - started
        self.per_worker = [w for _, w in sorted(results, key=lambda r: r[1]["shard"])]
        stats = _merged([s for s, _ in results], self.copy_seconds, ctx.batch, options.concurrency)
        self.copied = stats.records
        if ctx.ck is not None:
            ctx.ck.copied = stats.resumed_from + stats.records
            ctx.ck.scanned = ctx.ck.complete = stats.complete
            ctx.ck.save()
        return stats

    def verify(self, ctx: RunContext) -> VerifyReport:
        if ctx.embedder is not None:  # re-embedded vectors: record by record, as in one process
            return verify_here(ctx)
        return self._verify(ctx)

    def sync_passes(
        self, ctx: SyncContext, transform: JSON, why: str | None, position: JSON | None
    ) -> list[SyncReport]:
        from ._sync import shard_passes

        return shard_passes(self, ctx, why)

    def sync_verify(self, ctx: SyncContext, progress: ProgressMode) -> VerifyReport:
        assert isinstance(ctx.source, str) and isinstance(ctx.target, str)  # see check()
        return self._merged(ctx.source, ctx.target, ctx.options, progress)

    def compare(self, source: StoreLike, target: StoreLike, options: VerifyOptions) -> VerifyReport:
        """The standalone verification: merged segment digests from Ray tasks (``check`` has
        refused what they cannot honour: a shard, threads, the keyed method, store objects)."""
        assert isinstance(source, str) and isinstance(target, str)  # see check()
        return self._merged(source, target, options, options.progress)

    def _verify(self, ctx: RunContext) -> VerifyReport:
        assert isinstance(ctx.source, str) and isinstance(ctx.target, str)  # see check()
        return self._merged(ctx.source, ctx.target, ctx.options, ctx.options.progress)

    def _merged(
        self,
        source: str,
        target: str,
        o: MigrateOptions | SyncOptions | VerifyOptions,
        progress: ProgressMode,
    ) -> VerifyReport:
        """Merged segment digests (:func:`~vectorport.migrate._merged.verify_merged`), each
        native scan segment of both stores read by a Ray task; the ``verify`` progress counts
        the source's records as those tasks finish."""
        ensure_ray(self.address)
        return verify_merged(
            source,
            target,
            runner=ray_runner(self.max_retries),
            segments=self.segments or self.workers,
            workers=self.workers,
            engine=self.name,
            metadata_policy=o.metadata_policy,
            text_key=o.text_key,
            sample_queries=o.sample_queries,
            k=o.k,
            tolerance=o.tolerance if isinstance(o, VerifyOptions) else VECTOR_TOLERANCE,
            cap=o.cap,
            source_options=o.source_options,
            target_options=o.target_options,
            progress=progress,
        )

    def describe(self) -> dict[str, Any]:
        return engine_fields(
            self.workers, self.copied, self.copy_seconds, self.write_rate_per_worker, self.per_worker
        )


def _gather(
    pending: list[Any], ctx: RunContext, base: str | None, workers: int
) -> list[tuple[CopyStats, dict[str, Any]]]:
    """Wait for the shard tasks; with ``progress``, the bar follows the shards' checkpoints."""
    total = ctx.total or None
    with Progress("copy", total, enabled=ctx.options.progress) as bar:
        if base is None:
            return gather(pending, bar, total, None)
        paths = [shard_path(base, (i, workers)) for i in range(workers)]
        return gather(pending, bar, total, lambda: sum(map(_copied, paths)))


def gather(pending: list[Any], bar: Progress, total: int | None, done: Callable[[], int] | None) -> list[Any]:
    """The results of Ray tasks as they finish; the bar follows ``done()``, what the tasks
    committed so far (read from their checkpoints or states)."""
    results: list[Any] = []
    while pending:
        finished, pending = ray.wait(pending, num_returns=1, timeout=0.5)
        results.extend(ray.get(finished))
        if done is not None:
            bar.update(done(), total)
    return results


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


def _copy_shard(
    source: str, target: str, shard: tuple[int, int], options: MigrateOptions, base: str | None
) -> tuple[CopyStats, dict[str, Any]]:
    """One Ray task: the copy of one shard, continuing from its checkpoint when there is one."""
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
            src.store,
            dst.store,
            transformer,
            shard=shard,
            batch_size=size,
            concurrency=options.concurrency,
            checkpoint=ck,
            retry=options.retry,
            embedder=embedder,
            scan_batch_size=size,
        )
    finally:
        dst.close()
        src.close()
    worker = worker_info(f"copy {shard[0]}/{shard[1]}", stats.records, started)
    worker.update(shard=shard[0], resumed_from=stats.resumed_from)
    return stats, worker


def _await_whole(task: Any, source: str, target: str, options: RunOptions) -> tuple[Report, dict[str, Any]]:
    """Run :func:`_whole` and wait for it; with ``progress``, its phases (forwarded through a Ray
    queue) are shown here while it runs, as the local runner shows them."""
    mode = ProgressMode.parse(getattr(options, "progress", None))
    if not mode:
        return ray.get(task.remote(source, target, options, None))  # type: ignore[no-any-return]
    from ray.util.queue import Queue

    queue = Queue(actor_options={"num_cpus": 0})
    relay = Relay(mode)
    try:
        ref = task.remote(source, target, options, queue)
        finished: list[Any] = []
        while not finished:
            finished, _ = ray.wait([ref], timeout=0.2)
            for event in queue.get_nowait_batch(queue.qsize()):  # all of them once it finished
                relay.play(event)
        return ray.get(ref)  # type: ignore[no-any-return]
    finally:
        relay.close()
        queue.shutdown(force=True)


def _whole(source: str, target: str, options: RunOptions, queue: Any) -> tuple[Report, dict[str, Any]]:
    """One Ray task: the whole migration, export or sync in one process (for a store only one
    process may open); its report and where it ran. With a ``queue``, its progress goes there
    (for the driver to show) instead of to this worker's stderr."""
    if queue is None:
        return _whole_here(source, target, options)

    def sink(event: ProgressEvent) -> None:
        queue.put(event)

    with forwarded(sink):
        return _whole_here(source, target, options)


def _whole_here(source: str, target: str, options: RunOptions) -> tuple[Report, dict[str, Any]]:
    started = time.monotonic()
    note_pid((0, 1))
    fields = {f.name: getattr(options, f.name) for f in options.declared()}
    report: Report
    if isinstance(options, ExportOptions):
        report = export(source, target, **fields)
        records = report.count
    elif isinstance(options, SyncOptions):
        report = sync(source, target, **fields)
        records = report.sync.source_read
    else:
        report = migrate(source, target, **fields)
        records = report.copy.records if report.copy else 0
    worker = worker_info(f"{options.COMMAND} 0/1", records, started) | {"shard": 0}
    return report, worker


def _export_segment(
    source: str, options: ExportOptions, directory: str, segment: tuple[int, int]
) -> tuple[list[PartInfo], dict[str, Any]]:
    """One Ray task: the parts of one scan segment of an export's source."""
    started = time.monotonic()
    note_pid(segment)
    folder = Path(directory)
    # a retried task starts its segment again: the parts of a lost attempt go first, so none of
    # them stays beside the manifest for DuckDB to read
    for stale in [
        *folder.glob(f"part-{segment[0]:05d}-*.parquet"),
        *folder.glob(f".part-{segment[0]:05d}-*"),
    ]:
        stale.unlink(missing_ok=True)
    src = open_source(source, **dict(options.source_options))
    try:
        parts = write_segment(
            src.store,
            folder,
            segment,
            max_part_bytes=options.max_part_bytes,
            batch_size=options.batch_size,
        )
    finally:
        src.close()
    records = sum(p.records for p in parts)
    return parts, worker_info(f"export {segment[0]}/{segment[1]}", records, started)


def migrate_on_ray(
    source: str,
    target: str,
    *,
    workers: int = 2,
    address: str | None = None,
    max_retries: int = 3,
    **options: Any,
) -> MigrationReport:
    """:func:`vectorport.migrate.run` with its copy and verification run as ``workers`` Ray tasks
    (:class:`RayRunner`); ``options`` are the same keyword arguments, meaning the same.

    ``checkpoint`` must be on storage every worker sees (a shared file system on a real cluster).
    """
    return migrate(source, target, runner=RayRunner(workers, address, max_retries), **options)


def export_on_ray(
    source: str,
    directory: str | os.PathLike[str],
    *,
    workers: int = 2,
    address: str | None = None,
    max_retries: int = 3,
    **options: Any,
) -> ExportReport:
    """:func:`vectorport.snapshot.export` with each scan segment's parts written by a Ray task
    (:class:`RayRunner`); ``options`` are the same keyword arguments, meaning the same.

    ``directory`` must be one every worker writes and the driver reads (a shared file system on
    a real cluster).
    """
    return export(source, directory, runner=RayRunner(workers, address, max_retries), **options)
